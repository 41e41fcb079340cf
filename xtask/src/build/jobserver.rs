//! A GNU make jobserver of our own, shared by every make of one run.
//!
//! make's jobserver is a pipe holding one byte per job slot; a make that
//! finds `--jobserver-auth=R,W` in `MAKEFLAGS` (and no `-j` on its command
//! line) is a client: it runs one job on its implicit slot and takes a
//! byte from the pipe for every further job, giving it back when the job
//! ends (kbuild's sub-makes inherit it through `MAKEFLAGS`). With W makes
//! running at once and N − W bytes in the pipe, never more than N jobs run,
//! and a make whose neighbours have finished takes their slots. Debian 12's
//! make 4.3 takes the pipe as inherited descriptors (`R,W`), so both ends
//! are left open across `exec` for the run's lifetime.

use std::io::{PipeReader, PipeWriter, Write};
use std::os::fd::{AsFd, AsRawFd};

use anyhow::{Context, Result};
use rustix::io::{fcntl_setfd, FdFlags};

/// The pipe of one run's jobserver; closed when dropped.
#[derive(Debug)]
pub struct Jobserver {
    read: PipeReader,
    write: PipeWriter,
}

impl Jobserver {
    /// A jobserver for a budget of `budget` jobs shared by `makes` makes
    /// running at once (each has one implicit slot): `budget - makes`
    /// bytes in the pipe.
    ///
    /// Errors: the pipe cannot be made or filled (I/O, naming the fix).
    pub fn new(budget: usize, makes: usize) -> Result<Jobserver> {
        let (read, mut write) =
            std::io::pipe().context("creating make's jobserver pipe; too many open files?")?;
        // Inherited by make: no close-on-exec.
        for end in [read.as_fd(), write.as_fd()] {
            fcntl_setfd(end, FdFlags::empty())
                .context("letting make inherit the jobserver pipe (fcntl)")?;
        }
        let tokens = vec![b'+'; budget.saturating_sub(makes)];
        write
            .write_all(&tokens)
            .context("filling make's jobserver pipe")?;
        Ok(Jobserver { read, write })
    }

    /// Puts one more slot in the pipe: a worker that has run out of jobs
    /// gives its make's implicit slot to the makes still running.
    pub fn release_slot(&self) {
        // A full pipe (64 KiB of slots) only means enough slots already.
        let _ = (&self.write).write_all(b"+");
    }

    /// `MAKEFLAGS` for a client make: `-j --jobserver-auth=R,W`.
    pub fn makeflags(&self) -> String {
        format!(
            "-j --jobserver-auth={},{}",
            self.read.as_raw_fd(),
            self.write.as_raw_fd()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn the_pipe_holds_the_budget_less_the_implicit_slots() {
        let js = Jobserver::new(5, 2).unwrap();
        let flags = js.makeflags();
        assert!(flags.starts_with("-j --jobserver-auth="), "{flags}");
        drop(js.write);
        let mut bytes = Vec::new();
        (&js.read).read_to_end(&mut bytes).unwrap();
        assert_eq!(bytes, b"+++");
    }
}
