//! The stack's write-ahead journal: push, pop and refresh are transactions.
//!
//! Before a command touches the tree it writes `.xtask-pc/journal`
//! (temporary file + rename) with its intent and the files it will touch;
//! a push writes it after the pre-images are saved. When the state
//! (`applied-patches`) records the outcome, the journal is removed. A
//! journal found by the next command means the last one was killed
//! mid-way, and [`Stack::recover`] finishes or undoes it:
//!
//! * `push`: the patch is in `applied-patches` → it completed (only the
//!   journal was left); otherwise every touched file gets its saved
//!   pre-image back (files the patch created are removed, with the patch
//!   engine's temporary files), and the patch's state is dropped;
//! * `pop`: rolled forward: the pre-images not restored yet are restored,
//!   the state dropped, the patch taken off `applied-patches`;
//! * `refresh`: rolled forward: the refresh is run again (it reads the
//!   pre-images and the tree, which a refresh does not change).
//!
//! Format, one item per line:
//!
//! ```text
//! xtask-journal 1
//! <push|pop|refresh> <patch name>
//! <existed 0|1> <path>        one line per file the patch touches
//! ```

use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use super::applied::Stack;
use super::state::{FileEntry, State};
use crate::util::fs::{remove_empty_parents, write_atomic};

/// File name of the journal inside the state directory.
pub const JOURNAL: &str = "journal";
const MAGIC: &str = "xtask-journal 1";

/// The operation a journal records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// Applying a patch.
    Push,
    /// Removing the top patch.
    Pop,
    /// Rewriting a patch file from the tree.
    Refresh,
}

impl Op {
    fn as_str(self) -> &'static str {
        match self {
            Op::Push => "push",
            Op::Pop => "pop",
            Op::Refresh => "refresh",
        }
    }
}

/// One unfinished operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Journal {
    /// What was being done.
    pub op: Op,
    /// To which patch.
    pub patch: String,
    /// The files it touches (paths and whether they existed before the
    /// patch; the `after` hashes are not journaled).
    pub files: Vec<FileEntry>,
}

/// What [`Stack::recover`] did with an interrupted operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Recovered {
    /// The push had been recorded; only its journal was left.
    PushCompleted(String),
    /// The push was undone: the tree has the pre-images back.
    PushUndone(String),
    /// The pop was finished.
    PopCompleted(String),
    /// The refresh was run again.
    RefreshCompleted(String),
}

impl fmt::Display for Recovered {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Recovered::PushCompleted(n) => write!(f, "the interrupted push of {n} had completed"),
            Recovered::PushUndone(n) => write!(
                f,
                "undid the interrupted push of {n} (its files have their pre-images back)"
            ),
            Recovered::PopCompleted(n) => write!(f, "finished the interrupted pop of {n}"),
            Recovered::RefreshCompleted(n) => write!(f, "finished the interrupted refresh of {n}"),
        }
    }
}

fn journal_file(state: &State) -> PathBuf {
    state.dir.join(JOURNAL)
}

/// Records `op` on `patch` touching `files` (atomically; nothing in the
/// tree may change before this returns).
///
/// Errors: an unfinished journal is there already (recover first), I/O.
pub fn begin(state: &State, op: Op, patch: &str, files: &[FileEntry]) -> Result<()> {
    let file = journal_file(state);
    if file.exists() {
        bail!(
            "{}: an interrupted operation is not recovered yet; run `cargo xtask patches status` \
             on this tree to recover it",
            file.display()
        );
    }
    let mut text = format!("{MAGIC}\n{} {patch}\n", op.as_str());
    for f in files {
        text.push_str(&format!("{} {}\n", u8::from(f.existed), f.path.display()));
    }
    write_atomic(&file, text.as_bytes())
}

/// Marks the operation done (removes the journal).
///
/// Errors: I/O.
pub fn end(state: &State) -> Result<()> {
    let file = journal_file(state);
    match std::fs::remove_file(&file) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e).with_context(|| format!("removing {}", file.display())),
    }
}

/// The unfinished operation, if any.
///
/// Errors: unreadable or malformed journal (names the file and the fix).
pub fn read(state: &State) -> Result<Option<Journal>> {
    let file = journal_file(state);
    let limit = crate::util::fs::FileLimit {
        what: "journal",
        max_bytes: crate::util::fs::MAX_RECORD_BYTES,
    };
    let fix = "compare the tree with `patches status` and remove the file by hand";
    let text = match crate::util::fs::read_limited(&file, limit, fix) {
        Ok(t) => t,
        Err(e) if crate::util::fs::is_not_found(&e) => return Ok(None),
        Err(e) => return Err(e),
    };
    let malformed = || {
        format!(
            "{}: malformed journal; compare the tree with `patches status` and remove the file by hand",
            file.display()
        )
    };
    let mut lines = text.lines();
    if lines.next() != Some(MAGIC) {
        bail!(malformed());
    }
    let (op, patch) = lines
        .next()
        .and_then(|l| l.split_once(' '))
        .with_context(malformed)?;
    let op = match op {
        "push" => Op::Push,
        "pop" => Op::Pop,
        "refresh" => Op::Refresh,
        _ => bail!(malformed()),
    };
    let mut files = Vec::new();
    for line in lines {
        let (existed, path) = line.split_once(' ').with_context(malformed)?;
        files.push(FileEntry {
            path: PathBuf::from(path),
            existed: existed == "1",
            after: None,
        });
    }
    Ok(Some(Journal {
        op,
        patch: patch.to_string(),
        files,
    }))
}

