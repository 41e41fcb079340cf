//! Symbol-level size diff with the semantics of the kernel's
//! `scripts/bloat-o-meter` (Linux 6.12).
//!
//! [`diff`] takes two `nm --size-sort` listings, in any order (from
//! [`crate::measure::symbols::read_symbols`], or unsorted from
//! [`crate::measure::symbols::read_unsorted`]) and [`BloatDiff::render`] prints
//! byte for byte what `scripts/bloat-o-meter [-c|-d|-t] old new` prints for
//! the same two files. The rules, all from bloat-o-meter's `getsizes`,
//! `calc` and `print_result`:
//!
//! * Only symbols whose nm type letter is in the mode's set are kept
//!   ([`BloatMode`]); lines whose name contains `:` are skipped (bloat-o-meter
//!   skips every nm output line containing `:`).
//! * Generated symbols are skipped ([`is_skipped`]): names starting with
//!   `__mod_`, `__se_sys`, `__se_compat_sys`, `__addressable_`, and the names
//!   `linux_banner` and `vermagic`.
//! * Every `.NUMBER` (regex `\.[0-9]+`) is removed from a name
//!   ([`strip_numbers`]), then sizes of equal names are summed.
//! * A name only in the old file is removed, only in the new one added; a
//!   common name grows or shrinks by its size difference. `up` sums the
//!   growth (added sizes included), `down` the shrinkage.
//! * Rows are sorted by delta, largest first, ties by name in descending
//!   order (Python's `sort(reverse=True)` on `(delta, name)`); rows with a
//!   zero delta are not printed.
//! * `Total` sums all kept sizes; the change is `(after - before) * 100.0 /
//!   before` (0 when `before` is 0), printed as `%+.2f%%`.
//!
//! [`Options::fold_clones`] (off by default) also folds GCC/LLVM clone names
//! (`foo.isra.0`, `foo.constprop.0`, `foo.part.0`, `foo.cold`, …) into their
//! base name; the rendered text then says so in its first line and is no
//! longer bloat-o-meter's.

use std::borrow::Cow;
use std::fmt;

use crate::measure::symbols::NmSymbol;

/// Which symbols to compare, as bloat-o-meter's command-line modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum BloatMode {
    /// No flag: one "Function" table over types `tTdDbBrRvVwW`.
    #[default]
    All,
    /// `-c`: three tables, "Function" (`tTwW`), "Data" (`dDbBvV`) and
    /// "RO Data" (`rR`).
    Categorized,
    /// `-d`: one "Data" table over types `dDbBrRvV`.
    Data,
    /// `-t`: one "Function" table over types `tTwW`.
    Text,
}

impl std::str::FromStr for BloatMode {
    type Err = anyhow::Error;

    /// bloat-o-meter's flag letter without the dash: `c`, `d` or `t`.
    fn from_str(s: &str) -> anyhow::Result<BloatMode> {
        BloatMode::ALL
            .into_iter()
            .find(|m| m.flag().is_some_and(|f| &f[1..] == s))
            .ok_or_else(|| anyhow::anyhow!("unknown bloat-o-meter mode {s:?}; use c, d or t"))
    }
}

impl BloatMode {
    /// Every mode, in the order bloat-o-meter's flags are documented.
    pub const ALL: [BloatMode; 4] = [
        BloatMode::All,
        BloatMode::Categorized,
        BloatMode::Data,
        BloatMode::Text,
    ];

    /// The bloat-o-meter flag selecting this mode (`None` for the default).
    pub fn flag(self) -> Option<&'static str> {
        match self {
            BloatMode::All => None,
            BloatMode::Categorized => Some("-c"),
            BloatMode::Data => Some("-d"),
            BloatMode::Text => Some("-t"),
        }
    }

    /// The tables this mode prints: (title, nm type letters), from
    /// bloat-o-meter's `print_result` calls.
    pub fn tables(self) -> &'static [(&'static str, &'static str)] {
        match self {
            BloatMode::All => &[("Function", "tTdDbBrRvVwW")],
            BloatMode::Categorized => {
                &[("Function", "tTwW"), ("Data", "dDbBvV"), ("RO Data", "rR")]
            }
            BloatMode::Data => &[("Data", "dDbBrRvV")],
            BloatMode::Text => &[("Function", "tTwW")],
        }
    }
}

