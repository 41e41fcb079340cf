//! Parsing patches: unified diffs (plain and `diff --git`) and context diffs
//! (`diff -c`, in [`super::context`]), after GNU patch 2.7's
//! `intuit_diff_type` and `another_hunk` (pch.c), with two deliberate
//! differences: the description before the first file header is never
//! looked at, and an `@@` hunk that follows ignored trailing garbage is an
//! error instead of being ignored with it.
//!
//! What GNU patch accepts but the author probably did not mean (a hunk
//! body longer than its header counts, blank lines missing at the end of
//! the file) is parsed as GNU does, with a [`ParseWarning`].

use std::fmt;

use super::context;
use super::headers::{parse_git_file, parse_header_name, plain_op};
use super::model::{FilePatch, Hunk, HunkLine, LineKind, Patch};

/// Why a patch could not be parsed, with the 1-based patch line it was noticed at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// 1-based line number in the patch file (one past the last line for
    /// "unexpected end of patch").
    pub line: usize,
    /// What is wrong.
    pub kind: ParseErrorKind,
}

/// The kinds of [`ParseError`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParseErrorKind {
    /// No `diff --git` or `---`/`+++`/`@@` file header anywhere
    /// (GNU: "Only garbage was found in the patch input.").
    NoDiff,
    /// An ed script or a normal diff: only unified and context diffs are applied.
    Unsupported(&'static str),
    /// A header line that does not parse (`@@` ranges, git names, modes).
    BadHeader(String),
    /// The patch ends inside the hunk whose `@@` line is given (a truncated file).
    UnexpectedEnd {
        /// 1-based line of the hunk's `@@` line.
        hunk_line: usize,
    },
    /// A hunk body line that starts with none of ` `, `-`, `+`, `\` (in a
    /// context diff: `  `, `- `, `+ `, `! `).
    BadHunkLine,
    /// A body line for a side whose `@@` header count is already used up
    /// (a `-` line when the old side is complete, ...); in a context diff,
    /// sides whose lines do not pair up (GNU: "replacement text or line
    /// numbers mangled", "context mangled").
    CountMismatch {
        /// 1-based line of the hunk's `@@` line.
        hunk_line: usize,
    },
    /// A `\ No newline at end of file` that does not follow a side's last line.
    MisplacedNoNewline,
    /// A hunk without any `-` or `+` line (GNU: "malformed patch").
    NoChange {
        /// 1-based line of the hunk's `@@` line.
        hunk_line: usize,
    },
    /// An `@@` hunk after the first file header that belongs to no file header,
    /// as when text was inserted between two hunks.
    HunkWithoutHeader,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "patch line {}: ", self.line)?;
        match &self.kind {
            ParseErrorKind::NoDiff => write!(f, "only garbage was found in the patch input"),
            ParseErrorKind::Unsupported(what) => write!(f, "{what} are not supported"),
            ParseErrorKind::BadHeader(msg) => write!(f, "malformed header: {msg}"),
            ParseErrorKind::UnexpectedEnd { hunk_line } => write!(
                f,
                "unexpected end of patch in the hunk starting at line {hunk_line}"
            ),
            ParseErrorKind::BadHunkLine => write!(f, "malformed patch: not a hunk line"),
            ParseErrorKind::CountMismatch { hunk_line } => write!(
                f,
                "malformed patch: the hunk at line {hunk_line} does not have the line counts its header says"
            ),
            ParseErrorKind::MisplacedNoNewline => write!(
                f,
                "malformed patch: '\\ No newline at end of file' not after the last line of a side"
            ),
            ParseErrorKind::NoChange { hunk_line } => {
                write!(f, "malformed patch: the hunk at line {hunk_line} changes nothing")
            }
            ParseErrorKind::HunkWithoutHeader => {
                write!(f, "hunk without a file header (garbage between hunks?)")
            }
        }
    }
}

impl std::error::Error for ParseError {}

/// Something GNU patch accepts that the patch's author probably did not
/// mean, with the 1-based patch line it was noticed at. The patch is parsed
/// as GNU patch 2.7 parses it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseWarning {
    /// 1-based patch line (one past the last line for a patch that ends early).
    pub line: usize,
    /// Index in [`Patch::files`] of the file diff the hunk belongs to.
    pub file: usize,
    /// 1-based patch line of the hunk's `@@` (or `***************`) line.
    pub hunk_line: usize,
    /// What was accepted.
    pub kind: ParseWarningKind,
}

/// The kinds of [`ParseWarning`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParseWarningKind {
    /// The body goes on with hunk lines after the line counts of the `@@`
    /// header are used up. GNU patch ends the hunk at the counts and
    /// ignores everything up to the next file header ("Ignoring the
    /// trailing garbage").
    TrailingGarbage,
    /// The patch ends this many lines (at most 3, the same on both sides)
    /// before the hunk's counts are used up. GNU patch takes them for blank
    /// context lines that an editor stripped from the end of the file.
    ChoppedBlankLines(usize),
}

impl fmt::Display for ParseWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "patch line {}: ", self.line)?;
        match self.kind {
            ParseWarningKind::TrailingGarbage => write!(
                f,
                "the hunk at line {} has more lines than its header counts; \
                 the rest up to the next file header is ignored, as GNU patch ignores it",
                self.hunk_line
            ),
            ParseWarningKind::ChoppedBlankLines(n) => write!(
                f,
                "the patch ends {n} line{} short of the end of the hunk at line {}; \
                 taken as blank context lines, as GNU patch takes them \
                 (trailing blank lines stripped by an editor?)",
                if n == 1 { "" } else { "s" },
                self.hunk_line
            ),
        }
    }
}

pub(super) fn err<T>(line: usize, kind: ParseErrorKind) -> Result<T, ParseError> {
    Err(ParseError { line, kind })
}

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
/// lines as blank context. The last two come with a [`ParseWarning`] in
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

/// Where hunk parsers put their warnings: the list, and the index the file
/// diff being parsed will have in [`Patch::files`].
pub(super) struct Warnings<'a> {
    /// The patch's warnings so far.
    pub list: &'a mut Vec<ParseWarning>,
    /// Index of the current file diff.
    pub file: usize,
}

impl Warnings<'_> {
    fn push(&mut self, line: usize, hunk_line: usize, kind: ParseWarningKind) {
        self.list.push(ParseWarning {
            line,
            file: self.file,
            hunk_line,
            kind,
        });
    }
}

/// Lines with their `\n` (the last one may lack it).
fn split_lines(bytes: &[u8]) -> Vec<&[u8]> {
    bytes.split_inclusive(|&b| b == b'\n').collect()
}

/// The line without its `\n` or `\r\n`.
pub(super) fn chomp(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
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

pub(super) fn cr_stripped(line: &[u8], strip_cr: bool) -> std::borrow::Cow<'_, [u8]> {
    if strip_cr && line.ends_with(b"\r\n") {
        let mut v = line[..line.len() - 2].to_vec();
        v.push(b'\n');
        std::borrow::Cow::Owned(v)
    } else {
        std::borrow::Cow::Borrowed(line)
    }
}

#[cfg(test)]
mod tests {
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
