//! Figures tied to the runs that measured them: a region of a page
//! between `<!-- figures: runs/NAME.json -->` and `<!-- /figures -->`
//! may quote only figures its record (`docs/runs/NAME.json`) holds.
//!
//! A record is JSON written from a run's own output: `command`s, `date`,
//! `commit` (40 hex digits), `machine`, and what the commands printed.
//! A figure is a number with a decimal point, of four or more digits, or
//! followed by `%` (`+1.61%`, `3,336,352`, `1,094 s`, `−0.36 %`); small
//! counts (`2 cores`, `10 rounds`) are prose. Numbers are compared without
//! their sign and thousands separators, so `−0.36 %` on a page matches
//! `(-0.36%)` in a record, and trailing zeros after a decimal point are
//! dropped (`9.20` on a page is `9.2` in a JSON number).

use std::collections::BTreeSet;
use std::path::Path;

/// One marked region of a page: its first line (1-based), the record it
/// names (relative to `docs/`), and its text.
#[derive(Debug)]
pub struct Region {
    pub line: usize,
    pub record: String,
    pub text: String,
}

const OPEN: &str = "<!-- figures: ";
const CLOSE: &str = "<!-- /figures -->";

/// The marked regions of `page`, or what is wrong with the marks (one
/// not closed, one opened inside another, a close without an open).
pub fn regions(page: &str) -> Result<Vec<Region>, String> {
    let mut out = Vec::new();
    let mut open: Option<Region> = None;
    for (i, line) in page.lines().enumerate() {
        let trimmed = line.trim();
        if let Some(rest) = trimmed.strip_prefix(OPEN) {
            let record = rest
                .strip_suffix("-->")
                .map(str::trim)
                .filter(|r| !r.is_empty())
                .ok_or_else(|| format!("line {}: write `{OPEN}runs/NAME.json -->`", i + 1))?;
            if let Some(r) = &open {
                return Err(format!(
                    "line {}: a figures region opens inside the one of line {}",
                    i + 1,
                    r.line
                ));
            }
            open = Some(Region {
                line: i + 1,
                record: record.to_string(),
                text: String::new(),
            });
        } else if trimmed == CLOSE {
            out.push(
                open.take()
                    .ok_or_else(|| format!("line {}: `{CLOSE}` closes nothing", i + 1))?,
            );
        } else if let Some(r) = &mut open {
            r.text.push_str(line);
            r.text.push('\n');
        }
    }
    match open {
        Some(r) => Err(format!("line {}: the figures region is not closed", r.line)),
        None => Ok(out),
    }
}

/// Every number of `text` as the comparison sees it: digits with the
/// `.` between them, thousands separators (`,` before three digits)
/// dropped, no sign, and none inside a word (`BCM47094`); with whether it
/// counts as a figure (see the module docs).
pub fn numbers(text: &str) -> Vec<(String, bool)> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if !chars[i].is_ascii_digit() {
            i += 1;
            continue;
        }
        // Digits inside a word are a name, not a figure (BCM47094,
        // mt7621, -O2, the hex of `size`'s table).
        if i > 0 && (chars[i - 1].is_alphabetic() || chars[i - 1] == '_') {
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            continue;
        }
        let mut token = String::new();
        while i < chars.len() {
            let c = chars[i];
            let next_digit = chars.get(i + 1).is_some_and(char::is_ascii_digit);
            if c.is_ascii_digit() || (c == '.' && next_digit) {
                token.push(c);
            } else if c == ','
                && chars
                    .get(i + 1..i + 4)
                    .is_some_and(|d| d.iter().all(char::is_ascii_digit))
                && !chars.get(i + 4).is_some_and(char::is_ascii_digit)
            {
                // A thousands separator: dropped.
            } else {
                break;
            }
            i += 1;
        }
        let percent = chars[i..].iter().take(2).any(|c| *c == '%')
            && chars.get(i).is_some_and(|c| *c == '%' || *c == ' ');
        let digits = token.chars().filter(char::is_ascii_digit).count();
        let figure = token.contains('.') || digits >= 4 || percent;
        // `9.20` on a page is `9.2` in a JSON record.
        if token.contains('.') && token.matches('.').count() == 1 {
            token = token
                .trim_end_matches('0')
                .trim_end_matches('.')
                .to_string();
        }
        out.push((token, figure));
    }
    out
}

/// What is wrong with `page`'s figures regions (`docs` is the book's
/// folder, against which records are named): a record that does not
/// exist or lacks its fields, a figure its record does not hold. Each
/// problem names the page, the region's line and the figure.
pub fn problems(page_name: &str, page: &str, docs: &Path) -> Vec<String> {
    let regions = match regions(page) {
        Ok(r) => r,
        Err(e) => return vec![format!("{page_name}: {e}")],
    };
    let mut out = Vec::new();
    for r in regions {
        let at = format!("{page_name}:{}", r.line);
        let file = docs.join(&r.record);
        let Ok(text) = std::fs::read_to_string(&file) else {
            out.push(format!("{at}: the record {} does not exist", r.record));
            continue;
        };
        let record: serde_json::Value = match serde_json::from_str(&text) {
            Ok(v) => v,
            Err(e) => {
                out.push(format!("{at}: {} is not JSON: {e}", r.record));
                continue;
            }
        };
        let commit_ok = record["commit"]
            .as_str()
            .is_some_and(|c| c.len() == 40 && c.bytes().all(|b| b.is_ascii_hexdigit()));
        let fields_ok = ["date", "machine"]
            .iter()
            .all(|k| record[k].as_str().is_some_and(|s| !s.is_empty()))
            && record["commands"].as_array().is_some_and(|c| !c.is_empty());
        if !commit_ok || !fields_ok {
            out.push(format!(
                "{at}: {} lacks its commit (40 hex digits), date, machine or commands",
                r.record
            ));
            continue;
        }
        let held: BTreeSet<String> = numbers(&text).into_iter().map(|(n, _)| n).collect();
        for (n, figure) in numbers(&r.text) {
            if figure && !held.contains(&n) {
                out.push(format!("{at}: {n} is not in {}", r.record));
            }
        }
    }
    out
}
