//! File headers of a patch: the names (and timestamps) on `---`/`+++`
//! lines as GNU patch 2.7's `fetchname` reads them, `diff --git` file diffs
//! with their extended headers (modes, creation, deletion, renames, copies,
//! binaries), and whether a plain diff creates or deletes its file
//! (`p_says_nonexistent`).

use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use super::diagnostics::{chomp, err, ParseError, ParseErrorKind, Warnings};
use super::model::{FileName, FileOp, FilePatch, Hunk};
use super::unified::parse_hunks;

/// Parses the name part of a `--- `/`+++ ` line (GNU `fetchname`): a C-quoted
/// name, or the text up to the first tab (or, with no tab, the first space);
/// what follows is the timestamp. `/dev/null` is `None`.
pub(super) fn parse_header_name(rest: &[u8], line: usize) -> Result<Option<FileName>, ParseError> {
    let rest = chomp(rest);
    let (name, tail) = if rest.first() == Some(&b'"') {
        unquote(rest).ok_or_else(|| ParseError {
            line,
            kind: ParseErrorKind::BadHeader("unterminated quoted file name".into()),
        })?
    } else {
        let end = rest
            .iter()
            .position(|&c| c == b'\t')
            .or_else(|| rest.iter().position(|&c| c == b' '))
            .unwrap_or(rest.len());
        (rest[..end].to_vec(), &rest[end..])
    };
    if name.is_empty() {
        return err(line, ParseErrorKind::BadHeader("empty file name".into()));
    }
    if name == b"/dev/null" {
        return Ok(None);
    }
    Ok(Some(FileName {
        path: PathBuf::from(std::ffi::OsStr::from_bytes(&name)),
        timestamp: String::from_utf8_lossy(tail).into_owned(),
    }))
}

