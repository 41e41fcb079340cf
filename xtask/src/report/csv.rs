//! `--format csv`: every number of the report, one row per value, each a
//! [`Row`] the `csv` crate writes (RFC 4180 as it writes it: `\n` line
//! ends, a field with the separator, `"` or a line break quoted, `"`
//! doubled).
//!
//! Columns: `target,openwrt_target,soc,base,variant,kind,item,before,after,delta,percent`,
//! then `family,unit` of a metric row and, for a metric measured N times
//! per side (the runtime lab's), its statistics:
//! `base_n,variant_n,base_sd_percent,variant_sd_percent` (standard
//! deviation in percent of the mean), `interval_low,interval_high`
//! (Welch's t 95 % interval of the %change, percent),
//! `welch_p,mann_whitney_p`, `noise_floor` (the A/A control's |%change|,
//! percent) and `verdict` (`significant`, `within-noise`,
//! `interval-contains-zero`, `tests-disagree`, `too-few-samples`,
//! `below-resolution`; `control` for the A/A
//! control's own row). Other rows leave them empty.
//!
//! One row per metric of every family ([`super::model::Family`]): `kind`
//! and `item` are the metric's, before/after are its values in the family's
//! unit (the mean when a side has several samples), delta is after -
//! before, percent the unrounded percent change (empty when undefined).
//! For sizes:
//!
//! | kind | item | before/after/delta | percent |
//! |---|---|---|---|
//! | `artifact` | file name | bytes | unrounded percent change, empty when undefined |
//! | `section` | `text`, `data`, `bss`, `dec` | bytes | as above |
//! | `section` | `hex` | `dec` in hex (delta empty) | empty |
//! | `symbols` | `<table>:<symbol>` (bloat-o-meter row) | bytes, empty for a missing side | empty |
//! | `symbols-total` | `<table>` | bytes (bloat-o-meter `Total`) | bloat-o-meter's `chg` |
//! | `by-file`, `by-dir` (also `--by dir:N`) | object path or directory (`--by`), largest \|delta\| first | bytes (text + data + bss) | empty |
//! | `by-file-text`, `-data`, `-bss` (`by-dir-…`) | as above, after its `by-…` row; left out where both sides are 0 | bytes of that class | empty |
//! | `by-file-total`, `by-dir-total` | `text`, `data`, `bss`, `dec`: the rows' sums, `size`'s | bytes | empty |
//! | `warning`, `note` | the message | empty | empty |
//!
//! Lab rows (after the size rows): `target` is the lab kernels' results
//! name (`brcm47xx-lab`), `openwrt_target` empty, `soc` the QEMU machine,
//! `variant` the compared arm (`baseline~control` for the A/A control),
//! `kind` the GRO setting (`gro-on`), `item` the direction (`lan-to-wan`),
//! before/after/delta the means in the family's unit (Mbit/s, ns/packet);
//! each lab note is a `note` row. A lab that ran its base alone has one
//! row per series with the base's mean (`before`), `base_n` and
//! `base_sd_percent`, and an empty `variant`.
//!
//! With `--decimal-comma` the separator is `;` and percentages (and means)
//! use `,`.

use anyhow::{Context, Result};
use serde::Serialize;

use super::document::{Comparison, Report, TargetReport};
use super::lab::{verdict_name, LabReport, Role};
use super::model::{Family, Metric};
use super::style::Style;
use crate::measure::stats;
use crate::results::device_fit::LimitKind;

/// The header line's column names: `Row`'s fields, in order.
pub const COLUMNS: [&str; 23] = [
    "target",
    "openwrt_target",
    "soc",
    "base",
    "variant",
    "kind",
    "item",
    "before",
    "after",
    "delta",
    "percent",
    "family",
    "unit",
    "base_n",
    "variant_n",
    "base_sd_percent",
    "variant_sd_percent",
    "interval_low",
    "interval_high",
    "welch_p",
    "mann_whitney_p",
    "noise_floor",
    "verdict",
];

/// One line of the CSV, its fields named and ordered as [`COLUMNS`] (see
/// the module docs for what each holds). Numbers are text already, in the
/// report's decimal style; an empty field is an empty string.
#[derive(Debug, Default, Serialize)]
struct Row {
    target: String,
    openwrt_target: String,
    soc: String,
    base: String,
    variant: String,
    kind: String,
    item: String,
    before: String,
    after: String,
    delta: String,
    percent: String,
    family: String,
    unit: String,
    base_n: String,
    variant_n: String,
    base_sd_percent: String,
    variant_sd_percent: String,
    interval_low: String,
    interval_high: String,
    welch_p: String,
    mann_whitney_p: String,
    noise_floor: String,
    verdict: String,
}

