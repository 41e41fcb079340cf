//! `--format json`: every number of the report, machine-readable.
//!
//! The document ([`JsonReport`], pretty-printed, newline-terminated):
//!
//! ```text
//! { "schema": 1, "base": "baseline",
//!   "symbols": null | { "mode": "all"|"c"|"d"|"t", "fold_clones": bool },
//!   "targets": [ { "target", "openwrt_target", "soc", "arch",
//!       "base": Build,
//!       "comparisons": [ { "variant": Build, "warnings": [..], "notes": [..],
//!           "artifacts": [ { "name", Change… } ],
//!           "unpaired_artifacts": [ { "name", "only_in" } ],
//!           "sections": { "text": Change, "data", "bss", "dec",
//!                         "hex": { "before": "bb374", "after": "baa8c" } },
//!           "symbols": null | { "tables": [ Table ] },
//!           "attribution": { "grouping": "file"|"dir"|"dir:N", "maps", "rows": [ {
//!               "name", "before": Bytes, "after": Bytes } ],
//!               "before": Bytes, "after": Bytes },   (only with --by;
//!               Bytes is { "text", "data", "bss" }, the totals `size`'s)
//!           "metrics": [ Metric ] } ] } ],      (only when there are any)
//!   "skipped": [ "…" ],
//!   "labs": [ Lab ] }                      (only when there are any)
//! ```
//!
//! Sizes (the `size` family's artifacts and vmlinux sections) fill
//! `artifacts` and `sections`, as they always have; every other metric is
//! listed in `metrics`
//! ([`JsonMetric`]: family, unit, kind, item, label, the samples of each
//! side, their means, delta, percent and standard deviations), which is
//! left out when empty so that size-only reports keep their layout.
//!
//! A metric measured N times per side (the runtime lab's) has `stats`
//! ([`super::lab::json::JsonStats`]: sample counts, `%sd`, Welch's t 95 % interval of
//! the %change, Welch and Mann–Whitney p, the A/A noise floor and the
//! verdict). `Lab` is one lab run ([`JsonLab`]): how it ran, its arms, one
//! comparison per arm against the base (the A/A control's first, each with
//! `metrics`), every run's values per series, notes and what each metric
//! can and cannot show.
//!
//! `Change` is `before`, `after` (bytes), `delta` (bytes, signed), `percent`
//! (`(after - before) * 100 / before` as a float, `null` when undefined) and
//! `percent_text` (the rounded text the other formats print). `Build` is
//! the provenance from `result.json` (variant, kernel version and source
//! sha256, compiler, flags, config sha256, patches, results directory).
//! `Table` is one bloat-o-meter table: counts, `up`/`down`/`before`/`after`
//! in bytes, `change_percent`, and rows `{name, old, new, delta}` with
//! `null` for a missing side.

use anyhow::{Context, Result};
use serde::Serialize;

use super::document::{Comparison, Report, TargetReport};
use super::lab::json::{metric, JsonLab, JsonMetric};
use super::model::{Change, Family, Metric};
use super::sizes::{self, ARTIFACT_KIND, SECTION_KIND};
use super::style::Style;
use crate::measure::bloat::{BloatDiff, BloatMode, Table};
use crate::results::{BuildResult, Cflags, PatchRecord};

/// Version of this JSON layout; bumped on incompatible changes.
pub const SCHEMA: u32 = 1;

/// The top-level JSON document.
#[derive(Debug, Serialize)]
pub struct JsonReport {
    /// [`SCHEMA`].
    pub schema: u32,
    /// The base variant.
    pub base: String,
    /// Symbol-diff settings, `null` without `--symbols`.
    pub symbols: Option<JsonSymbolOptions>,
    /// One per target.
    pub targets: Vec<JsonTarget>,
    /// Targets/variants `all` left out for lack of results.
    pub skipped: Vec<String>,
    /// The runtime lab's runs; left out when none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub labs: Vec<JsonLab>,
    /// `--agreement`: the two lab runs cell by cell; left out without.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agreement: Option<super::lab::agreement::JsonAgreement>,
}

/// `--symbols` settings.
#[derive(Debug, Serialize)]
pub struct JsonSymbolOptions {
    /// `all` (no flag), `c`, `d` or `t`.
    pub mode: &'static str,
    /// Whether compiler clones were folded.
    pub fold_clones: bool,
}

/// One target.
#[derive(Debug, Serialize)]
pub struct JsonTarget {
    /// Target name.
    pub target: String,
    /// OpenWrt `target/subtarget`.
    pub openwrt_target: String,
    /// SoC or board.
    pub soc: String,
    /// Kernel ARCH.
    pub arch: String,
    /// The base build.
    pub base: JsonBuild,
    /// One per variant.
    pub comparisons: Vec<JsonComparison>,
}

