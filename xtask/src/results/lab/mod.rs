//! `lab.json`: every run of one `cargo xtask lab` invocation, raw. The
//! lab (`cargo xtask lab`) writes these types and the size report reads
//! them, so both stages share one schema without the report depending on
//! the lab.
//!
//! Written to `target/xtask/lab/<target>/<started>-<pid>/lab.json` after
//! every run (atomically), so an interrupted lab keeps what it measured;
//! `status` says whether it finished. Next to it: one console log and one
//! QEMU log per boot, and each run's iperf3 reports.
//!
//! Schema ([`SCHEMA`] 3; schemas 1 and 2 read too, [`schema`]):
//!
//! * `status`: `{"state": "running", "pid": …}` (the lab's process, so
//!   that a later look can tell a live lab from a killed one),
//!   `{"state": "complete"}` or `{"state": "failed", "reason": …}`
//!   ([`Status`]).
//! * `machine`: what ran the kernels, one of `{"kind": "qemu", "qemu":
//!   …, "initramfs": …}`, `{"kind": "router", "router": …}`, `{"kind":
//!   "host", "host": …}` ([`MachineInfo`]); and `topology`, the QEMU
//!   lab's network (`nat-router`).
//! * `settings`: runs per (arm, direction, GRO), seconds per run, the GRO
//!   settings and directions, warm-up runs per boot, the base variant and
//!   whether an A/A control arm ran.
//! * `arms`: the kernels compared. The base appears twice when the A/A
//!   control is on (`baseline` and `baseline~control`, `control: true`),
//!   booting the same image, so the spread between two identical kernels
//!   is measured alongside the difference between variants.
//! * `boots`: one per (round, arm): wall seconds from starting QEMU to the
//!   router being ready, the guest's uptime then, the console log's name.
//! * `runs`: in the order they ran (`index`); rounds interleave the arms
//!   (A B A B …). A run has `metrics`, each `{name, value, unit}`:
//!   `throughput` in `Mbit/s` and `guest_cpu_per_packet` in `ns/packet`
//!   (see [`guest`]); warm-up runs have `warmup: true` and are not
//!   samples. The raw inputs stay: the guest's counters before and after,
//!   the client's full iperf3 JSON, the address the server saw (the
//!   masquerade's).
//!
//! A host lab (`cargo xtask lab --lab host`, [`host`]) measures this
//! machine's kernel instead: `target` and `lab_target` are `host`, the
//! machine is `host` (`uname -r`, `/proc/version`), an arm
//! is a runtime variant (`runtime`: its `ethtool -K` settings) rather than
//! a kernel, `settings.benches` lists the benchmarks, and a run has a
//! `bench` instead of `direction` and `gro`, the `tbench` metric in `MB/s`
//! or `throughput` in `Mbit/s`, and what `ethtool -k` read back in its
//! namespace (`host`). `boots` is empty. Files of the QEMU lab read and
//! write as before.
//!
//! A lab run on a real router over SSH (`--lab ssh://…`, [`router`]) has
//! the machine `router` (its host, interfaces,
//! whether each arm's image was flashed), and each boot records the
//! router's `/proc/version` against the build's banner (`kernel`). Its
//! runs have the same metrics; ns/packet is then the router's real CPU
//! time per packet, and no `-icount` keeps host load out of it.
//!
//! A QEMU lab run with the cache model (`--cache-model`, [`cache`]) has a
//! `cache_model` (the modelled L1 geometry, the plugin and the QEMU
//! source it was built against), and each run the plugin's counters
//! before and after it (`cache_model`) and three more metrics:
//! `guest_insns_per_packet` in `insns/packet`, `l1i_misses_per_packet`
//! and `l1d_misses_per_packet` in `misses/packet`. On a target with
//! `[lab.timing]` the model also costs each run ([`core_model`]):
//! `cache_model.timing` holds the table, each run's `cache_model.core` the
//! branch and L2 counts and the modelled cycles, and its metrics add
//! `modelled_cycles_per_packet` (`cycles/packet`),
//! `modelled_packets_per_second` (`packets/s`), `modelled_throughput`
//! (`Mbit/s`), `taken_branches_per_packet`, `mispredicts_per_packet` and
//! `l2_misses_per_packet`. Files without them read as before.
//!
//! Every run also records its wall time on this machine (`wall_seconds`)
//! and, in the forwarding lab, the steps it went into (`wall_steps`,
//! [`timing`]); `bench lab` reads them. Older files have neither and read
//! as before.