/// Extensions beyond bloat-o-meter; the default is plain bloat-o-meter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Options {
    /// Fold compiler clones into their base name ([`fold_clone`]) before
    /// summing, so `foo` and `foo.isra.0` count as one symbol `foo`.
    pub fold_clones: bool,
}

/// One printed row: a symbol whose summed size changed.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SymbolRow {
    /// Name after `.NUMBER` stripping (and clone folding, if on).
    pub name: String,
    /// Summed size in the old file, in bytes; `None` when added ("-").
    pub old: Option<u64>,
    /// Summed size in the new file, in bytes; `None` when removed ("-").
    pub new: Option<u64>,
    /// `new - old` in bytes (missing counts as 0); never 0.
    pub delta: i64,
}

/// One bloat-o-meter table (one `print_result` call).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Table {
    /// "Function", "Data" or "RO Data".
    pub title: &'static str,
    /// The nm type letters this table counts.
    pub types: &'static str,
    /// Names only in the new file.
    pub added: usize,
    /// Names only in the old file.
    pub removed: usize,
    /// Common names that got bigger.
    pub grown: usize,
    /// Common names that got smaller.
    pub shrunk: usize,
    /// Bytes gained: added sizes plus growth of common names.
    pub up: u64,
    /// Bytes lost: removed sizes plus shrinkage of common names (positive).
    pub down: u64,
    /// Sum of all counted sizes in the old file, in bytes.
    pub before: u64,
    /// Sum of all counted sizes in the new file, in bytes.
    pub after: u64,
    /// Changed names, in bloat-o-meter's order.
    pub rows: Vec<SymbolRow>,
}

impl Table {
    /// `up - down`, in bytes (equals `after - before`).
    pub fn net(&self) -> i64 {
        self.up as i64 - self.down as i64
    }

    /// bloat-o-meter's `chg`: `(after - before) * 100.0 / before`, or 0
    /// when `before` is 0.
    pub fn change_percent(&self) -> f64 {
        if self.before == 0 {
            0.0
        } else {
            (self.after as i128 - self.before as i128) as f64 * 100.0 / self.before as f64
        }
    }
}

/// The result of [`diff`]: one [`Table`] per table of the [`BloatMode`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BloatDiff {
    /// The mode compared.
    pub mode: BloatMode,
    /// The options used; with `fold_clones` the output is not bloat-o-meter's.
    pub options: Options,
    /// One table per entry of [`BloatMode::tables`].
    pub tables: Vec<Table>,
}

/// Compares two `nm --size-sort` listings as `bloat-o-meter` does.
pub fn diff(old: &[NmSymbol], new: &[NmSymbol], mode: BloatMode) -> BloatDiff {
    diff_with(old, new, mode, Options::default())
}

/// [`diff`] with [`Options`].
pub fn diff_with(
    old: &[NmSymbol],
    new: &[NmSymbol],
    mode: BloatMode,
    options: Options,
) -> BloatDiff {
    let tables = mode
        .tables()
        .iter()
        .map(|&(title, types)| {
            let old = sizes(old, types, options);
            let new = sizes(new, types, options);
            calc(title, types, &old, &new)
        })
        .collect();
    BloatDiff {
        mode,
        options,
        tables,
    }
}

/// bloat-o-meter's `getsizes`: name → summed size in bytes. Names
/// borrow from `symbols` unless `.NUMBER` stripping or clone folding
/// changed them; the map hashes with rustc's Fx hash (names come from the
/// user's own vmlinux, so collision attacks are not a concern).
fn sizes<'a>(symbols: &'a [NmSymbol], types: &str, options: Options) -> Sizes<'a> {
    let mut out = Sizes::with_capacity_and_hasher(symbols.len(), Default::default());
    for sym in symbols {
        // Nameless symbols (real ARM vmlinux files have some) crash the
        // script's three-field unpacking; they are left out.
        if !types.contains(sym.kind)
            || sym.name.is_empty()
            || sym.name.contains(':')
            || is_skipped(&sym.name)
        {
            continue;
        }
        let mut name = strip_numbers_cow(&sym.name);
        if options.fold_clones {
            name = match name {
                Cow::Borrowed(n) => Cow::Borrowed(fold_clone(n)),
                Cow::Owned(n) => Cow::Owned(fold_clone(&n).to_string()),
            };
        }
        *out.entry(name).or_insert(0) += sym.size;
    }
    out
}

