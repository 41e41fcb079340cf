//! Size limits as OpenWrt's `Build/check-size` evaluates them
//! (include/image-commands.mk): `limitsize=$(( $(call exp_units,<limit>) ))`.
//! [`exp_units`] is rules.mk's unit rewrite, [`shell_arith`] the shell's
//! `$(( ))` for what limits use, and [`limit_bytes`] both: what the OpenWrt
//! checkout's Makefiles are read with (`inputs::openwrt::image::limits`)
//! and what a recorded limit is checked against (`results::device_fit`).

use anyhow::{bail, Context, Result};

/// OpenWrt's `exp_units` (rules.mk): unit suffixes made arithmetic.
pub fn exp_units(size: &str) -> String {
    size.replace('g', " * 1024m")
        .replace('m', " * 1024k")
        .replace('k', " * 1024")
}

/// A limit's text (`3072k`, `0xf60000`, `8m`) in bytes, as `check-size`
/// evaluates it: [`exp_units`] then [`shell_arith`].
///
/// Errors name the text when it is no such expression or negative.
pub fn limit_bytes(text: &str) -> Result<u64> {
    let expr = exp_units(text.trim());
    let value = shell_arith(&expr).with_context(|| format!("size limit {text:?} (as `{expr}`)"))?;
    anyhow::ensure!(value >= 0, "size limit {text:?} is negative ({value})");
    Ok(value as u64)
}

/// The most tokens [`shell_arith`] reads: a limit is a handful.
pub const MAX_TOKENS: usize = 256;

/// The shell's arithmetic expansion `$(( expr ))` for what size limits use:
/// integers (decimal, `0x` hex, leading-`0` octal), `+ - * / %`, unary
/// minus and parentheses, with the usual precedence.
///
/// Errors on anything else, on more than [`MAX_TOKENS`] tokens, on
/// overflow (`(-9223372036854775807-1)/-1` included) and on division by
/// zero.
pub fn shell_arith(expr: &str) -> Result<i64> {
    let tokens = tokenize(expr)?;
    // Limits are a few tokens; the cap also bounds the parser's recursion
    // (200,000 `(` overflowed the stack).
    if tokens.len() > MAX_TOKENS {
        bail!(
            "`{}…` has {} tokens, more than the {MAX_TOKENS} a size limit may have",
            expr.chars().take(40).collect::<String>(),
            tokens.len()
        );
    }
    let mut pos = 0;
    let v = sum(&tokens, &mut pos)?;
    if pos != tokens.len() {
        bail!("unexpected `{}` in `{expr}`", tokens[pos]);
    }
    Ok(v)
}

fn tokenize(expr: &str) -> Result<Vec<String>> {
    let mut out = Vec::new();
    let mut chars = expr.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
        } else if c.is_ascii_alphanumeric() {
            let mut t = String::new();
            while let Some(&c) = chars.peek().filter(|c| c.is_ascii_alphanumeric()) {
                t.push(c);
                chars.next();
            }
            out.push(t);
        } else if "+-*/%()".contains(c) {
            out.push(c.to_string());
            chars.next();
        } else {
            bail!("`{c}` in `{expr}` is not shell arithmetic xtask reads");
        }
    }
    Ok(out)
}

fn number(t: &str) -> Result<i64> {
    let parsed = if let Some(hex) = t.strip_prefix("0x").or(t.strip_prefix("0X")) {
        i64::from_str_radix(hex, 16)
    } else if t.len() > 1 && t.starts_with('0') {
        i64::from_str_radix(&t[1..], 8)
    } else {
        t.parse()
    };
    parsed.with_context(|| format!("`{t}` is not a number"))
}

fn sum(t: &[String], pos: &mut usize) -> Result<i64> {
    let mut v = product(t, pos)?;
    while let Some(op) = t.get(*pos).filter(|o| *o == "+" || *o == "-") {
        *pos += 1;
        let r = product(t, pos)?;
        v = if op == "+" {
            v.checked_add(r)
        } else {
            v.checked_sub(r)
        }
        .context("overflow")?;
    }
    Ok(v)
}

fn product(t: &[String], pos: &mut usize) -> Result<i64> {
    let mut v = unary(t, pos)?;
    while let Some(op) = t
        .get(*pos)
        .filter(|o| ["*", "/", "%"].contains(&o.as_str()))
    {
        *pos += 1;
        let r = unary(t, pos)?;
        v = match op.as_str() {
            "*" => v.checked_mul(r).context("overflow")?,
            _ if r == 0 => bail!("division by zero"),
            "/" => v.checked_div(r).context("overflow")?,
            _ => v.checked_rem(r).context("overflow")?,
        };
    }
    Ok(v)
}

fn unary(t: &[String], pos: &mut usize) -> Result<i64> {
    match t.get(*pos).map(String::as_str) {
        Some("-") => {
            *pos += 1;
            unary(t, pos)?.checked_neg().context("overflow")
        }
        Some("+") => {
            *pos += 1;
            unary(t, pos)
        }
        Some("(") => {
            *pos += 1;
            let v = sum(t, pos)?;
            if t.get(*pos).map(String::as_str) != Some(")") {
                bail!("missing `)`");
            }
            *pos += 1;
            Ok(v)
        }
        Some(n) => {
            *pos += 1;
            number(n)
        }
        None => bail!("expression ends early"),
    }
}

/// A size as GNU dd reads `bs=` (coreutils' multiplicative suffixes):
/// digits, then none or one of `c` (1), `w` (2), `b` (512), `k`/`K`/`KiB`
/// (1024), `kB` (1000), `M`/`MiB`, `MB`, `G`/`GiB`, `GB`.
///
/// Errors: anything else, or 0.
pub fn dd_bytes(text: &str) -> Result<u64> {
    let digits = text.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let suffix = &text[digits.len()..];
    let unit: u64 = match suffix {
        "" | "c" => 1,
        "w" => 2,
        "b" => 512,
        "k" | "K" | "KiB" => 1 << 10,
        "kB" | "KB" => 1000,
        "M" | "MiB" => 1 << 20,
        "MB" => 1_000_000,
        "G" | "GiB" => 1 << 30,
        "GB" => 1_000_000_000,
        _ => bail!("pad-to {text}: not a size dd reads (64k, 256k, 0x… is not one)"),
    };
    let n: u64 = digits
        .parse()
        .with_context(|| format!("pad-to {text}: not a size dd reads"))?;
    let bytes = n
        .checked_mul(unit)
        .filter(|b| *b > 0)
        .with_context(|| format!("pad-to {text}: must be at least one byte"))?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hostile trial's F6: these panicked (overflow) or overflowed the
    /// stack in `size-report --devices` and `results merge`.
    #[test]
    fn hostile_limits_are_errors_not_panics() {
        for text in [
            "(-9223372036854775807-1)/-1",
            "(-9223372036854775807-1)%-1",
            "-(-9223372036854775807-1)",
        ] {
            assert!(shell_arith(text).is_err(), "{text}");
        }
        let deep = format!("{}1{}", "(".repeat(200_000), ")".repeat(200_000));
        assert!(format!("{:#}", limit_bytes(&deep).unwrap_err()).contains("tokens"));
        let minus = format!("{}1", "-".repeat(300_000));
        assert!(limit_bytes(&minus).is_err());
        assert_eq!(limit_bytes("3072k").unwrap(), 3072 * 1024);
        assert_eq!(shell_arith("-(2)").unwrap(), -2);
    }
}
