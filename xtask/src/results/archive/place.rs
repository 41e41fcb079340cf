//! Putting a merged result in place without ever removing the old one
//! first: the new directory is staged next to its destination (so on the
//! destination's file system, whatever is mounted where) and swapped with
//! the old one in one `renameat2(RENAME_EXCHANGE)`; the old one then lies
//! in the staging directory, which is removed.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use rustix::fs::{renameat_with, RenameFlags, CWD};

use crate::util::fs::{remove_stale_staging, StagingDir};
use crate::util::layout::Layout;

/// Prefix of a merge's staging directories, in `results/<target>/` (and,
/// before they moved there, in `target/xtask/`).
pub const STAGING_PREFIX: &str = ".staging-merge-";

/// A result staged for one `results/<target>/<variant>/`.
#[derive(Debug)]
pub(super) struct StagedResult {
    /// Owned by this process; removed when dropped.
    staging: StagingDir,
    dest: PathBuf,
}

impl StagedResult {
    /// A staging directory for `dest` in `dest`'s parent (created if
    /// missing), owned by this process.
    pub(super) fn new(dest: &Path) -> Result<StagedResult> {
        let parent = dest.parent().context("a results directory has a parent")?;
        let staging = StagingDir::new(parent, STAGING_PREFIX)?;
        std::fs::create_dir(staging.path().join("new"))
            .with_context(|| format!("creating {}", staging.path().join("new").display()))?;
        Ok(StagedResult {
            staging,
            dest: dest.to_path_buf(),
        })
    }

    /// Where the new result's files go.
    pub(super) fn dir(&self) -> PathBuf {
        self.staging.path().join("new")
    }

    /// Moves the staged result to its destination, exchanging it with the
    /// old one when there is one (the old one is removed with the staging
    /// directory); see [`swap_into_place`]. Readers see the old result or
    /// the new one.
    ///
    /// Errors: I/O, naming both paths; the old result is then in place.
    pub(super) fn put_in_place(self) -> Result<()> {
        let new = self.dir();
        let aside = self.staging.path().join("old");
        match swap_into_place(&new, &self.dest, &aside) {
            Ok(_) => Ok(()),
            Err(Swap::Failed(e)) => Err(e),
            Err(Swap::Stranded(e)) => {
                // The old result lies in the staging directory: keep it.
                self.staging.keep()?;
                Err(e)
            }
        }
    }
}

/// Why [`swap_into_place`] failed.
#[derive(Debug)]
pub enum Swap {
    /// Nothing moved: the old result (if any) is still in place.
    Failed(anyhow::Error),
    /// The old result was moved aside and could not be moved back: it is
    /// at the `aside` path the error names, for the user to move back.
    Stranded(anyhow::Error),
}

/// Puts the directory `new` at `dest` without ever removing `dest` first:
/// when `dest` exists the two are swapped in one
/// `renameat2(RENAME_EXCHANGE)`, so the old one is then at `new`; on a
/// file system without it, `dest` is renamed to `aside` first and renamed
/// back if `new` cannot be put in place. Readers see the old directory or
/// the new one. `new`, `dest` and `aside` must be on one file system
/// (siblings are). Returns where the old directory lies now (`new` or
/// `aside`; `None` when there was none), for the caller to remove.
///
/// Errors: I/O, naming both paths, as [`Swap`].
pub fn swap_into_place(
    new: &Path,
    dest: &Path,
    aside: &Path,
) -> std::result::Result<Option<PathBuf>, Swap> {
    let moving = || format!("moving {} to {}", new.display(), dest.display());
    if std::fs::symlink_metadata(dest).is_err() {
        return std::fs::rename(new, dest)
            .with_context(moving)
            .map(|()| None)
            .map_err(Swap::Failed);
    }
    use rustix::io::Errno;
    match renameat_with(CWD, new, CWD, dest, RenameFlags::EXCHANGE) {
        Ok(()) => return Ok(Some(new.to_path_buf())),
        // No RENAME_EXCHANGE on this file system.
        Err(e) if [Errno::INVAL, Errno::NOSYS, Errno::OPNOTSUPP].contains(&e) => {}
        Err(e) => {
            return Err(Swap::Failed(
                anyhow::Error::from(std::io::Error::from(e)).context(moving()),
            ))
        }
    }
    std::fs::rename(dest, aside)
        .with_context(|| format!("moving {} aside", dest.display()))
        .map_err(Swap::Failed)?;
    if let Err(e) = std::fs::rename(new, dest) {
        if let Err(back) = std::fs::rename(aside, dest) {
            return Err(Swap::Stranded(anyhow::anyhow!(
                "moving {} to {}: {e}; moving the old one back failed too ({back}): \
                 it is in {}, move it back by hand",
                new.display(),
                dest.display(),
                aside.display()
            )));
        }
        return Err(Swap::Failed(anyhow::Error::from(e).context(moving())));
    }
    Ok(Some(aside.to_path_buf()))
}

/// Removes the staging directories of merges that were killed, in
/// `results/<target>/` and in `target/xtask/` (where merges staged
/// before), leaving those of merges still running.
pub fn remove_stale(layout: &Layout) -> Result<()> {
    remove_stale_staging(&layout.work_dir(), STAGING_PREFIX)?;
    let Ok(targets) = std::fs::read_dir(layout.results_root()) else {
        return Ok(());
    };
    for entry in targets.flatten() {
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            remove_stale_staging(&entry.path(), STAGING_PREFIX)?;
        }
    }
    Ok(())
}
