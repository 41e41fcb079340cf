//! What the patch parser reports: an error that stops it ([`ParseError`])
//! and what it accepts as GNU patch does but warns about
//! ([`ParseWarning`]), each with the patch line; and the line helpers every
//! hunk parser shares.

use std::fmt;

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
    /// Index in [`super::Patch::files`] of the file diff the hunk belongs to.
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

/// Where hunk parsers put their warnings: the list, and the index the file
/// diff being parsed will have in [`super::Patch::files`].
pub(super) struct Warnings<'a> {
    /// The patch's warnings so far.
    pub list: &'a mut Vec<ParseWarning>,
    /// Index of the current file diff.
    pub file: usize,
}

impl Warnings<'_> {
    pub(super) fn push(&mut self, line: usize, hunk_line: usize, kind: ParseWarningKind) {
        self.list.push(ParseWarning {
            line,
            file: self.file,
            hunk_line,
            kind,
        });
    }
}

/// The line without its `\n` or `\r\n`.
pub(super) fn chomp(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// `line` with a final `\r\n` made `\n` when `strip_cr` (a file diff
/// whose `+++ ` line ends in CRLF, as GNU patch 2.7 strips it).
pub(super) fn cr_stripped(line: &[u8], strip_cr: bool) -> std::borrow::Cow<'_, [u8]> {
    if strip_cr && line.ends_with(b"\r\n") {
        let mut v = line[..line.len() - 2].to_vec();
        v.push(b'\n');
        std::borrow::Cow::Owned(v)
    } else {
        std::borrow::Cow::Borrowed(line)
    }
}
