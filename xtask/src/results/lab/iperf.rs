//! iperf3's options of a forwarding lab's runs, as `lab.json` records them
//! (`settings.iperf3`): parallel streams and the TCP MSS, the two knobs
//! the batman-adv experiment turned (`-P8 -M 536`: eight streams of
//! 536-byte segments, to raise the packet rate), and UDP at a fixed rate
//! (`-u -b 100M`) instead of TCP. The direction (`-R`) is the run's
//! [`super::Direction`]. Their ranges are the lab's options' own
//! (`lab::request::option`), checked with the rest of a lab request.

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
/// The highest UDP rate the lab asks for, in Mbit/s: 10 Gbit/s, above
/// any router port the workbench targets (their SoCs have 1 Gbit/s ports).
pub const MAX_UDP_MBIT: u32 = 10_000;

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
    /// UDP instead of TCP, sent at this rate in Mbit/s (`--udp`, `-b`
    /// `<rate>M`, per stream as iperf3 applies it), 1 to
    /// [`MAX_UDP_MBIT`]; `None`: TCP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub udp_mbit: Option<u32>,
}

impl Default for IperfOptions {
    fn default() -> IperfOptions {
        IperfOptions {
            parallel: 1,
            mss: None,
            udp_mbit: None,
        }
    }
}

impl IperfOptions {
    /// Whether these are the defaults (one stream, the kernel's MSS).
    pub fn is_default(&self) -> bool {
        *self == IperfOptions::default()
    }

    /// The iperf3 client's arguments for them: `--parallel 8 --set-mss
    /// 536`, `--udp --bitrate 100M`; none for the defaults.
    pub fn args(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.parallel != 1 {
            out.extend(["--parallel".to_string(), self.parallel.to_string()]);
        }
        if let Some(mss) = self.mss {
            out.extend(["--set-mss".to_string(), mss.to_string()]);
        }
        if let Some(rate) = self.udp_mbit {
            out.extend(["--udp", "--bitrate"].map(str::to_string));
            out.push(format!("{rate}M"));
        }
        out
    }

    /// In iperf3's short options for the plan and the report: `-P8 -M
    /// 536`, `-u -b 100M`; empty for the defaults.
    pub fn describe(&self) -> String {
        let mut out = Vec::new();
        if self.parallel != 1 {
            out.push(format!("-P{}", self.parallel));
        }
        if let Some(mss) = self.mss {
            out.push(format!("-M {mss}"));
        }
        if let Some(rate) = self.udp_mbit {
            out.push(format!("-u -b {rate}M"));
        }
        out.join(" ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mesh_experiment_s_options_as_iperf3_and_lab_json_take_them() {
        let mesh = IperfOptions {
            parallel: 8,
            mss: Some(536),
            udp_mbit: None,
        };
        assert_eq!(mesh.args(), ["--parallel", "8", "--set-mss", "536"]);
        assert_eq!(mesh.describe(), "-P8 -M 536");
        let json = serde_json::to_string(&mesh).unwrap();
        assert_eq!(json, r#"{"parallel":8,"mss":536}"#);
        assert_eq!(serde_json::from_str::<IperfOptions>(&json).unwrap(), mesh);

        let d = IperfOptions::default();
        assert!(d.is_default() && d.args().is_empty() && d.describe().is_empty());
    }

    #[test]
    fn udp_at_a_rate_as_iperf3_and_lab_json_take_it() {
        let udp = IperfOptions {
            parallel: 2,
            mss: None,
            udp_mbit: Some(100),
        };
        assert_eq!(
            udp.args(),
            ["--parallel", "2", "--udp", "--bitrate", "100M"]
        );
        assert_eq!(udp.describe(), "-P2 -u -b 100M");
        let json = serde_json::to_string(&udp).unwrap();
        assert_eq!(json, r#"{"parallel":2,"udp_mbit":100}"#);
        assert_eq!(serde_json::from_str::<IperfOptions>(&json).unwrap(), udp);
        // A file written before UDP existed reads as TCP.
        let old: IperfOptions = serde_json::from_str(r#"{"parallel":8,"mss":536}"#).unwrap();
        assert_eq!(old.udp_mbit, None);
    }
}
