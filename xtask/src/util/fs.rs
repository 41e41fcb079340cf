//! File-system operations every stage shares: the one capped read of a
//! file a user or an archive can replace (in [`crate::util::capped`],
//! re-exported here), the one atomic write, the one tree copy, staging
//! directories owned by their process, and cleanup of what interrupted
//! runs leave.

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};
use xshell::{cmd, Shell};

pub use crate::util::capped::{
    describe_bytes, is_not_found, open_limited, read_bytes_limited, read_limited, FileLimit,
    MAX_BINARY_BYTES, MAX_INPUT_BYTES, MAX_LOG_BYTES, MAX_RECORD_BYTES,
};
use crate::util::lock::{process_alive, Lock, Wait};
use crate::util::process::run_tied;

/// Writes `bytes` to `path` through a temporary file in the same directory
/// (created if missing), renamed over `path`: readers see the old
/// file or the new one, never a truncated one, and a hard-linked old file is
/// left alone. The new file keeps the old one's permissions, or gets 0644.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    stage_file(path, bytes)?
        .persist(path)
        .with_context(|| format!("renaming a temporary file to {}", path.display()))?;
    Ok(())
}

/// The first half of [`write_atomic`]: `bytes` written to a
/// temporary file beside `path` with `path`'s permissions, for the caller
/// to `persist` over `path` (one rename) or drop (removed). Staging every
/// file of a change before renaming any makes the change all or nothing.
///
/// Errors: the directory cannot be created or written (naming `path`).
pub fn stage_file(path: &Path, bytes: &[u8]) -> Result<tempfile::NamedTempFile> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".xtask-tmp-")
        .tempfile_in(dir)
        .with_context(|| format!("creating a temporary file in {}", dir.display()))?;
    let permissions = match std::fs::metadata(path) {
        Ok(meta) => meta.permissions(),
        Err(_) => {
            use std::os::unix::fs::PermissionsExt;
            std::fs::Permissions::from_mode(0o644)
        }
    };
    std::fs::set_permissions(tmp.path(), permissions)
        .with_context(|| format!("setting the mode of {}", tmp.path().display()))?;
    tmp.write_all(bytes)
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(tmp)
}

/// How [`copy_tree`] copies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CopyKind {
    /// `cp -al`, falling back to `cp -a` across file systems: for trees
    /// only ever changed by rename (the patch engine's trees).
    HardLinks,
    /// `cp -a`: for trees people edit by hand.
    Full,
}

/// Copies the tree `from` to `dest` (which must not exist) through the
/// staging name `<dest>.copying`, renamed into place when complete, so an
/// interrupted copy never looks like a tree. `cp` dies with this process
/// ([`crate::util::process::run_tied`]): a killed run's copy cannot keep
/// writing into `<dest>.copying` while the next run removes it.
pub fn copy_tree(sh: &Shell, from: &Path, dest: &Path, kind: CopyKind) -> Result<()> {
    let parent = dest
        .parent()
        .with_context(|| format!("{} has no parent directory", dest.display()))?;
    std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
    let mut staging_name = dest.file_name().unwrap_or_default().to_os_string();
    staging_name.push(".copying");
    let staging = parent.join(staging_name);
    if staging.exists() {
        std::fs::remove_dir_all(&staging)
            .with_context(|| format!("removing {}", staging.display()))?;
    }
    let linked = kind == CopyKind::HardLinks
        && run_tied(cmd!(sh, "cp -al {from} {staging}").quiet().ignore_stderr()).is_ok();
    if !linked {
        if staging.exists() {
            std::fs::remove_dir_all(&staging)
                .with_context(|| format!("removing {}", staging.display()))?;
        }
        run_tied(cmd!(sh, "cp -a {from} {staging}").quiet())
            .with_context(|| format!("copying {} to {}", from.display(), staging.display()))?;
    }
    std::fs::rename(&staging, dest)
        .with_context(|| format!("moving {} to {}", staging.display(), dest.display()))
}

/// Hard-links `from` to `to` (creating `to`'s directory), copying when
/// linking is not possible (another file system).
pub fn link_or_copy(from: &Path, to: &Path) -> Result<()> {
    if let Some(dir) = to.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    if std::fs::hard_link(from, to).is_ok() {
        return Ok(());
    }
    std::fs::copy(from, to)
        .with_context(|| format!("copying {} to {}", from.display(), to.display()))?;
    Ok(())
}

/// Removes empty directories from `start` upwards, stopping at `root`
/// (never removed), outside `root`, or at the first one that is not empty.
pub fn remove_empty_parents(root: &Path, start: Option<&Path>) {
    let mut dir = start;
    while let Some(d) = dir {
        if d == root || !d.starts_with(root) || std::fs::remove_dir(d).is_err() {
            break;
        }
        dir = d.parent();
    }
}

/// The file in a staging directory that its owner holds locked
/// ([`crate::util::lock`]), with its pid.
pub const STAGING_OWNER: &str = ".xtask-owner";

/// A staging directory `<parent>/<prefix><pid>-<random>` owned by this
/// process: it holds the lock on its [`STAGING_OWNER`] file until dropped
/// (the directory is removed then) or [`StagingDir::keep`], so that
/// [`remove_stale_staging`] in another process leaves it alone.
#[derive(Debug)]
pub struct StagingDir {
    dir: tempfile::TempDir,
    owner: Lock,
}

