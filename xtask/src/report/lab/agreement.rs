//! Two lab runs side by side, cell by cell (`size-report --lab-run A
//! --lab-run B --agreement`): where a model (a QEMU run, its modelled
//! packets/s) and a measurement (a router over SSH, the host lab, another
//! QEMU run) agree on what a variant does.
//!
//! A cell is one variant × condition (direction, GRO setting) both runs
//! measured. Each side is the run's own comparison of that variant with
//! its base ([`super::LabComparison`]) in its answer metric
//! ([`ANSWER_METRICS`]: the first the run compared that variant in), with
//! its %change, Welch's 95 % interval and verdict against the run's own
//! A/A floor; a side is *established* when its verdict is `significant`.
//! Per cell:
//!
//! * **agree**: both established, same sign;
//! * **opposite signs**: both established, opposite signs;
//! * **only A established**, **only B established**: the other's interval
//!   contains 0, its tests disagree or it is within its A/A noise (its
//!   verdict says which);
//! * **neither established**: neither run can tell the change from 0.
//!
//! Conditions or variants only one run measured, or whose %change one run
//! cannot give, are listed apart with the reason, and counted in none.

use std::path::{Path, PathBuf};

use anyhow::{bail, Result};

use super::comparison::Role;
use super::verdict::{interval_text, percent_text, verdict_name, verdict_text};
use super::LabReport;
use crate::measure::stats::{Interval, Verdict};
use crate::report::model::{Decimal, Family, Metric, Stats};
use crate::report::style::display_path;
use crate::results::lab::LabMetric;
use crate::util::text::printable;

/// The metrics a run answers in, the first each variant was compared in:
/// the core model's packets/s (a QEMU run with `[lab.timing]`), then what
/// was measured (iperf3's Mbit/s, tbench's MB/s).
pub const ANSWER_METRICS: [LabMetric; 3] = [
    LabMetric::PacketsPerSecond,
    LabMetric::Throughput,
    LabMetric::Tbench,
];

/// One run's side of the agreement: which run, and the metrics its cells
/// answer in.
#[derive(Debug, Clone, PartialEq)]
pub struct AgreementRun {
    /// The lab directory.
    pub dir: PathBuf,
    /// The report's heading of the run ([`super::text::heading`]).
    pub heading: String,
    /// The metrics its cells are in, in [`ANSWER_METRICS`]' order (one,
    /// unless a variant lacks the first: then that variant's cells use the
    /// next).
    pub metrics: Vec<LabMetric>,
}

/// One run's %change of one cell.
#[derive(Debug, Clone, PartialEq)]
pub struct RunChange {
    /// %change of the means, variant against base.
    pub percent: f64,
    /// Welch's t 95 % interval of the %change.
    pub interval: Option<Interval>,
    /// The verdict against the run's own A/A floor.
    pub verdict: Verdict,
    /// The statistics behind it.
    pub stats: Stats,
    /// The metric it is in (the first of [`ANSWER_METRICS`] the run
    /// compared the variant in).
    pub metric: LabMetric,
}

impl RunChange {
    /// Whether the run established the change (verdict `significant`).
    pub fn established(&self) -> bool {
        self.verdict == Verdict::Significant
    }

    /// The verdict in words (`within A/A noise (±2.10%)`).
    pub fn words(&self, decimal: Decimal) -> String {
        verdict_text(&self.stats, Role::Variant, decimal)
    }

    /// The verdict for machines (`within-noise`).
    pub fn name(&self) -> &'static str {
        verdict_name(&self.stats, Role::Variant)
    }
}

/// What a cell's two sides say together.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CellVerdict {
    /// Both established, same sign.
    Agree,
    /// Both established, opposite signs.
    OppositeSigns,
    /// Only the first run established it.
    OnlyFirst,
    /// Only the second run established it.
    OnlySecond,
    /// Neither run established it.
    Neither,
}

impl CellVerdict {
    /// Of two sides.
    pub fn of(a: &RunChange, b: &RunChange) -> CellVerdict {
        match (a.established(), b.established()) {
            (true, true) if (a.percent > 0.0) == (b.percent > 0.0) => CellVerdict::Agree,
            (true, true) => CellVerdict::OppositeSigns,
            (true, false) => CellVerdict::OnlyFirst,
            (false, true) => CellVerdict::OnlySecond,
            (false, false) => CellVerdict::Neither,
        }
    }

