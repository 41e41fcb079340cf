//! The lab's part of the mail format: what a patch's mail needs, short
//! enough to post. The lab's [`text::head`], then per variant one summary
//! table with every metric's means, %change, Welch's t 95 % interval, the
//! A/A control's |%change| of the same metric (the noise floor) and the
//! verdict, the [`text::tail`] (mesh table, notes, what the numbers can
//! show), and the per-run tables of the headline families
//! ([`crate::results::lab::LabMetric::headline`]: Mbit/s, UDP loss, tbench
//! MB/s, modelled packets/s), as the batman-adv performance mails have them:
//!
//! ```text
//! baseline → no-reorder-blocks:
//! metric                | runs | baseline | no-reorder-blocks | change |    95% interval |    A/A | verdict
//! ----------------------+------+----------+-------------------+--------+-----------------+--------+-------------------------------------------
//! Throughput (Mbit/s):
//!   LAN to WAN, GRO on  |  3/3 |    170.6 |             180.5 | +5.78% | +4.02% … +7.55% | ±0.25% | too few runs for Mann–Whitney (4 per side)
//!   WAN to LAN, GRO on  |  3/3 |    175.3 |             176.6 | +0.72% | -0.18% … +1.63% | ±1.27% | interval contains 0
//! ```
//!
//! (`runs` is the base's and the variant's measured runs of that row: a
//! lab stopped early has fewer than it planned.)
//!
//! The seed's two lines per metric (with both arms' sd and both tests' p)
//! and the A/A control's own lines are the text format's
//! ([`text::block`]); every family's runs are in the Markdown format's
//! "Every run" block and in lab.json.

use std::fmt::Write as _;

use super::table::{aligned, run_table};
use super::text::{self, seed_value};
use super::{
    family_title, interval_text, percent_text, verdict_text, LabComparison, LabReport, Role,
};
use crate::report::model::Decimal;
use crate::report::style::Style;
use crate::results::lab::LabMetric;
use std::path::Path;

/// `baseline → no-reorder-blocks:` and the table of every metric of `c`
/// (see the module's example); a metric without statistics (fewer than 2
/// runs a side) has its means and `n/a`.
pub fn summary(lab: &LabReport, c: &LabComparison, d: Decimal) -> String {
    let mut out = match c.role {
        Role::Variant => format!("{} → {}:\n", lab.base, c.arm),
        Role::Control => format!("A/A control {} → {} (the noise floor):\n", lab.base, c.arm),
    };
    let mut table: Vec<Vec<String>> = vec![[
        "metric",
        "runs",
        lab.base.as_str(),
        c.arm.as_str(),
        "change",
        "95% interval",
        "A/A",
        "verdict",
    ]
    .map(String::from)
    .to_vec()];
    for f in &c.families {
        let mut title = vec![String::new(); 8];
        title[0] = format!("{} ({})", family_title(&f.name), f.unit);
        table.push(title);
        for m in &f.metrics {
            let stats = m.stats();
            let floor = match (c.role, stats.and_then(|s| s.noise_floor)) {
                (Role::Variant, Some(floor)) => d.apply(format!("±{floor:.2}%")),
                _ => "–".to_string(),
            };
            table.push(vec![
                format!("  {}, {}", m.phrase, lab.kind_title(&f.name, &m.kind)),
                format!("{}/{}", m.base().len(), m.variant().len()),
                seed_value(m.base().mean(), d),
                seed_value(m.variant().mean(), d),
                m.percent()
                    .map_or("n/a".to_string(), |p| percent_text(p, d)),
                interval_text(stats.and_then(|s| s.comparison.interval), d),
                floor,
                stats.map_or("n/a".to_string(), |s| verdict_text(s, c.role, d)),
            ]);
        }
    }
    out.push_str(&aligned(&table, &[0, 7]));
    out
}

/// The per-run tables of the headline families ([`LabMetric::headline`]:
/// what the user's question is about and, with the core model, its
/// answer at the SoC's clock), separated by blank lines,
/// and a line saying where the other families' runs are.
pub fn run_tables(lab: &LabReport, d: Decimal) -> String {
    let (headline, other): (Vec<_>, Vec<_>) = lab
        .series
        .iter()
        .partition(|s| LabMetric::named(&s.family).is_some_and(|m| m.headline().is_some()));
    let mut out = headline
        .iter()
        .map(|s| run_table(s, d))
        .collect::<Vec<_>>()
        .join("\n");
    let mut families: Vec<&str> = Vec::new();
    for s in &other {
        if !families.contains(&s.family.as_str()) {
            families.push(&s.family);
        }
    }
    if !families.is_empty() {
        if !out.is_empty() {
            out.push('\n');
        }
        let which = match families.as_slice() {
            [one] => family_title(one).to_string(),
            many => format!("the other {} families", many.len()),
        };
        let _ = writeln!(
            out,
            "Every run of {which}: `--format markdown` (its \"Every run\" block) or {}",
            crate::results::lab::FILE_NAME
        );
    }
    out
}

/// One lab run's block for the mail format, newline-terminated.
pub fn block(root: &Path, lab: &LabReport, style: &Style) -> String {
    let d = style.decimal();
    let mut out = text::head(root, lab);
    let variants: Vec<&LabComparison> = lab
        .comparisons
        .iter()
        .filter(|c| c.role == Role::Variant)
        .collect();
    let shown: Vec<&LabComparison> = if variants.is_empty() {
        text::base_lines(&mut out, lab, d);
        // A control without a variant: its own table is the result.
        lab.comparisons.iter().collect()
    } else {
        variants
    };
    let tables: Vec<String> = shown.iter().map(|c| summary(lab, c, d)).collect();
    out.push_str(&tables.join("\n"));
    let tail = text::tail(lab, d);
    if !tables.is_empty() && super::mesh::columns(lab).is_some() {
        out.push('\n');
    }
    out.push_str(&tail);
    let tables = run_tables(lab, d);
    if !tables.is_empty() {
        out.push('\n');
        out.push_str(&tables);
    }
    out
}
