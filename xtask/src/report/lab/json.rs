//! The lab's part of the JSON format: one [`JsonLab`] per lab run, its
//! comparisons' metrics in the report's [`JsonMetric`] form (with
//! `stats`), and every run's values.

use serde::Serialize;

use super::{verdict_name, LabReport, Role};
use crate::report::model::{Family, Metric, Number, Samples, Stats};
use crate::report::style::{display_path, Style};
use crate::results::lab::{
    Benchmark, CacheModelInfo, Condition, Direction, HostInfo, QemuInfo, RouterInfo,
    RuntimeSettings, Settings,
};
use std::path::Path;

/// One metric of a family other than sizes.
#[derive(Debug, Serialize)]
pub struct JsonMetric {
    /// Family name (`throughput`).
    pub family: String,
    /// Unit of every number below except `percent` (`Mbit/s`).
    pub unit: String,
    /// Group within the family.
    pub kind: String,
    /// What was measured.
    pub item: String,
    /// Row label.
    pub label: String,
    /// The base's samples, in `unit`.
    pub base_samples: Samples,
    /// The variant's samples, in `unit`.
    pub variant_samples: Samples,
    /// The base's value (mean of its samples).
    pub before: Number,
    /// The variant's value (mean of its samples).
    pub after: Number,
    /// `after - before`.
    pub delta: Number,
    /// Percent change, unrounded; `null` when `before` is 0 and `after` not.
    pub percent: Option<f64>,
    /// The rounded text, e.g. `+0.92%`.
    pub percent_text: String,
    /// Sample standard deviation of the base's samples; `null` for one.
    pub base_stddev: Option<f64>,
    /// Sample standard deviation of the variant's samples; `null` for one.
    pub variant_stddev: Option<f64>,
    /// The statistics of a metric measured N times per side (the runtime
    /// lab's); left out for others.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stats: Option<JsonStats>,
}

/// A metric's statistics ([`crate::measure::stats::compare`]).
#[derive(Debug, Serialize)]
pub struct JsonStats {
    /// Samples of the base.
    pub base_n: usize,
    /// Samples of the variant.
    pub variant_n: usize,
    /// The base's standard deviation in percent of its mean (LKP's `%sd`).
    pub base_sd_percent: f64,
    /// The variant's standard deviation in percent of its mean.
    pub variant_sd_percent: f64,
    /// Welch's t 95 % interval of the %change, percent; `null` with fewer
    /// than 2 samples on a side.
    pub interval: Option<JsonInterval>,
    /// Welch's t-test p, two-sided; `null` without variance.
    pub welch_p: Option<f64>,
    /// Mann–Whitney U p, two-sided.
    pub mann_whitney_p: Option<f64>,
    /// The smallest p Mann–Whitney can reach with these sample counts.
    pub mann_whitney_min_p: f64,
    /// The A/A control's |%change| of this metric, percent; `null` without
    /// a control.
    pub noise_floor_percent: Option<f64>,
    /// Runs per side that would find a change of this |%change| (80 %
    /// power, at the two sides' pooled spread); for the A/A control, of
    /// the noise floor's size. `null` for no change, one run a side, or
    /// more than 100000.
    pub runs_for_change: Option<usize>,
    /// `significant` (Welch's interval excludes 0, Mann–Whitney p < 0.05
    /// and |%change| exceeds the noise floor), `within-noise`,
    /// `interval-contains-zero`, `tests-disagree`, `too-few-samples` or
    /// `below-resolution` (the means differ by less than the metric's
    /// recorded precision allows: no change);
    /// for the A/A control itself, against a floor of 0.
    pub verdict: &'static str,
}

/// A confidence interval in percent.
#[derive(Debug, Serialize)]
pub struct JsonInterval {
    /// Lower bound, percent.
    pub low: f64,
    /// Upper bound, percent.
    pub high: f64,
}

fn stats(s: &Stats) -> JsonStats {
    let c = &s.comparison;
    JsonStats {
        base_n: c.base.n,
        variant_n: c.variant.n,
        base_sd_percent: c.base.relative_sd_percent(),
        variant_sd_percent: c.variant.relative_sd_percent(),
        interval: c.interval.map(|i| JsonInterval {
            low: i.low,
            high: i.high,
        }),
        welch_p: c.welch_p,
        mann_whitney_p: c.mann_whitney_p,
        mann_whitney_min_p: c.mann_whitney_min_p,
        noise_floor_percent: s.noise_floor,
        runs_for_change: c.runs_for_change(),
        verdict: verdict_name(s, Role::Variant),
    }
}

/// One metric of any family but sizes (the lab's; `size-report`'s
/// other families too), as [`JsonMetric`].
pub fn metric(family: &Family, m: &Metric, style: &Style) -> JsonMetric {
    JsonMetric {
        family: family.name.clone(),
        unit: family.unit.clone(),
        kind: m.kind.clone(),
        item: m.item.clone(),
        label: m.label.clone(),
        base_samples: m.base().clone(),
        variant_samples: m.variant().clone(),
        before: m.before(),
        after: m.after(),
        delta: m.delta(),
        percent: m.percent(),
        percent_text: m.percent_text(style.decimal()),
        base_stddev: m.base().stddev(),
        variant_stddev: m.variant().stddev(),
        stats: m.stats().map(stats),
    }
}

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
pub fn lab(root: &Path, lab: &LabReport, style: &Style) -> JsonLab {
    JsonLab {
        target: lab.target.clone(),
        lab_target: lab.lab_target.clone(),
        lab_json: display_path(root, &lab.dir.join(crate::results::lab::FILE_NAME)),
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
