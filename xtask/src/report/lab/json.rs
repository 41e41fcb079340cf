//! The lab's part of the JSON format: one [`JsonLab`] per lab run, its
//! comparisons' metrics in the report's [`JsonMetric`] form (with
//! `stats`), and every run's values.

use serde::Serialize;

use super::{LabReport, Role};
use crate::report::json::{metric, JsonMetric};
use crate::report::{Report, Style};
use crate::results::lab::{
    Benchmark, CacheModelInfo, Condition, Direction, HostInfo, QemuInfo, RouterInfo,
    RuntimeSettings, Settings,
};

/// One lab run.
#[derive(Debug, Serialize)]
pub struct JsonLab {
    /// The router target (`brcm47xx`).
    pub target: String,
    /// Its lab kernels' results directory name (`brcm47xx-lab`).
    pub lab_target: String,
    /// The `lab.json` read, relative to the workspace root when inside it.
    pub lab_json: String,
    /// `complete`, `running` or `failed: …`.
    pub status: String,
    /// When the lab started (RFC 3339).
    pub started: String,
    /// How it ran, as `lab.json` records it.
    pub settings: Settings,
    /// The emulator (the QEMU lab).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub qemu: Option<QemuInfo>,
    /// The real router measured over SSH (the SSH lab).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub router: Option<RouterInfo>,
    /// This machine's kernel (the host lab).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<HostInfo>,
    /// The L1 cache model (`lab --cache-model`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_model: Option<CacheModelInfo>,
    /// The base arm.
    pub base: String,
    /// The kernels compared.
    pub arms: Vec<JsonArm>,
    /// The base against each other arm, the A/A control first.
    pub comparisons: Vec<JsonLabComparison>,
    /// Every arm's values per (family, direction, GRO).
    pub series: Vec<JsonSeries>,
    /// Notes on this run.
    pub notes: Vec<String>,
    /// What each metric can and cannot show.
    pub caveats: Vec<String>,
}

/// One arm.
#[derive(Debug, Serialize)]
pub struct JsonArm {
    /// Arm name.
    pub name: String,
    /// The variant it booted.
    pub variant: String,
    /// Whether it is the A/A control.
    pub control: bool,
    /// sha256 of the booted image (the QEMU lab).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image_sha256: Option<String>,
    /// sha256 of the lab kernel's `.config` (the QEMU lab).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config_sha256: Option<String>,
    /// vmlinux text, bytes (the QEMU lab).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vmlinux_text: Option<u64>,
    /// The runtime settings it applied (the host lab).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runtime: Option<RuntimeSettings>,
}

/// The base against one arm.
#[derive(Debug, Serialize)]
pub struct JsonLabComparison {
    /// The other arm.
    pub arm: String,
    /// `control` (the A/A noise floor) or `variant`.
    pub role: &'static str,
    /// Its metrics: family `throughput` (Mbit/s) or `guest_cpu_per_packet`
    /// (ns/packet), with the cache model `guest_insns_per_packet`
    /// (insns/packet), `l1i_misses_per_packet` and `l1d_misses_per_packet`
    /// (misses/packet), kind the GRO setting (`gro-on`), item the direction
    /// (`lan-to-wan`); in a host lab `tbench` (MB/s) or `throughput`
    /// (Mbit/s), kind the benchmark's setting (`clients-2`), item
    /// `loopback`; each with `stats`.
    pub metrics: Vec<JsonMetric>,
}

/// One series' values.
#[derive(Debug, Serialize)]
pub struct JsonSeries {
    /// Family name.
    pub family: String,
    /// Unit of the values (Mbit/s, ns/packet, MB/s, insns/packet,
    /// misses/packet).
    pub unit: String,
    /// Direction (the QEMU lab).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub direction: Option<Direction>,
    /// GRO on (`true`) or off, as `lab.json` writes it (the QEMU lab).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gro: Option<bool>,
    /// The benchmark (the host lab).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bench: Option<Benchmark>,
    /// Per arm, its values in run order.
    pub arms: Vec<JsonArmValues>,
}

/// One arm's values in a series.
#[derive(Debug, Serialize)]
pub struct JsonArmValues {
    /// Arm name.
    pub arm: String,
    /// Values in run order, in the series' unit.
    pub values: Vec<f64>,
}

/// `lab` as a [`JsonLab`].
pub fn lab(report: &Report, lab: &LabReport, style: &Style) -> JsonLab {
    JsonLab {
        target: lab.target.clone(),
        lab_target: lab.lab_target.clone(),
        lab_json: report.display_path(&lab.dir.join(crate::results::lab::FILE_NAME)),
        status: lab.status.to_string(),
        started: lab.started.clone(),
        settings: lab.settings.clone(),
        qemu: lab.machine.qemu().cloned(),
        router: lab.machine.router().cloned(),
        host: lab.machine.host().cloned(),
        cache_model: lab.cache_model.clone(),
        base: lab.base.clone(),
        arms: lab
            .arms
            .iter()
            .map(|a| JsonArm {
                name: a.name.clone(),
                variant: a.variant.clone(),
                control: a.control,
                image_sha256: a.kernel.as_ref().map(|k| k.image_sha256.clone()),
                config_sha256: a.kernel.as_ref().map(|k| k.config_sha256.clone()),
                vmlinux_text: a.kernel.as_ref().map(|k| k.vmlinux_text),
                runtime: a.runtime.clone(),
            })
            .collect(),
        comparisons: lab
            .comparisons
            .iter()
            .map(|c| JsonLabComparison {
                arm: c.arm.clone(),
                role: match c.role {
                    Role::Control => "control",
                    Role::Variant => "variant",
                },
                metrics: c
                    .families
                    .iter()
                    .flat_map(|f| f.metrics.iter().map(move |m| metric(f, m, style)))
                    .collect(),
            })
            .collect(),
        series: lab
            .series
            .iter()
            .map(|s| JsonSeries {
                family: s.family.clone(),
                unit: s.unit.clone(),
                direction: match s.condition {
                    Condition::Forward { direction, .. } => Some(direction),
                    Condition::Bench { .. } => None,
                },
                gro: match s.condition {
                    Condition::Forward { gro, .. } => Some(gro.is_on()),
                    Condition::Bench { .. } => None,
                },
                bench: match s.condition {
                    Condition::Forward { .. } => None,
                    Condition::Bench { bench } => Some(bench),
                },
                arms: s
                    .arms
                    .iter()
                    .map(|(arm, values)| JsonArmValues {
                        arm: arm.clone(),
                        values: values.clone(),
                    })
                    .collect(),
            })
            .collect(),
        notes: lab.notes.clone(),
        caveats: lab.caveats(),
    }
}
