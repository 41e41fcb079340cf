//! Context diffs (`diff -c`): their hunks read into the same [`Hunk`] model
//! as unified ones, after GNU patch 2.7's `another_hunk` (pch.c) for
//! context diffs.
//!
//! ```text
//! *** a/f.c  2024-01-01 …        old name (file header)
//! --- b/f.c  2024-01-01 …        new name
//! ***************  fn_name       a hunk (text after the stars: section)
//! *** 1,5 ****                    old range: first,last (or one line number)
//!   context
//! ! changed (old)
//! - deleted
//! --- 1,5 ----                    new range
//!   context
//! ! changed (new)
//! + inserted
//! ```
//!
//! A side with only context lines is omitted by `diff -c` (insertions only:
//! no old lines; deletions only: no new lines) and is rebuilt from the other
//! side's context. A range without a comma is one line, except `0` (empty,
//! before line 1); an omitted old side of one line with no context at all
//! is an insertion after that line (GNU's "null hunk" fix-up, for
//! `diff -C0`). Lines are paired as GNU's `apply_hunk` walks them: `-`
//! lines, then `+` lines, then a run of `!` lines on each side (old ones
//! deleted, new ones inserted), then one context line on both.

use super::diagnostics::{chomp, cr_stripped, err, ParseError, ParseErrorKind};
use super::model::{Hunk, HunkLine, LineKind};

/// At least this many stars start a context hunk (GNU checks eight).
const HUNK_STARS: &[u8] = b"********";

/// Whether line `i` starts a context diff file header: `*** NAME`, then
/// `--- NAME`, then a `********` hunk line.
pub(super) fn is_file_header(lines: &[&[u8]], i: usize) -> bool {
    lines[i].starts_with(b"*** ")
        && lines.get(i + 1).is_some_and(|l| l.starts_with(b"--- "))
        && lines.get(i + 2).is_some_and(|l| l.starts_with(HUNK_STARS))
}

/// Parses the context hunks starting at index `i` (a `********` line);
/// returns them and the index after them.
pub(super) fn parse_hunks(
    lines: &[&[u8]],
    mut i: usize,
    strip_cr: bool,
) -> Result<(Vec<Hunk>, usize), ParseError> {
    let mut hunks = Vec::new();
    while lines.get(i).is_some_and(|l| l.starts_with(HUNK_STARS)) {
        let (hunk, next) = parse_hunk(lines, i, strip_cr)?;
        hunks.push(hunk);
        i = next;
    }
    Ok((hunks, i))
}

/// One line of one side: its mark (`b' '`, `b'-'`, `b'+'`, `b'!'`), text
/// without mark and `\n`, and whether `\ No newline at end of file` follows.
#[derive(Clone)]
struct SideLine {
    mark: u8,
    text: Vec<u8>,
    no_newline: bool,
}

/// `*** a,b ****` / `--- a,b ----` after the first four bytes → (first
/// line, line count), as GNU reads them: `a,b` is `b - a + 1` lines; `a`
/// alone is one line, `0` (and `0,0`) none (first line 1).
fn parse_range(rest: &[u8]) -> Option<(usize, usize)> {
    let rest = chomp(rest);
    // GNU reads "0,0" as "0".
    let rest = if rest.starts_with(b"0,0") {
        &rest[2..]
    } else {
        rest
    };
    let num = |s: &[u8]| -> Option<(usize, usize)> {
        let n = s.iter().take_while(|c| c.is_ascii_digit()).count();
        Some((std::str::from_utf8(&s[..n]).ok()?.parse().ok()?, n))
    };
    let (first, used) = num(rest)?;
    if rest.get(used) == Some(&b',') {
        let (last, _) = num(&rest[used + 1..])?;
        let count = (last + 1).checked_sub(first)?;
        Some((first, count))
    } else if first == 0 {
        Some((1, 0))
    } else {
        Some((first, 1))
    }
}

/// A body line with one of `marks`: `M text` or `M\ttext` (the separator
/// dropped), or a context line whose leading spaces were eaten (empty, or
/// starting with a tab, which GNU drops too).
fn body_line(raw: &[u8], marks: &[u8]) -> Option<SideLine> {
    let line = raw.strip_suffix(b"\n").unwrap_or(raw);
    let (mark, text) = match raw.first()? {
        b'\n' => (b' ', line),
        b'\t' => (b' ', &line[1..]),
        m if marks.contains(m) => {
            let rest = &line[1..];
            let rest = match rest.first() {
                Some(b' ') | Some(b'\t') => &rest[1..],
                _ => rest,
            };
            (*m, rest)
        }
        _ => return None,
    };
    Some(SideLine {
        mark,
        text: text.to_vec(),
        no_newline: false,
    })
}

/// Reads `count` body lines with `marks` from index `j`; returns them and
/// the index after them (and after a `\ No newline at end of file`).
fn read_side(
    lines: &[&[u8]],
    mut j: usize,
    count: usize,
    marks: &[u8],
    strip_cr: bool,
    hunk_line: usize,
) -> Result<(Vec<SideLine>, usize), ParseError> {
    let mut side = Vec::with_capacity(count);
    for _ in 0..count {
        let Some(&raw) = lines.get(j) else {
            return err(j + 1, ParseErrorKind::UnexpectedEnd { hunk_line });
        };
        let raw = cr_stripped(raw, strip_cr);
        let Some(line) = body_line(&raw, marks) else {
            return err(j + 1, ParseErrorKind::BadHunkLine);
        };
        side.push(line);
        j += 1;
    }
    if let (Some(last), Some(next)) = (side.last_mut(), lines.get(j)) {
        if next.starts_with(b"\\") {
            last.no_newline = true;
            j += 1;
        }
    }
    Ok((side, j))
}