impl Row {
    /// This row with `before`, `after`, `delta` and `percent` of metric
    /// `m`, its family and unit, and its statistics when it has them;
    /// `role` says whether a lab comparison is the A/A control (verdict
    /// `control`).
    fn metric(self, family: &Family, m: &Metric, role: Role, style: &Style) -> Row {
        let d = style.decimal();
        let num = |x: Option<f64>| decimal(x, style);
        let mut row = Row {
            before: m.before().machine_text(d),
            after: m.after().machine_text(d),
            delta: m.delta().machine_text(d),
            percent: num(m.percent()),
            family: family.name.clone(),
            unit: family.unit.clone(),
            ..self
        };
        if let Some(s) = m.stats() {
            let c = &s.comparison;
            row.base_n = c.base.n.to_string();
            row.variant_n = c.variant.n.to_string();
            row.base_sd_percent = num(Some(c.base.relative_sd_percent()));
            row.variant_sd_percent = num(Some(c.variant.relative_sd_percent()));
            row.interval_low = num(c.interval.map(|i| i.low));
            row.interval_high = num(c.interval.map(|i| i.high));
            row.welch_p = num(c.welch_p);
            row.mann_whitney_p = num(c.mann_whitney_p);
            row.noise_floor = num(s.noise_floor);
            row.verdict = verdict_name(s, role).to_string();
        }
        row
    }
}

/// A percentage or mean in the report's decimal style; empty when
/// undefined.
fn decimal(x: Option<f64>, style: &Style) -> String {
    style
        .decimal()
        .apply(x.map_or(String::new(), |x| x.to_string()))
}

/// The rows of one size comparison: its warnings and notes, every metric
/// (and its hex companion), the artifacts one side lacks, then the symbol
/// tables.
fn size_rows(
    report: &Report,
    t: &TargetReport,
    c: &Comparison,
    style: &Style,
    rows: &mut Vec<Row>,
) {
    let row = |kind: &str, item: &str| Row {
        target: t.name.clone(),
        openwrt_target: t.base.target.openwrt.clone(),
        soc: t.base.target.soc.clone(),
        base: report.base.clone(),
        variant: c.variant.variant.name.clone(),
        kind: kind.to_string(),
        item: item.to_string(),
        ..Row::default()
    };
    rows.extend(c.warnings.iter().map(|w| row("warning", w)));
    rows.extend(c.notes.iter().map(|n| row("note", n)));
    for family in &c.families {
        for m in &family.metrics {
            rows.push(row(&m.kind, &m.item).metric(family, m, Role::Variant, style));
            if let (Some(hex), Some(change)) = (&m.hex, m.exact()) {
                rows.push(Row {
                    before: format!("{:x}", change.before),
                    after: format!("{:x}", change.after),
                    ..row(&m.kind, &hex.item)
                });
            }
        }
    }
    for (name, only) in &c.unpaired_artifacts {
        rows.push(row("note", &format!("{name}: only {only} has it")));
    }
    for table in c.symbols.iter().flat_map(|diff| &diff.tables) {
        for r in &table.rows {
            rows.push(Row {
                before: r.old.map_or(String::new(), |v| v.to_string()),
                after: r.new.map_or(String::new(), |v| v.to_string()),
                delta: r.delta.to_string(),
                ..row("symbols", &format!("{}:{}", table.title, r.name))
            });
        }
        rows.push(Row {
            before: table.before.to_string(),
            after: table.after.to_string(),
            delta: table.net().to_string(),
            percent: decimal(Some(table.change_percent()), style),
            ..row("symbols-total", table.title)
        });
    }
    if let Some(diff) = &c.device_fit {
        for r in &diff.rows {
            let num = |v: Option<u64>| v.map_or(String::new(), |v| v.to_string());
            rows.push(Row {
                before: num(r.base_bytes),
                after: num(r.variant_bytes),
                delta: r.headroom.map_or(String::new(), |h| h.to_string()),
                percent: decimal(r.headroom_percent, style),
                ..row(
                    "device-fit",
                    &format!(
                        "{}{} limit={} {}{}{}",
                        r.device,
                        r.image.as_ref().map_or(String::new(), |i| format!(" {i}")),
                        match (r.limit_bytes, r.limit_kind) {
                            (Some(l), Some(LimitKind::FirmwarePartition)) => format!("dt:{l}"),
                            (Some(l), _) => l.to_string(),
                            (None, _) => "none".into(),
                        },
                        match (&r.image, r.limit_kind) {
                            (None, Some(LimitKind::ImageSize | LimitKind::FirmwarePartition)) =>
                                "kernel-only:",
                            _ => "",
                        },
                        match r.only_in {
                            Some(super::device_fit::row::FitSide::Base) => "only-in-base:",
                            Some(super::device_fit::row::FitSide::Variant) => "only-in-variant:",
                            None => "",
                        },
                        r.verdict().tag()
                    ),
                )
            });
        }
    }
    if let Some(diff) = &c.attribution {
        let kind = format!("by-{}", super::attribution::grouping_name(diff.grouping));
        for r in &diff.rows {
            rows.push(Row {
                before: r.before.dec().to_string(),
                after: r.after.dec().to_string(),
                delta: r.delta().to_string(),
                ..row(&kind, &r.name)
            });
            for (class, b, a) in [
                ("text", r.before.text, r.after.text),
                ("data", r.before.data, r.after.data),
                ("bss", r.before.bss, r.after.bss),
            ] {
                if a != 0 || b != 0 {
                    rows.push(Row {
                        before: b.to_string(),
                        after: a.to_string(),
                        delta: (a as i64 - b as i64).to_string(),
                        ..row(&format!("{kind}-{class}"), &r.name)
                    });
                }
            }
        }
        for (item, b, a) in [
            ("text", diff.before.text, diff.after.text),
            ("data", diff.before.data, diff.after.data),
            ("bss", diff.before.bss, diff.after.bss),
            ("dec", diff.before.dec(), diff.after.dec()),
        ] {
            rows.push(Row {
                before: b.to_string(),
                after: a.to_string(),
                delta: (a as i64 - b as i64).to_string(),
                ..row(&format!("{kind}-total"), item)
            });
        }
    }
}

