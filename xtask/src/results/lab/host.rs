//! What `lab.json` records of a host lab (`cargo xtask lab --lab host`):
//! this machine's kernel ([`HostInfo`]), the benchmarks ([`Benchmark`]), each
//! arm's runtime settings ([`RuntimeSettings`]) and what each run read
//! back in its namespace ([`HostRun`]).
//!
//! The host lab measures the kernel this machine runs, not a router's:
//! its arms are runtime settings (`ethtool -K lo tso off gso off`)
//! applied inside a private network namespace, its benchmarks tbench
//! (MB/s) and iperf3 (Mbit/s) over that namespace's loopback.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::metric::LabMetric;

/// The network every host run uses: the private namespace's loopback.
pub const LOOPBACK: &str = "loopback";

/// One benchmark of the host lab.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "name", rename_all = "lowercase")]
pub enum Benchmark {
    /// dbench's tbench: `clients` clients against `tbench_srv` over
    /// 127.0.0.1; its `Throughput … MB/sec` line, in MB/s ([`LabMetric::Tbench`]).
    Tbench {
        /// Client processes (`tbench N`).
        clients: u32,
    },
    /// iperf3, one TCP stream over 127.0.0.1; what the receiver got, in
    /// Mbit/s (`throughput`).
    Iperf3,
}

impl Benchmark {
    /// `tbench` / `iperf3`.
    pub fn name(self) -> &'static str {
        match self {
            Benchmark::Tbench { .. } => "tbench",
            Benchmark::Iperf3 => "iperf3",
        }
    }

    /// The metric it measures: `tbench` in MB/s, `throughput` in Mbit/s.
    pub fn metric(self) -> LabMetric {
        match self {
            Benchmark::Tbench { .. } => LabMetric::Tbench,
            Benchmark::Iperf3 => LabMetric::Throughput,
        }
    }

    /// Its setting as a metric's `kind`: `clients-2`, `tcp`.
    pub fn kind(self) -> String {
        match self {
            Benchmark::Tbench { clients } => format!("clients-{clients}"),
            Benchmark::Iperf3 => "tcp".to_string(),
        }
    }

    /// Its setting in words: `tbench, 2 clients`, `iperf3, 1 TCP stream`.
    pub fn title(self) -> String {
        match self {
            Benchmark::Tbench { clients } => format!(
                "tbench, {clients} client{}",
                if clients == 1 { "" } else { "s" }
            ),
            Benchmark::Iperf3 => "iperf3, 1 TCP stream".to_string(),
        }
    }
}

/// The machine whose kernel a host lab measured.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostInfo {
    /// `uname -r`.
    pub kernel_release: String,
    /// `/proc/version`, trimmed.
    pub proc_version: String,
    /// `uname -m`.
    pub machine: String,
    /// CPUs online.
    pub cpus: u32,
    /// First line of each tool's version output (dbench, iperf3, ethtool).
    pub tools: Vec<String>,
    /// Where the runs happened, in words: a fresh private network
    /// namespace per arm and round, loopback only.
    pub network: String,
}

/// One `ethtool -K` call of a runtime variant: a device and the features
/// to set (feature → `on` / `off`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EthtoolSetting {
    /// Network device in the lab's namespace (`lo`).
    pub dev: String,
    /// Feature name as `ethtool -K` takes it (`tso`) → `on` / `off`.
    pub features: BTreeMap<String, String>,
}

/// A runtime variant's settings, as the host lab applied them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuntimeSettings {
    /// One line from the variants file.
    pub description: String,
    /// `ethtool -K` settings, in order; none for `baseline`.
    pub ethtool: Vec<EthtoolSetting>,
}

/// What a host run read back in its namespace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostRun {
    /// The private network namespace it ran in.
    pub netns: String,
    /// Right after the run, every feature any arm of the lab sets, as
    /// `ethtool -k` showed it in the namespace: device → feature name as
    /// `-k` prints it (`tcp-segmentation-offload`) → `on` / `off`.
    pub features: BTreeMap<String, BTreeMap<String, String>>,
    /// The benchmark's result line (tbench's `Throughput … MB/sec …`), or
    /// iperf3's receiver summary in words.
    pub summary: String,
    /// The benchmark's output file, in the lab directory.
    pub log: String,
}