pub mod cache;
pub mod check;
pub mod core_model;
pub mod counters;
pub mod gro;
pub mod guest;
pub mod host;
pub mod iperf;
pub mod machine;
pub mod metric;
pub mod per_cpu;
pub mod router;
pub mod schema;
pub mod status;
pub mod steering;
pub mod timing;
pub mod topology;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

pub use cache::{CacheCounters, CacheGeometry, CacheModelInfo, CacheRun, CacheWork};
pub use core_model::{CoreCounters, CoreTiming, CoreWork};
pub use gro::Gro;
pub use guest::{BuiltProgram, DebRecord, GuestSample, GuestWork, Initramfs, NicCounters, USER_HZ};
pub use host::{Benchmark, EthtoolSetting, HostInfo, HostRun, RuntimeSettings, LOOPBACK};
pub use iperf::IperfOptions;
pub use machine::{MachineInfo, QemuInfo};
pub use metric::{LabMetric, MetricValue};
pub use router::{Flash, KernelCheck, RouterInfo};
pub use status::Status;
pub use timing::WallStep;
pub use topology::TopologyName;

use crate::util::fs::{read_limited, write_atomic, FileLimit};

/// The version of the `lab.json` layout this xtask writes; it reads
/// every one from [`schema::OLDEST`] ([`schema`]).
pub const SCHEMA: u32 = 3;

/// File name of the record in each lab directory.
pub const FILE_NAME: &str = "lab.json";

/// The largest `lab.json` read: a 10-round lab of three arms is about
/// 1.5 MB, so 64 MiB leaves room for long labs and none for a device.
pub const MAX_FILE_BYTES: u64 = 64 << 20;

/// Appended to a target's name for its lab kernel's build and results
/// (`brcm47xx-lab`, in `target/xtask/results/brcm47xx-lab/<variant>/`).
pub const LAB_TARGET_SUFFIX: &str = "-lab";

/// Traffic direction of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Direction {
    /// Upload: the LAN client sends (iperf3 without `-R`).
    LanToWan,
    /// Download: the WAN server sends (iperf3 `-R`).
    WanToLan,
}

impl Direction {
    /// Both, upload first.
    pub const BOTH: [Direction; 2] = [Direction::LanToWan, Direction::WanToLan];

    /// `lan-to-wan` / `wan-to-lan`.
    pub fn name(self) -> &'static str {
        match self {
            Direction::LanToWan => "lan-to-wan",
            Direction::WanToLan => "wan-to-lan",
        }
    }
}

/// How the lab ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    /// Measured runs per (arm, direction, GRO setting).
    pub runs: u32,
    /// Seconds per iperf3 run.
    pub duration_seconds: u32,
    /// GRO settings measured (written `true` for on).
    pub gro: Vec<Gro>,
    /// Directions measured.
    pub directions: Vec<Direction>,
    /// Warm-up runs per boot, discarded.
    pub warmup_runs_per_boot: u32,
    /// The base variant.
    pub base: String,
    /// Whether the base ran a second time as an A/A control arm.
    pub control: bool,
    /// The host lab's benchmarks, in the order each session runs them
    /// (none in the QEMU lab).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub benches: Vec<Benchmark>,
    /// iperf3's options of every forwarding run; left out when they are
    /// the defaults (one stream, the kernel's MSS), as every older file.
    #[serde(default, skip_serializing_if = "IperfOptions::is_default")]
    pub iperf3: IperfOptions,
    /// How many labs ran at the same time on this machine, this one
    /// included, when more than one (`cargo xtask experiment` runs the
    /// labs of its targets side by side within `-j`): its Mbit/s, tbench
    /// MB/s and UDP loss were measured under that load. Left out when the
    /// lab ran alone, as in every older file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labs_at_once: Option<u32>,
    /// The lab's whole-number options that have no field of their own
    /// (the MTU of the lab's links, `mtu`), by their experiment-file key
    /// (`lab::request::option`); left out when none is set, as in every
    /// older file.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub options: std::collections::BTreeMap<String, u32>,
}

impl Settings {
    /// Every condition a session measures, in report order: each GRO
    /// setting, then each direction (the QEMU lab); each benchmark (the
    /// host lab).
    pub fn conditions(&self) -> Vec<Condition> {
        let mut out: Vec<Condition> = self
            .gro
            .iter()
            .flat_map(|&gro| {
                self.directions
                    .iter()
                    .map(move |&direction| Condition::Forward { direction, gro })
            })
            .collect();
        out.extend(self.benches.iter().map(|&bench| Condition::Bench { bench }));
        out
    }
}

