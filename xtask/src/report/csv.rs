//! `--format csv`: every number of the report, one row per value (RFC 4180:
//! CRLF-free `\n` line ends, fields with the separator, `"` or a line break
//! quoted, `"` doubled).
//!
//! Columns: `target,openwrt_target,soc,base,variant,kind,item,before,after,delta,percent`,
//! then `family,unit` of a metric row and, for a metric measured N times
//! per side (the runtime lab's), its statistics:
//! `base_n,variant_n,base_sd_percent,variant_sd_percent` (standard
//! deviation in percent of the mean), `interval_low,interval_high`
//! (Welch's t 95 % interval of the %change, percent),
//! `welch_p,mann_whitney_p`, `noise_floor` (the A/A control's |%change|,
//! percent) and `verdict` (`significant`, `within-noise`,
//! `interval-contains-zero`, `tests-disagree`, `too-few-samples`; `control` for the A/A
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

use std::fmt::Write as _;

use super::lab::{verdict_name, Role};
use super::model::{Family, Metric, Report};
use super::Style;
use crate::measure::stats;

/// The header line's column names.
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

/// Columns after `percent`: a metric's family and unit, then its
/// statistics when it has them (empty otherwise).
const EXTRA: usize = 12;

fn field(value: &str, sep: char) -> String {
    if value.contains(sep) || value.contains('"') || value.contains('\n') || value.contains('\r') {
        format!("\"{}\"", value.replace('"', "\"\""))
    } else {
        value.to_string()
    }
}

fn percent(p: Option<f64>, style: &Style) -> String {
    style
        .decimal()
        .apply(p.map_or(String::new(), |p| p.to_string()))
}

/// The [`EXTRA`] columns of metric `m` of `family`; `role` says whether a
/// lab comparison is the A/A control (verdict `control`).
fn extra(family: &Family, m: &Metric, role: Role, style: &Style) -> Vec<String> {
    let mut v = vec![family.name.clone(), family.unit.clone()];
    let num = |x: Option<f64>| percent(x, style);
    match m.stats() {
        Some(s) => {
            let c = &s.comparison;
            v.extend([
                c.base.n.to_string(),
                c.variant.n.to_string(),
                num(Some(c.base.relative_sd_percent())),
                num(Some(c.variant.relative_sd_percent())),
                num(c.interval.map(|i| i.low)),
                num(c.interval.map(|i| i.high)),
                num(c.welch_p),
                num(c.mann_whitney_p),
                num(s.noise_floor),
                verdict_name(s, role).to_string(),
            ]);
        }
        None => v.resize(EXTRA, String::new()),
    }
    v
}

/// Renders the report as CSV with a header line.
pub fn render(report: &Report, style: &Style) -> String {
    let sep = if style.decimal_comma { ';' } else { ',' };
    let mut out = String::new();
    let mut row = |values: &[&str]| {
        let line: Vec<String> = values.iter().map(|v| field(v, sep)).collect();
        let _ = writeln!(out, "{}", line.join(&sep.to_string()));
    };
    row(&COLUMNS);
    for t in &report.targets {
        for c in &t.comparisons {
            let prefix = [
                t.name.as_str(),
                t.base.target.openwrt.as_str(),
                t.base.target.soc.as_str(),
                report.base.as_str(),
                c.variant.variant.name.as_str(),
            ];
            let mut emit = |kind: &str, item: &str, rest: Vec<String>| {
                let mut values: Vec<&str> = prefix.to_vec();
                values.push(kind);
                values.push(item);
                values.extend(rest.iter().map(String::as_str));
                values.resize(COLUMNS.len(), "");
                row(&values);
            };
            let d = style.decimal();
            let numbers = |f: &Family, m: &Metric| {
                let mut v = vec![
                    m.before().machine_text(d),
                    m.after().machine_text(d),
                    m.delta().machine_text(d),
                    percent(m.percent(), style),
                ];
                v.extend(extra(f, m, Role::Variant, style));
                v
            };
            let empty = Vec::new;
            for w in &c.warnings {
                emit("warning", w, empty());
            }
            for n in &c.notes {
                emit("note", n, empty());
            }
            for family in &c.families {
                for m in &family.metrics {
                    emit(&m.kind, &m.item, numbers(family, m));
                    if let (Some(hex), Some(change)) = (&m.hex, m.exact()) {
                        emit(
                            &m.kind,
                            &hex.item,
                            vec![
                                format!("{:x}", change.before),
                                format!("{:x}", change.after),
                                String::new(),
                                String::new(),
                            ],
                        );
                    }
                }
            }
            for (name, only) in &c.unpaired_artifacts {
                emit("note", &format!("{name}: only {only} has it"), empty());
            }
            if let Some(diff) = &c.symbols {
                for table in &diff.tables {
                    for r in &table.rows {
                        emit(
                            "symbols",
                            &format!("{}:{}", table.title, r.name),
                            vec![
                                r.old.map_or(String::new(), |v| v.to_string()),
                                r.new.map_or(String::new(), |v| v.to_string()),
                                r.delta.to_string(),
                                String::new(),
                            ],
                        );
                    }
                    emit(
                        "symbols-total",
                        table.title,
                        vec![
                            table.before.to_string(),
                            table.after.to_string(),
                            table.net().to_string(),
                            percent(Some(table.change_percent()), style),
                        ],
                    );
                }
            }
        }
    }
    for lab in &report.labs {
        let soc = lab.machine_soc();
        for note in &lab.notes {
            let values = [
                lab.lab_target.as_str(),
                "",
                &soc,
                &lab.base,
                "",
                "note",
                note,
            ];
            let mut values = values.to_vec();
            values.resize(COLUMNS.len(), "");
            row(&values);
        }
        if lab.comparisons.iter().all(|c| c.role == Role::Control) {
            // Nothing compared: the base's own means and spreads.
            for series in &lab.series {
                let Some(sum) = series
                    .arms
                    .iter()
                    .find(|(a, _)| *a == lab.base)
                    .and_then(|(_, v)| stats::summary(v))
                else {
                    continue;
                };
                let num = |x: f64| percent(Some(x), style);
                let values = [
                    lab.lab_target.clone(),
                    String::new(),
                    soc.clone(),
                    lab.base.clone(),
                    String::new(),
                    series.kind(),
                    series.item().to_string(),
                    num(sum.mean),
                    String::new(),
                    String::new(),
                    String::new(),
                    series.family.clone(),
                    series.unit.clone(),
                    sum.n.to_string(),
                    String::new(),
                    num(sum.relative_sd_percent()),
                ];
                let mut values: Vec<&str> = values.iter().map(String::as_str).collect();
                values.resize(COLUMNS.len(), "");
                row(&values);
            }
        }
        for c in &lab.comparisons {
            for family in &c.families {
                for m in &family.metrics {
                    let d = style.decimal();
                    let mut values = vec![
                        lab.lab_target.clone(),
                        String::new(),
                        soc.clone(),
                        lab.base.clone(),
                        c.arm.clone(),
                        m.kind.clone(),
                        m.item.clone(),
                        m.before().machine_text(d),
                        m.after().machine_text(d),
                        m.delta().machine_text(d),
                        percent(m.percent(), style),
                    ];
                    values.extend(extra(family, m, c.role, style));
                    let values: Vec<&str> = values.iter().map(String::as_str).collect();
                    row(&values);
                }
            }
        }
    }
    out
}
