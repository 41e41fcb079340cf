//! Why a patch was not applied.

use std::fmt;
use std::path::PathBuf;

use super::report::{hunk_message, ApplyReport, FileProblem};

/// Why [`super::apply_patch`] left the tree unchanged.
#[derive(Debug)]
pub enum ApplyError {
    /// Some hunk or file diff did not apply; the report says which
    /// (`Hunk #2 FAILED at 120.`), including those that would have applied.
    Failed(ApplyReport),
    /// The patch does not apply, but every hunk of every file applies the
    /// other way round: it is reversed or already applied (GNU: "Reversed (or
    /// previously applied) patch detected!"). The report is the failed attempt.
    Reversed {
        /// Outcomes of the attempt in the requested direction.
        report: ApplyReport,
        /// True when the patch was being applied in reverse (GNU: "Unreversed
        /// patch detected!").
        reverse: bool,
    },
    /// A target path that is absolute, contains `..`, or strips to nothing.
    UnsafePath {
        /// The path after `-p` stripping.
        path: PathBuf,
        /// 1-based patch line of the file diff's header.
        patch_line: usize,
        /// What is wrong with it.
        why: &'static str,
    },
    /// A file name with fewer components than the `-p` level strips.
    Strip {
        /// The name as written in the patch.
        name: PathBuf,
        /// The `-p` level.
        strip: usize,
        /// 1-based patch line of the file diff's header.
        patch_line: usize,
    },
    /// A path component inside the tree is a symbolic link: writing through it is refused.
    Symlink(PathBuf),
    /// The path to patch exists but is not a regular file.
    NotAFile(PathBuf),
    /// A binary diff (`GIT binary patch`, `Binary files ... differ`): refused.
    Binary {
        /// The target path after stripping.
        path: PathBuf,
        /// 1-based patch line of the file diff's header.
        patch_line: usize,
    },
    /// A git file diff that is not for a regular file and is refused: a
    /// symbolic link (mode 120000) whose target is absolute, leads outside
    /// the tree or through a symbolic link, or a diff that turns a file into
    /// a link (only creating links is supported), or another file type
    /// (gitlinks, mode 160000).
    SpecialFile {
        /// The target path after stripping.
        path: PathBuf,
        /// 1-based patch line of the file diff's header.
        patch_line: usize,
        /// What is wrong.
        why: String,
    },
    /// Reading or writing the tree failed; the tree is left as it was if the
    /// failure happened before any file was replaced.
    Io {
        /// The file being read or written.
        path: PathBuf,
        /// The underlying error.
        error: std::io::Error,
    },
}

impl fmt::Display for ApplyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ApplyError::Failed(report) => {
                let mut first = true;
                for file in report.files.iter().filter(|r| !r.succeeded()) {
                    if !first {
                        write!(f, "; ")?;
                    }
                    first = false;
                    write!(f, "{}: ", file.path.display())?;
                    match file.problem {
                        Some(FileProblem::Missing) => write!(f, "can't find file to patch")?,
                        Some(FileProblem::NotDeleted) => {
                            write!(f, "not deleting file as content differs from patch")?
                        }
                        Some(FileProblem::CopyDiffers) => {
                            write!(f, "copy differs from its source")?
                        }
                        Some(FileProblem::LooksReversed) => {
                            write!(f, "reversed (or previously applied) patch detected")?
                        }
                        None => {
                            let msgs: Vec<String> = file
                                .hunks
                                .iter()
                                .enumerate()
                                .filter(|(_, h)| !h.applied())
                                .filter_map(|(i, h)| hunk_message(i + 1, h))
                                .collect();
                            write!(f, "{}", msgs.join(" "))?;
                        }
                    }
                }
                Ok(())
            }
            ApplyError::Reversed { reverse, .. } => {
                if *reverse {
                    write!(f, "Unreversed patch detected!")
                } else {
                    write!(f, "Reversed (or previously applied) patch detected!")
                }
            }
            ApplyError::UnsafePath {
                path,
                patch_line,
                why,
            } => write!(
                f,
                "refusing file name {} (patch line {patch_line}): {why}",
                path.display()
            ),
            ApplyError::Strip {
                name,
                strip,
                patch_line,
            } => write!(
                f,
                "cannot strip {strip} leading components from {} (patch line {patch_line})",
                name.display()
            ),
            ApplyError::Symlink(p) => {
                write!(f, "refusing to write through symbolic link {}", p.display())
            }
            ApplyError::NotAFile(p) => write!(f, "{} is not a regular file", p.display()),
            ApplyError::Binary { path, patch_line } => write!(
                f,
                "{}: binary diffs are not supported (patch line {patch_line})",
                path.display()
            ),
            ApplyError::SpecialFile {
                path,
                patch_line,
                why,
            } => write!(
                f,
                "{}: refusing it: {why} (patch line {patch_line})",
                path.display()
            ),
            ApplyError::Io { path, error } => write!(f, "{}: {error}", path.display()),
        }
    }
}

impl std::error::Error for ApplyError {}
