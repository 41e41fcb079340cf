//! Unified diffs in the form OpenWrt's patches are written: what
//! `quilt refresh -p ab --no-index --no-timestamps` writes with
//! `QUILT_DIFF_OPTS=-p`, i.e. GNU `diff -u -p`: `a/` and `b/` labels,
//! 3 lines of context, and hunk headers carrying the function context.

use similar::{Algorithm, DiffOp, TextDiff};

/// Lines of context around each change, as `diff -u`.
pub const CONTEXT: usize = 3;

/// Renders the diff of one file, `--- a/PATH` … `+++ b/PATH` and its hunks;
/// empty when `old == new`.
///
/// Hunk headers follow GNU diff: a range of one line is written without a
/// count (`-5`), an empty range as the line before it (`-4,0`). After the
/// header comes the function context of `diff -p`: the nearest line before
/// the hunk that matches `^[[:alpha:]$_]`, leading white space skipped, cut
/// to 40 bytes, trailing white space removed (GNU diff's
/// `print_context_function`). A last line without a newline is followed by
/// `\ No newline at end of file`.
pub fn file_diff(path: &str, old: &str, new: &str) -> String {
    if old == new {
        return String::new();
    }
    let old_lines: Vec<&str> = old.split_inclusive('\n').collect();
    let new_lines: Vec<&str> = new.split_inclusive('\n').collect();
    let diff = TextDiff::configure()
        .algorithm(Algorithm::Myers)
        .diff_slices(&old_lines, &new_lines);
    let mut out = format!("--- a/{path}\n+++ b/{path}\n");
    for group in diff.grouped_ops(CONTEXT) {
        let (Some(first), Some(last)) = (group.first(), group.last()) else {
            continue;
        };
        let old_range = first.old_range().start..last.old_range().end;
        let new_range = first.new_range().start..last.new_range().end;
        out.push_str(&format!(
            "@@ -{} +{} @@",
            range(old_range.start, old_range.len()),
            range(new_range.start, new_range.len())
        ));
        if let Some(function) = function_context(&old_lines, old_range.start) {
            out.push(' ');
            out.push_str(&function);
        }
        out.push('\n');
        for op in &group {
            let (_, old_r, new_r) = op.as_tag_tuple();
            if matches!(op, DiffOp::Equal { .. }) {
                old_r.for_each(|i| push_line(&mut out, ' ', old_lines[i]));
            } else {
                old_r.for_each(|i| push_line(&mut out, '-', old_lines[i]));
                new_r.for_each(|i| push_line(&mut out, '+', new_lines[i]));
            }
        }
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

fn push_line(out: &mut String, sign: char, line: &str) {
    out.push(sign);
    out.push_str(line);
    if !line.ends_with('\n') {
        out.push_str("\n\\ No newline at end of file\n");
    }
}

/// GNU `diff -p`'s function line for a hunk starting at 0-based `first`.
fn function_context(lines: &[&str], first: usize) -> Option<String> {
    let line = lines[..first.min(lines.len())].iter().rev().find(|l| {
        l.as_bytes()
            .first()
            .is_some_and(|&b| b.is_ascii_alphabetic() || b == b'$' || b == b'_')
    })?;
    let line = line.trim_end_matches('\n');
    let start = line.len() - line.trim_start().len();
    let bytes = &line.as_bytes()[start..];
    let cut = &bytes[..bytes.len().min(40)];
    let text = String::from_utf8_lossy(cut);
    Some(text.trim_end().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use xshell::{cmd, Shell};

    /// The same bytes as GNU `diff -u -p --label a/F --label b/F`.
    #[test]
    fn equals_gnu_diff_up() {
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
