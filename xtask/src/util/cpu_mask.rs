//! CPU bitmaps as Linux's `rps_cpus` and `xps_cpus` take them: the one
//! parser of `--packet-steering`, experiment files and `lab.json`.

/// The most hexadecimal digits a mask may have: 32 CPUs.
pub const MAX_DIGITS: usize = 8;

/// `text` as a CPU bitmap (bit N = CPU N): 1 to [`MAX_DIGITS`]
/// hexadecimal digits, either case, after at most one `0x`; `None` for
/// anything else (`0x0x2`, `+2`, ` 2`, `-1`, an empty string), where
/// `u32::from_str_radix` would take a sign and a repeated prefix strip
/// would take `0x0x`.
pub fn parse_hex(text: &str) -> Option<u32> {
    let digits = text.strip_prefix("0x").unwrap_or(text);
    if digits.is_empty()
        || digits.len() > MAX_DIGITS
        || !digits.bytes().all(|b| b.is_ascii_hexdigit())
    {
        return None;
    }
    u32::from_str_radix(digits, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_as_rps_cpus_takes_them() {
        for (text, want) in [
            ("2", Some(2)),
            ("0x3", Some(3)),
            ("F", Some(15)),
            ("ffffffff", Some(u32::MAX)),
        ] {
            assert_eq!(parse_hex(text), want, "{text}");
        }
        for bad in [
            "",
            "0x",
            "0x0x2",
            "0x0x0x1",
            "+2",
            "-1",
            " 2",
            "2 ",
            "g",
            "1ffffffff",
        ] {
            assert_eq!(parse_hex(bad), None, "{bad:?}");
        }
    }
}
