//! What applying a patch did, per file and per hunk, and GNU patch 2.7's
//! wording for it (`patching file X`, `Hunk #2 succeeded at 120 (offset 5
//! lines).`, `Hunk #1 FAILED at 20.`).

use std::fmt::Write as _;
use std::path::PathBuf;

use super::diagnostics::ParseWarning;
use super::model::FileOp;

/// The outcome of one hunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HunkOutcome {
    /// The hunk applied.
    Applied {
        /// 1-based line in the *patched* file where the hunk went, the
        /// number GNU prints ("succeeded at N"): where it matched in the
        /// original plus the lines earlier hunks added or removed.
        line: usize,
        /// Lines between where the hunk says it starts and where it matched,
        /// accumulated over the file's hunks as GNU's `in_offset` is.
        offset: isize,
        /// Context lines ignored at each end to make it match (0 = exact).
        fuzz: usize,
    },
    /// The hunk matched nowhere (or could not be written there).
    Failed {
        /// The line GNU prints ("FAILED at N"): the hunk's own start plus the
        /// lines earlier applied hunks added or removed.
        line: isize,
        /// Lines added minus lines removed by the earlier applied hunks
        /// (GNU `out_offset`; the reject file's ranges are shifted by it).
        out_offset: isize,
        /// The hunk's first line and the file's line there differ in CRLF vs LF.
        different_line_endings: bool,
    },
}

impl HunkOutcome {
    /// True for [`HunkOutcome::Applied`].
    pub fn applied(&self) -> bool {
        matches!(self, HunkOutcome::Applied { .. })
    }
}

/// A file-level reason a file diff could not be applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileProblem {
    /// The file to patch (or to rename/copy from) does not exist.
    Missing,
    /// A deletion left content behind (GNU: "Not deleting file X as content
    /// differs from patch").
    NotDeleted,
    /// A reversed copy whose content no longer matches its source.
    CopyDiffers,
    /// The first hunk matched backwards before it matched forwards (GNU:
    /// "Reversed (or previously applied) patch detected!  Skipping patch.").
    LooksReversed,
}

/// What happened to one file diff.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileReport {
    /// Index of the file diff in [`super::Patch::files`].
    pub index: usize,
    /// The patched path relative to the tree (after `-p` stripping).
    pub path: PathBuf,
    /// For renames and copies, the path relative to the tree it came from.
    pub source: Option<PathBuf>,
    /// What the file diff does.
    pub op: FileOp,
    /// One outcome per hunk, in patch order (none when the file was skipped).
    pub hunks: Vec<HunkOutcome>,
    /// A file-level failure, if any.
    pub problem: Option<FileProblem>,
    /// Hunks in the file diff (what GNU counts as "ignored" when it skips it).
    pub hunk_count: usize,
    /// The patch line GNU names for this file ("can't find file to patch at
    /// input line N"): its first hunk's `@@` line, else its header line.
    pub line: usize,
    /// The file diff creates a symbolic link (git mode 120000); GNU says
    /// "patching symbolic link".
    pub symlink: bool,
}

impl FileReport {
    /// True when every hunk applied and there is no file-level problem.
    pub fn succeeded(&self) -> bool {
        self.problem.is_none() && self.hunks.iter().all(HunkOutcome::applied)
    }

