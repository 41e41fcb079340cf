//! OpenWrt's padjffs2 (tools/padjffs2/src/padjffs2.c), the `pad-rootfs`
//! step of an image recipe: the image padded with 0xff to each erase-block
//! size, each followed by JFFS2's end-of-filesystem mark, so that the
//! flash's free space after the squashfs reads as an empty JFFS2.

use anyhow::{bail, Context, Result};

use super::image_sink::ImageSink;

/// JFFS2's end-of-filesystem mark, as padjffs2 writes it.
pub const JFFS2_EOF_MARK: [u8; 4] = [0xde, 0xad, 0xc0, 0xde];

/// OpenWrt's padjffs2 (tools/padjffs2/src/padjffs2.c) on `sink` with
/// `args` (`[-x <offset>] <KiB>…`, each read as C's `strtoul(…, 0)`):
/// for each alignment from the smallest, 0xff up to the next multiple
/// (counting `-x`'s offset), then the 4-byte [`JFFS2_EOF_MARK`];
/// alignments the length already meets are dropped; no argument means
/// 4, 8, 64 and 128 KiB. At least one mark is written.
///
/// Errors: an argument that is not a number, or an image of 4 GiB or more
/// (padjffs2's 32-bit alignment masks).
pub fn padjffs2(sink: &mut dyn ImageSink, args: &[String]) -> Result<()> {
    let mut xtra: u64 = 0;
    let mut mask: u32 = 0;
    let mut i = 0;
    while i < args.len() {
        if i == 0 && args[i] == "-x" {
            let v = args.get(1).context("padjffs2 -x without an offset")?;
            xtra = strtoul(v)?;
            i += 2;
            continue;
        }
        mask |= strtoul(&args[i])?.wrapping_mul(1024) as u32;
        i += 1;
    }
    if mask == 0 {
        mask = (4 | 8 | 64 | 128) * 1024;
    }
    let Some(mut in_len) = sink.length().checked_add(xtra).filter(|n| *n < 1 << 32) else {
        bail!("padjffs2 on an image of 4 GiB or more (with -x's offset)");
    };
    let mut out_len = in_len;
    while mask != 0 {
        let Some(bit) = (10..32).find(|b| mask & (1 << b) != 0) else {
            break;
        };
        let align = 1u64 << bit;
        in_len = (in_len + align - 1) & !(align - 1);
        for b in 10..32 {
            if in_len & ((1u64 << b) - 1) == 0 {
                mask &= !(1u32 << b);
            }
        }
        if out_len < in_len {
            sink.fill(0xff, in_len - out_len);
            out_len = in_len;
        }
        sink.extend(&JFFS2_EOF_MARK);
        out_len += 4;
    }
    Ok(())
}

/// C's `strtoul(text, NULL, 0)` for a whole number: decimal, `0x` hex or
/// leading-`0` octal. Errors on anything else (where strtoul would read a
/// prefix or 0 silently).
fn strtoul(text: &str) -> Result<u64> {
    let t = text.trim();
    let parsed = if let Some(hex) = t.strip_prefix("0x").or(t.strip_prefix("0X")) {
        u64::from_str_radix(hex, 16)
    } else if t.len() > 1 && t.starts_with('0') {
        u64::from_str_radix(&t[1..], 8)
    } else {
        t.parse::<u64>()
    };
    parsed.with_context(|| format!("padjffs2 argument {text:?} is not a number"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::image_sink::{Bytes, ImagePart, Lengths};

    fn bytes(len: usize, args: &[&str]) -> Vec<u8> {
        let kernel = vec![1u8; len];
        let mut sink = Bytes {
            out: Vec::new(),
            kernel: &kernel,
            rootfs: &[],
        };
        sink.append(ImagePart::Kernel);
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        padjffs2(&mut sink, &args).unwrap();
        sink.out
    }

    /// The cases worked through padjffs2.c's loop by hand.
    #[test]
    fn padjffs2_as_its_c_source_pads() {
        // 5000 bytes, 4 and 64 KiB: 0xff to 8192, mark, 0xff to 65536, mark.
        let out = bytes(5000, &["4", "64"]);
        assert_eq!(out.len(), 65536 + 4);
        assert!(out[5000..8192].iter().all(|b| *b == 0xff));
        assert_eq!(out[8192..8196], JFFS2_EOF_MARK);
        assert!(out[8196..65536].iter().all(|b| *b == 0xff));
        assert_eq!(out[65536..], JFFS2_EOF_MARK);
        // Already aligned to every size: one mark only.
        assert_eq!(bytes(65536, &["4", "64"]).len(), 65536 + 4);
        // 8192 is a multiple of 4 and 8 KiB: both dropped at once.
        let out = bytes(8000, &["4", "8", "16"]);
        assert_eq!(out.len(), 16384 + 4);
        assert_eq!(out[8192..8196], JFFS2_EOF_MARK);
        // No argument: 4, 8, 64, 128 KiB.
        assert_eq!(bytes(1, &[]).len(), 131072 + 4);
        // -x counts an offset before the file.
        assert_eq!(bytes(1000, &["-x", "100", "4"]).len(), 4096 - 100 + 4);
        let mut l = Lengths {
            kernel: 5000,
            ..Default::default()
        };
        l.append(ImagePart::Kernel);
        padjffs2(&mut l, &["4".into(), "64".into()]).unwrap();
        assert_eq!(l.len, 65536 + 4);
        assert!(padjffs2(&mut l, &["64k".into()]).is_err());
    }
}
