//! Unified diffs in the form OpenWrt's patches are written: what
//! `quilt refresh -p ab --no-index --no-timestamps` writes with
//! `QUILT_DIFF_OPTS=-p`, i.e. GNU `diff -u -p`: `a/` and `b/` labels,
//! 3 lines of context, and hunk headers carrying the function context.

mod gnu;

/// Lines of context around each change, as `diff -u`.
pub const CONTEXT: usize = 3;

/// Renders the diff of one file, `--- a/PATH` … `+++ b/PATH` and its hunks;
/// empty when `old == new`. Text version of [`unified`].
pub fn file_diff(path: &str, old: &str, new: &str) -> String {
    let out = unified(
        &format!("a/{path}"),
        &format!("b/{path}"),
        old.as_bytes(),
        new.as_bytes(),
    );
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// The bytes GNU `diff -u -p --label OLD_LABEL --label NEW_LABEL` prints for
/// two files' contents; empty when they are equal.
///
/// * Which lines are changed is chosen as GNU diff 3.8 chooses (see `gnu`):
///   same hunks, same placement of ambiguous insertions and deletions.
/// * Changes at most `2 × CONTEXT` (6) equal lines apart share a hunk; each
///   hunk has up to 3 lines of context on each side.
/// * Hunk headers: a range of one line is written without a count (`-5`),
///   an empty range as the line before it (`-4,0`).
/// * After the header comes the function context of `diff -p`: the nearest
///   old-file line before the hunk that matches `^[[:alpha:]$_]`, leading
///   white space skipped, cut to 40 bytes, trailing white space removed
///   (GNU diff's `print_context_function`).
/// * A last line without a newline is followed by `\ No newline at end of file`.
///
/// Errors: none; binary content is diffed as lines like any other (callers
/// that need GNU's "Binary files differ" must check for NUL bytes first).
pub fn unified(old_label: &str, new_label: &str, old: &[u8], new: &[u8]) -> Vec<u8> {
    if old == new {
        return Vec::new();
    }
    let a: Vec<&[u8]> = old.split_inclusive(|&b| b == b'\n').collect();
    let b: Vec<&[u8]> = new.split_inclusive(|&b| b == b'\n').collect();
    let ch = gnu::changes(&a, &b, CONTEXT);
    // Change blocks: (old start, old end, new start, new end), 0-based, exclusive.
    let mut blocks = Vec::new();
    let (mut i, mut j) = (0, 0);
    loop {
        while i < a.len() && j < b.len() && !ch.old[i] && !ch.new[j] {
            i += 1;
            j += 1;
        }
        let (i0, j0) = (i, j);
        while i < a.len() && ch.old[i] {
            i += 1;
        }
        while j < b.len() && ch.new[j] {
            j += 1;
        }
        if i == i0 && j == j0 {
            break;
        }
        blocks.push((i0, i, j0, j));
    }
    let mut out = Vec::with_capacity(old.len() / 8 + 256);
    out.extend_from_slice(format!("--- {old_label}\n+++ {new_label}\n").as_bytes());
    let mut k = 0;
    while k < blocks.len() {
        let mut last = k;
        while last + 1 < blocks.len() && blocks[last + 1].0 - blocks[last].1 <= 2 * CONTEXT {
            last += 1;
        }
        let (first_i, _, first_j, _) = blocks[k];
        let (_, last_i, _, last_j) = blocks[last];
        let lead = first_i.min(CONTEXT);
        let trail = (a.len() - last_i).min(CONTEXT);
        let (os, oe) = (first_i - lead, last_i + trail);
        let (ns, ne) = (first_j - lead, last_j + trail);
        out.extend_from_slice(
            format!("@@ -{} +{} @@", range(os, oe - os), range(ns, ne - ns)).as_bytes(),
        );
        if let Some(function) = function_context(&a, os) {
            out.push(b' ');
            out.extend_from_slice(function);
        }
        out.push(b'\n');
        let mut at = os;
        for &(i0, i1, j0, j1) in &blocks[k..=last] {
            a[at..i0].iter().for_each(|l| push_line(&mut out, b' ', l));
            a[i0..i1].iter().for_each(|l| push_line(&mut out, b'-', l));
            b[j0..j1].iter().for_each(|l| push_line(&mut out, b'+', l));
            at = i1;
        }
        a[at..oe].iter().for_each(|l| push_line(&mut out, b' ', l));
        k = last + 1;
    }
    out
}

fn range(start: usize, len: usize) -> String {
    match len {
        0 => format!("{start},0"),
        1 => format!("{}", start + 1),
        n => format!("{},{n}", start + 1),
    }
}

fn push_line(out: &mut Vec<u8>, sign: u8, line: &[u8]) {
    out.push(sign);
    out.extend_from_slice(line);
    if !line.ends_with(b"\n") {
        out.extend_from_slice(b"\n\\ No newline at end of file\n");
    }
}

/// GNU `diff -p`'s function line for a hunk starting at 0-based `first`.
fn function_context<'l>(lines: &[&'l [u8]], first: usize) -> Option<&'l [u8]> {
    let line = lines[..first.min(lines.len())].iter().rev().find(|l| {
        l.first()
            .is_some_and(|&b| b.is_ascii_alphabetic() || b == b'$' || b == b'_')
    })?;
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let start = line
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(line.len());
    let cut = &line[start..(start + 40).min(line.len())];
    let keep = cut
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .map_or(0, |p| p + 1);
    Some(&cut[..keep])
}

#[cfg(test)]
mod tests {
    use super::*;
    use xshell::{cmd, Shell};

    /// The same bytes as GNU `diff -u -p --label a/F --label b/F`.
    #[test]
    fn equals_gnu_diff_up() {
        if !crate::util::test_gate::programs(&[("diff", "diffutils")]) {
            return;
        }
        let sh = Shell::new().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let mut old = String::new();
        for i in 0..60 {
            if i % 10 == 0 {
                old.push_str(&format!(
                    "function_{i}_with_a_rather_long_name_that_is_cut(void)\n"
                ));
            } else {
                old.push_str(&format!("\tline {i}\n"));
            }
        }
        let new = old
            .replace("\tline 4\n", "\tline four\n")
            .replace("\tline 25\n", "")
            .replace("\tline 47\n", "\tline 47\n\tinserted\n")
            + "no newline";
        let (a, b) = (dir.path().join("old"), dir.path().join("new"));
        std::fs::write(&a, &old).unwrap();
        std::fs::write(&b, &new).unwrap();
        let gnu = cmd!(sh, "diff -u -p --label a/F --label b/F {a} {b}")
            .ignore_status()
            .read()
            .unwrap();
        assert_eq!(file_diff("F", &old, &new), gnu + "\n");
    }
}
