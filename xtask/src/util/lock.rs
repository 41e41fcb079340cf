//! Advisory locks (`flock(2)`) on work trees, build and results
//! directories, and ownership of staging directories.
//!
//! A lock is a file (`LOCKFILE`) holding the pid of the process that holds
//! it. The kernel drops a `flock` when its holder exits, however it exits
//! (`kill -9` included), so a lock is never stale; the pid is only for
//! messages: a second run prints "waiting for pid N, which holds LOCKFILE"
//! and waits, or fails at once with [`Wait::No`] (`--no-wait`).
//!
//! Locks are per open file: two threads of one process that each take the
//! lock exclude each other as two processes do.

use std::fs::File;
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use rustix::fs::{flock, FlockOperation};

/// What to do when another process holds the lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Wait {
    /// Wait for it, saying which pid holds it.
    #[default]
    Yes,
    /// Fail at once, naming the pid (`--no-wait`).
    No,
}

/// Whether other holders may share a lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sharing {
    Exclusive,
    Shared,
}

/// A held lock; released when dropped (or when the process ends).
#[derive(Debug)]
pub struct Lock {
    file: File,
    path: PathBuf,
}

impl Drop for Lock {
    /// Unlocks explicitly rather than by closing the file: a flock belongs
    /// to the open file description, which a child forked by another
    /// thread shares until it execs, so closing alone could leave the lock
    /// held for that moment (a `--no-wait` taker right after then failed,
    /// as `build_pipeline`'s in-use test did under load).
    fn drop(&mut self) {
        let _ = flock(&self.file, FlockOperation::Unlock);
    }
}

impl Lock {
    /// Takes the exclusive lock `path` (created with its directory if
    /// missing) for `what` (a phrase for messages: "the work tree /x").
    ///
    /// Errors: with [`Wait::No`], the lock is held ("pid N holds LOCKFILE");
    /// I/O errors naming the file.
    pub fn acquire(path: &Path, what: &str, wait: Wait) -> Result<Lock> {
        Lock::take(path, what, wait, Sharing::Exclusive)
    }

    /// Takes `path` as a shared lock: any number of shared holders, but
    /// none while an exclusive one holds it (a tree in use by builds, which
    /// only its maker replaces).
    ///
    /// Errors: as [`Lock::acquire`].
    pub fn acquire_shared(path: &Path, what: &str, wait: Wait) -> Result<Lock> {
        Lock::take(path, what, wait, Sharing::Shared)
    }

    fn take(path: &Path, what: &str, wait: Wait, sharing: Sharing) -> Result<Lock> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .with_context(|| format!("opening the lock file {}", path.display()))?;
        let now = match sharing {
            Sharing::Exclusive => FlockOperation::NonBlockingLockExclusive,
            Sharing::Shared => FlockOperation::NonBlockingLockShared,
        };
        match flock(&file, now) {
            Ok(()) => {}
            Err(e) if e == rustix::io::Errno::WOULDBLOCK => {
                let holder = holder_of(path);
                match wait {
                    Wait::No => bail!(
                        "{what} is in use: {} holds {}; run again when it has finished \
                         (a command that takes --no-wait waits for it without that flag)",
                        holder,
                        path.display()
                    ),
                    Wait::Yes => {
                        eprintln!("waiting for {holder}, which holds {}", path.display());
                        wait_for(&file, path, now, &crate::util::cancel::interrupted)?;
                    }
                }
            }
            Err(e) => {
                return Err(e).with_context(|| format!("locking {}", path.display()));
            }
        }
        let mut lock = Lock {
            file,
            path: path.to_path_buf(),
        };
        lock.write_pid()?;
        Ok(lock)
    }

    /// Takes the lock `path` only if it is free: `None` when another open
    /// file (another process, or another `Lock` in this one) holds it.
    ///
    /// Errors: I/O errors naming the file.
    pub fn try_acquire(path: &Path) -> Result<Option<Lock>> {
        let file = match std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
        {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => {
                return Err(e).with_context(|| format!("opening the lock file {}", path.display()))
            }
        };
        match flock(&file, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => Ok(Some(Lock {
                file,
                path: path.to_path_buf(),
            })),
            Err(e) if e == rustix::io::Errno::WOULDBLOCK => Ok(None),
            Err(e) => Err(e).with_context(|| format!("locking {}", path.display())),
        }
    }

    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn write_pid(&mut self) -> Result<()> {
        let pid = format!("{}\n", std::process::id());
        self.file
            .set_len(0)
            .and_then(|()| self.file.seek(SeekFrom::Start(0)).map(drop))
            .and_then(|()| self.file.write_all(pid.as_bytes()))
            .with_context(|| format!("writing the pid into {}", self.path.display()))
    }
}

/// How often a waiting taker tries the lock again.
const RETRY: std::time::Duration = std::time::Duration::from_millis(100);

/// Tries the non-blocking `operation` on `file` every [`RETRY`] until it
/// succeeds, or fails once `cancelled()` (SIGINT/SIGTERM, see
/// [`crate::util::cancel`]): a blocking `flock` would be restarted after the
/// signal handler ran, so a build waiting for another's lock would ignore
/// SIGTERM.
///
/// Errors: cancelled ("interrupted while waiting for LOCKFILE"); I/O.
fn wait_for(
    file: &File,
    path: &Path,
    operation: FlockOperation,
    cancelled: &dyn Fn() -> bool,
) -> Result<()> {
    loop {
        match flock(file, operation) {
            Ok(()) => return Ok(()),
            Err(e) if e == rustix::io::Errno::WOULDBLOCK => {}
            Err(e) => {
                return Err(e).with_context(|| format!("waiting for the lock {}", path.display()))
            }
        }
        if cancelled() {
            bail!(
                "interrupted (Ctrl-C or SIGTERM) while waiting for {}, which holds {}",
                holder_of(path),
                path.display()
            );
        }
        std::thread::sleep(RETRY);
    }
}

