//! `size-report --by file|dir|kconfig`: vmlinux's bytes by object file,
//! by directory or by the kconfig symbol that builds the object, base →
//! variant, from each result's `attribution.json`
//! ([`crate::results::attribution`], made from ld's link map at build
//! time, [`crate::measure::linkmap`]; symbols from the patched tree's
//! kbuild files, [`super::kconfig`]).
//!
//! Every allocated byte is in exactly one row (objects, and the
//! pseudo-objects for ld's fill, linker-script data, linker stubs and
//! alignment gaps), so each side's rows add up to `size`'s text, data and
//! bss; [`AttributionDiff::check_totals`] holds the report to that. A
//! directory row is the object's own directory (`net/ipv4/` holds
//! `net/ipv4/tcp.o`, not `net/ipv4/netfilter/…`), or with `dir:N` the
//! directory cut to N levels (`drivers/net/` holds all of
//! `drivers/net/…`), so directories do not count a byte twice either.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{bail, Result};
use serde::Serialize;

use super::known::build_command;
use crate::measure::linkmap::{ClassBytes, Grouping};
use crate::measure::sections::SectionSizes;
use crate::results::attribution::AttributionRecord;
use crate::results::BuildResult;
use crate::util::layout::Layout;

/// `--by`'s spelling of a [`Grouping`], without a depth: `file`, `dir` or
/// `kconfig` (CSV's `by-file`, `by-dir`, `by-kconfig`).
pub fn grouping_name(g: Grouping) -> &'static str {
    match g {
        Grouping::File => "file",
        Grouping::Dir | Grouping::DirDepth(_) => "dir",
        Grouping::Kconfig => "kconfig",
    }
}

/// A [`Grouping`] in a report's words: `object file`, `directory`,
/// `directory, 2 levels`.
pub fn grouping_words(g: Grouping) -> String {
    match g {
        Grouping::File => "object file".to_string(),
        Grouping::Dir => "directory".to_string(),
        Grouping::DirDepth(n) => format!("directory, {n} level{}", if n == 1 { "" } else { "s" }),
        Grouping::Kconfig => "kconfig symbol".to_string(),
    }
}

/// Parses `--by file|dir|dir:N|kconfig` (N ≥ 1: directories cut to N
/// levels).
pub fn parse_grouping(s: &str) -> Result<Grouping> {
    match s {
        "file" => return Ok(Grouping::File),
        "dir" => return Ok(Grouping::Dir),
        "kconfig" => return Ok(Grouping::Kconfig),
        _ => {}
    }
    let depth = s.strip_prefix("dir:").and_then(|n| n.parse::<usize>().ok());
    match depth {
        Some(n) if n >= 1 => Ok(Grouping::DirDepth(n)),
        _ => bail!(
            "--by {s:?}: use file (one row per object file), dir (per directory), dir:N (per \
             directory cut to N ≥ 1 levels: dir:2 puts drivers/net/ethernet/ under drivers/net/) \
             or kconfig (per kconfig symbol building the object)"
        ),
    }
}

/// One object (or directory) on both sides.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AttributionRow {
    /// Object path, directory (`net/ipv4/`) or pseudo-object (`(fill)`).
    pub name: String,
    /// Its bytes in the base's vmlinux (zero when it has none).
    pub before: ClassBytes,
    /// Its bytes in the variant's.
    pub after: ClassBytes,
}

impl AttributionRow {
    /// `after.dec() - before.dec()`, bytes.
    pub fn delta(&self) -> i64 {
        self.after.dec() as i64 - self.before.dec() as i64
    }

    /// The change of one class: (text, data, bss) deltas in bytes.
    pub fn class_deltas(&self) -> [i64; 3] {
        [
            self.after.text as i64 - self.before.text as i64,
            self.after.data as i64 - self.before.data as i64,
            self.after.bss as i64 - self.before.bss as i64,
        ]
    }
}

/// The attribution of a pair, rolled up and compared.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AttributionDiff {
    /// `file`, `dir`, `dir:N` or `kconfig`.
    #[serde(serialize_with = "ser_grouping")]
    pub grouping: Grouping,
    /// How each side's map was made (`ld -Map …`, `CONFIG_VMLINUX_MAP`).
    pub maps: [String; 2],
    /// Every row either side has, largest |change| first, then by name
    /// (unchanged rows last).
    pub rows: Vec<AttributionRow>,
    /// Sum of the base's rows: `size`'s text, data, bss of its vmlinux.
    pub before: ClassBytes,
    /// Sum of the variant's rows.
    pub after: ClassBytes,
    /// With `kconfig`: the objects of the base's and of the variant's
    /// `(unknown)` row, each `path: why` (no kbuild line builds it);
    /// empty otherwise.
    pub unresolved: [Vec<String>; 2],
}

fn ser_grouping<S: serde::Serializer>(g: &Grouping, s: S) -> Result<S::Ok, S::Error> {
    match g {
        Grouping::DirDepth(n) => s.serialize_str(&format!("dir:{n}")),
        _ => s.serialize_str(grouping_name(*g)),
    }
}