/// Summed sizes by (stripped) name.
type Sizes<'a> = rustc_hash::FxHashMap<Cow<'a, str>, u64>;

fn calc(title: &'static str, types: &'static str, old: &Sizes<'_>, new: &Sizes<'_>) -> Table {
    let mut table = Table {
        title,
        types,
        added: 0,
        removed: 0,
        grown: 0,
        shrunk: 0,
        up: 0,
        down: 0,
        rows: Vec::new(),
        before: old.values().sum(),
        after: new.values().sum(),
    };
    for (name, &size) in old {
        match new.get(name) {
            None => {
                table.removed += 1;
                table.down += size;
                table.rows.push(row(name, Some(size), None));
            }
            Some(&now) => {
                if now > size {
                    table.grown += 1;
                    table.up += now - size;
                } else if now < size {
                    table.shrunk += 1;
                    table.down += size - now;
                }
                if now != size {
                    table.rows.push(row(name, Some(size), Some(now)));
                }
            }
        }
    }
    for (name, &size) in new {
        if !old.contains_key(name) {
            table.added += 1;
            table.up += size;
            table.rows.push(row(name, None, Some(size)));
        }
    }
    // Names are the maps' keys, so no two rows tie.
    table
        .rows
        .sort_unstable_by(|a, b| b.delta.cmp(&a.delta).then_with(|| b.name.cmp(&a.name)));
    table
}

fn row(name: &str, old: Option<u64>, new: Option<u64>) -> SymbolRow {
    SymbolRow {
        name: name.to_string(),
        old,
        new,
        delta: new.unwrap_or(0) as i64 - old.unwrap_or(0) as i64,
    }
}

/// bloat-o-meter's "strip generated symbols" list: `__mod_*`, `__se_sys*`,
/// `__se_compat_sys*`, `__addressable_*`, `linux_banner`, `vermagic`.
pub fn is_skipped(name: &str) -> bool {
    // Every prefix starts with "__": most names are settled by two bytes.
    (name.as_bytes().starts_with(b"__")
        && ["mod_", "se_sys", "se_compat_sys", "addressable_"]
            .iter()
            .any(|prefix| name[2..].starts_with(prefix)))
        || name == "linux_banner"
        || name == "vermagic"
}

/// Removes every match of bloat-o-meter's `re_NUMBER` (`\.[0-9]+`, ASCII
/// digits, leftmost-longest, non-overlapping): `foo.constprop.0.isra.1`
/// becomes `foo.constprop.isra`, `__func__.12` becomes `__func__`.
pub fn strip_numbers(name: &str) -> String {
    strip_numbers_cow(name).into_owned()
}

/// [`strip_numbers`], borrowing `name` when it has no `.NUMBER`.
fn strip_numbers_cow(name: &str) -> Cow<'_, str> {
    let bytes = name.as_bytes();
    let dot_digit = |i: usize| bytes[i] == b'.' && bytes.get(i + 1).is_some_and(u8::is_ascii_digit);
    let Some(first) = (0..bytes.len()).find(|&i| dot_digit(i)) else {
        return Cow::Borrowed(name);
    };
    let mut out = String::with_capacity(name.len());
    let mut start = 0; // start of the not yet copied text
    let mut i = first;
    while i < bytes.len() {
        if dot_digit(i) {
            out.push_str(&name[start..i]);
            i += 1;
            while bytes.get(i).is_some_and(u8::is_ascii_digit) {
                i += 1;
            }
            start = i;
        } else {
            i += 1;
        }
    }
    out.push_str(&name[start..]);
    Cow::Owned(out)
}