/// Decodes a C-style quoted name as git writes it; returns it and what follows.
fn unquote(s: &[u8]) -> Option<(Vec<u8>, &[u8])> {
    let mut out = Vec::new();
    let mut i = 1;
    while i < s.len() {
        match s[i] {
            b'"' => return Some((out, &s[i + 1..])),
            b'\\' => {
                let c = *s.get(i + 1)?;
                i += 2;
                match c {
                    b'0'..=b'7' => {
                        let mut v = u32::from(c - b'0');
                        for _ in 0..2 {
                            match s.get(i) {
                                Some(d @ b'0'..=b'7') => {
                                    v = v * 8 + u32::from(d - b'0');
                                    i += 1;
                                }
                                _ => break,
                            }
                        }
                        out.push(v as u8);
                    }
                    b'n' => out.push(b'\n'),
                    b't' => out.push(b'\t'),
                    b'r' => out.push(b'\r'),
                    b'a' => out.push(7),
                    b'b' => out.push(8),
                    b'f' => out.push(12),
                    b'v' => out.push(11),
                    other => out.push(other),
                }
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    None
}

/// The two names of a `diff --git a/x b/y` line.
fn parse_git_names(rest: &[u8], line: usize) -> Result<(Vec<u8>, Vec<u8>), ParseError> {
    let bad = || ParseError {
        line,
        kind: ParseErrorKind::BadHeader("cannot split the names of 'diff --git'".into()),
    };
    let rest = chomp(rest);
    if rest.first() == Some(&b'"') {
        let (a, tail) = unquote(rest).ok_or_else(bad)?;
        let tail = tail.strip_prefix(b" ").ok_or_else(bad)?;
        let b = if tail.first() == Some(&b'"') {
            unquote(tail).ok_or_else(bad)?.0
        } else {
            tail.to_vec()
        };
        return Ok((a, b));
    }
    if let Some(q) = rest.windows(2).position(|w| w == b" \"") {
        let b = unquote(&rest[q + 1..]).ok_or_else(bad)?.0;
        return Ok((rest[..q].to_vec(), b));
    }
    // Unquoted: prefer the split where both names agree after their first
    // component (a/x b/x), as git itself does.
    let without_first = |n: &[u8]| -> Vec<u8> {
        match n.iter().position(|&c| c == b'/') {
            Some(p) => n[p + 1..].to_vec(),
            None => n.to_vec(),
        }
    };
    let spaces: Vec<usize> = (0..rest.len()).filter(|&i| rest[i] == b' ').collect();
    for &s in &spaces {
        let (a, b) = (&rest[..s], &rest[s + 1..]);
        if without_first(a) == without_first(b) {
            return Ok((a.to_vec(), b.to_vec()));
        }
    }
    let s = *spaces.first().ok_or_else(bad)?;
    Ok((rest[..s].to_vec(), rest[s + 1..].to_vec()))
}

fn parse_mode(rest: &[u8], line: usize) -> Result<u32, ParseError> {
    let t = chomp(rest);
    let t = std::str::from_utf8(t).unwrap_or("").trim();
    u32::from_str_radix(t, 8)
        .ok()
        .filter(|_| !t.is_empty() && t.len() <= 6)
        .ok_or_else(|| ParseError {
            line,
            kind: ParseErrorKind::BadHeader(format!("bad file mode {t:?}")),
        })
}

fn path_name(bytes: Vec<u8>) -> FileName {
    FileName {
        path: PathBuf::from(std::ffi::OsStr::from_bytes(&bytes)),
        timestamp: String::new(),
    }
}

/// One `diff --git` file diff starting at index `i`; returns it and the index after it.
pub(super) fn parse_git_file(
    lines: &[&[u8]],
    i: usize,
    warnings: &mut Warnings<'_>,
) -> Result<(FilePatch, usize), ParseError> {
    let (a, b) = parse_git_names(&lines[i][b"diff --git ".len()..], i + 1)?;
    let mut old = Some(path_name(a));
    let mut new = Some(path_name(b));
    let (mut old_mode, mut new_mode) = (None, None);
    let (mut created, mut deleted, mut renamed, mut copied) = (false, false, false, false);
    let mut j = i + 1;
    while j < lines.len() {
        let l = lines[j];
        let ln = j + 1;
        if let Some(r) = l.strip_prefix(b"old mode ") {
            old_mode = Some(parse_mode(r, ln)?);
        } else if let Some(r) = l.strip_prefix(b"new mode ") {
            new_mode = Some(parse_mode(r, ln)?);
        } else if let Some(r) = l.strip_prefix(b"deleted file mode ") {
            old_mode = Some(parse_mode(r, ln)?);
            deleted = true;
        } else if let Some(r) = l.strip_prefix(b"new file mode ") {
            new_mode = Some(parse_mode(r, ln)?);
            created = true;
        } else if l.starts_with(b"rename from ") || l.starts_with(b"rename to ") {
            renamed = true;
        } else if l.starts_with(b"copy from ") || l.starts_with(b"copy to ") {
            copied = true;
        } else if l.starts_with(b"index ")
            || l.starts_with(b"similarity index ")
            || l.starts_with(b"dissimilarity index ")
        {
            // Hashes and similarity scores: nothing to check against.
        } else {
            break;
        }
        j += 1;
    }
    let mut binary = false;
    let mut hunks = Vec::new();
    if j < lines.len() && lines[j].starts_with(b"GIT binary patch") {
        binary = true;
        j += 1;
        while j < lines.len() && !lines[j].starts_with(b"diff --git ") {
            j += 1;
        }
    } else if j < lines.len()
        && lines[j].starts_with(b"Binary files ")
        && chomp(lines[j]).ends_with(b" differ")
    {
        binary = true;
        j += 1;
    } else if j + 1 < lines.len()
        && lines[j].starts_with(b"--- ")
        && lines[j + 1].starts_with(b"+++ ")
    {
        // The ---/+++ names win; /dev/null there marks a creation or deletion.
        let o = parse_header_name(&lines[j][4..], j + 1)?;
        let n = parse_header_name(&lines[j + 1][4..], j + 2)?;
        created |= o.is_none();
        deleted |= n.is_none();
        if o.is_some() {
            old = o;
        }
        if n.is_some() {
            new = n;
        }
        let strip_cr = lines[j + 1].ends_with(b"\r\n");
        let (h, next) = parse_hunks(lines, j + 2, strip_cr, warnings)?;
        hunks = h;
        j = next;
    }
    let op = if created {
        old = None;
        FileOp::Create
    } else if deleted {
        new = None;
        FileOp::Delete
    } else if renamed {
        FileOp::Rename
    } else if copied {
        FileOp::Copy
    } else {
        FileOp::Modify
    };
    Ok((
        FilePatch {
            line: i + 1,
            old,
            new,
            git: true,
            op,
            old_mode,
            new_mode,
            binary,
            hunks,
        },
        j,
    ))
}

/// Creation/deletion of a plain (non-git) diff, as GNU's `p_says_nonexistent`
/// decides it: `/dev/null`, or an empty side whose timestamp is the epoch.
pub(super) fn plain_op(old: &Option<FileName>, new: &Option<FileName>, hunks: &[Hunk]) -> FileOp {
    let single_empty = |side_empty: fn(&Hunk) -> bool| hunks.len() == 1 && side_empty(&hunks[0]);
    let old_gone = match old {
        None => true,
        Some(n) => is_epoch(&n.timestamp) && single_empty(|h| h.old_count == 0 && h.old_start == 0),
    };
    let new_gone = match new {
        None => true,
        Some(n) => is_epoch(&n.timestamp) && single_empty(|h| h.new_count == 0 && h.new_start == 0),
    };
    match (old_gone, new_gone) {
        (true, false) => FileOp::Create,
        (false, true) => FileOp::Delete,
        _ => FileOp::Modify,
    }
}

/// True for a `diff -u` timestamp (`YYYY-MM-DD HH:MM:SS[.frac] [±HHMM]`) that
/// denotes second 0 of the Unix epoch, which `diff -N` writes for absent files.
fn is_epoch(ts: &str) -> bool {
    let mut parts = ts.split_whitespace();
    let (Some(date), Some(time)) = (parts.next(), parts.next()) else {
        return false;
    };
    let zone = parts.next().unwrap_or("+0000");
    let nums = |s: &str, sep: char| -> Option<Vec<i64>> {
        s.split(sep).map(|p| p.parse::<i64>().ok()).collect()
    };
    let Some(d) = nums(date, '-').filter(|d| d.len() == 3) else {
        return false;
    };
    let time = time.split('.').next().unwrap_or("");
    let Some(t) = nums(time, ':').filter(|t| t.len() == 3) else {
        return false;
    };
    let (sign, z) = match zone.as_bytes().first() {
        Some(b'+') => (1, &zone[1..]),
        Some(b'-') => (-1, &zone[1..]),
        _ => return false,
    };
    let Ok(z) = z.parse::<i64>() else {
        return false;
    };
    let zone_secs = sign * ((z / 100) * 3600 + (z % 100) * 60);
    // Days from 1970-01-01 (civil calendar, H. Hinnant's algorithm).
    let (y, m, day) = (d[0] - i64::from(d[1] <= 2), d[1], d[2]);
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146097 + doe - 719468;
    days * 86400 + t[0] * 3600 + t[1] * 60 + t[2] - zone_secs == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epoch_timestamps() {
        assert!(is_epoch("\t1970-01-01 00:00:00.000000000 +0000"));
        assert!(is_epoch("\t1970-01-01 01:00:00 +0100"));
        assert!(!is_epoch("\t2024-01-01 00:00:00 +0000"));
        assert!(!is_epoch(""));
    }

    #[test]
    fn git_names() {
        assert_eq!(
            parse_git_names(b"a/x y b/x y\n", 1).unwrap(),
            (b"a/x y".to_vec(), b"b/x y".to_vec())
        );
        assert_eq!(
            parse_git_names(b"\"a/t\\tb\" \"b/t\\tb\"\n", 1).unwrap(),
            (b"a/t\tb".to_vec(), b"b/t\tb".to_vec())
        );
    }
}
