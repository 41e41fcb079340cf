//! The lab's part of the Markdown format: per comparison an LKP-style
//! table (as the kernel test robot's reports: `mean ± %sd   %change   mean
//! ± %sd   metric`), with Welch's t 95 % interval of the %change, both
//! tests' p and the verdict:
//!
//! ```text
//! | baseline mean ± %sd | %change | no-reorder-blocks mean ± %sd | 95% Welch interval | Welch p | Mann–Whitney p | verdict | metric |
//! |--:|--:|--:|--:|--:|--:|:--|:--|
//! | 170.63 ± 0.86% | +5.78% | 180.50 ± 0.49% | +4.80% … +6.70% | 0.0015 | 0.0286 | significant | throughput.lan-to-wan.gro-on (Mbit/s) |
//! ```
//!
//! Means with two decimals in the metric's unit, `%sd` the standard
//! deviation in percent of the mean. The A/A control's table comes first
//! (its verdict column says `A/A noise floor` and how many runs per side
//! would see a change of its size); a lab that ran only its
//! base gets a table of the base's means. Notes, what each metric can and
//! cannot show, and every run's values (in a collapsed `<details>`) follow.

use std::fmt::Write as _;

use super::text::{heading, how_it_ran, run_tables};
use super::{
    interval_text, lkp_name, p_text, percent_text, verdict_text, LabComparison, LabReport, Role,
};
use crate::measure::stats::Summary;
use crate::report::model::Decimal;
use crate::report::style::Style;
use std::path::Path;

/// `170.63 ± 0.86%`.
fn mean_sd(s: &Summary, d: Decimal) -> String {
    d.apply(format!("{:.2} ± {:.2}%", s.mean, s.relative_sd_percent()))
}

fn comparison_table(out: &mut String, lab: &LabReport, c: &LabComparison, d: Decimal) {
    match c.role {
        Role::Control => {
            let _ = writeln!(
                out,
                "**A/A control** {} → {} (the noise floor):\n",
                lab.base, c.arm
            );
        }
        Role::Variant => {
            let _ = writeln!(out, "**{} → {}:**\n", lab.base, c.arm);
        }
    }
    let _ = writeln!(
        out,
        "| {} mean ± %sd | %change | {} mean ± %sd | 95% Welch interval | Welch p | Mann–Whitney p | verdict | metric |",
        lab.base, c.arm
    );
    out.push_str("|--:|--:|--:|--:|--:|--:|:--|:--|\n");
    for f in &c.families {
        for m in &f.metrics {
            let Some(s) = m.stats() else { continue };
            let cmp = &s.comparison;
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} | {} ({}) |",
                mean_sd(&cmp.base, d),
                cmp.percent
                    .map_or("n/a".to_string(), |p| percent_text(p, d)),
                mean_sd(&cmp.variant, d),
                interval_text(cmp.interval, d),
                p_text(cmp.welch_p, d),
                p_text(cmp.mann_whitney_p, d),
                verdict_text(s, c.role, d),
                lkp_name(f, m),
                f.unit
            );
        }
    }
    out.push('\n');
}

fn base_table(out: &mut String, lab: &LabReport, d: Decimal) {
    let _ = writeln!(out, "**{}** (nothing compared):\n", lab.base);
    let _ = writeln!(out, "| {} mean ± %sd | runs | metric |", lab.base);
    out.push_str("|--:|--:|:--|\n");
    for s in &lab.series {
        let Some(sum) = s
            .arms
            .iter()
            .find(|(a, _)| *a == lab.base)
            .and_then(|(_, v)| crate::measure::stats::summary(v))
        else {
            continue;
        };
        let _ = writeln!(
            out,
            "| {} | {} | {}.{}.{} ({}) |",
            mean_sd(&sum, d),
            sum.n,
            s.family,
            s.item(),
            s.kind(),
            s.unit
        );
    }
    out.push('\n');
}

/// One lab run as Markdown, newline-terminated.
pub fn section(root: &Path, lab: &LabReport, style: &Style) -> String {
    let d = style.decimal();
    let mut out = format!("### {}\n\n", heading(lab));
    let _ = writeln!(
        out,
        "`{}` ({})\n",
        super::text::lab_file(root, lab),
        how_it_ran(lab)
    );
    if let Some(settings) = lab.runtime_settings() {
        let _ = writeln!(
            out,
            "Runtime settings (read back with `ethtool -k` after every run): {settings}\n"
        );
    }
    if lab.comparisons.iter().all(|c| c.role == Role::Control) {
        base_table(&mut out, lab, d);
    }
    for c in &lab.comparisons {
        comparison_table(&mut out, lab, c, d);
    }
    out.push_str(&super::mesh::markdown(lab, d));
    for n in &lab.notes {
        let _ = writeln!(out, "> Note: {n}\n");
    }
    out.push_str("What the numbers can show:\n\n");
    for c in lab.caveats() {
        let _ = writeln!(out, "- {c}");
    }
    let _ = writeln!(
        out,
        "\n<details><summary>Every run</summary>\n\n```\n{}```\n\n</details>",
        run_tables(lab, style)
    );
    out
}