/// What one run measured under, besides its arm: traffic forwarded
/// through a router in one direction with GRO on or off (the QEMU lab), or
/// one benchmark on this machine (the host lab). In `lab.json` its fields
/// sit in the run itself (`direction` and `gro`, or `bench`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Condition {
    /// iperf3 through the router.
    Forward {
        /// Traffic direction.
        direction: Direction,
        /// GRO on the router's NICs (written `true` for on).
        gro: Gro,
    },
    /// A benchmark over the host lab's loopback.
    Bench {
        /// Which, with its setting.
        bench: Benchmark,
    },
}

impl Condition {
    /// `lan-to-wan GRO on`, `tbench, 2 clients`: for messages.
    pub fn describe(&self) -> String {
        match self {
            Condition::Forward { direction, gro } => {
                format!("{} GRO {}", direction.name(), gro.word())
            }
            Condition::Bench { bench } => bench.title(),
        }
    }
}

/// One compared arm: a lab kernel (the QEMU lab) or runtime settings
/// (the host lab).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Arm {
    /// Arm name: the variant, or `<base>~control` for the A/A control.
    pub name: String,
    /// The variant it boots or applies.
    pub variant: String,
    /// Whether this is the A/A control arm.
    pub control: bool,
    /// The lab kernel it boots (the QEMU lab); its fields sit in the arm.
    #[serde(flatten)]
    pub kernel: Option<ArmKernel>,
    /// The runtime settings it applies (the host lab).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime: Option<RuntimeSettings>,
    /// The topology it boots when not the lab's (the mesh's reference
    /// arm "without batman-adv": `mesh-bridged`, the base's kernel).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topology: Option<TopologyName>,
}

/// The lab kernel an arm of the QEMU lab boots.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArmKernel {
    /// The lab kernel's results directory (its `result.json`).
    pub results_dir: PathBuf,
    /// The booted image.
    pub image: PathBuf,
    /// sha256 of the booted image.
    pub image_sha256: String,
    /// sha256 of the lab kernel's `.config`.
    pub config_sha256: String,
    /// vmlinux text size in bytes.
    pub vmlinux_text: u64,
}

/// One boot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BootRecord {
    /// Arm name.
    pub arm: String,
    /// Round (0-based).
    pub round: u32,
    /// Wall seconds from starting QEMU to the router being ready.
    pub boot_seconds: f64,
    /// The guest's uptime (guest seconds) when ready.
    pub guest_uptime_at_ready: Option<f64>,
    /// Console log file name, in the lab directory.
    pub console_log: String,
    /// QEMU's command line, program first (taps and socket are per boot);
    /// empty on a real router.
    #[serde(default)]
    pub qemu_argv: Vec<String>,
    /// On a real router: the kernel it ran, as its `/proc/version` said,
    /// against the build's banner; `None` in QEMU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<KernelCheck>,
    /// Where `boot_seconds` went in QEMU ([`timing::BOOT_CONSOLE`],
    /// [`timing::BOOT_TAPS`], [`timing::BOOT_READY`]); empty on a real
    /// router and in older files.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub wall_steps: Vec<WallStep>,
    /// The measured router's default egress qdisc as its kernel reported
    /// it (`/proc/sys/net/core/default_qdisc`: `fq_codel` with OpenWrt's
    /// `CONFIG_DEFAULT_FQ_CODEL`), which every single-queue NIC gets;
    /// absent before schema 3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub qdisc: Option<String>,
}

/// One run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// Position in the order runs happened (0-based, warm-ups included).
    pub index: u32,
    /// Arm name.
    pub arm: String,
    /// The arm's variant.
    pub variant: String,
    /// Round (0-based).
    pub round: u32,
    /// Direction and GRO setting, or the benchmark.
    #[serde(flatten)]
    pub condition: Condition,
    /// A discarded warm-up run.
    pub warmup: bool,
    /// When it started (RFC 3339).
    pub started: String,
    /// The samples: throughput (Mbit/s), guest CPU per packet (ns/packet);
    /// tbench (MB/s).
    pub metrics: Vec<MetricValue>,
    /// The guest's counters and what the server saw (the QEMU lab).
    #[serde(flatten)]
    pub guest: Option<GuestRun>,
    /// The client's `iperf3 --json` report, unchanged (iperf3 runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iperf3_client: Option<serde_json::Value>,
    /// What the run read back in its namespace (the host lab).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<HostRun>,
    /// The cache model's counters around the run (`--cache-model`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_model: Option<CacheRun>,
    /// Wall seconds the whole run took on this machine, from its first
    /// step to its record; `None` in files written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wall_seconds: Option<f64>,
    /// Where `wall_seconds` went, step by step ([`timing`]); empty in older
    /// files.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub wall_steps: Vec<WallStep>,
}

