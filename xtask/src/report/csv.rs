//! `--format csv`: every number of the report, one row per value (RFC 4180:
//! CRLF-free `\n` line ends, fields with the separator, `"` or a line break
//! quoted, `"` doubled).
//!
//! Columns: `target,openwrt_target,soc,base,variant,kind,item,before,after,delta,percent`.
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
//! With `--decimal-comma` the separator is `;` and percentages (and means)
//! use `,`.

use std::fmt::Write as _;

use super::model::{Metric, Report};
use super::Style;

/// The header line's column names.
pub const COLUMNS: [&str; 11] = [
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
];

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
            let mut emit = |kind: &str, item: &str, rest: [String; 4]| {
                let mut values: Vec<&str> = prefix.to_vec();
                values.push(kind);
                values.push(item);
                values.extend(rest.iter().map(String::as_str));
                row(&values);
            };
            let d = style.decimal();
            let numbers = |m: &Metric| {
                [
                    m.before().machine_text(d),
                    m.after().machine_text(d),
                    m.delta().machine_text(d),
                    percent(m.percent(), style),
                ]
            };
            let empty = || [String::new(), String::new(), String::new(), String::new()];
            for w in &c.warnings {
                emit("warning", w, empty());
            }
            for n in &c.notes {
                emit("note", n, empty());
            }
            for family in &c.families {
                for m in &family.metrics {
                    emit(&m.kind, &m.item, numbers(m));
                    if let (Some(hex), Some(change)) = (&m.hex, m.exact()) {
                        emit(
                            &m.kind,
                            &hex.item,
                            [
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
                            [
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
                        [
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
    out
}