/// Clone suffixes GCC (`ipa-sra`, `ipa-cp`, `ipa-split`, hot/cold
/// partitioning, local aliases, LTO privatisation) and LLVM (`.llvm.HASH`)
/// append to a function's name.
pub const CLONE_SUFFIXES: &[&str] = &[
    "isra",
    "constprop",
    "part",
    "cold",
    "localalias",
    "lto_priv",
    "llvm",
    "clone",
    "specialized",
];

/// The base name of a compiler clone: the name up to the first `.SUFFIX`
/// of [`CLONE_SUFFIXES`] when everything after it is clone suffixes and
/// numbers (`foo.isra.0`, `foo.constprop.0.isra.0`, `foo.part.0.cold` →
/// `foo`); other names are returned unchanged. Not part of bloat-o-meter.
pub fn fold_clone(name: &str) -> &str {
    let base_len = name.find('.').unwrap_or(name.len());
    let mut rest = name[base_len..].split('.').skip(1).peekable();
    if base_len == 0 || rest.peek().is_none_or(|p| !CLONE_SUFFIXES.contains(p)) {
        return name;
    }
    // "llvm" is followed by a hex hash, the others by decimal counters.
    let all_clone = rest.all(|p| {
        CLONE_SUFFIXES.contains(&p) || (!p.is_empty() && p.bytes().all(|b| b.is_ascii_hexdigit()))
    });
    if all_clone {
        &name[..base_len]
    } else {
        name
    }
}

/// The line before a table whose compiler clones were folded.
const FOLD_NOTE: &str = "Note: compiler clones (.isra, .constprop, .part, .cold, ...) folded into \
     their base names; not bloat-o-meter output";

impl BloatDiff {
    /// The text `scripts/bloat-o-meter` prints (newline-terminated lines),
    /// preceded by a one-line note when clones were folded.
    pub fn render(&self) -> String {
        self.to_string()
    }

    /// [`BloatDiff::render`] with at most `keep` rows per table: the
    /// largest growths (bloat-o-meter's first rows) and the largest
    /// shrinks (its last), half each, the other kind filling in when one
    /// has fewer, and one line between them saying how many were left
    /// out. Every summary and `Total:` line is kept. For a mail, where a
    /// flag change moves thousands of functions.
    pub fn render_top(&self, keep: usize) -> String {
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = self.write(&mut out, Some(keep));
        out
    }

    /// The note and every table, each with at most `keep` rows.
    fn write(&self, f: &mut impl fmt::Write, keep: Option<usize>) -> fmt::Result {
        if self.options.fold_clones {
            writeln!(f, "{FOLD_NOTE}")?;
        }
        for table in &self.tables {
            table.write(f, keep)?;
        }
        Ok(())
    }
}

impl fmt::Display for BloatDiff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write(f, None)
    }
}

impl fmt::Display for Table {
    /// bloat-o-meter's `print_result`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write(f, None)
    }
}