    /// In words: `agree`, `opposite signs`, `only A established`, `only B
    /// established`, `neither established`.
    pub fn words(self) -> &'static str {
        match self {
            CellVerdict::Agree => "agree",
            CellVerdict::OppositeSigns => "opposite signs",
            CellVerdict::OnlyFirst => "only A established",
            CellVerdict::OnlySecond => "only B established",
            CellVerdict::Neither => "neither established",
        }
    }

    /// For machines: `agree`, `opposite-signs`, `only-a`, `only-b`,
    /// `neither`.
    pub fn name(self) -> &'static str {
        match self {
            CellVerdict::Agree => "agree",
            CellVerdict::OppositeSigns => "opposite-signs",
            CellVerdict::OnlyFirst => "only-a",
            CellVerdict::OnlySecond => "only-b",
            CellVerdict::Neither => "neither",
        }
    }
}

/// One variant × condition both runs measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    /// The variant.
    pub variant: String,
    /// The direction (`lan-to-wan`) or benchmark item.
    pub item: String,
    /// The GRO (or benchmark) setting (`gro-on`).
    pub kind: String,
    /// `LAN to WAN, GRO on`, as run A's report titles them.
    pub title: String,
    /// Run A's side, then run B's.
    pub sides: [RunChange; 2],
    /// What they say together.
    pub verdict: CellVerdict,
}

/// The two runs cell by cell.
#[derive(Debug, Clone, PartialEq)]
pub struct Agreement {
    /// Run A, then run B.
    pub runs: [AgreementRun; 2],
    /// The cells both measured, by variant, then direction, then setting.
    pub cells: Vec<Cell>,
    /// `variant item kind` of what only one run measured, with the run
    /// (`A`, `B`).
    pub unmatched: Vec<String>,
}

impl Agreement {
    /// Cells per [`CellVerdict`], in the enum's order.
    pub fn counts(&self) -> [(CellVerdict, usize); 5] {
        [
            CellVerdict::Agree,
            CellVerdict::OppositeSigns,
            CellVerdict::OnlyFirst,
            CellVerdict::OnlySecond,
            CellVerdict::Neither,
        ]
        .map(|v| (v, self.cells.iter().filter(|c| c.verdict == v).count()))
    }
}

/// The agreement of `labs`, which must be exactly two runs.
///
/// Errors: not two runs (naming how many, and `--lab-run A --lab-run B`;
/// a run named twice is one run), or a run with none of
/// [`ANSWER_METRICS`] compared for any variant.
pub fn agreement(labs: &[LabReport]) -> Result<Agreement> {
    let [a, b] = labs else {
        bail!(
            "--agreement compares two lab runs; this report has {} distinct run{} (a run named \
             twice, as a directory or its lab.json, is shown once; name two: --lab-run A --lab-run B)",
            labs.len(),
            if labs.len() == 1 { "" } else { "s" }
        );
    };
    let (sa, sb) = (sides(a)?, sides(b)?);
    let mut cells = Vec::new();
    let mut unmatched = Vec::new();
    let name = |k: &Key| format!("{} {} {}", k.0, k.1, k.2);
    for (key, a_side) in &sa {
        match (a_side, sb.iter().find(|(k, _)| k == key).map(|(_, s)| s)) {
            (Ok(a_side), Some(Ok(b_side))) => cells.push(Cell {
                variant: key.0.clone(),
                item: key.1.clone(),
                kind: key.2.clone(),
                title: a_side.title.clone(),
                verdict: CellVerdict::of(&a_side.side, &b_side.side),
                sides: [a_side.side.clone(), b_side.side.clone()],
            }),
            (Err(why), _) => unmatched.push(format!("{} (A {why})", name(key))),
            (Ok(_), Some(Err(why))) => unmatched.push(format!("{} (B {why})", name(key))),
            (Ok(_), None) => unmatched.push(format!("{} (A only)", name(key))),
        }
    }
    for (key, side) in sb.iter().filter(|(k, _)| !sa.iter().any(|(ka, _)| ka == k)) {
        match side {
            Ok(_) => unmatched.push(format!("{} (B only)", name(key))),
            Err(why) => unmatched.push(format!("{} (B only; B {why})", name(key))),
        }
    }
    cells.sort_by(|x, y| (&x.variant, &x.item, &x.kind).cmp(&(&y.variant, &y.item, &y.kind)));
    let run = |lab: &LabReport, sides: &[(Key, Result<Titled, String>)]| AgreementRun {
        dir: lab.dir.clone(),
        heading: super::text::heading(lab),
        metrics: ANSWER_METRICS
            .into_iter()
            .filter(|m| {
                sides
                    .iter()
                    .any(|(_, s)| s.as_ref().is_ok_and(|t| t.side.metric == *m))
            })
            .collect(),
    };
    Ok(Agreement {
        runs: [run(a, &sa), run(b, &sb)],
        cells,
        unmatched,
    })
}

