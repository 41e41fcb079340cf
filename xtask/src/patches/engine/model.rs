//! The parsed form of a patch: files, hunks and lines, as GNU patch 2.7
//! reads a unified or context diff (pch.c, `another_hunk`).

use std::path::PathBuf;

use super::diagnostics::ParseWarning;

/// One patch file: the free-form description, then one entry per file diff.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Patch {
    /// Every byte before the first file header, verbatim (commit message,
    /// diffstat, ...). Never parsed as hunks, whatever it contains.
    pub description: Vec<u8>,
    /// The file diffs in patch order.
    pub files: Vec<FilePatch>,
    /// What was parsed as GNU patch parses it but looks unintended (hunk
    /// lines past a header's counts, blank lines missing at the end), in
    /// patch order.
    pub warnings: Vec<ParseWarning>,
}

/// What a file diff does to the tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileOp {
    /// Patch an existing file in place.
    Modify,
    /// Create a file that does not exist (`/dev/null` old side, git
    /// `new file mode`, or an epoch timestamp on the old side).
    Create,
    /// Delete a file (`/dev/null` new side, git `deleted file mode`, or an
    /// epoch timestamp on the new side): it must be empty after the hunks.
    Delete,
    /// git `rename from`/`rename to`: the new name replaces the old one.
    Rename,
    /// git `copy from`/`copy to`: the new name is created from the old one.
    Copy,
    /// The reverse of a [`FileOp::Copy`]: the old-side name (the copy) is
    /// deleted once its hunks, applied to it, give the new-side file's content.
    Uncopy,
}

/// A file name from a `---`/`+++` or `diff --git` header, before `-p` stripping.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileName {
    /// The name as written (C-style quotes already removed), e.g. `a/drivers/net/x.c`.
    pub path: PathBuf,
    /// Whatever followed the name on the header line, from the separating tab
    /// on (e.g. `"\t2024-01-01 00:00:00.000000000 +0000"`); empty when none.
    pub timestamp: String,
}

/// The diff of one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilePatch {
    /// 1-based line number, in the patch file, of this file diff's first header line.
    pub line: usize,
    /// Old-side name; `None` for `/dev/null`.
    pub old: Option<FileName>,
    /// New-side name; `None` for `/dev/null`.
    pub new: Option<FileName>,
    /// True for a `diff --git` file diff.
    pub git: bool,
    /// What the diff does (see [`FileOp`]).
    pub op: FileOp,
    /// git `old mode`/`deleted file mode`, as an octal `st_mode` (e.g. `0o100644`).
    pub old_mode: Option<u32>,
    /// git `new mode`/`new file mode`, as an octal `st_mode` (e.g. `0o100755`).
    pub new_mode: Option<u32>,
    /// `GIT binary patch` or `Binary files ... differ`: applying it is refused.
    pub binary: bool,
    /// The hunks in patch order (none for pure renames, mode changes, binaries).
    pub hunks: Vec<Hunk>,
}

/// The role of one hunk line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineKind {
    /// ` ` context: present on both sides.
    Context,
    /// `-`: old side only.
    Delete,
    /// `+`: new side only.
    Insert,
}

/// One line of a hunk body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HunkLine {
    /// Context, delete or insert.
    pub kind: LineKind,
    /// The line's text without its leading marker and without the final `\n`
    /// (a `\r` stays unless the patch itself had CRLF line ends, which GNU
    /// patch strips).
    pub text: Vec<u8>,
    /// Followed by `\ No newline at end of file`: the line has no `\n`.
    pub no_newline: bool,
}

impl HunkLine {
    /// The line as it appears in a file: text plus `\n` unless `no_newline`.
    pub fn bytes(&self) -> Vec<u8> {
        let mut v = self.text.clone();
        if !self.no_newline {
            v.push(b'\n');
        }
        v
    }
}

