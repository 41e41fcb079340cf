//! Parsing patches: unified diffs (plain and `diff --git`) and context diffs
//! (`diff -c`, in [`super::context`]), after GNU patch 2.7's
//! `intuit_diff_type` and `another_hunk` (pch.c), with two deliberate
//! differences: the description before the first file header is never
//! looked at, and an `@@` hunk that follows ignored trailing garbage is an
//! error instead of being ignored with it.
//!
//! What GNU patch accepts but the author probably did not mean (a hunk
//! body longer than its header counts, blank lines missing at the end of
//! the file) is parsed as GNU does, with a [`super::ParseWarning`].

use super::context;
use super::diagnostics::{chomp, err, ParseError, ParseErrorKind, Warnings};
use super::headers::{parse_git_file, parse_header_name, plain_op};
use super::model::{FilePatch, Patch};
use super::unified::parse_hunks;

/// Parses a patch file.
///
/// The description before the first file header is kept verbatim and never
/// parsed as hunks, even when it contains lines beginning with `@@`, `---`
/// or `+++ `. A file header is a `diff --git ` line, a `--- ` line directly
/// followed by a `+++ ` line and an `@@ -` line, or (context diff) a `*** `
/// line followed by a `--- ` line and a `********` line. After the first
/// header, text between file diffs (`Index:`, `diff -u` lines, a mail
/// signature) is skipped as GNU patch skips it.
///
/// As GNU patch 2.7 does: a patch whose `+++ ` line ends in CRLF has the CR
/// stripped from every line of that file's hunks; an empty body line or one
/// starting with a tab is a context line whose leading space was eaten;
/// `\ No newline at end of file` removes the `\n` of the line before it; a
/// hunk ends where its header's counts are used up, and hunk lines after
/// that are ignored up to the next file header; a patch that ends at most
/// 3 lines (on both sides) before its last hunk is complete gets those
/// lines as blank context. The last two come with a [`super::ParseWarning`] in
/// [`Patch::warnings`]. Context diffs become the same hunks as unified
/// ones (`context.rs`).
///
/// An empty (0-byte) input is a patch with no files: GNU patch does nothing
/// and succeeds, quilt pushes it ("appears to be empty; applied").
///
/// Errors ([`ParseError`], with the 1-based patch line): no diff at all,
/// ed scripts and normal diffs, malformed headers and hunk lines, a patch
/// that ends inside a hunk (more than 3 lines early, or unevenly), an `@@`
/// hunk in ignored trailing garbage.
pub fn parse_patch(bytes: &[u8]) -> Result<Patch, ParseError> {
    if bytes.is_empty() {
        return Ok(Patch {
            description: Vec::new(),
            files: Vec::new(),
            warnings: Vec::new(),
        });
    }
    let lines = split_lines(bytes);
    let Some(start) = (0..lines.len()).find(|&i| is_file_header(&lines, i)) else {
        return Err(no_diff_error(&lines));
    };
    let description_len: usize = lines[..start].iter().map(|l| l.len()).sum();
    let mut files = Vec::new();
    let mut warnings = Vec::new();
    let mut i = start;
    while i < lines.len() {
        let l = lines[i];
        let sink = &mut Warnings {
            list: &mut warnings,
            file: files.len(),
        };
        let context = context::is_file_header(&lines, i);
        if l.starts_with(b"diff --git ") {
            let (fp, next) = parse_git_file(&lines, i, sink)?;
            files.push(fp);
            i = next;
        } else if context
            || (l.starts_with(b"--- ") && lines.get(i + 1).is_some_and(|n| n.starts_with(b"+++ ")))
        {
            let old = parse_header_name(&lines[i][4..], i + 1)?;
            let new = parse_header_name(&lines[i + 1][4..], i + 2)?;
            let strip_cr = lines[i + 1].ends_with(b"\r\n");
            let (hunks, next) = if context {
                context::parse_hunks(&lines, i + 2, strip_cr)?
            } else {
                parse_hunks(&lines, i + 2, strip_cr, sink)?
            };
            if !hunks.is_empty() {
                let op = plain_op(&old, &new, &hunks);
                files.push(FilePatch {
                    line: i + 1,
                    old,
                    new,
                    git: false,
                    op,
                    old_mode: None,
                    new_mode: None,
                    binary: false,
                    hunks,
                });
            }
            i = next.max(i + 2);
        } else if l.starts_with(b"@@ -") {
            return err(i + 1, ParseErrorKind::HunkWithoutHeader);
        } else {
            i += 1;
        }
    }
    Ok(Patch {
        description: bytes[..description_len].to_vec(),
        files,
        warnings,
    })
}

