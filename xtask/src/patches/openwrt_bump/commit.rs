//! The bump's writes into the OpenWrt checkout, all or nothing across
//! errors and kills.
//!
//! Before the first write, a journal (`target/linux/<board>/.xtask-bump-journal.json`)
//! lists every path the bump will create and the Makefile's old text. An
//! error during the writes rolls them back at once; a kill leaves the
//! journal, and the next bump of the board rolls back from it before
//! anything else ([`recover`]). The journal is removed after the last
//! write. A lock on the board directory itself ([`BoardLock`]) keeps two
//! bumps of one checkout apart, from one workbench or from two.

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use xshell::Shell;

use crate::util::fs::{copy_tree, remove_stale_staging, write_atomic, CopyKind, StagingDir};
use crate::util::lock::Wait;

/// Staging directories in the checkout (`target/linux/<board>/.xtask-bump-<pid>-…`).
pub const STAGING_PREFIX: &str = ".xtask-bump-";

/// The journal's file name in the board directory.
const JOURNAL: &str = ".xtask-bump-journal.json";

/// An exclusive `flock` on the board directory, held while the bump runs.
#[derive(Debug)]
pub struct BoardLock {
    _dir: OwnedFd,
}

impl BoardLock {
    /// Takes the lock, waiting for another bump of the board when `wait`
    /// says so (and saying that it waits).
    ///
    /// Errors: the directory cannot be opened, or it is locked and `wait`
    /// is [`Wait::No`].
    pub fn acquire(dir: &Path, what: &str, wait: Wait) -> Result<BoardLock> {
        use rustix::fs::{flock, open, FlockOperation, Mode, OFlags};
        let fd = open(
            dir,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .with_context(|| format!("opening {}", dir.display()))?;
        if flock(&fd, FlockOperation::NonBlockingLockExclusive).is_err() {
            if wait == Wait::No {
                bail!(
                    "another bump of {what} is running (it holds a lock on {}); wait for it, or leave out --no-wait",
                    dir.display()
                );
            }
            eprintln!("waiting for another bump of {what} to finish…");
            flock(&fd, FlockOperation::LockExclusive)
                .with_context(|| format!("locking {}", dir.display()))?;
        }
        Ok(BoardLock { _dir: fd })
    }
}

/// What the journal records.
#[derive(Debug, Serialize, Deserialize)]
struct Journal {
    /// Paths the bump creates (files or directories).
    created: Vec<PathBuf>,
    /// The board Makefile and its text before the bump.
    makefile: PathBuf,
    makefile_original: String,
}

/// Rolls back a bump a kill interrupted (from its journal) and removes
/// what interrupted runs left in `dirs` (staging directories, temporary
/// files of atomic writes). Returns a note when it rolled back.
///
/// Errors: an unreadable journal (naming it and how to remove it), I/O.
pub fn recover(board_dir: &Path, dirs: &[PathBuf]) -> Result<Option<String>> {
    let journal = board_dir.join(JOURNAL);
    let note = if journal.exists() {
        let limit = crate::util::fs::FileLimit {
            what: "bump journal",
            max_bytes: crate::util::fs::MAX_RECORD_BYTES,
        };
        let text = crate::util::fs::read_limited(
            &journal,
            limit,
            "remove it, and what an interrupted bump created, by hand",
        )?;
        let j: Journal = serde_json::from_str(&text).with_context(|| {
            format!(
                "{}: not a bump journal; remove it, and what an interrupted bump created, by hand",
                journal.display()
            )
        })?;
        roll_back(&j)?;
        std::fs::remove_file(&journal)
            .with_context(|| format!("removing {}", journal.display()))?;
        Some(format!(
            "rolled back an interrupted bump of {} (removed {})",
            board_dir.display(),
            j.created
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ))
    } else {
        None
    };
    remove_stale_staging(board_dir, STAGING_PREFIX)?;
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        for entry in entries.flatten() {
            if entry
                .file_name()
                .to_string_lossy()
                .starts_with(".xtask-tmp-")
                && entry.path().is_file()
            {
                std::fs::remove_file(entry.path())
                    .with_context(|| format!("removing {}", entry.path().display()))?;
            }
        }
    }
    Ok(note)
}