/// One `@@ -a,b +c,d @@` hunk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hunk {
    /// 1-based line number of the `@@` line in the patch file.
    pub line: usize,
    /// `a` in `-a,b`: first old line (0 when the old side is empty at the file start).
    pub old_start: usize,
    /// `b` in `-a,b` (1 when omitted): old-side line count.
    pub old_count: usize,
    /// `c` in `+c,d`.
    pub new_start: usize,
    /// `d` in `+c,d` (1 when omitted): new-side line count.
    pub new_count: usize,
    /// Text after the closing `@@`, usually ` function_name(...)`; may be empty.
    pub section: Vec<u8>,
    /// The body in patch order.
    pub lines: Vec<HunkLine>,
}

impl Hunk {
    /// The old side (context and deleted lines), each with its `\n` if any.
    pub fn old_lines(&self) -> Vec<Vec<u8>> {
        self.side(LineKind::Delete)
    }

    /// The new side (context and inserted lines), each with its `\n` if any.
    pub fn new_lines(&self) -> Vec<Vec<u8>> {
        self.side(LineKind::Insert)
    }

    fn side(&self, own: LineKind) -> Vec<Vec<u8>> {
        self.lines
            .iter()
            .filter(|l| l.kind == LineKind::Context || l.kind == own)
            .map(HunkLine::bytes)
            .collect()
    }

    /// GNU's `pch_first`: the 1-based old line the hunk expects to start at.
    /// For an empty old side (`-5,0`, "insert after line 5") that is `a + 1`.
    pub fn first(&self) -> usize {
        self.old_start + usize::from(self.old_count == 0)
    }

    /// GNU's `pch_newfirst`: as [`Hunk::first`], for the new side.
    pub fn new_first(&self) -> usize {
        self.new_start + usize::from(self.new_count == 0)
    }

    /// Context lines before the first changed line (GNU `p_prefix_context`).
    pub fn prefix_context(&self) -> usize {
        self.lines
            .iter()
            .take_while(|l| l.kind == LineKind::Context)
            .count()
    }

    /// Context lines after the last changed line (GNU `p_suffix_context`).
    pub fn suffix_context(&self) -> usize {
        self.lines
            .iter()
            .rev()
            .take_while(|l| l.kind == LineKind::Context)
            .count()
    }

    /// The same hunk with old and new sides swapped (GNU `pch_swap`).
    pub fn reversed(&self) -> Hunk {
        Hunk {
            line: self.line,
            old_start: self.new_start,
            old_count: self.new_count,
            new_start: self.old_start,
            new_count: self.old_count,
            section: self.section.clone(),
            lines: self
                .lines
                .iter()
                .map(|l| HunkLine {
                    kind: match l.kind {
                        LineKind::Context => LineKind::Context,
                        LineKind::Delete => LineKind::Insert,
                        LineKind::Insert => LineKind::Delete,
                    },
                    text: l.text.clone(),
                    no_newline: l.no_newline,
                })
                .collect(),
        }
    }
}

impl FilePatch {
    /// The same file diff undoing itself: sides, modes and hunks swapped;
    /// a creation becomes a deletion and a rename goes back.
    pub fn reversed(&self) -> FilePatch {
        FilePatch {
            line: self.line,
            old: self.new.clone(),
            new: self.old.clone(),
            git: self.git,
            op: match self.op {
                FileOp::Create => FileOp::Delete,
                FileOp::Delete => FileOp::Create,
                FileOp::Copy => FileOp::Uncopy,
                FileOp::Uncopy => FileOp::Copy,
                other => other,
            },
            old_mode: self.new_mode,
            new_mode: self.old_mode,
            binary: self.binary,
            hunks: self.hunks.iter().map(Hunk::reversed).collect(),
        }
    }
}

impl Patch {
    /// The patch that undoes this one (what `patch -R` applies); a copy
    /// becomes an [`FileOp::Uncopy`].
    pub fn reversed(&self) -> Patch {
        Patch {
            description: self.description.clone(),
            files: self.files.iter().map(FilePatch::reversed).collect(),
            warnings: self.warnings.clone(),
        }
    }
}
