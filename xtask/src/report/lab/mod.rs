//! The runtime lab in the size report: what one `lab.json`
//! ([`crate::results::lab`]) measured, as metric families of the report
//! model ([`super::model::Family`]), with their statistics.
//!
//! * [`find`]: which lab runs a report shows (the newest complete one per
//!   target, or `--lab-run DIR`).
//! * [`LabReport`]: one lab run. Its [`Series`] hold every arm's samples
//!   per (family, direction, GRO setting) in run order, for the per-run
//!   tables and the SVG's points; its [`LabComparison`]s compare the base
//!   with the A/A control (the noise floor) and with each variant.
//! * Families: one per lab metric the report shows ([`families`], in
//!   [`crate::results::lab::LabMetric::ALL`]'s order, with its unit and title): throughput in
//!   Mbit/s and guest CPU in ns/packet, and with the cache model (`lab
//!   --cache-model`) instructions and L1 misses per packet, and on a
//!   target with `[lab.timing]` the core model's cycles, packets/s and
//!   Mbit/s at the SoC's clock with the counts behind them; a metric's `kind` is the GRO setting (`gro-on`, `gro-off`),
//!   its `item` the direction (`lan-to-wan`, `wan-to-lan`), each sample
//!   one measured run (warm-ups left out). A host lab (`--lab host`)
//!   measures this machine's kernel instead: tbench in MB/s and
//!   iperf3's throughput in Mbit/s, `kind` the benchmark's setting
//!   (`clients-2`, `tcp`), `item` `loopback`, its arms runtime variants.
//! * Statistics: [`crate::measure::stats::compare`] through
//!   [`super::model::LabMetric::with_stats`]; a variant's change is significant only when
//!   Welch's t 95 % interval of its %change excludes 0, Mann–Whitney
//!   agrees (p < 0.05) and |%change| exceeds the A/A control's |%change|
//!   of the same metric (its noise floor). The control's lines say how
//!   many runs per side would see a change of the floor's size.
//! * [`text`], [`mail`], [`markdown`], [`json`], [`svg`]: the lab's part of each
//!   format (CSV rows come from the model directly).

pub mod agreement;
pub mod calibrate;
pub mod comparison;
pub mod condition;
pub mod cpus;
pub mod describe;
pub mod find;
pub mod json;
pub mod mail;
pub mod markdown;
pub mod mesh;
pub mod notes;
pub mod series;
pub mod shown;
pub mod svg;
pub mod table;
pub mod text;
pub mod verdict;

use std::path::PathBuf;

use anyhow::Result;

use crate::measure::stats::Verdict;
use crate::results::lab::{
    check, Arm, CacheModelInfo, LabRecord, MachineInfo, Settings, Status, TopologyName,
};

pub use crate::measure::stats::runs_for_mann_whitney;
pub use comparison::{LabComparison, Role, ALPHA};
pub use condition::{
    condition_item, condition_item_title, condition_kind, condition_kind_title, direction_title,
    Gro,
};
pub use notes::HOST_NOTE;
pub use series::Series;
pub use shown::{families, family_title, lkp_name, CORE_MODEL_CAPTION};
pub use verdict::{
    interval_text, p_text, percent_text, runs_needed_text, verdict_name, verdict_text,
};

/// One lab run in the report.
#[derive(Debug, Clone, PartialEq)]
pub struct LabReport {
    /// The lab directory, holding `lab.json`.
    pub dir: PathBuf,
    /// The router target (`brcm47xx`).
    pub target: String,
    /// Its lab kernel's results directory name (`brcm47xx-lab`).
    pub lab_target: String,
    /// Complete, running or failed.
    pub status: Status,
    /// When the lab started (RFC 3339).
    pub started: String,
    /// How it ran.
    pub settings: Settings,
    /// What ran the kernels: QEMU, a real router over SSH, this machine.
    pub machine: MachineInfo,
    /// The L1 cache model, when the lab ran with `--cache-model`.
    pub cache_model: Option<CacheModelInfo>,
    /// The kernels (QEMU and SSH labs) or runtime settings (host lab)
    /// compared.
    pub arms: Vec<Arm>,
    /// The base arm's name.
    pub base: String,
    /// Every arm's samples, by family, then GRO setting, then direction.
    pub series: Vec<Series>,
    /// The topology the lab booted (`nat-router`, `mesh`); `None` for the
    /// SSH and host labs and schema-1 files.
    pub topology: Option<TopologyName>,
    /// The A/A control first (when the lab ran one), then each variant.
    pub comparisons: Vec<LabComparison>,
    /// Sentences about this run: status, missing control or variants,
    /// what Mann–Whitney cannot show, lab kernels rebuilt since.
    pub notes: Vec<String>,
}