type Key = (String, String, String);

/// A side with the cell's title in its run's words.
#[derive(Debug, Clone)]
struct Titled {
    side: RunChange,
    title: String,
}

/// Every (variant, item, kind) of `lab`'s variant comparisons, each in
/// the first of [`ANSWER_METRICS`] its comparison has; a cell without a
/// %change (a base mean of 0, too few runs for statistics) says why.
///
/// Errors: no variant comparison has any of [`ANSWER_METRICS`].
fn sides(lab: &LabReport) -> Result<Vec<(Key, Result<Titled, String>)>> {
    let mut out = Vec::new();
    for c in lab.comparisons.iter().filter(|c| c.role == Role::Variant) {
        let variant = lab.arm(&c.arm).map_or(c.arm.clone(), |a| a.variant.clone());
        let Some((metric, family)) = ANSWER_METRICS.into_iter().find_map(|m| {
            c.families
                .iter()
                .find(|f: &&Family| f.name == m.name())
                .map(|f| (m, f))
        }) else {
            continue;
        };
        for m in &family.metrics {
            let key = (variant.clone(), m.item.clone(), m.kind.clone());
            let titled = side(m, metric).map(|side| Titled {
                side,
                title: format!("{}, {}", m.phrase, lab.kind_title(metric.name(), &m.kind)),
            });
            out.push((key, titled));
        }
    }
    if out.is_empty() {
        bail!(
            "{}: no variant compared in {} (a lab run with a base and a variant, e.g. `cargo xtask lab --variant baseline --variant <VARIANT>`)",
            lab.dir.display(),
            ANSWER_METRICS.map(|m| m.name()).join(", ")
        );
    }
    Ok(out)
}

fn side(m: &Metric, metric: LabMetric) -> Result<RunChange, String> {
    let s = m
        .stats()
        .ok_or("has no statistics (fewer than 2 runs a side)")?;
    Ok(RunChange {
        percent: s
            .comparison
            .percent
            .ok_or("has no %change (its base mean is 0)")?,
        interval: s.comparison.interval,
        verdict: s.comparison.verdict,
        stats: s.clone(),
        metric,
    })
}

/// The agreement as text: the two runs (directories shown relative to
/// `root`), a line per cell, the counts.
pub fn text(root: &Path, agreement: &Agreement, decimal: Decimal) -> String {
    let mut out = String::from("Agreement of two lab runs, variant against base in each:\n");
    for (name, run) in ["A", "B"].iter().zip(&agreement.runs) {
        out.push_str(&format!(
            "  {name}: {} ({}), {}\n",
            run.heading,
            printable(&display_path(root, &run.dir)),
            metric_titles(run)
        ));
    }
    for c in &agreement.cells {
        let side = |s: &RunChange| {
            format!(
                "{} [{}] {}",
                percent_text(s.percent, decimal),
                interval_text(s.interval, decimal),
                s.words(decimal)
            )
        };
        // Which metric, where a run answers in more than one.
        let metrics = if agreement.runs.iter().any(|r| r.metrics.len() > 1) {
            format!(
                " (A in {}, B in {})",
                c.sides[0].metric.name(),
                c.sides[1].metric.name()
            )
        } else {
            String::new()
        };
        out.push_str(&format!(
            "{} {}: A {}; B {}: {}{metrics}\n",
            c.variant,
            c.title,
            side(&c.sides[0]),
            side(&c.sides[1]),
            c.verdict.words()
        ));
    }
    out.push_str(&counts_line(agreement));
    if let Some(note) = metrics_note(agreement) {
        out.push('\n');
        out.push_str(&note);
    }
    out.push('\n');
    for u in &agreement.unmatched {
        out.push_str(&format!("  measured by one run only: {u}\n"));
    }
    out
}

/// The titles of `run`'s answer metrics, `; `-joined.
fn metric_titles(run: &AgreementRun) -> String {
    run.metrics
        .iter()
        .map(|m| m.title())
        .collect::<Vec<_>>()
        .join("; ")
}

/// When the two runs answer in different metrics (a model's packets/s
/// beside measured Mbit/s): what that means for reading the cells.
pub fn metrics_note(agreement: &Agreement) -> Option<String> {
    let [a, b] = &agreement.runs;
    (a.metrics != b.metrics).then(|| {
        format!(
            "The runs answer in different metrics (A: {}; B: {}): a cell's signs compare, its sizes do not.",
            metric_titles(a),
            metric_titles(b)
        )
    })
}