/// What a run of the QEMU lab read from the guest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GuestRun {
    /// Guest counters before the run.
    pub guest_before: GuestSample,
    /// Guest counters after the run.
    pub guest_after: GuestSample,
    /// Their difference.
    pub guest_work: GuestWork,
    /// The address the iperf3 server saw its client as.
    pub server_saw_peer: Option<String>,
}

/// The whole record. It reads from every schema this xtask knows
/// ([`schema::read`]) and writes [`SCHEMA`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "serde_json::Value")]
pub struct LabRecord {
    /// [`SCHEMA`] (a record read from an older file is upgraded).
    pub schema: u32,
    /// Running (with the lab's pid), complete, or failed with the reason.
    pub status: Status,
    /// The target (`targets/<t>.toml`).
    pub target: String,
    /// The lab kernel's target name (`<target>-lab`), its results' directory.
    pub lab_target: String,
    /// When the lab started (RFC 3339).
    pub started: String,
    /// When it ended.
    pub finished: Option<String>,
    /// How it ran.
    pub settings: Settings,
    /// What ran the kernels: QEMU, a real router, this machine.
    pub machine: MachineInfo,
    /// The QEMU lab's topology (`nat-router`); `None` elsewhere and in
    /// schema-1 files (which were all `nat-router`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topology: Option<TopologyName>,
    /// The L1 cache model, when the lab ran with `--cache-model`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_model: Option<CacheModelInfo>,
    /// The kernels compared.
    pub arms: Vec<Arm>,
    /// Every boot.
    pub boots: Vec<BootRecord>,
    /// Every run.
    pub runs: Vec<RunRecord>,
    /// Runs that stalled and were run again in a fresh boot of their arm
    /// (the lab's runner does so at most once per session); empty, and
    /// absent from the file, when none did. Older files have none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub redone: Vec<RedoneRun>,
}

/// The most runs a `lab.json` may list as redone: the lab's runner stops
/// after three stalls.
pub const MAX_REDONE: usize = 3;

/// A run the lab could not finish because the machine stopped moving
/// packets (QEMU's emulated e1000 on two CPUs did), or a boot
/// whose guest hung (one on two CPUs stopped after `/init` started): it
/// left no [`RunRecord`], its arm booted again, and the session went on
/// afresh after a warm-up of its own. A run's raw files stay under its
/// `index`; a boot's console log beside the others of its arm and round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RedoneRun {
    /// Arm name.
    pub arm: String,
    /// Round (0-based).
    pub round: u32,
    /// What the run measured under; `None` for a boot that hung.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub condition: Option<Condition>,
    /// Whether it was the session's warm-up.
    pub warmup: bool,
    /// The stalled run's position among all runs (its raw files'
    /// `run<index>-…`; the next run takes the next index); `None` for a
    /// boot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<u32>,
    /// Why, in one line (the console's tail is in the boot's log).
    pub reason: String,
}

impl LabRecord {
    /// Writes `dir/lab.json` atomically, as schema [`SCHEMA`].
    pub fn write(&self, dir: &Path) -> Result<()> {
        anyhow::ensure!(
            self.schema == SCHEMA,
            "a lab record claims schema {}, but this xtask writes schema {SCHEMA}",
            self.schema
        );
        let mut json = serde_json::to_string_pretty(self)?;
        json.push('\n');
        write_atomic(&dir.join(FILE_NAME), json.as_bytes())
    }

    /// Reads `dir/lab.json`. Errors name the file: missing, not a regular
    /// file (a FIFO or a device would hang or fill memory), larger than
    /// [`MAX_FILE_BYTES`], or not a lab record.
    pub fn read(dir: &Path) -> Result<LabRecord> {
        let file = dir.join(FILE_NAME);
        let text = read_limited(
            &file,
            FileLimit {
                what: FILE_NAME,
                max_bytes: MAX_FILE_BYTES,
            },
            "run the lab again, or pass another lab directory",
        )?;
        serde_json::from_str(&text).with_context(|| format!("{}: not a lab.json", file.display()))
    }

    /// The measured (not warm-up) values of `metric` for `arm` under
    /// `condition`, in run order.
    pub fn samples(&self, arm: &str, condition: Condition, metric: &str) -> Vec<f64> {
        self.runs
            .iter()
            .filter(|r| !r.warmup && r.arm == arm && r.condition == condition)
            .flat_map(|r| r.metrics.iter().filter(|m| m.name == metric))
            .map(|m| m.value)
            .collect()
    }
}

#[cfg(test)]
mod tests;