impl LabReport {
    /// Builds the report of `record`, read from `dir`. `variants` (empty:
    /// every one) chooses the variant arms compared with the base; the A/A
    /// control is always compared, as it gives the noise floor.
    ///
    /// Errors when the record has a problem [`check::check`] refuses (a
    /// base without an arm among them); its warnings become notes.
    pub fn new(dir: PathBuf, record: LabRecord, variants: &[String]) -> Result<LabReport> {
        let problems = check::check(&record);
        problems.refuse(&record, &dir.join(crate::results::lab::FILE_NAME))?;
        let base = record.settings.base.clone();
        let mut notes = Vec::new();
        if let MachineInfo::Host { host: h } = &record.machine {
            notes.push(format!(
                "{HOST_NOTE}: Linux {} on {} ({} CPUs) with runtime settings applied in a private network namespace, so a change here is the kernel's answer to those settings on this machine, under its load",
                h.kernel_release, h.machine, h.cpus
            ));
        }
        if let Some(m) = &record.cache_model {
            notes.push(format!(
                "the cache model ran (--cache-model): its L1I and L1D misses come from {}; its plugin slows QEMU, so Mbit/s here does not compare with a lab run without it",
                notes::model_words(m)
            ));
            notes.extend(m.timing.as_ref().map(notes::timing_note));
        }
        notes.extend(notes::gro_note(&record));
        notes.extend(notes::mesh_direction_note(&record));
        notes.extend(notes::side_by_side_note(&record));
        notes.extend(notes::redone_note(&record));
        notes.extend(cpus::machine_note(&record));
        if !record.status.is_complete() {
            notes.push(format!(
                "this lab run is not complete ({}): the numbers are those of the runs it finished",
                record.status
            ));
        }
        notes.extend(problems.warnings);
        let series = series::series_of(&record);
        notes.extend(notes::bottleneck_notes(&series, &base));
        let control = record.arms.iter().find(|a| a.control);
        let mut comparisons = Vec::new();
        if let Some(c) = control {
            comparisons.push(comparison::compare(
                &series,
                &base,
                &c.name,
                Role::Control,
                None,
            ));
        }
        let floor = comparisons.first().cloned();
        let others: Vec<&Arm> = record
            .arms
            .iter()
            .filter(|a| !a.control && a.name != base)
            .collect();
        for v in variants {
            if !others.iter().any(|a| a.variant == *v) {
                notes.push(format!("this lab run did not measure --variant {v}"));
            }
        }
        for arm in others
            .iter()
            .filter(|a| variants.is_empty() || variants.contains(&a.variant))
        {
            comparisons.push(comparison::compare(
                &series,
                &base,
                &arm.name,
                Role::Variant,
                floor.as_ref(),
            ));
        }
        // An arm without measured runs (a lab that stopped early; the
        // check's warning says so) gets no empty section.
        comparisons.retain(|c| !c.families.is_empty());
        let drifting: Vec<String> = comparisons
            .iter()
            .filter(|c| c.role == Role::Control)
            .flat_map(|c| &c.families)
            .flat_map(|f| f.metrics.iter().map(move |m| (f, m)))
            .filter(|(_, m)| {
                m.stats()
                    .is_some_and(|s| s.comparison.verdict == Verdict::Significant)
            })
            .map(|(f, m)| lkp_name(f, m))
            .collect();
        if !drifting.is_empty() {
            notes.push(format!(
                "the A/A control differs from its base in {} (Welch's 95 % interval excludes 0 and Mann–Whitney agrees): the same kernel measured apart (chance, at most one metric in 20, or an effect of the arms' order within each round), so read changes of that size with care",
                drifting.join(", ")
            ));
        }
        if others.is_empty() {
            let lab = if matches!(record.machine, MachineInfo::Host { .. }) {
                "--lab host".to_string()
            } else {
                format!("--target {}", record.target)
            };
            notes.push(format!(
                "nothing compared: the lab ran only {base}; compare a variant with `cargo xtask lab {lab} --variant {base} --variant <VARIANT>`"
            ));
        } else if control.is_none() {
            notes.push(
                "no A/A control (the lab ran with --no-control): the noise floor is unknown, so a change is called significant on its two tests alone"
                    .to_string(),
            );
        }
        if let Some((p, m, n)) = comparisons
            .iter()
            .filter_map(LabComparison::mann_whitney_floor)
            .max_by(|a, b| a.0.total_cmp(&b.0))
            .filter(|(p, _, _)| *p > ALPHA)
        {
            notes.push(format!(
                "Mann–Whitney U cannot reach p < {ALPHA} with {} runs per side: its smallest p is then {p:.3}, and a change is called significant only when Welch and Mann–Whitney agree, so none can be; it needs {} runs per side (cargo xtask lab --runs N, default 5)",
                if m == n { m.to_string() } else { format!("{m} and {n}") },
                runs_for_mann_whitney()
            ));
        }
        notes.extend(verdict::chance_note(&comparisons));
        Ok(LabReport {
            dir,
            target: record.target,
            lab_target: record.lab_target,
            status: record.status,
            started: record.started,
            settings: record.settings,
            machine: record.machine,
            cache_model: record.cache_model,
            arms: record.arms,
            base,
            series,
            topology: record.topology,
            comparisons,
            notes,
        })
    }

    /// The arm called `name`.
    pub fn arm(&self, name: &str) -> Option<&Arm> {
        self.arms.iter().find(|a| a.name == name)
    }

    /// The words of `kind` in `family`'s series: `GRO on`, `2 clients`;
    /// `kind` itself when no series has it.
    pub fn kind_title(&self, family: &str, kind: &str) -> String {
        self.series
            .iter()
            .find(|s| s.family == family && s.kind() == kind)
            .map_or(kind.to_string(), |s| condition_kind_title(s.condition))
    }
}