fn roll_back(j: &Journal) -> Result<()> {
    for p in &j.created {
        let removed = match std::fs::symlink_metadata(p) {
            Ok(m) if m.is_dir() => std::fs::remove_dir_all(p),
            Ok(_) => std::fs::remove_file(p),
            Err(_) => Ok(()),
        };
        removed.with_context(|| format!("rolling back: removing {}", p.display()))?;
    }
    write_atomic(&j.makefile, j.makefile_original.as_bytes())
        .context("rolling back: restoring the board Makefile")
}

/// The writes of one bump.
#[derive(Debug)]
pub struct Writes<'a> {
    /// (old, new) files and directories to copy (kernel_bump.sh's copies).
    pub copies: &'a [(PathBuf, PathBuf)],
    /// The staged `patches-<to>` and where it goes; `None` for a board
    /// without patches.
    pub patches: Option<(&'a Path, &'a Path)>,
    /// The board Makefile, its text now and the text to write.
    pub makefile: (&'a Path, &'a str, &'a str),
}

/// Carries out `w` under a journal (see the module docs).
///
/// Errors: I/O, after rolling back what was written.
pub fn commit(sh: &Shell, board_dir: &Path, w: &Writes<'_>) -> Result<()> {
    let (makefile, original, new_text) = w.makefile;
    let mut created: Vec<PathBuf> = w.copies.iter().map(|(_, new)| new.clone()).collect();
    created.extend(w.patches.map(|(_, new)| new.to_path_buf()));
    let journal = Journal {
        created,
        makefile: makefile.to_path_buf(),
        makefile_original: original.to_string(),
    };
    let file = board_dir.join(JOURNAL);
    let text = serde_json::to_string_pretty(&journal).context("serialising the bump journal")?;
    write_atomic(&file, text.as_bytes())?;
    let written = (|| -> Result<()> {
        for (old, new) in w.copies {
            copy_into_place(sh, old, new)?;
        }
        if let Some((staged, new)) = w.patches {
            std::fs::rename(staged, new)
                .with_context(|| format!("moving {} to {}", staged.display(), new.display()))?;
        }
        write_atomic(makefile, new_text.as_bytes())
    })();
    if let Err(e) = written {
        roll_back(&journal).with_context(|| format!("after: {e:#}"))?;
        std::fs::remove_file(&file).ok();
        return Err(e.context("the checkout is as it was before the bump"));
    }
    std::fs::remove_file(&file).with_context(|| format!("removing {}", file.display()))
}

/// Copies a file, or a directory recursively, to `new` (which does not
/// exist), through a staging name and a rename.
fn copy_into_place(sh: &Shell, old: &Path, new: &Path) -> Result<()> {
    if old.is_dir() {
        let parent = new.parent().context("a directory without a parent")?;
        let staging = StagingDir::new(parent, STAGING_PREFIX)?;
        let staged = staging.path().join("dir");
        copy_tree(sh, old, &staged, CopyKind::Full)?;
        std::fs::rename(&staged, new)
            .with_context(|| format!("moving {} to {}", staged.display(), new.display()))?;
    } else {
        let bytes = std::fs::read(old).with_context(|| format!("reading {}", old.display()))?;
        write_atomic(new, &bytes)?;
    }
    Ok(())
}

