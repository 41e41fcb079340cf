//! Unified diff hunks (`@@ -a,b +c,d @@`), after GNU patch 2.7's
//! `another_hunk` (pch.c); context diffs' are [`super::context`]'s.

use super::diagnostics::{
    chomp, cr_stripped, err, ParseError, ParseErrorKind, ParseWarningKind, Warnings,
};
use super::model::{Hunk, HunkLine, LineKind};

/// Parses the `@@` hunks starting at index `i`; returns them and the index
/// after them. Hunk lines after a hunk's counts are used up end the file
/// diff with a [`ParseWarningKind::TrailingGarbage`] warning (the caller
/// skips them up to the next file header).
pub(super) fn parse_hunks(
    lines: &[&[u8]],
    mut i: usize,
    strip_cr: bool,
    warnings: &mut Warnings<'_>,
) -> Result<(Vec<Hunk>, usize), ParseError> {
    let mut hunks = Vec::new();
    while i < lines.len() && lines[i].starts_with(b"@@ -") {
        let (hunk, next) = parse_hunk(lines, i, strip_cr, warnings)?;
        let hunk_line = hunk.line;
        hunks.push(hunk);
        i = next;
        if let Some(l) = lines.get(i) {
            let overrun = l.starts_with(b" ")
                || l.starts_with(b"+")
                || l.starts_with(b"\\")
                || (l.starts_with(b"-") && !l.starts_with(b"--"));
            if overrun {
                warnings.push(i + 1, hunk_line, ParseWarningKind::TrailingGarbage);
                break;
            }
        }
    }
    Ok((hunks, i))
}

/// `-a[,b] +c[,d] @@section` → (a, b, c, d, section).
fn parse_range_header(l: &[u8]) -> Option<(usize, usize, usize, usize, Vec<u8>)> {
    let l = chomp(l).strip_prefix(b"@@ -")?;
    let num = |s: &[u8]| -> Option<(usize, usize)> {
        let n = s.iter().take_while(|c| c.is_ascii_digit()).count();
        let v = std::str::from_utf8(&s[..n]).ok()?.parse().ok()?;
        Some((v, n))
    };
    let range = |s: &[u8]| -> Option<(usize, usize, usize)> {
        let (start, n) = num(s)?;
        if s.get(n) == Some(&b',') {
            let (count, m) = num(&s[n + 1..])?;
            Some((start, count, n + 1 + m))
        } else {
            Some((start, 1, n))
        }
    };
    let (a, b, used) = range(l)?;
    let l = l[used..].strip_prefix(b" +")?;
    let (c, d, used) = range(l)?;
    let l = l[used..].strip_prefix(b" @@")?;
    Some((a, b, c, d, l.to_vec()))
}

fn parse_hunk(
    lines: &[&[u8]],
    i: usize,
    strip_cr: bool,
    warnings: &mut Warnings<'_>,
) -> Result<(Hunk, usize), ParseError> {
    let hunk_line = i + 1;
    let (old_start, old_count, new_start, new_count, section) = parse_range_header(lines[i])
        .ok_or_else(|| ParseError {
            line: hunk_line,
            kind: ParseErrorKind::BadHeader("bad '@@ -a,b +c,d @@' line".into()),
        })?;
    let (mut old_left, mut new_left) = (old_count, new_count);
    let mut body = Vec::new();
    let mut j = i + 1;
    while old_left > 0 || new_left > 0 {
        let Some(&raw) = lines.get(j) else {
            // GNU: "assume blank lines got chopped", when at most 3 new-side
            // lines are missing (and, for the hunk to be well formed, as
            // many old-side ones).
            if old_left == new_left && new_left <= 3 {
                let chopped = new_left;
                warnings.push(
                    j + 1,
                    hunk_line,
                    ParseWarningKind::ChoppedBlankLines(chopped),
                );
                body.extend((0..chopped).map(|_| HunkLine {
                    kind: LineKind::Context,
                    text: Vec::new(),
                    no_newline: false,
                }));
                break;
            }
            return err(j + 1, ParseErrorKind::UnexpectedEnd { hunk_line });
        };
        let raw = cr_stripped(raw, strip_cr);
        let no_nl = raw.strip_suffix(b"\n").unwrap_or(&raw);
        let (kind, text) = match raw.first() {
            Some(b' ') => (LineKind::Context, &no_nl[1..]),
            Some(b'-') => (LineKind::Delete, &no_nl[1..]),
            Some(b'+') => (LineKind::Insert, &no_nl[1..]),
            // "Assume the space got eaten", as GNU patch does.
            Some(b'\n') | Some(b'\t') => (LineKind::Context, no_nl),
            Some(b'\\') => return err(j + 1, ParseErrorKind::MisplacedNoNewline),
            _ => return err(j + 1, ParseErrorKind::BadHunkLine),
        };
        let (uses_old, uses_new) = match kind {
            LineKind::Context => (true, true),
            LineKind::Delete => (true, false),
            LineKind::Insert => (false, true),
        };
        if (uses_old && old_left == 0) || (uses_new && new_left == 0) {
            return err(j + 1, ParseErrorKind::CountMismatch { hunk_line });
        }
        old_left -= usize::from(uses_old);
        new_left -= usize::from(uses_new);
        let ends_side = (uses_old && old_left == 0) || (uses_new && new_left == 0);
        let mut line = HunkLine {
            kind,
            text: text.to_vec(),
            no_newline: false,
        };
        j += 1;
        if ends_side && lines.get(j).is_some_and(|l| l.starts_with(b"\\")) {
            line.no_newline = true;
            j += 1;
        }
        body.push(line);
    }
    if body.iter().all(|l| l.kind == LineKind::Context) {
        return err(hunk_line, ParseErrorKind::NoChange { hunk_line });
    }
    Ok((
        Hunk {
            line: hunk_line,
            old_start,
            old_count,
            new_start,
            new_count,
            section,
            lines: body,
        },
        j,
    ))
}