/// Lines with their `\n` (the last one may lack it).
fn split_lines(bytes: &[u8]) -> Vec<&[u8]> {
    bytes.split_inclusive(|&b| b == b'\n').collect()
}

fn is_file_header(lines: &[&[u8]], i: usize) -> bool {
    lines[i].starts_with(b"diff --git ")
        || context::is_file_header(lines, i)
        || (lines[i].starts_with(b"--- ")
            && lines.get(i + 1).is_some_and(|l| l.starts_with(b"+++ "))
            && lines.get(i + 2).is_some_and(|l| l.starts_with(b"@@ -")))
}

/// What to report when there is no diff: name the format if it is one GNU
/// patch would have applied (ed script or normal diff).
fn no_diff_error(lines: &[&[u8]]) -> ParseError {
    for (i, l) in lines.iter().enumerate() {
        let l = chomp(l);
        if is_ed_or_normal_command(l) {
            return ParseError {
                line: i + 1,
                kind: ParseErrorKind::Unsupported("ed scripts and normal diffs"),
            };
        }
    }
    ParseError {
        line: 1,
        kind: ParseErrorKind::NoDiff,
    }
}

/// `5a`, `3,4d`, `7c`, `5a6,7`: an ed command or a normal-diff change line.
fn is_ed_or_normal_command(l: &[u8]) -> bool {
    let digits = |s: &[u8]| {
        s.iter()
            .take_while(|c| c.is_ascii_digit() || **c == b',')
            .count()
    };
    let n = digits(l);
    if n == 0 || !l[0].is_ascii_digit() || n >= l.len() || !b"acd".contains(&l[n]) {
        return false;
    }
    let rest = &l[n + 1..];
    digits(rest) == rest.len()
}

#[cfg(test)]
mod tests {
    use super::super::diagnostics::ParseWarningKind;
    use super::*;

    #[test]
    fn description_with_diff_like_lines_is_verbatim() {
        let p = b"Subject: x\n---\n@@ not a hunk\n+++ nor a header\n--- x\n\n--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n";
        let patch = parse_patch(p).unwrap();
        assert_eq!(
            patch.description,
            b"Subject: x\n---\n@@ not a hunk\n+++ nor a header\n--- x\n\n".to_vec()
        );
        assert_eq!(patch.files.len(), 1);
        assert_eq!(patch.files[0].line, 7);
    }

    #[test]
    fn counts_end_hunks_as_gnu_ends_them() {
        // One body line more than the counts: ignored, with a warning.
        let p = b"--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n-a\n+b\n c\n c\n";
        let patch = parse_patch(p).unwrap();
        assert_eq!(patch.files[0].hunks[0].lines.len(), 3);
        let w = &patch.warnings[0];
        assert_eq!(
            (w.line, w.hunk_line, w.kind),
            (7, 3, ParseWarningKind::TrailingGarbage)
        );
        // ... but a hunk in the ignored part is an error.
        let p = b"--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n-a\n+b\n c\n c\n@@ -5 +5 @@\n-x\n+y\n";
        let e = parse_patch(p).unwrap_err();
        assert_eq!((e.line, e.kind), (8, ParseErrorKind::HunkWithoutHeader));
        // The patch ends one line short on both sides: a blank context line.
        let p = b"--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n-a\n+b\n c\n";
        let patch = parse_patch(p).unwrap();
        assert_eq!(patch.files[0].hunks[0].lines.last().unwrap().text, b"");
        let w = &patch.warnings[0];
        assert_eq!(
            (w.line, w.kind),
            (7, ParseWarningKind::ChoppedBlankLines(1))
        );
        // Four lines short, or unevenly short: truncated.
        let p = b"--- a/f\n+++ b/f\n@@ -1,5 +1,5 @@\n-a\n+b\n";
        let e = parse_patch(p).unwrap_err();
        assert_eq!(
            (e.line, e.kind),
            (6, ParseErrorKind::UnexpectedEnd { hunk_line: 3 })
        );
        let p = b"--- a/f\n+++ b/f\n@@ -1,3 +1 @@\n-a\n";
        let e = parse_patch(p).unwrap_err();
        assert_eq!(
            (e.line, e.kind),
            (5, ParseErrorKind::UnexpectedEnd { hunk_line: 3 })
        );
    }

    #[test]
    fn ed_scripts() {
        let e = parse_patch(b"3a\nnew\n.\n").unwrap_err();
        assert_eq!(
            e.kind,
            ParseErrorKind::Unsupported("ed scripts and normal diffs")
        );
    }
}