/// A board Makefile's text with `KERNEL_TESTING_PATCHVER:=<to>`: the
/// assignment replaced when there is one, else added after
/// `KERNEL_PATCHVER`'s. Comments do not count as assignments.
///
/// Errors: no `KERNEL_PATCHVER` assignment.
pub fn with_testing_version(text: &str, to: &str) -> Result<String> {
    let key = |l: &str| -> String {
        let l = l.trim_start();
        if l.starts_with('#') {
            return String::new();
        }
        l.split(['=', ':', '?', '+'])
            .next()
            .unwrap_or("")
            .trim()
            .to_string()
    };
    let line = format!("KERNEL_TESTING_PATCHVER:={to}");
    let has_testing = text.lines().any(|l| key(l) == "KERNEL_TESTING_PATCHVER");
    let mut out = Vec::new();
    let mut done = false;
    for l in text.lines() {
        match key(l).as_str() {
            "KERNEL_TESTING_PATCHVER" => {
                out.push(line.clone());
                done = true;
            }
            "KERNEL_PATCHVER" if !has_testing => {
                out.push(l.to_string());
                out.push(line.clone());
                done = true;
            }
            _ => out.push(l.to_string()),
        }
    }
    if !done {
        bail!("no KERNEL_PATCHVER assignment to add KERNEL_TESTING_PATCHVER:={to} after");
    }
    let mut new = out.join("\n");
    new.push('\n');
    Ok(new)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn testing_version_is_added_after_the_default_or_replaced() {
        assert_eq!(
            with_testing_version("ARCH:=arm\nKERNEL_PATCHVER:=6.6\n\ninclude x\n", "6.12").unwrap(),
            "ARCH:=arm\nKERNEL_PATCHVER:=6.6\nKERNEL_TESTING_PATCHVER:=6.12\n\ninclude x\n"
        );
        assert_eq!(
            with_testing_version(
                "KERNEL_PATCHVER:=6.6\nKERNEL_TESTING_PATCHVER:=6.1\n",
                "6.12"
            )
            .unwrap(),
            "KERNEL_PATCHVER:=6.6\nKERNEL_TESTING_PATCHVER:=6.12\n"
        );
        // A comment naming the variable is not an assignment.
        assert_eq!(
            with_testing_version("KERNEL_PATCHVER:=6.6\n# KERNEL_TESTING_PATCHVER: later\n", "6.12")
                .unwrap(),
            "KERNEL_PATCHVER:=6.6\nKERNEL_TESTING_PATCHVER:=6.12\n# KERNEL_TESTING_PATCHVER: later\n"
        );
        assert!(with_testing_version("ARCH:=arm\n", "6.12").is_err());
    }

    #[test]
    fn an_interrupted_bump_is_rolled_back_from_its_journal() {
        let dir = tempfile::tempdir().unwrap();
        let board = dir.path();
        let makefile = board.join("Makefile");
        std::fs::write(&makefile, "KERNEL_PATCHVER:=6.6\n").unwrap();
        std::fs::create_dir(board.join("patches-6.12")).unwrap();
        std::fs::write(board.join("patches-6.12/1.patch"), "x").unwrap();
        std::fs::write(board.join("config-6.12"), "y").unwrap();
        std::fs::write(
            &makefile,
            "KERNEL_PATCHVER:=6.6\nKERNEL_TESTING_PATCHVER:=6.12\n",
        )
        .unwrap();
        std::fs::write(board.join(".xtask-tmp-abc"), "partial").unwrap();
        let j = Journal {
            created: vec![board.join("config-6.12"), board.join("patches-6.12")],
            makefile: makefile.clone(),
            makefile_original: "KERNEL_PATCHVER:=6.6\n".into(),
        };
        std::fs::write(board.join(JOURNAL), serde_json::to_string(&j).unwrap()).unwrap();
        let note = recover(board, &[board.to_path_buf()]).unwrap();
        assert!(note.unwrap().contains("rolled back"));
        let left: Vec<String> = std::fs::read_dir(board)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(left, ["Makefile"]);
        assert_eq!(
            std::fs::read_to_string(&makefile).unwrap(),
            "KERNEL_PATCHVER:=6.6\n"
        );
        assert_eq!(recover(board, &[]).unwrap(), None);
    }
}