/// `12 cells: 3 agree, 1 opposite signs, 2 only A established, 0 only B
/// established, 6 neither established`.
pub fn counts_line(agreement: &Agreement) -> String {
    let counts: Vec<String> = agreement
        .counts()
        .iter()
        .map(|(v, n)| format!("{n} {}", v.words()))
        .collect();
    format!("{} cells: {}", agreement.cells.len(), counts.join(", "))
}

/// The agreement as a Markdown table with the counts under it
/// (directories shown relative to `root`).
pub fn markdown(root: &Path, agreement: &Agreement, decimal: Decimal) -> String {
    let mut out = String::from("### Agreement of two lab runs\n\n");
    for (name, run) in ["A", "B"].iter().zip(&agreement.runs) {
        out.push_str(&format!(
            "- {name}: {} (`{}`), {}\n",
            run.heading,
            printable(&display_path(root, &run.dir)),
            metric_titles(run)
        ));
    }
    out.push_str(
        "\n| variant | condition | A %change | A 95% interval | B %change | B 95% interval | |\n|---|---|---|---|---|---|---|\n",
    );
    for c in &agreement.cells {
        let [a, b] = &c.sides;
        out.push_str(&format!(
            "| {} | {} | {} ({}) | {} | {} ({}) | {} | {} |\n",
            c.variant,
            c.title,
            percent_text(a.percent, decimal),
            a.name(),
            interval_text(a.interval, decimal),
            percent_text(b.percent, decimal),
            b.name(),
            interval_text(b.interval, decimal),
            c.verdict.words()
        ));
    }
    out.push_str(&format!("\n{}\n", counts_line(agreement)));
    if let Some(note) = metrics_note(agreement) {
        out.push_str(&format!("\n{note}\n"));
    }
    for u in &agreement.unmatched {
        out.push_str(&format!("\nMeasured by one run only: {u}\n"));
    }
    out
}

/// The agreement in the JSON report (`agreement`).
#[derive(Debug, serde::Serialize)]
pub struct JsonAgreement {
    /// Run A's then run B's lab directory (as the report shows paths).
    pub runs: Vec<String>,
    /// Each run's answer metrics (`[["modelled_packets_per_second"],
    /// ["throughput"]]`); each cell names its own in `cell_metrics`.
    pub metrics: Vec<Vec<&'static str>>,
    /// One per cell both runs measured.
    pub cells: Vec<JsonCell>,
    /// Cells per verdict: `agree`, `opposite-signs`, `only-a`, `only-b`,
    /// `neither`.
    pub counts: std::collections::BTreeMap<&'static str, usize>,
    /// What only one run measured (`no-reorder-blocks lan-to-wan gro-on (A
    /// only)`).
    pub unmatched: Vec<String>,
}

/// One cell in JSON.
#[derive(Debug, serde::Serialize)]
pub struct JsonCell {
    /// The variant.
    pub variant: String,
    /// The direction or benchmark item.
    pub item: String,
    /// The GRO or benchmark setting.
    pub kind: String,
    /// Run A's %change, then run B's.
    pub percent: [f64; 2],
    /// Each run's Welch 95 % interval of the %change, `[low, high]`.
    pub interval: [Option<[f64; 2]>; 2],
    /// Each run's verdict for machines (`significant`, `within-noise`).
    pub run_verdicts: [&'static str; 2],
    /// Each run's metric for this cell (`modelled_packets_per_second`).
    pub cell_metrics: [&'static str; 2],
    /// The cell's verdict (`agree`, `opposite-signs`, `only-a`,
    /// `only-b`, `neither`).
    pub verdict: &'static str,
}

/// [`JsonAgreement`] of `agreement`; `path` shows a directory.
pub fn json(agreement: &Agreement, path: impl Fn(&std::path::Path) -> String) -> JsonAgreement {
    JsonAgreement {
        runs: agreement.runs.iter().map(|r| path(&r.dir)).collect(),
        metrics: agreement
            .runs
            .iter()
            .map(|r| r.metrics.iter().map(|m| m.name()).collect())
            .collect(),
        cells: agreement
            .cells
            .iter()
            .map(|c| JsonCell {
                variant: c.variant.clone(),
                item: c.item.clone(),
                kind: c.kind.clone(),
                percent: [c.sides[0].percent, c.sides[1].percent],
                interval: [0, 1].map(|i| c.sides[i].interval.map(|v| [v.low, v.high])),
                run_verdicts: [c.sides[0].name(), c.sides[1].name()],
                cell_metrics: [c.sides[0].metric.name(), c.sides[1].metric.name()],
                verdict: c.verdict.name(),
            })
            .collect(),
        counts: agreement
            .counts()
            .iter()
            .map(|(v, n)| (v.name(), *n))
            .collect(),
        unmatched: agreement.unmatched.clone(),
    }
}