fn range_at(
    lines: &[&[u8]],
    j: usize,
    lead: &[u8],
    hunk_line: usize,
) -> Result<(usize, usize), ParseError> {
    let bad = || ParseError {
        line: j + 1,
        kind: ParseErrorKind::BadHeader(format!(
            "expected a '{} a,b' line in the context hunk at line {hunk_line}",
            String::from_utf8_lossy(lead).trim_end()
        )),
    };
    let l = lines.get(j).ok_or_else(bad)?;
    let rest = l.strip_prefix(lead).ok_or_else(bad)?;
    parse_range(rest).ok_or_else(bad)
}

/// One context hunk starting at the `********` line at index `i`.
fn parse_hunk(lines: &[&[u8]], i: usize, strip_cr: bool) -> Result<(Hunk, usize), ParseError> {
    let hunk_line = i + 1;
    let stars = chomp(lines[i]);
    let after = &stars[stars.iter().take_while(|&&c| c == b'*').count()..];
    let section = if after.first() == Some(&b' ') {
        after.to_vec()
    } else {
        Vec::new()
    };
    let mismatch = || err(hunk_line, ParseErrorKind::CountMismatch { hunk_line });
    let (mut first, mut count) = range_at(lines, i + 1, b"*** ", hunk_line)?;
    let mut j = i + 2;
    let old_missing = count > 0 && lines.get(j).is_some_and(|l| l.starts_with(b"--- "));
    let mut old = Vec::new();
    if !old_missing {
        (old, j) = read_side(lines, j, count, b" -!", strip_cr, hunk_line)?;
    }
    let (new_first, new_count) = range_at(lines, j, b"--- ", hunk_line)?;
    j += 1;
    // diff -c leaves out a new side of context only; GNU takes it as left
    // out when its count fits the old side's context and no new-side line
    // follows.
    let old_context = old.iter().filter(|l| l.mark == b' ').count();
    let could_be_missing =
        !old_missing && (new_count == old_context || (old_context == 0 && new_count == 1));
    let starts_new = lines.get(j).is_some_and(|l| {
        matches!(
            l.first(),
            Some(b' ') | Some(b'+') | Some(b'!') | Some(b'\t')
        )
    });
    let new_missing = new_count > 0 && could_be_missing && !starts_new;
    let mut new = Vec::new();
    if !new_missing {
        (new, j) = read_side(lines, j, new_count, b" +!", strip_cr, hunk_line)?;
    }
    if old_missing {
        old = new.iter().filter(|l| l.mark == b' ').cloned().collect();
        if old.is_empty() && count == 1 {
            // GNU: "a null hunk with no context and we were expecting one
            // line": an insertion after line `first`.
            count = 0;
            first += 1;
        } else if old.len() != count {
            return mismatch();
        }
    }
    if new_missing {
        new = old.iter().filter(|l| l.mark == b' ').cloned().collect();
        if new.len() != new_count {
            return mismatch();
        }
    }
    let Some(body) = pair_up(&old, &new) else {
        return mismatch();
    };
    if body.iter().all(|l| l.kind == LineKind::Context) {
        return err(hunk_line, ParseErrorKind::NoChange { hunk_line });
    }
    let start = |first: usize, count: usize| {
        if count == 0 {
            first.saturating_sub(1)
        } else {
            first
        }
    };
    Ok((
        Hunk {
            line: hunk_line,
            old_start: start(first, count),
            old_count: count,
            new_start: start(new_first, new_count),
            new_count,
            section,
            lines: body,
        },
        j,
    ))
}

/// The two sides as one hunk body, walked as GNU's `apply_hunk` walks them;
/// `None` when they do not pair up.
fn pair_up(old: &[SideLine], new: &[SideLine]) -> Option<Vec<HunkLine>> {
    let line = |kind, l: &SideLine| HunkLine {
        kind,
        text: l.text.clone(),
        no_newline: l.no_newline,
    };
    let mut body = Vec::with_capacity(old.len() + new.len());
    let (mut a, mut b) = (0, 0);
    loop {
        while a < old.len() && old[a].mark == b'-' {
            body.push(line(LineKind::Delete, &old[a]));
            a += 1;
        }
        while b < new.len() && new[b].mark == b'+' {
            body.push(line(LineKind::Insert, &new[b]));
            b += 1;
        }
        match (old.get(a).map(|l| l.mark), new.get(b).map(|l| l.mark)) {
            (None, None) => return Some(body),
            (Some(b'!'), Some(b'!')) => {
                while a < old.len() && old[a].mark == b'!' {
                    body.push(line(LineKind::Delete, &old[a]));
                    a += 1;
                }
                while b < new.len() && new[b].mark == b'!' {
                    body.push(line(LineKind::Insert, &new[b]));
                    b += 1;
                }
            }
            (Some(b' '), Some(b' ')) => {
                body.push(line(LineKind::Context, &old[a]));
                a += 1;
                b += 1;
            }
            _ => return None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_as_gnu_reads_them() {
        assert_eq!(parse_range(b"1,8 ****\n"), Some((1, 8)));
        assert_eq!(parse_range(b"4 ****\n"), Some((4, 1)));
        assert_eq!(parse_range(b"0 ****\n"), Some((1, 0)));
        assert_eq!(parse_range(b"0,0 ----\n"), Some((1, 0)));
        assert_eq!(parse_range(b"5,4 ----\n"), Some((5, 0)));
        assert_eq!(parse_range(b"5,3 ----\n"), None);
    }
}
