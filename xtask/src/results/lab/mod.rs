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
//! Schema ([`SCHEMA`] 1):
//!
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
//! A lab run on a real router over SSH (`--lab ssh://…`, [`router`]) has
//! no `qemu` and no `initramfs` but a `router` (its host, interfaces,
//! whether each arm's image was flashed), and each boot records the
//! router's `/proc/version` against the build's banner (`kernel`). Its
//! runs have the same metrics; ns/packet is then the router's real CPU
//! time per packet, and no `-icount` keeps host load out of it.

pub mod guest;
pub mod router;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

pub use guest::{DebRecord, GuestSample, GuestWork, Initramfs, NicCounters, USER_HZ};
pub use router::{Flash, KernelCheck, RouterInfo};

use crate::util::fs::write_atomic;

/// The version of the `lab.json` layout.
pub const SCHEMA: u32 = 1;

/// File name of the record in each lab directory.
pub const FILE_NAME: &str = "lab.json";

/// Appended to a target's name for its lab kernel's build and results
/// (`brcm47xx-lab`, in `target/xtask/results/brcm47xx-lab/<variant>/`).
pub const LAB_TARGET_SUFFIX: &str = "-lab";

/// Status of a lab that ran every run it planned.
pub const COMPLETE: &str = "complete";

/// Metric name of the receiver's throughput.
pub const THROUGHPUT: &str = "throughput";
/// Unit of [`THROUGHPUT`].
pub const MBIT_PER_S: &str = "Mbit/s";
/// Metric name of the guest's busy time per forwarded packet.
pub const CPU_PER_PACKET: &str = "guest_cpu_per_packet";
/// Unit of [`CPU_PER_PACKET`].
pub const NS_PER_PACKET: &str = "ns/packet";

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
    /// GRO settings measured (`true` = on).
    pub gro: Vec<bool>,
    /// Directions measured.
    pub directions: Vec<Direction>,
    /// Warm-up runs per boot, discarded.
    pub warmup_runs_per_boot: u32,
    /// The base variant.
    pub base: String,
    /// Whether the base ran a second time as an A/A control arm.
    pub control: bool,
}

/// The emulator.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QemuInfo {
    /// The binary, e.g. `qemu-system-mipsel`.
    pub binary: String,
    /// First line of `--version`.
    pub version: String,
    /// `-M`.
    pub machine: String,
    /// `-cpu`.
    pub cpu: String,
    /// `-smp`.
    pub smp: u32,
    /// `-icount` value.
    pub icount: String,
    /// The kernel command line.
    pub append: String,
}

/// One compared kernel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Arm {
    /// Arm name: the variant, or `<base>~control` for the A/A control.
    pub name: String,
    /// The variant it boots.
    pub variant: String,
    /// Whether this is the A/A control arm.
    pub control: bool,
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
}

/// One number with its unit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Metric {
    /// [`THROUGHPUT`] or [`CPU_PER_PACKET`].
    pub name: String,
    /// The value.
    pub value: f64,
    /// [`MBIT_PER_S`] or [`NS_PER_PACKET`].
    pub unit: String,
}

/// One iperf3 run.
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
    /// Direction.
    pub direction: Direction,
    /// GRO on the guest's NICs.
    pub gro: bool,
    /// A discarded warm-up run.
    pub warmup: bool,
    /// When it started (RFC 3339).
    pub started: String,
    /// The samples: throughput (Mbit/s), guest CPU per packet (ns/packet).
    pub metrics: Vec<Metric>,
    /// Guest counters before the run.
    pub guest_before: GuestSample,
    /// Guest counters after the run.
    pub guest_after: GuestSample,
    /// Their difference.
    pub guest_work: GuestWork,
    /// The address the iperf3 server saw its client as.
    pub server_saw_peer: Option<String>,
    /// The client's `iperf3 --json` report, unchanged.
    pub iperf3_client: serde_json::Value,
}

/// The whole record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LabRecord {
    /// [`SCHEMA`].
    pub schema: u32,
    /// `running`, `complete`, or `failed: <reason>`.
    pub status: String,
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
    /// The emulator; `None` when the lab measured a real router
    /// ([`LabRecord::router`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub qemu: Option<QemuInfo>,
    /// The guest's userspace; `None` on a real router.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initramfs: Option<Initramfs>,
    /// The real router measured over SSH (`--lab ssh://…`); `None` in QEMU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub router: Option<RouterInfo>,
    /// The kernels compared.
    pub arms: Vec<Arm>,
    /// Every boot.
    pub boots: Vec<BootRecord>,
    /// Every run.
    pub runs: Vec<RunRecord>,
}

impl LabRecord {
    /// Writes `dir/lab.json` atomically.
    pub fn write(&self, dir: &Path) -> Result<()> {
        let mut json = serde_json::to_string_pretty(self)?;
        json.push('\n');
        write_atomic(&dir.join(FILE_NAME), json.as_bytes())
    }

    /// Reads `dir/lab.json`.
    pub fn read(dir: &Path) -> Result<LabRecord> {
        let file = dir.join(FILE_NAME);
        let text = std::fs::read_to_string(&file)
            .with_context(|| format!("reading {}", file.display()))?;
        serde_json::from_str(&text).with_context(|| format!("{}: not a lab.json", file.display()))
    }

    /// The measured (not warm-up) values of `metric` for `arm`, `direction`
    /// and `gro`, in run order.
    pub fn samples(&self, arm: &str, direction: Direction, gro: bool, metric: &str) -> Vec<f64> {
        self.runs
            .iter()
            .filter(|r| !r.warmup && r.arm == arm && r.direction == direction && r.gro == gro)
            .flat_map(|r| r.metrics.iter().filter(|m| m.name == metric))
            .map(|m| m.value)
            .collect()
    }
}