/// The rows of one lab run: its notes, then each comparison's metrics, or
/// the base's own means and spreads when nothing was compared.
fn lab_rows(lab: &LabReport, style: &Style, rows: &mut Vec<Row>) {
    let soc = lab.machine_soc();
    let row = |variant: &str, kind: &str, item: &str| Row {
        target: lab.lab_target.clone(),
        soc: soc.clone(),
        base: lab.base.clone(),
        variant: variant.to_string(),
        kind: kind.to_string(),
        item: item.to_string(),
        ..Row::default()
    };
    rows.extend(lab.notes.iter().map(|n| row("", "note", n)));
    if lab.comparisons.iter().all(|c| c.role == Role::Control) {
        for series in &lab.series {
            let Some(sum) = series
                .arms
                .iter()
                .find(|(a, _)| *a == lab.base)
                .and_then(|(_, v)| stats::summary(v))
            else {
                continue;
            };
            rows.push(Row {
                before: decimal(Some(sum.mean), style),
                family: series.family.clone(),
                unit: series.unit.clone(),
                base_n: sum.n.to_string(),
                base_sd_percent: decimal(Some(sum.relative_sd_percent()), style),
                ..row("", &series.kind(), series.item())
            });
        }
    }
    for c in &lab.comparisons {
        for family in &c.families {
            for m in &family.metrics {
                rows.push(row(&c.arm, &m.kind, &m.item).metric(family, m, c.role, style));
            }
        }
    }
}

/// Renders the report as CSV with a header line (also when it has no row).
///
/// Errors: none in practice (every field is text); a failure of the `csv`
/// crate's writer is passed on.
pub fn render(report: &Report, style: &Style) -> Result<String> {
    let mut rows = Vec::new();
    for t in &report.targets {
        for c in &t.comparisons {
            size_rows(report, t, c, style, &mut rows);
        }
    }
    for lab in &report.labs {
        lab_rows(lab, style, &mut rows);
    }
    let separator = if style.decimal_comma { b';' } else { b',' };
    let mut out = csv::WriterBuilder::new()
        .delimiter(separator)
        .has_headers(false)
        .from_writer(Vec::new());
    out.write_record(COLUMNS)
        .context("writing the CSV header")?;
    for row in &rows {
        out.serialize(row).context("writing a CSV row")?;
    }
    let bytes = out.into_inner().context("finishing the CSV")?;
    String::from_utf8(bytes).context("the CSV is not UTF-8")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The header the csv crate would write from [`Row`] is [`COLUMNS`].
    #[test]
    fn the_columns_are_the_row_fields() {
        let mut out = csv::Writer::from_writer(Vec::new());
        out.serialize(Row::default()).unwrap();
        let text = String::from_utf8(out.into_inner().unwrap()).unwrap();
        assert_eq!(text.lines().next(), Some(COLUMNS.join(",").as_str()));
    }

    /// Quoting as RFC 4180 (and as this module did by hand before the csv
    /// crate): the separator, `"` and line breaks quote a field.
    #[test]
    fn fields_are_quoted_when_they_must_be() {
        for (sep, field, want) in [
            (b',', "a,b", "\"a,b\""),
            (b',', "a;b", "a;b"),
            (b';', "a;b", "\"a;b\""),
            (b',', "say \"hi\"", "\"say \"\"hi\"\"\""),
            (b',', "two\nlines", "\"two\nlines\""),
            (b',', "cr\r", "\"cr\r\""),
            (b',', "plain", "plain"),
        ] {
            let mut out = csv::WriterBuilder::new()
                .delimiter(sep)
                .from_writer(Vec::new());
            out.write_record([field, ""]).unwrap();
            let text = String::from_utf8(out.into_inner().unwrap()).unwrap();
            assert_eq!(text, format!("{want}{}\n", sep as char), "{field:?}");
        }
    }
}
