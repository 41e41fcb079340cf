//! The lab's plain tables: one per-run table per series ([`run_table`])
//! and the column alignment every text table of the lab uses
//! ([`aligned`]).

use std::fmt::Write as _;

use super::series::Series;
use super::shown::family_title;
use crate::report::model::Decimal;

/// One per-run table, as the batman-adv performance mails have them: a
/// column per arm, a row per run (round), then the mean (`avg`). Values
/// with one decimal, in the series' unit.
pub fn run_table(s: &Series, d: Decimal) -> String {
    let mut out = format!("{}, {} ({}):\n", family_title(&s.family), s.title(), s.unit);
    let rows = s.arms.iter().map(|(_, v)| v.len()).max().unwrap_or(0);
    let cell = |v: Option<f64>| v.map_or("–".to_string(), |v| d.apply(format!("{v:.1}")));
    let mut table: Vec<Vec<String>> = vec![std::iter::once("run".to_string())
        .chain(s.arms.iter().map(|(a, _)| a.clone()))
        .collect()];
    for i in 0..rows {
        table.push(
            std::iter::once((i + 1).to_string())
                .chain(s.arms.iter().map(|(_, v)| cell(v.get(i).copied())))
                .collect(),
        );
    }
    table.push(
        std::iter::once("avg".to_string())
            .chain(
                s.arms
                    .iter()
                    .map(|(_, v)| cell(crate::report::model::mean(v))),
            )
            .collect(),
    );
    out.push_str(&aligned(&table, &[0]));
    out
}

/// `table` (a header row, then data rows, all of one length) as lines of
/// ` | `-separated cells padded to their column's width: the columns in
/// `left` aligned left, the others right, and a `-+-` rule under the
/// header. A data row whose cells after the first are all empty is a
/// group's title: printed alone, `:`-terminated, and not counted in the
/// widths. Trailing spaces are trimmed.
pub fn aligned(table: &[Vec<String>], left: &[usize]) -> String {
    let mut out = String::new();
    let Some(header) = table.first() else {
        return out;
    };
    let is_title = |row: &Vec<String>| row.iter().skip(1).all(String::is_empty);
    let widths: Vec<usize> = (0..header.len())
        .map(|c| {
            table
                .iter()
                .enumerate()
                .filter(|(i, r)| *i == 0 || !is_title(r))
                .map(|(_, r)| r[c].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    for (i, row) in table.iter().enumerate() {
        if i > 0 && is_title(row) {
            let _ = writeln!(out, "{}:", row[0]);
            continue;
        }
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(c, (v, w))| {
                if left.contains(&c) {
                    format!("{v:<w$}")
                } else {
                    format!("{v:>w$}")
                }
            })
            .collect();
        let _ = writeln!(out, "{}", cells.join(" | ").trim_end());
        if i == 0 {
            let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
            let _ = writeln!(out, "{}", rule.join("-+-"));
        }
    }
    out
}