/// Provenance of one build, from its `result.json`.
#[derive(Debug, Serialize)]
pub struct JsonBuild {
    /// Variant name.
    pub variant: String,
    /// Results directory, relative to the workspace root.
    pub results_dir: String,
    /// Kernel version.
    pub kernel_version: String,
    /// Kernel tarball or tree.
    pub kernel_source: String,
    /// Its sha256 (`null` for a tree).
    pub kernel_source_sha256: Option<String>,
    /// First line of `gcc --version`.
    pub compiler: String,
    /// KBUILD_CFLAGS of both branches and which one was in effect (without
    /// the recorded compile command).
    pub kbuild_cflags: JsonCflags,
    /// sha256 of `.config`.
    pub config_sha256: String,
    /// Applied patches in order.
    pub patches: Vec<PatchRecord>,
    /// Build wall time, seconds.
    pub duration_seconds: f64,
}

/// [`Cflags`] without the compile command.
#[derive(Debug, Serialize)]
pub struct JsonCflags {
    /// `-Os` branch.
    pub os: String,
    /// `-O2` branch.
    pub o2: String,
    /// `os` or `o2`.
    pub effective: String,
}

/// A size before and after.
#[derive(Debug, Serialize)]
pub struct JsonChange {
    /// Bytes in the base build.
    pub before: u64,
    /// Bytes in the variant build.
    pub after: u64,
    /// `after - before`, bytes.
    pub delta: i64,
    /// Percent change, unrounded; `null` when `before` is 0 and `after` not.
    pub percent: Option<f64>,
    /// The rounded text, e.g. `+1.68%`.
    pub percent_text: String,
}

/// One artifact's change.
#[derive(Debug, Serialize)]
pub struct JsonArtifact {
    /// File name.
    pub name: String,
    /// Its size change.
    #[serde(flatten)]
    pub change: JsonChange,
}

/// An artifact only one build has.
#[derive(Debug, Serialize)]
pub struct JsonUnpaired {
    /// File name.
    pub name: String,
    /// The variant that has it.
    pub only_in: String,
}

/// vmlinux sections (binutils `size`, Berkeley format).
#[derive(Debug, Serialize)]
pub struct JsonSections {
    /// text, bytes.
    pub text: JsonChange,
    /// data, bytes.
    pub data: JsonChange,
    /// bss, bytes.
    pub bss: JsonChange,
    /// text + data + bss, bytes.
    pub dec: JsonChange,
    /// `dec` in lowercase hex, as `size` prints it.
    pub hex: JsonHex,
}

/// `dec` in hex before and after.
#[derive(Debug, Serialize)]
pub struct JsonHex {
    /// Base, lowercase hex without `0x`.
    pub before: String,
    /// Variant, lowercase hex without `0x`.
    pub after: String,
}

/// One base → variant comparison.
#[derive(Debug, Serialize)]
pub struct JsonComparison {
    /// The variant build.
    pub variant: JsonBuild,
    /// `--allow-mismatch` warnings.
    pub warnings: Vec<String>,
    /// Expected differences.
    pub notes: Vec<String>,
    /// Artifact changes.
    pub artifacts: Vec<JsonArtifact>,
    /// Artifacts only one side has.
    pub unpaired_artifacts: Vec<JsonUnpaired>,
    /// vmlinux sections; left out only when the results have none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sections: Option<JsonSections>,
    /// bloat-o-meter tables, with `--symbols`.
    pub symbols: Option<JsonSymbols>,
    /// Bytes by object file or directory, with `--by` (every row: name,
    /// before and after as text/data/bss bytes; the totals are `size`'s).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attribution: Option<super::attribution::AttributionDiff>,
    /// `--devices`: every device's kernel image against its limit.
    pub device_fit: Option<super::device_fit::DeviceFitDiff>,
    /// Metrics of every family other than sizes; left out when none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub metrics: Vec<JsonMetric>,
}

/// A symbol diff.
#[derive(Debug, Serialize)]
pub struct JsonSymbols {
    /// One per bloat-o-meter table.
    pub tables: Vec<JsonTable>,
}

/// One bloat-o-meter table: [`Table`]'s fields (its rows `{name, old,
/// new, delta}` after the sums), then `change_percent`.
#[derive(Debug, Serialize)]
pub struct JsonTable {
    /// The table as [`crate::measure::bloat::diff`] made it.
    #[serde(flatten)]
    pub table: Table,
    /// bloat-o-meter's `chg`, percent.
    pub change_percent: f64,
}

fn mode_name(mode: BloatMode) -> &'static str {
    mode.flag().map_or("all", |f| &f[1..])
}

fn change(c: &Change, style: &Style) -> JsonChange {
    JsonChange {
        before: c.before,
        after: c.after,
        delta: c.delta(),
        percent: c.percent(),
        percent_text: c.percent_text(style.decimal()),
    }
}

