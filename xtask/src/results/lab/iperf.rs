//! iperf3's options of a forwarding lab's runs, as `lab.json` records them
//! (`settings.iperf3`): parallel streams and the TCP MSS, the two knobs
//! the batman-adv experiment turned (`-P8 -M 536`: eight streams of
//! 536-byte segments, to raise the packet rate). The direction (`-R`) is
//! the run's [`super::Direction`].

use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};

/// iperf3's limit on `--parallel`: `MAX_STREAMS` in iperf3's `src/iperf.h`.
pub const MAX_PARALLEL: u32 = 128;
/// The smallest MSS Linux accepts for `TCP_MAXSEG`: `TCP_MIN_MSS` (88
/// bytes) in the kernel's `include/net/tcp.h`; `setsockopt` fails with
/// `EINVAL` below it.
pub const MIN_MSS: u32 = 88;
/// iperf3's limit on `--set-mss`: `MAX_MSS` (9 × 1024 bytes) in iperf3's
/// `src/iperf.h`.
pub const MAX_MSS: u32 = 9 * 1024;

/// iperf3's options of every run (see the module docs). The default (one
/// stream, the kernel's MSS) is what the lab always ran, and is left out
/// of `lab.json`, so older files read as it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct IperfOptions {
    /// Parallel TCP streams (`--parallel`, `-P`), 1 to [`MAX_PARALLEL`].
    pub parallel: u32,
    /// The TCP maximum segment size in bytes (`--set-mss`, `-M`),
    /// [`MIN_MSS`] to [`MAX_MSS`]; `None`: the kernel's (from the MTU).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mss: Option<u32>,
}

impl Default for IperfOptions {
    fn default() -> IperfOptions {
        IperfOptions {
            parallel: 1,
            mss: None,
        }
    }
}

impl IperfOptions {
    /// Whether these are the defaults (one stream, the kernel's MSS).
    pub fn is_default(&self) -> bool {
        *self == IperfOptions::default()
    }

    /// Refuses what iperf3 or Linux would: `-P 0` or above
    /// [`MAX_PARALLEL`], an MSS under [`MIN_MSS`] or above [`MAX_MSS`].
    pub fn check(&self) -> Result<()> {
        if !(1..=MAX_PARALLEL).contains(&self.parallel) {
            bail!(
                "--parallel {}: iperf3 runs 1 to {MAX_PARALLEL} streams (MAX_STREAMS in iperf3's src/iperf.h)",
                self.parallel
            );
        }
        if let Some(mss) = self.mss {
            if mss < MIN_MSS {
                bail!("--set-mss {mss}: Linux refuses an MSS under {MIN_MSS} bytes (TCP_MIN_MSS, include/net/tcp.h); the batman-adv experiment used 536");
            }
            if mss > MAX_MSS {
                bail!("--set-mss {mss}: iperf3 refuses an MSS over {MAX_MSS} bytes (MAX_MSS in iperf3's src/iperf.h)");
            }
        }
        Ok(())
    }

    /// The iperf3 client's arguments for them: `--parallel 8 --set-mss
    /// 536`; none for the defaults.
    pub fn args(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.parallel != 1 {
            out.extend(["--parallel".to_string(), self.parallel.to_string()]);
        }
        if let Some(mss) = self.mss {
            out.extend(["--set-mss".to_string(), mss.to_string()]);
        }
        out
    }

    /// In iperf3's short options for the plan and the report: `-P8 -M
    /// 536`; empty for the defaults.
    pub fn describe(&self) -> String {
        let mut out = Vec::new();
        if self.parallel != 1 {
            out.push(format!("-P{}", self.parallel));
        }
        if let Some(mss) = self.mss {
            out.push(format!("-M {mss}"));
        }
        out.join(" ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mesh_experiment_s_options_and_what_iperf3_or_linux_refuse() {
        let mesh = IperfOptions {
            parallel: 8,
            mss: Some(536),
        };
        mesh.check().unwrap();
        assert_eq!(mesh.args(), ["--parallel", "8", "--set-mss", "536"]);
        assert_eq!(mesh.describe(), "-P8 -M 536");
        let json = serde_json::to_string(&mesh).unwrap();
        assert_eq!(json, r#"{"parallel":8,"mss":536}"#);
        assert_eq!(serde_json::from_str::<IperfOptions>(&json).unwrap(), mesh);

        let d = IperfOptions::default();
        assert!(d.is_default() && d.args().is_empty() && d.describe().is_empty());
        for (bad, says) in [
            (
                IperfOptions {
                    parallel: 0,
                    mss: None,
                },
                "--parallel 0",
            ),
            (
                IperfOptions {
                    parallel: 129,
                    mss: None,
                },
                "1 to 128",
            ),
            (
                IperfOptions {
                    parallel: 1,
                    mss: Some(87),
                },
                "under 88",
            ),
            (
                IperfOptions {
                    parallel: 1,
                    mss: Some(9217),
                },
                "over 9216",
            ),
        ] {
            let err = bad.check().unwrap_err().to_string();
            assert!(err.contains(says), "{err}");
        }
        IperfOptions {
            parallel: 1,
            mss: Some(88),
        }
        .check()
        .unwrap();
    }
}
