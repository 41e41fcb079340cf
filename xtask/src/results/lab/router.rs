//! What `lab.json` records about a real router measured over SSH
//! (`cargo xtask lab --lab ssh://root@HOST --lab-file FILE`): where it
//! was, which of its interfaces were read and switched, whether each arm's
//! image was flashed, and which kernel each boot really ran.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::metric::{LabMetric, MetricValue};

/// Whether the lab flashed each arm's image onto the router.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Flash {
    /// Copied (`scp -O`) and installed with `sysupgrade -n`, then rebooted.
    Sysupgrade,
    /// `--no-flash`: the kernel the router already ran was measured.
    NotFlashed,
}

impl Flash {
    /// `sysupgrade -n` or `not flashed (--no-flash)`, for messages.
    pub fn describe(self) -> &'static str {
        match self {
            Flash::Sysupgrade => "sysupgrade -n",
            Flash::NotFlashed => "not flashed (--no-flash)",
        }
    }
}

/// The real router of a lab run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RouterInfo {
    /// How the lab reached it: `ssh`.
    pub access: String,
    /// `user@host` as ssh was given it.
    pub destination: String,
    /// The host name or address.
    pub host: String,
    /// TCP port of its SSH server.
    pub port: u16,
    /// The router's LAN interface (its counters).
    pub lan_interface: String,
    /// The router's WAN interface (its counters).
    pub wan_interface: String,
    /// The interfaces GRO was switched on (`ethtool -K … gro`).
    pub gro_interfaces: Vec<String>,
    /// The router's WAN address: what the WAN side saw after masquerade.
    pub wan_address: String,
    /// Whether each arm's image was flashed.
    pub flash: Flash,
    /// The lab file the run was described by.
    pub lab_file: PathBuf,
    /// sha256 of the lab file, lowercase hex.
    pub lab_file_sha256: String,
    /// `perf --version` on the router (OpenWrt's `perf` package), whose
    /// `perf stat -a` each run records (`router_*_per_packet`); `None`:
    /// the router has no perf, and the runs record its `/proc/stat` time
    /// only. Left out by files written before the lab read it.
    #[serde(default)]
    pub perf: Option<String>,
}

/// The kernel one boot of a real router ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelCheck {
    /// The router's `/proc/version`, without its trailing newline.
    pub proc_version: String,
    /// The `Linux version …` banner in the arm's built `vmlinux` (the
    /// same text `/proc/version` prints), when the build has one.
    pub built_banner: Option<String>,
    /// Whether the two are equal; `None` without a built banner.
    pub matches_build: Option<bool>,
    /// Whether this boot followed a flash of the arm's image.
    pub flash: Flash,
}

/// The events a real router's `perf stat -a` counts over each run
/// (`lab::ssh::perf`), with the metric each one's count per packet is.
pub const ROUTER_EVENTS: [(&str, LabMetric); 4] = [
    ("cycles", LabMetric::RouterCyclesPerPacket),
    ("instructions", LabMetric::RouterInsnsPerPacket),
    ("branch-misses", LabMetric::RouterBranchMissesPerPacket),
    ("L1-icache-load-misses", LabMetric::RouterL1iMissesPerPacket),
];

/// Each counted event's count per forwarded packet, of `packets`; none
/// without packets.
pub fn router_counter_metrics(counts: &BTreeMap<String, u64>, packets: u64) -> Vec<MetricValue> {
    if packets == 0 {
        return Vec::new();
    }
    ROUTER_EVENTS
        .iter()
        .filter_map(|(event, metric)| {
            let count = counts.get(*event)?;
            Some(MetricValue::new(*metric, *count as f64 / packets as f64))
        })
        .collect()
}