impl AttributionDiff {
    /// Rolls up and compares `base` → `variant` (by object for
    /// [`Grouping::Kconfig`]: [`super::kconfig::diff`] gives its rows).
    pub fn new(base: &AttributionRecord, variant: &AttributionRecord, g: Grouping) -> Self {
        let (old, new) = (base.attribution(), variant.attribution());
        Self::from_rollups(base, variant, g, [old.rollup(g), new.rollup(g)])
    }

    /// Compares rows `base` → `variant` already rolled up (each side's
    /// rows adding up to its [`Attribution::totals`]).
    ///
    /// [`Attribution::totals`]: crate::measure::linkmap::Attribution::totals
    pub fn from_rollups(
        base: &AttributionRecord,
        variant: &AttributionRecord,
        g: Grouping,
        [a, b]: [std::collections::BTreeMap<String, ClassBytes>; 2],
    ) -> Self {
        let (old, new) = (base.attribution(), variant.attribution());
        let mut names: Vec<&String> = a.keys().chain(b.keys()).collect();
        names.sort();
        names.dedup();
        let mut rows: Vec<AttributionRow> = names
            .into_iter()
            .map(|n| AttributionRow {
                name: n.clone(),
                before: a.get(n).copied().unwrap_or_default(),
                after: b.get(n).copied().unwrap_or_default(),
            })
            .collect();
        rows.sort_by(|x, y| {
            y.delta()
                .unsigned_abs()
                .cmp(&x.delta().unsigned_abs())
                .then_with(|| x.name.cmp(&y.name))
        });
        AttributionDiff {
            grouping: g,
            maps: [base.map.clone(), variant.map.clone()],
            rows,
            before: old.totals(),
            after: new.totals(),
            unresolved: [Vec::new(), Vec::new()],
        }
    }

    /// How the maps were made: one description when both sides agree,
    /// else both joined by "and".
    pub fn maps_description(&self) -> String {
        if self.maps[0] == self.maps[1] {
            self.maps[0].clone()
        } else {
            self.maps.join(" and ")
        }
    }

    /// Rows with any change: of their total, or bytes moved between text,
    /// data and bss (those sort after every change of the total).
    pub fn changed(&self) -> impl Iterator<Item = &AttributionRow> {
        self.rows.iter().filter(|r| r.before != r.after)
    }

    /// Checks that each side's rows add up to its `size` figures (the
    /// result's recorded vmlinux sections).
    ///
    /// Errors name the side, both figures and the fix.
    pub fn check_totals(&self, base: &SectionSizes, variant: &SectionSizes) -> Result<()> {
        for (side, got, want) in [
            ("base", &self.before, base),
            ("variant", &self.after, variant),
        ] {
            if (got.text, got.data, got.bss) != (want.text, want.data, want.bss) {
                bail!(
                    "the {side}'s attribution adds up to text {} data {} bss {}, but its vmlinux \
                     has text {} data {} bss {}: attribution.json is not of this vmlinux",
                    got.text,
                    got.data,
                    got.bss,
                    want.text,
                    want.data,
                    want.bss
                );
            }
        }
        Ok(())
    }

    /// The diff as text: a summary line in bloat-o-meter's words, a table
    /// of every changed row, largest |change| first (`top`: only the first
    /// this many), the count of unchanged rows and the totals, which are
    /// `size`'s.
    pub fn render(&self, top: Option<usize>) -> String {
        let what = match self.grouping {
            Grouping::File => "File",
            Grouping::Dir | Grouping::DirDepth(_) => "Directory",
            Grouping::Kconfig => "Kconfig symbol",
        };
        let changed: Vec<&AttributionRow> = self.changed().collect();
        let (added, removed) = (
            changed.iter().filter(|r| r.before.dec() == 0).count(),
            changed.iter().filter(|r| r.after.dec() == 0).count(),
        );
        let up: i64 = changed.iter().map(|r| r.delta()).filter(|d| *d > 0).sum();
        let down: i64 = changed.iter().map(|r| r.delta()).filter(|d| *d < 0).sum();
        let mut out = format!(
            "add/remove: {added}/{removed} grow/shrink: {}/{} up/down: {up}/{down} ({})\n",
            changed.iter().filter(|r| r.delta() > 0).count(),
            changed.iter().filter(|r| r.delta() < 0).count(),
            up + down
        );
        let shown = &changed[..top.map_or(changed.len(), |n| n.min(changed.len()))];
        let width = shown
            .iter()
            .map(|r| r.name.chars().count())
            .max()
            .unwrap_or(0)
            .max(what.len());
        let _ = writeln!(
            out,
            "{what:<width$} {:>10} {:>10} {:>8} {:>8} {:>8} {:>8}",
            "old", "new", "delta", "text", "data", "bss"
        );
        for r in shown {
            let [t, d, b] = r.class_deltas();
            let _ = writeln!(
                out,
                "{:<width$} {:>10} {:>10} {:>+8} {:>+8} {:>+8} {:>+8}",
                r.name,
                r.before.dec(),
                r.after.dec(),
                r.delta(),
                t,
                d,
                b
            );
        }
        if shown.len() < changed.len() {
            let _ = writeln!(
                out,
                "... {} smaller changes left out",
                changed.len() - shown.len()
            );
        }
        let unchanged = self.rows.len() - changed.len();
        if unchanged > 0 {
            let _ = writeln!(out, "({unchanged} unchanged)");
        }
        let [a, b] = &self.unresolved;
        let sides: &[(&str, &Vec<String>)] = if a == b {
            &[("both sides", a)]
        } else {
            &[("the base", a), ("the variant", b)]
        };
        for (side, objects) in sides {
            if !objects.is_empty() {
                let _ = writeln!(
                    out,
                    "(unknown) of {side}: {} object{} not found in the kbuild files: {}",
                    objects.len(),
                    if objects.len() == 1 { "" } else { "s" },
                    objects.join("; ")
                );
            }
        }
        let (b, a) = (&self.before, &self.after);
        let _ = writeln!(
            out,
            "Total: text {} → {}, data {} → {}, bss {} → {}, dec {} → {} ({:+}): size's figures",
            b.text,
            a.text,
            b.data,
            a.data,
            b.bss,
            a.bss,
            b.dec(),
            a.dec(),
            a.dec() as i64 - b.dec() as i64
        );
        out
    }
}

