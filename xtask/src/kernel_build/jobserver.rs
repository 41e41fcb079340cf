//! One GNU make jobserver shared by every make of one run, from the
//! `jobserver` crate (Cargo's implementation of make's protocol).
//!
//! make's jobserver is a pipe holding one byte per job slot; a make that
//! finds `--jobserver-auth=R,W` in `MAKEFLAGS` (and no `-j` on its command
//! line) is a client: it runs one job on its implicit slot and takes a
//! byte from the pipe for every further job, giving it back when the job
//! ends (kbuild's sub-makes inherit it through `MAKEFLAGS`). With W makes
//! running at once and N − W bytes in the pipe, never more than N jobs run,
//! and a make whose neighbours have finished takes their slots. Debian 12's
//! make 4.3 takes the pipe as inherited descriptors (`R,W`): the crate
//! leaves them open across `exec` in the makes it configures only, so no
//! other program the run starts holds the pipe.

use anyhow::{Context, Result};

/// The jobserver of one run; its pipe is closed when the last make and
/// this value are gone.
#[derive(Debug)]
pub struct Jobserver {
    client: jobserver::Client,
}

impl Jobserver {
    /// A jobserver for a budget of `budget` jobs shared by `makes` makes
    /// running at once (each has one implicit slot): `budget - makes`
    /// bytes in the pipe.
    ///
    /// Errors: the pipe cannot be made or filled (I/O, naming the fix).
    pub fn new(budget: usize, makes: usize) -> Result<Jobserver> {
        let client = jobserver::Client::new(budget.saturating_sub(makes))
            .context("creating make's jobserver pipe; too many open files?")?;
        Ok(Jobserver { client })
    }

    /// Puts one more slot in the pipe: a worker that has run out of jobs
    /// gives its make's implicit slot to the makes still running.
    pub fn release_slot(&self) {
        // A full pipe (64 KiB of slots) only means enough slots already.
        let _ = self.client.release_raw();
    }

    /// `make` as a client: `MAKEFLAGS` (`-j --jobserver-fds=R,W
    /// --jobserver-auth=R,W`; `MFLAGS` and `CARGO_MAKEFLAGS` too) and the
    /// pipe inherited by it alone.
    pub fn configure(&self, make: &mut std::process::Command) {
        self.client.configure_make(make);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pipe_holds_the_budget_less_the_implicit_slots() {
        let js = Jobserver::new(5, 2).unwrap();
        assert_eq!(js.client.available().unwrap(), 3);
        js.release_slot();
        assert_eq!(js.client.available().unwrap(), 4);
        let mut make = std::process::Command::new("make");
        js.configure(&mut make);
        let flags = make
            .get_envs()
            .find(|(k, _)| *k == "MAKEFLAGS")
            .and_then(|(_, v)| v)
            .map(|v| v.to_string_lossy().into_owned())
            .unwrap_or_default();
        assert!(flags.starts_with("-j "), "{flags}");
        assert!(flags.contains("--jobserver-auth="), "{flags}");
    }
}