/// The section items the `sections` object holds.
const SECTIONS: [&str; 4] = ["text", "data", "bss", "dec"];

/// The size family's `sections` object: `text`, `data`, `bss`, `dec` and
/// `dec` in hex; `None` unless all four are there.
fn sections(family: &Family, style: &Style) -> Option<JsonSections> {
    let get = |item: &str| {
        family
            .metrics
            .iter()
            .find(|m| m.kind == SECTION_KIND && m.item == item)
            .and_then(Metric::exact)
    };
    let (text, data, bss, dec) = (get("text")?, get("data")?, get("bss")?, get("dec")?);
    Some(JsonSections {
        text: change(&text, style),
        data: change(&data, style),
        bss: change(&bss, style),
        dec: change(&dec, style),
        hex: JsonHex {
            before: format!("{:x}", dec.before),
            after: format!("{:x}", dec.after),
        },
    })
}

fn build(report: &Report, r: &BuildResult, dir: &std::path::Path) -> JsonBuild {
    let Cflags {
        os, o2, effective, ..
    } = r.kbuild_cflags.clone();
    JsonBuild {
        variant: r.variant.name.clone(),
        results_dir: report.display_path(dir),
        kernel_version: r.kernel_source.version.clone(),
        kernel_source: r.kernel_source.origin.clone(),
        kernel_source_sha256: r.kernel_source.sha256.clone(),
        compiler: r.compiler.clone(),
        kbuild_cflags: JsonCflags { os, o2, effective },
        config_sha256: r.config_sha256.clone(),
        patches: r.patches.clone(),
        duration_seconds: r.duration_seconds,
    }
}

fn symbols(diff: &BloatDiff) -> JsonSymbols {
    JsonSymbols {
        tables: diff
            .tables
            .iter()
            .map(|t| JsonTable {
                table: t.clone(),
                change_percent: t.change_percent(),
            })
            .collect(),
    }
}

fn comparison(report: &Report, c: &Comparison, style: &Style) -> JsonComparison {
    let mut artifacts = Vec::new();
    let mut section_changes = None;
    let mut metrics = Vec::new();
    for family in &c.families {
        let is_sizes = family.name == sizes::FAMILY;
        if is_sizes {
            section_changes = sections(family, style);
        }
        for m in &family.metrics {
            match (m.kind.as_str(), m.exact()) {
                (ARTIFACT_KIND, Some(exact)) if is_sizes => artifacts.push(JsonArtifact {
                    name: m.item.clone(),
                    change: change(&exact, style),
                }),
                (SECTION_KIND, Some(_))
                    if is_sizes
                        && section_changes.is_some()
                        && SECTIONS.contains(&m.item.as_str()) => {}
                _ => metrics.push(metric(family, m, style)),
            }
        }
    }
    JsonComparison {
        variant: build(report, &c.variant, &c.dir),
        warnings: c.warnings.clone(),
        notes: c.notes.clone(),
        artifacts,
        unpaired_artifacts: c
            .unpaired_artifacts
            .iter()
            .map(|(name, only_in)| JsonUnpaired {
                name: name.clone(),
                only_in: only_in.clone(),
            })
            .collect(),
        sections: section_changes,
        symbols: c.symbols.as_ref().map(symbols),
        attribution: c.attribution.clone(),
        device_fit: c.device_fit.clone(),
        metrics,
    }
}

fn target(report: &Report, t: &TargetReport, style: &Style) -> JsonTarget {
    JsonTarget {
        target: t.name.clone(),
        openwrt_target: t.base.target.openwrt.clone(),
        soc: t.base.target.soc.clone(),
        arch: t.base.target.arch.clone(),
        base: build(report, &t.base, &t.base_dir),
        comparisons: t
            .comparisons
            .iter()
            .map(|c| comparison(report, c, style))
            .collect(),
    }
}

/// The report as a [`JsonReport`] value.
pub fn to_json(report: &Report, style: &Style) -> JsonReport {
    JsonReport {
        schema: SCHEMA,
        base: report.base.clone(),
        symbols: report.symbols.map(|s| JsonSymbolOptions {
            mode: mode_name(s.mode),
            fold_clones: s.fold_clones,
        }),
        targets: report
            .targets
            .iter()
            .map(|t| target(report, t, style))
            .collect(),
        skipped: report.skipped.clone(),
        labs: report
            .labs
            .iter()
            .map(|l| super::lab::json::lab(&report.root, l, style))
            .collect(),
        agreement: report
            .agreement
            .as_ref()
            .map(|a| super::lab::agreement::json(a, |p| report.display_path(p))),
    }
}

/// Renders the report as pretty-printed JSON, newline-terminated.
pub fn render(report: &Report, style: &Style) -> Result<String> {
    let mut text =
        serde_json::to_string_pretty(&to_json(report, style)).context("serialising the report")?;
    text.push('\n');
    Ok(text)
}