    /// GNU patch's messages for this file, one per line, as `patch
    /// --batch --forward` prints them (without `-- saving rejects` notes and
    /// without the "text leading up to this" excerpt). A file skipped as
    /// missing or reversed gets GNU's words for that and "N out of N hunks
    /// ignored", never per-hunk lines.
    pub fn render(&self) -> String {
        let mut s = String::new();
        let path = self.path.display();
        let ignored = |s: &mut String| {
            let n = self.hunk_count;
            if n > 0 {
                let _ = writeln!(s, "{n} out of {n} hunk{} ignored", plural(n));
            }
        };
        if self.problem == Some(FileProblem::Missing) {
            if self.op == FileOp::Delete {
                let _ = writeln!(s, "The next patch would delete the file {path},");
                let _ = writeln!(s, "which does not exist!  Skipping patch.");
            } else {
                let _ = writeln!(s, "can't find file to patch at input line {}", self.line);
                let _ = writeln!(s, "Perhaps you used the wrong -p or --strip option?");
                let _ = writeln!(s, "No file to patch.  Skipping patch.");
            }
            ignored(&mut s);
            return s;
        }
        let kind = if self.symlink {
            "symbolic link"
        } else {
            "file"
        };
        let _ = write!(s, "patching {kind} {path}");
        match (&self.source, self.op) {
            (Some(src), FileOp::Rename) => {
                let _ = write!(s, " (renamed from {})", src.display());
            }
            (Some(src), FileOp::Copy) => {
                let _ = write!(s, " (copied from {})", src.display());
            }
            _ => {}
        }
        s.push('\n');
        if self.problem == Some(FileProblem::LooksReversed) {
            let _ = writeln!(
                s,
                "Reversed (or previously applied) patch detected!  Skipping patch."
            );
            ignored(&mut s);
            return s;
        }
        for (i, h) in self.hunks.iter().enumerate() {
            if let Some(msg) = hunk_message(i + 1, h) {
                s.push_str(&msg);
                s.push('\n');
            }
        }
        if self.problem == Some(FileProblem::NotDeleted) {
            let _ = writeln!(s, "Not deleting file {path} as content differs from patch");
        }
        let failed = self.hunks.iter().filter(|h| !h.applied()).count();
        if failed > 0 {
            let n = self.hunks.len();
            let _ = writeln!(s, "{failed} out of {n} hunk{} FAILED", plural(n));
        }
        s
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// Per file and per hunk outcomes of applying (or checking) a patch.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ApplyReport {
    /// One entry per file diff, in patch order.
    pub files: Vec<FileReport>,
    /// Set only by [`super::apply_patch_forced`]: the patch applied, and it
    /// would also have applied the other way round, exactly (fuzz 0), to
    /// the tree as it was: it may already be in the tree (upstream, or a
    /// duplicate of an earlier patch). GNU `patch -f` says nothing about
    /// it; callers warn.
    pub applies_in_reverse: bool,
    /// The parsed patch's [`super::Patch::warnings`]: what was applied as
    /// GNU patch reads it but looks unintended.
    pub parse_warnings: Vec<ParseWarning>,
}

impl ApplyReport {
    /// True when every file diff succeeded.
    pub fn succeeded(&self) -> bool {
        self.files.iter().all(FileReport::succeeded)
    }

    /// What to warn about for patch `name`, one line each, naming the
    /// patch, the file (`-p` stripped) and the patch line: every parse
    /// warning, then, if [`ApplyReport::applies_in_reverse`], that the patch
    /// may already be in the tree.
    pub fn warnings(&self, name: &str) -> Vec<String> {
        let mut out: Vec<String> = self
            .parse_warnings
            .iter()
            .map(|w| match self.files.iter().find(|f| f.index == w.file) {
                Some(f) => format!("warning: {name}: {}: {w}", f.path.display()),
                None => format!("warning: {name}: {w}"),
            })
            .collect();
        if self.applies_in_reverse {
            out.push(format!(
                "warning: {name} also applies in reverse: already upstream? \
                 see `cargo xtask patches rebase`"
            ));
        }
        out
    }

    /// GNU patch's messages for this report, one per line, as
    /// `patch --batch --forward` prints them: [`FileReport::render`] of
    /// every file diff in patch order (`patching file X`, `Hunk #N
    /// succeeded at L with fuzz F (offset O lines).` for hunks that needed
    /// fuzz or an offset, `Hunk #N FAILED at L.`, `K out of N hunks
    /// FAILED`, and GNU's words for skipped files).
    pub fn render(&self) -> String {
        self.files.iter().map(FileReport::render).collect()
    }
}

/// GNU's line for hunk `number` (1-based), or `None` for an exact match.
pub fn hunk_message(number: usize, h: &HunkOutcome) -> Option<String> {
    match *h {
        HunkOutcome::Applied { line, offset, fuzz } => {
            if fuzz == 0 && offset == 0 {
                return None;
            }
            let mut s = format!("Hunk #{number} succeeded at {line}");
            if fuzz > 0 {
                let _ = write!(s, " with fuzz {fuzz}");
            }
            if offset != 0 {
                let _ = write!(
                    s,
                    " (offset {offset} line{})",
                    if offset == 1 { "" } else { "s" }
                );
            }
            s.push('.');
            Some(s)
        }
        HunkOutcome::Failed {
            line,
            different_line_endings,
            ..
        } => Some(format!(
            "Hunk #{number} FAILED at {line}{}.",
            if different_line_endings {
                " (different line endings)"
            } else {
                ""
            }
        )),
    }
}