/// Removes what an interrupted write left next to `path`: the patch
/// engine's `.<name>.xtask-patch.*` and [`write_atomic`]'s `.xtask-tmp-*`.
/// Puts the backup `backup` of `path` back (its directory made first).
fn restore(backup: &Path, path: &Path) -> Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    std::fs::rename(backup, path)
        .with_context(|| format!("restoring {} from {}", path.display(), backup.display()))
}

fn remove_temporaries(path: &Path) -> Result<()> {
    let (Some(dir), Some(base)) = (path.parent(), path.file_name()) else {
        return Ok(());
    };
    let engine = format!(".{}.xtask-patch.", base.to_string_lossy());
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(());
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with(&engine) || name.starts_with(".xtask-tmp-") {
            let p = entry.path();
            std::fs::remove_file(&p).with_context(|| {
                format!("removing {}, left by an interrupted push", p.display())
            })?;
        }
    }
    Ok(())
}

impl Stack {
    /// Finishes or undoes the operation an interrupted command left (see
    /// the module documentation); `None` when there was none.
    ///
    /// Errors: I/O, a malformed journal, a missing pre-image of a push
    /// being undone (the journal is kept, so nothing is lost).
    pub fn recover(&self) -> Result<Option<Recovered>> {
        let Some(journal) = read(&self.state)? else {
            return Ok(None);
        };
        let applied = self.applied()?;
        let on_top = applied.last() == Some(&journal.patch);
        let name = journal.patch.clone();
        let outcome = match journal.op {
            Op::Push if on_top => Recovered::PushCompleted(name),
            Op::Push => {
                self.undo_push(&name, &journal.files)?;
                Recovered::PushUndone(name)
            }
            Op::Pop => {
                if on_top {
                    self.finish_pop(&name, &journal.files, applied)?;
                } else {
                    self.drop_state(&name);
                }
                Recovered::PopCompleted(name)
            }
            Op::Refresh => {
                if applied.contains(&name) {
                    self.refresh_unjournaled(&name)?;
                }
                Recovered::RefreshCompleted(name)
            }
        };
        end(&self.state)?;
        Ok(Some(outcome))
    }

    /// [`Stack::recover`], saying on stderr what it did (for the library
    /// operations, which recover before they start).
    pub(super) fn settle(&self) -> Result<()> {
        if let Some(r) = self.recover()? {
            eprintln!("{}: {r}", self.tree().display());
        }
        Ok(())
    }

    /// Puts back the pre-images of `files` saved for patch `name` (created
    /// files removed) and drops its state: the tree as before the push,
    /// wherever the push stopped.
    pub(super) fn undo_push(&self, name: &str, files: &[FileEntry]) -> Result<()> {
        for (i, e) in files.iter().enumerate() {
            let path = self.tree().join(&e.path);
            remove_temporaries(&path)?;
            if e.existed {
                let backup = self.state.backup(name, i);
                if !backup.exists() {
                    bail!(
                        "{}: the saved pre-image {} is missing, so the interrupted push of {name} \
                         cannot be undone; restore the file by hand, then remove {}",
                        path.display(),
                        backup.display(),
                        journal_file(&self.state).display()
                    );
                }
                restore(&backup, &path)?;
            } else {
                self.remove_created(&path)?;
            }
        }
        self.drop_state(name);
        Ok(())
    }

    /// Removes `path`, a file a patch created, if it is there, then its
    /// parent directories while empty (as GNU patch and quilt do), also
    /// when an interrupted run removed the file but not all of them, or
    /// made the directories but not yet the file.
    fn remove_created(&self, path: &Path) -> Result<()> {
        if std::fs::symlink_metadata(path).is_ok() {
            std::fs::remove_file(path).with_context(|| format!("removing {}", path.display()))?;
        }
        let mut dir = path.parent();
        while let Some(d) = dir.filter(|d| !d.exists()) {
            dir = d.parent();
        }
        remove_empty_parents(self.tree(), dir);
        Ok(())
    }

    /// The pop of `name` (on top of `applied`) from wherever it stopped:
    /// every pre-image still saved is moved back (one already moved is not
    /// there any more), files the patch created are removed, the state is
    /// dropped and `name` leaves `applied-patches`.
    pub(super) fn finish_pop(
        &self,
        name: &str,
        files: &[FileEntry],
        mut applied: Vec<String>,
    ) -> Result<()> {
        for (i, e) in files.iter().enumerate() {
            let path = self.tree().join(&e.path);
            if e.existed {
                let backup = self.state.backup(name, i);
                if !backup.exists() {
                    continue;
                }
                restore(&backup, &path)?;
            } else {
                self.remove_created(&path)?;
            }
        }
        self.drop_state(name);
        if applied.last().map(String::as_str) == Some(name) {
            applied.pop();
            self.state.set_applied(&applied)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn journal_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let state = State::new(dir.path());
        assert_eq!(read(&state).unwrap(), None);
        let files = vec![
            FileEntry {
                path: PathBuf::from("a b/c.c"),
                existed: true,
                after: None,
            },
            FileEntry {
                path: PathBuf::from("new.c"),
                existed: false,
                after: None,
            },
        ];
        begin(&state, Op::Push, "generic/pending-6.12/100-x.patch", &files).unwrap();
        assert!(begin(&state, Op::Pop, "y", &[]).is_err());
        let j = read(&state).unwrap().unwrap();
        assert_eq!(j.op, Op::Push);
        assert_eq!(j.patch, "generic/pending-6.12/100-x.patch");
        assert_eq!(j.files, files);
        end(&state).unwrap();
        assert_eq!(read(&state).unwrap(), None);
    }
}