impl StagingDir {
    /// Creates the directory and takes its owner lock.
    ///
    /// Errors: I/O, naming `parent`.
    pub fn new(parent: &Path, prefix: &str) -> Result<StagingDir> {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating {}", parent.display()))?;
        let dir = tempfile::Builder::new()
            .prefix(&format!("{prefix}{}-", std::process::id()))
            .tempdir_in(parent)
            .with_context(|| format!("creating a staging directory in {}", parent.display()))?;
        let owner = Lock::acquire(
            &dir.path().join(STAGING_OWNER),
            &format!("the staging directory {}", dir.path().display()),
            Wait::No,
        )?;
        Ok(StagingDir { dir, owner })
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Keeps the directory (to be renamed into place) without its owner
    /// file; the caller renames it at once (until then its name still
    /// carries this live process's pid).
    ///
    /// Errors: I/O removing the owner file.
    pub fn keep(self) -> Result<std::path::PathBuf> {
        let StagingDir { dir, owner } = self;
        std::fs::remove_file(owner.path())
            .with_context(|| format!("removing {}", owner.path().display()))?;
        Ok(dir.keep())
    }
}

/// Removes `<dir>/<prefix>*` directories an interrupted run left behind
/// (Ctrl-C or kill during patching or unpacking), and only those: a
/// staging directory whose [`STAGING_OWNER`] lock is held, or without one
/// whose name carries the pid of a live process (being created, or being
/// renamed into place), belongs to a run in progress and is kept.
pub fn remove_stale_staging(dir: &Path, prefix: &str) -> Result<()> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(());
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let Some(rest) = name.strip_prefix(prefix) else {
            continue;
        };
        let path = entry.path();
        if !path.is_dir() || staging_in_use(&path, rest)? {
            continue;
        }
        // A killed run's `cp` or `tar` may outlive it and still be writing
        // there: the directory cannot be emptied yet. It is stale either
        // way and new staging directories have their own names, so this is
        // no reason to stop; a later run removes it.
        if let Err(e) = std::fs::remove_dir_all(&path) {
            eprintln!(
                "note: {} was left by an interrupted run and cannot be removed yet ({e}); \
                 a process it started may still be writing there; a later run removes it",
                path.display()
            );
        }
    }
    Ok(())
}

/// Whether the staging directory `path` (`rest`: its name after the
/// prefix) belongs to a live run.
fn staging_in_use(path: &Path, rest: &str) -> Result<bool> {
    let owner = path.join(STAGING_OWNER);
    if owner.exists() {
        // Taken only if nobody holds it; dropped at once.
        return Ok(Lock::try_acquire(&owner)?.is_none());
    }
    let pid = rest.split('-').next().and_then(|p| p.parse::<u32>().ok());
    Ok(pid.is_some_and(process_alive))
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMIT: FileLimit = FileLimit {
        what: "test.json",
        max_bytes: 16,
    };

    #[test]
    fn a_capped_read_refuses_devices_fifos_and_large_files() {
        let dir = tempfile::tempdir().unwrap();
        let ok = dir.path().join("ok.json");
        std::fs::write(&ok, "{}").unwrap();
        assert_eq!(read_limited(&ok, LIMIT, "fix it").unwrap(), "{}");

        let zero = dir.path().join("zero.json");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        let err = format!("{:#}", read_limited(&zero, LIMIT, "fix it").unwrap_err());
        assert!(err.contains("zero.json: not a test.json"), "{err}");
        assert!(
            err.contains("a symlink to /dev/zero, a character device"),
            "{err}"
        );
        assert!(err.ends_with("; fix it"), "{err}");

        let fifo = dir.path().join("fifo.json");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let err = format!("{:#}", read_limited(&fifo, LIMIT, "fix it").unwrap_err());
        assert!(err.contains("a FIFO, not a regular file"), "{err}");

        let big = dir.path().join("big.json");
        std::fs::File::create(&big)
            .unwrap()
            .set_len(3 << 30)
            .unwrap();
        let err = format!("{:#}", read_limited(&big, LIMIT, "fix it").unwrap_err());
        assert!(
            err.contains("it is 3221225472 bytes, more than the 16 bytes a test.json may have"),
            "{err}"
        );

        let err = read_limited(&dir.path().join("missing"), LIMIT, "fix it").unwrap_err();
        assert!(is_not_found(&err), "{err:#}");
        assert!(!is_not_found(&anyhow::anyhow!("other")));
    }

    #[test]
    fn atomic_write_replaces_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("result.json");
        write_atomic(&file, b"one").unwrap();
        write_atomic(&file, b"two").unwrap();
        assert_eq!(std::fs::read(&file).unwrap(), b"two");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o644);
    }

    #[test]
    fn only_staging_of_dead_owners_is_removed() {
        let dir = tempfile::tempdir().unwrap();
        let mine = StagingDir::new(dir.path(), ".staging-").unwrap();
        // Left by a run that is gone: its lock is free.
        let dead = dir.path().join(".staging-1-dead");
        std::fs::create_dir_all(&dead).unwrap();
        std::fs::write(dead.join(STAGING_OWNER), "1\n").unwrap();
        // Being created by a live process (this one): no owner file yet.
        let starting = dir
            .path()
            .join(format!(".staging-{}-new", std::process::id()));
        std::fs::create_dir_all(&starting).unwrap();
        // An old-style name without a pid.
        let old = dir.path().join(".staging-interrupted");
        std::fs::create_dir_all(&old).unwrap();
        remove_stale_staging(dir.path(), ".staging-").unwrap();
        assert!(mine.path().is_dir());
        assert!(starting.is_dir());
        assert!(!dead.exists());
        assert!(!old.exists());
        let kept = mine.keep().unwrap();
        assert!(!kept.join(STAGING_OWNER).exists());
    }

    #[test]
    fn atomic_write_keeps_the_old_mode() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("script");
        std::fs::write(&file, b"old").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o755)).unwrap();
        write_atomic(&file, b"new").unwrap();
        let mode = std::fs::metadata(&file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o755);
    }
}
