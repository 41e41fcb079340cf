//! `--format markdown`: GitHub-flavoured Markdown, one table per target.
//!
//! ```text
//! ### tinyconfig (bcm53xx/tiny)
//!
//! Linux 6.12.117, arm-linux-gnueabi-gcc (Debian 12.2.0-14) 12.2.0
//!
//! | | baseline (-O2) | no-reorder-blocks (-O2) | change |
//! |:--|--:|--:|--:|
//! | zImage | 415656 | 418744 | +3088 (+0.74%) |
//! …
//! | vmlinux hex | bb374 | baa8c | |
//! ```
//!
//! Rows: every metric of every family ([`super::document::TargetReport::rows`]);
//! for sizes each artifact (bytes), then vmlinux `text`, `data`, `bss`, `dec`
//! (bytes) and `hex` (dec in hex, as `size` prints it). A family whose unit
//! is shown has it in the row label (`tcp (Mbit/s)`); means of several
//! samples are shown with two decimals. Columns: the base, then per variant
//! its value and the change (in the unit, and in percent). Each column
//! names its build's optimization level ([`crate::results::Cflags::level`]).
//! Warnings are quoted above the table; symbol diffs follow it in
//! collapsible `<details>` blocks. The runtime lab's runs follow the
//! targets, as LKP-style tables with p values and intervals
//! ([`super::lab::markdown`]).

use std::fmt::Write as _;

use super::document::Report;
use super::model::{Metric, UnitLabel};
use super::style::Style;
use super::text::heading;

fn change_cell(m: &Metric, style: &Style) -> String {
    let d = style.decimal();
    format!("{} ({})", m.delta().signed_text(d), m.percent_text(d))
}

/// Renders the report as Markdown: the size targets, then each lab run
/// ([`super::lab::markdown::section`]).
pub fn render(report: &Report, style: &Style) -> String {
    let mut out = sizes(report, style);
    for lab in &report.labs {
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&super::lab::markdown::section(&report.root, lab, style));
    }
    if let Some(a) = &report.agreement {
        out.push('\n');
        out.push_str(&super::lab::agreement::markdown(
            &report.root,
            a,
            style.decimal(),
        ));
    }
    out
}

fn sizes(report: &Report, style: &Style) -> String {
    let mut out = String::new();
    for (i, t) in report.targets.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let _ = writeln!(out, "### {}\n", heading(t));
        let _ = writeln!(
            out,
            "Linux {}, {}\n",
            t.base.kernel_source.version, t.base.compiler
        );
        let openwrt = super::text::openwrt_line(t);
        if !openwrt.is_empty() {
            let _ = writeln!(out, "{openwrt}");
        }
        for c in &t.comparisons {
            for w in &c.warnings {
                let _ = writeln!(
                    out,
                    "> **Warning:** compared anyway (`--allow-mismatch`), {} → {}: {w}\n",
                    report.base, c.variant.variant.name
                );
            }
            for n in &c.notes {
                let _ = writeln!(out, "> Note: {n}\n");
            }
        }
        let _ = write!(
            out,
            "| | {} ({}) |",
            report.base,
            t.base.kbuild_cflags.level()
        );
        for c in &t.comparisons {
            let _ = write!(
                out,
                " {} ({}) | change |",
                c.variant.variant.name,
                c.variant.kbuild_cflags.level()
            );
        }
        out.push_str("\n|:--|--:|");
        for _ in &t.comparisons {
            out.push_str("--:|--:|");
        }
        out.push('\n');

        let d = style.decimal();
        for row in t.rows() {
            let label = match row.family.unit_label {
                UnitLabel::Implied => row.metric.label.clone(),
                UnitLabel::Shown => format!("{} ({})", row.metric.label, row.family.unit),
            };
            let _ = write!(out, "| {label} | {} |", row.metric.before().text(d));
            for cell in &row.cells {
                match cell {
                    Some(m) => {
                        let _ = write!(out, " {} | {} |", m.after().text(d), change_cell(m, style));
                    }
                    None => out.push_str(" – | |"),
                }
            }
            out.push('\n');
            if let (Some(hex), Some(change)) = (&row.metric.hex, row.metric.exact()) {
                let _ = write!(out, "| {} | {:x} |", hex.label, change.before);
                for cell in &row.cells {
                    match cell.and_then(Metric::exact) {
                        Some(c) => {
                            let _ = write!(out, " {:x} | |", c.after);
                        }
                        None => out.push_str(" – | |"),
                    }
                }
                out.push('\n');
            }
        }
        for c in &t.comparisons {
            for (name, only) in &c.unpaired_artifacts {
                let _ = writeln!(out, "\n{name}: only {only} has it.");
            }
        }

        for c in &t.comparisons {
            if let Some(diff) = &c.symbols {
                let mode = diff.mode.flag().map_or(String::new(), |f| format!(" {f}"));
                let _ = writeln!(
                    out,
                    "\n<details><summary>Symbols {} → {} (bloat-o-meter{mode}{})</summary>\n\n```\n{}```\n\n</details>",
                    report.base,
                    c.variant.variant.name,
                    if diff.options.fold_clones {
                        ", compiler clones folded"
                    } else {
                        ""
                    },
                    diff.render()
                );
            }
            if let Some(diff) = &c.attribution {
                let _ = writeln!(
                    out,
                    "\n<details><summary>Bytes by {} {} → {} (link maps: {})</summary>\n\n```\n{}```\n\n</details>",
                    super::attribution::grouping_words(diff.grouping),
                    report.base,
                    c.variant.variant.name,
                    diff.maps_description(),
                    diff.render(None)
                );
            }
            if let Some(diff) = &c.device_fit {
                let _ = writeln!(
                    out,
                    "\n<details><summary>Device fit {} → {} ({}): {} stop fitting</summary>\n\n```\n{}```\n\n</details>",
                    report.base,
                    c.variant.variant.name,
                    diff.openwrt_target,
                    diff.stop_fitting(),
                    diff.render(None)
                );
            }
        }
    }
    out
}