/// The attribution of one result: its `attribution.json`, checked against
/// its vmlinux.
///
/// Errors (each with the command that makes it): none there, or one of
/// another vmlinux.
pub fn read(layout: &Layout, dir: &Path, result: &BuildResult) -> Result<AttributionRecord> {
    let (t, v) = (&result.target.name, &result.variant.name);
    let cmd = build_command(layout, t, &[v]);
    let fix = format!(
        "run `{cmd}` again: it adds the attribution to an up-to-date build whose build tree is \
         still there (else add --force)"
    );
    let Some(record) = AttributionRecord::read_for(dir, result, &fix)? else {
        bail!(
            "--by needs {}, which {t}/{v} does not have (made from the link map at build time); \
             {fix}",
            dir.join(crate::results::attribution::FILE_NAME).display()
        );
    };
    Ok(record)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn by_values_parse_and_refuse() {
        assert_eq!(parse_grouping("file").unwrap(), Grouping::File);
        assert_eq!(parse_grouping("dir").unwrap(), Grouping::Dir);
        assert_eq!(parse_grouping("dir:2").unwrap(), Grouping::DirDepth(2));
        for bad in ["dir:0", "dir:", "dir:x", "files", "file:2", ""] {
            let e = parse_grouping(bad).unwrap_err().to_string();
            assert!(e.contains("dir:N"), "{bad}: {e}");
        }
        assert_eq!(grouping_words(Grouping::DirDepth(1)), "directory, 1 level");
        assert_eq!(parse_grouping("kconfig").unwrap(), Grouping::Kconfig);
        assert_eq!(grouping_name(Grouping::Kconfig), "kconfig");
    }

    fn bytes(text: u64, data: u64) -> ClassBytes {
        ClassBytes { text, data, bss: 0 }
    }

    #[test]
    fn top_rows_and_bytes_moved_between_classes() {
        let row = |name: &str, before, after| AttributionRow {
            name: name.to_string(),
            before,
            after,
        };
        let diff = AttributionDiff {
            grouping: Grouping::File,
            maps: ["m".to_string(), "m".to_string()],
            rows: vec![
                row("a.o", bytes(100, 0), bytes(60, 0)),
                row("b.o", bytes(10, 0), bytes(30, 0)),
                row("c.o", bytes(10, 0), bytes(5, 0)),
                row("moved.o", bytes(8, 0), bytes(4, 4)),
                row("same.o", bytes(7, 1), bytes(7, 1)),
            ],
            before: bytes(135, 1),
            after: bytes(106, 5),
            unresolved: [vec!["x/y.o: no kbuild line builds it".into()], Vec::new()],
        };
        let all = diff.render(None);
        assert!(all.contains("\nmoved.o "), "{all}");
        assert!(all.contains("(1 unchanged)"), "{all}");
        assert!(
            all.contains("(unknown) of the base: 1 object not found in the kbuild files: x/y.o:"),
            "{all}"
        );
        assert!(
            all.contains("grow/shrink: 1/2 up/down: 20/-45 (-25)"),
            "{all}"
        );
        let top = diff.render(Some(2));
        let names: Vec<&str> = top
            .lines()
            .skip(2)
            .map(|l| l.split(' ').next().unwrap_or(""))
            .collect();
        assert_eq!(names[..2], ["a.o", "b.o"], "{top}");
        assert!(top.contains("... 2 smaller changes left out"), "{top}");
    }
}
