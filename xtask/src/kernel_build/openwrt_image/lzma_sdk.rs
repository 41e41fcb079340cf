//! How far liblzma's LZMA streams are from the encoder OpenWrt uses.
//!
//! OpenWrt's `lzma` (tools/lzma) is the LZMA SDK's encoder; the workbench
//! encodes with liblzma ([`crate::kernel_build::artifacts::lzma_alone`]),
//! whose match finder chooses differently: on the README's bcm53xx kernel
//! the two streams differ by about 3 KB with the same parameters. Debian's
//! `lzma-alone` is the LZMA SDK 9.22 encoder (`lzma_alone e IN OUT -lc -lp
//! -pb -d`, whose defaults, `-a1 -fb128 -mfbt4`, are the SDK 4.65 ones
//! OpenWrt builds). Device fit encodes one device per kernel and parameter
//! set with it too and records the difference ([`sdk_length`]), so that a
//! device closer to its limit than that is flagged.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result};

use crate::results::LzmaRecord;
use crate::util::process::run_captured;

/// The LZMA SDK encoder's program (Debian's `lzma-alone`).
pub const PROGRAM: &str = "lzma_alone";

/// How long one encoding may take (a few MB: seconds).
pub const TIMEOUT: Duration = Duration::from_secs(300);

/// `lzma_alone e` arguments for `p`: `-lc -lp -pb -d` (log2 of the
/// dictionary, which must be a power of two).
pub fn arguments(p: &LzmaRecord) -> Result<Vec<String>> {
    anyhow::ensure!(
        p.dict_size.is_power_of_two(),
        "an LZMA dictionary of {} bytes is not a power of two, which `lzma e -d` cannot ask for",
        p.dict_size
    );
    Ok(vec![
        format!("-lc{}", p.lc),
        format!("-lp{}", p.lp),
        format!("-pb{}", p.pb),
        format!("-d{}", p.dict_size.trailing_zeros()),
    ])
}

/// The length of the LZMA SDK encoder's stream of `input` with `p`, bytes
/// (header included, no end marker: `lzma e` as OpenWrt runs it), encoded
/// in `scratch` (its files removed afterwards).
///
/// Errors: lzma_alone missing (naming the package), failing, or over
/// [`TIMEOUT`].
pub fn sdk_length(input: &[u8], p: &LzmaRecord, scratch: &Path) -> Result<u64> {
    let dir = tempfile::tempdir_in(scratch)
        .with_context(|| format!("a scratch directory in {}", scratch.display()))?;
    let (inp, out) = (dir.path().join("in"), dir.path().join("out.lzma"));
    std::fs::write(&inp, input).with_context(|| format!("writing {}", inp.display()))?;
    let mut command = std::process::Command::new(PROGRAM);
    command.arg("e").arg(&inp).arg(&out).args(arguments(p)?);
    let run = run_captured(
        command,
        "the LZMA SDK encoder",
        "`apt-get install lzma-alone`, or `cargo xtask setup`",
        TIMEOUT,
    )?;
    if !run.status.success() {
        anyhow::bail!("{PROGRAM} e failed ({}): {}", run.status, run.stderr.trim());
    }
    Ok(std::fs::metadata(&out)
        .with_context(|| format!("reading {}", out.display()))?
        .len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_as_openwrt_writes_them() {
        let p = LzmaRecord {
            lc: 1,
            lp: 2,
            pb: 2,
            dict_size: 1 << 23,
        };
        assert_eq!(arguments(&p).unwrap(), ["-lc1", "-lp2", "-pb2", "-d23"]);
        let odd = LzmaRecord {
            dict_size: 3 << 20,
            ..p
        };
        assert!(arguments(&odd).is_err());
    }
}
