//! `--format markdown`: GitHub-flavoured Markdown, one table per target.
//!
//! ```text
//! ### tinyconfig (bcm53xx/tiny)
//!
//! Linux 6.12.117, arm-linux-gnueabi-gcc (Debian 12.2.0-14) 12.2.0
//!
//! | | baseline | no-reorder-blocks | change |
//! |:--|--:|--:|--:|
//! | zImage | 415656 | 418744 | +3088 (+0.74%) |
//! …
//! | vmlinux hex | bb374 | baa8c | |
//! ```
//!
//! Rows: each artifact (bytes), then vmlinux `text`, `data`, `bss`, `dec`
//! (bytes) and `hex` (dec in hex, as `size` prints it). Columns: the base,
//! then per variant its value and the change in bytes and percent.
//! Warnings are quoted above the table; symbol diffs follow it in
//! collapsible `<details>` blocks.

use std::fmt::Write as _;

use super::model::{Change, Report};
use super::text::heading;
use super::Style;

fn change_cell(c: &Change, style: &Style) -> String {
    format!("{:+} ({})", c.delta(), c.percent_text(style.decimal_comma))
}

/// Renders the report as Markdown.
pub fn render(report: &Report, style: &Style) -> String {
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
        let _ = write!(out, "| | {} |", report.base);
        for c in &t.comparisons {
            let _ = write!(out, " {} | change |", c.variant.variant.name);
        }
        out.push_str("\n|:--|--:|");
        for _ in &t.comparisons {
            out.push_str("--:|--:|");
        }
        out.push('\n');

        // Artifact rows: the union in the first comparison's order.
        let mut names: Vec<&str> = Vec::new();
        for c in &t.comparisons {
            for a in &c.artifacts {
                if !names.contains(&a.name.as_str()) {
                    names.push(&a.name);
                }
            }
        }
        for name in names {
            let before = t.base.artifacts.get(name).map(|a| a.size);
            let _ = write!(
                out,
                "| {name} | {} |",
                before.map_or("–".to_string(), |b| b.to_string())
            );
            for c in &t.comparisons {
                match c.artifacts.iter().find(|a| a.name == name) {
                    Some(a) => {
                        let _ = write!(
                            out,
                            " {} | {} |",
                            a.change.after,
                            change_cell(&a.change, style)
                        );
                    }
                    None => out.push_str(" – | |"),
                }
            }
            out.push('\n');
        }
        let sections: Vec<_> = t.comparisons.iter().map(|c| c.sections.rows()).collect();
        for row in 0..4 {
            let (name, first) = sections[0][row];
            let _ = write!(out, "| vmlinux {name} | {} |", first.before);
            for s in &sections {
                let _ = write!(
                    out,
                    " {} | {} |",
                    s[row].1.after,
                    change_cell(&s[row].1, style)
                );
            }
            out.push('\n');
        }
        let _ = write!(out, "| vmlinux hex | {:x} |", t.base.vmlinux_sections.dec());
        for c in &t.comparisons {
            let _ = write!(out, " {:x} | |", c.variant.vmlinux_sections.dec());
        }
        out.push('\n');
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
        }
    }
    out
}