/// "pid N" as the lock file `path` records it, or "another process" when it
/// records none (the holder has not written it yet) or is not a small
/// regular file (read capped and without blocking: a FIFO put there
/// cannot hang the message).
pub fn holder_of(path: &Path) -> String {
    let limit = crate::util::capped::FileLimit {
        what: "lock file",
        max_bytes: 4096,
    };
    let text = crate::util::capped::read_limited(path, limit, "").unwrap_or_default();
    match text.trim().parse::<u32>() {
        Ok(pid) => format!("pid {pid}"),
        Err(_) => "another process".to_string(),
    }
}

/// Whether process `pid` exists (Linux: `/proc/<pid>`).
pub fn process_alive(pid: u32) -> bool {
    Path::new("/proc").join(pid.to_string()).exists()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_fails_naming_the_pid_then_succeeds_after_release() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/x.lock");
        let first = Lock::acquire(&path, "the thing", Wait::Yes).unwrap();
        let err = Lock::acquire(&path, "the thing", Wait::No).unwrap_err();
        let msg = format!("{err:#}");
        assert!(
            msg.contains(&format!("pid {}", std::process::id())),
            "{msg}"
        );
        assert!(msg.contains("x.lock"), "{msg}");
        assert!(Lock::try_acquire(&path).unwrap().is_none());
        drop(first);
        assert!(Lock::try_acquire(&path).unwrap().is_some());
        Lock::acquire(&path, "the thing", Wait::No).unwrap();
        let a = Lock::acquire_shared(&path, "the thing", Wait::No).unwrap();
        let b = Lock::acquire_shared(&path, "the thing", Wait::No).unwrap();
        assert!(Lock::acquire(&path, "the thing", Wait::No).is_err());
        drop((a, b));
        Lock::acquire(&path, "the thing", Wait::No).unwrap();
    }

    #[test]
    fn a_waiting_taker_stops_when_cancelled_and_takes_a_freed_lock() {
        use std::sync::atomic::{AtomicBool, Ordering};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.lock");
        let held = Lock::acquire(&path, "the thing", Wait::No).unwrap();
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .unwrap();
        let exclusive = FlockOperation::NonBlockingLockExclusive;
        // Cancelled while the lock stays held: an error, not a hang.
        let polls = AtomicBool::new(false);
        let cancelled = || polls.swap(true, Ordering::SeqCst);
        let err = wait_for(&file, &path, exclusive, &cancelled).unwrap_err();
        let msg = format!("{err:#}");
        assert!(msg.contains("interrupted"), "{msg}");
        assert!(
            msg.contains(&format!("pid {}", std::process::id())),
            "{msg}"
        );
        // Released by its holder once the taker has found it held (its
        // first poll of `cancelled`): taken.
        let (polled, first_poll) = std::sync::mpsc::channel();
        let release = std::thread::spawn(move || {
            first_poll.recv().unwrap();
            drop(held);
        });
        let polls = || {
            let _ = polled.send(());
            false
        };
        wait_for(&file, &path, exclusive, &polls).unwrap();
        release.join().unwrap();
        assert!(Lock::try_acquire(&path).unwrap().is_none());
    }

    #[test]
    fn a_released_lock_is_free_while_a_forked_child_has_not_exec_d() {
        use std::os::unix::process::CommandExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.lock");
        let held = Lock::acquire(&path, "the thing", Wait::No).unwrap();
        use std::io::{Read, Write};
        use std::os::fd::{AsRawFd, BorrowedFd};
        // A child forked while the lock's file is open shares its open
        // file description until it execs. Here it stays between fork and
        // exec until the lock is taken again: it says it has forked on one
        // pipe, then waits for a byte on the other.
        let (mut forked_rx, forked_tx) = std::io::pipe().unwrap();
        let (go_rx, mut go_tx) = std::io::pipe().unwrap();
        let (forked_fd, go_fd) = (forked_tx.as_raw_fd(), go_rx.as_raw_fd());
        let mut cmd = std::process::Command::new("true");
        // SAFETY: the closure only writes and reads a pipe (write(2),
        // read(2)), async-signal-safe; both descriptors outlive the spawn.
        unsafe {
            cmd.pre_exec(move || {
                let forked = BorrowedFd::borrow_raw(forked_fd);
                let go = BorrowedFd::borrow_raw(go_fd);
                rustix::io::write(forked, b"f")?;
                rustix::io::read(go, &mut [0u8; 1])?;
                Ok(())
            });
        }
        let started = std::thread::spawn(move || {
            let child = cmd.spawn().unwrap();
            drop((forked_tx, go_rx));
            child
        });
        forked_rx.read_exact(&mut [0u8; 1]).unwrap();
        drop(held);
        Lock::acquire(&path, "the thing", Wait::No).unwrap();
        go_tx.write_all(b"g").unwrap();
        started.join().unwrap().wait().unwrap();
    }
}