impl Table {
    /// bloat-o-meter's `print_result`, with at most `keep` rows (see
    /// [`BloatDiff::render_top`]).
    fn write(&self, f: &mut impl fmt::Write, keep: Option<usize>) -> fmt::Result {
        // "add/remove: %s/%s grow/shrink: %s/%s up/down: %s/%s (%s)" with
        // (add, remove, grow, shrink, up, -down, up-down).
        writeln!(
            f,
            "add/remove: {}/{} grow/shrink: {}/{} up/down: {}/{} ({})",
            self.added,
            self.removed,
            self.grown,
            self.shrunk,
            self.up,
            -(self.down as i64),
            self.net()
        )?;
        // "%-40s %7s %7s %+7s"
        writeln!(
            f,
            "{:<40} {:>7} {:>7} {:>7}",
            self.title, "old", "new", "delta"
        )?;
        // bloat-o-meter's rows run from the largest growth down to the
        // largest shrink: the growths are a prefix, the shrinks the rest.
        let len = self.rows.len();
        let (head, tail) = match keep {
            Some(keep) if len > keep => {
                let grown = self.rows.iter().take_while(|r| r.delta > 0).count();
                let shrunk = len - grown;
                let tail = shrunk
                    .min(keep / 2)
                    .max(keep.saturating_sub(grown))
                    .min(shrunk);
                ((keep - tail).min(grown), len - tail)
            }
            _ => (len, len),
        };
        for (i, row) in self.rows.iter().enumerate() {
            if i == head && head < tail {
                let n = tail - head;
                writeln!(
                    f,
                    "... {n} smaller change{} left out (`size-report --symbols --format text` prints every row)",
                    if n == 1 { "" } else { "s" }
                )?;
            }
            if (head..tail).contains(&i) {
                continue;
            }
            // "%-40s %7s %7s %+7d", missing sizes as "-".
            let show = |v: Option<u64>| v.map_or_else(|| "-".to_string(), |v| v.to_string());
            // A name is bytes of the ELF file: one with a newline would
            // start a line of its own (the rest of the output keeps its
            // newlines), so control characters are escaped.
            writeln!(
                f,
                "{:<40} {:>7} {:>7} {:>+7}",
                crate::util::text::printable(&row.name),
                show(row.old),
                show(row.new),
                row.delta
            )?;
        }
        // "Total: Before=%d, After=%d, chg %+.2f%%"
        writeln!(
            f,
            "Total: Before={}, After={}, chg {:+.2}%",
            self.before,
            self.after,
            self.change_percent()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(deltas: &[i64]) -> BloatDiff {
        let rows: Vec<SymbolRow> = deltas
            .iter()
            .enumerate()
            .map(|(i, &d)| SymbolRow {
                name: format!("f{i}"),
                old: Some(1000),
                new: Some((1000 + d) as u64),
                delta: d,
            })
            .collect();
        let up: i64 = deltas.iter().filter(|d| **d > 0).sum();
        let down: i64 = -deltas.iter().filter(|d| **d < 0).sum::<i64>();
        BloatDiff {
            mode: BloatMode::default(),
            options: Options::default(),
            tables: vec![Table {
                title: "Function",
                types: "tTwW",
                added: 0,
                removed: 0,
                grown: deltas.iter().filter(|d| **d > 0).count(),
                shrunk: deltas.iter().filter(|d| **d < 0).count(),
                up: up as u64,
                down: down as u64,
                rows,
                before: 1000 * deltas.len() as u64,
                after: (1000 * deltas.len() as i64 + up - down) as u64,
            }],
        }
    }

    #[test]
    fn the_top_rows_keep_the_largest_growths_and_shrinks_and_every_total() {
        let diff = table(&[50, 40, 30, 20, 10, -10, -20, -30]);
        let full = diff.render();
        let top = diff.render_top(4);
        let lines: Vec<&str> = top.lines().collect();
        assert_eq!(lines[0], full.lines().next().unwrap(), "the summary line");
        let names: Vec<&str> = lines
            .iter()
            .filter_map(|l| l.split_whitespace().next())
            .filter(|n| n.starts_with('f'))
            .collect();
        assert_eq!(names, ["f0", "f1", "f6", "f7"]);
        assert!(top.contains("... 4 smaller changes left out"), "{top}");
        assert_eq!(top.lines().last(), full.lines().last(), "the Total: line");
        // Growths only: the largest growths, none of the smaller ones.
        let grown = table(&[50, 40, 30, 20, 10]).render_top(3);
        let names: Vec<&str> = grown
            .lines()
            .filter_map(|l| l.split_whitespace().next())
            .filter(|n| n.starts_with('f'))
            .collect();
        assert_eq!(names, ["f0", "f1", "f2"]);
        assert!(grown.contains("... 2 smaller changes left out"), "{grown}");
        // Few growths: the rest of the rows go to the shrinks.
        let few = table(&[50, -10, -20, -30, -40]).render_top(4);
        assert!(few.contains("... 1 smaller change left out"), "{few}");
        assert!(few.contains("f0 ") && !few.contains("f1 ") && few.contains("f4 "));
        // Fewer rows than kept: bloat-o-meter's text, unchanged.
        assert_eq!(diff.render_top(8), full);
        assert_eq!(diff.render_top(100), full);
    }
}
