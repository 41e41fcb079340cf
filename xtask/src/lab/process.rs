//! Child processes with deadlines, killed when dropped.
//!
//! Every wait here polls in steps of [`POLL`] until a deadline, so no step of
//! the lab can hang, and returns an error as soon as SIGINT or SIGTERM
//! arrived ([`crate::util::cancel`], the one token every long step
//! polls): the callers' guards then stop QEMU and iperf3 and remove the
//! namespaces and taps as the error unwinds.

use std::fs::File;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

pub use crate::util::cancel::{check as check_interrupted, interrupted};

/// How often wait loops look at a child, a file or a socket. It bounds
/// how late the lab notices that a step ended: every `ip` command, every
/// console round trip, the iperf3 client's exit. At 50 ms these came out
/// in steps of 50 ms (`bench lab`): attaching the taps (ten `ip`
/// commands) took 0.52 s per boot and starting the iperf3 server 0.08 s
/// per run, against 0.16 s and 0.02 s at 10 ms. A look costs
/// microseconds (`waitpid`, a copy of the console's output).
pub const POLL: Duration = Duration::from_millis(10);

/// Sleeps one [`POLL`] step, failing when interrupted.
pub fn tick() -> Result<()> {
    check_interrupted()?;
    std::thread::sleep(POLL);
    Ok(())
}

/// A running child process, killed (SIGKILL) and reaped when dropped.
#[derive(Debug)]
pub struct ChildGuard {
    child: Option<Child>,
    /// What it is, for messages (`QEMU`, `iperf3 server`).
    pub what: String,
}

impl ChildGuard {
    /// Spawns `command` with stdin closed and stdout and stderr appended to
    /// `log`.
    pub fn spawn(command: Command, what: &str, log: &Path) -> Result<ChildGuard> {
        let out = File::create(log).with_context(|| format!("creating {}", log.display()))?;
        let err = out
            .try_clone()
            .with_context(|| format!("opening {}", log.display()))?;
        Self::spawn_with(command, what, out, err)
    }

    /// Spawns `command` with stdin closed, stdout to `stdout` and stderr to
    /// `stderr` (files created anew).
    pub fn spawn_split(
        command: Command,
        what: &str,
        stdout: &Path,
        stderr: &Path,
    ) -> Result<ChildGuard> {
        let out = File::create(stdout).with_context(|| format!("creating {}", stdout.display()))?;
        let err = File::create(stderr).with_context(|| format!("creating {}", stderr.display()))?;
        Self::spawn_with(command, what, out, err)
    }

    fn spawn_with(mut command: Command, what: &str, out: File, err: File) -> Result<ChildGuard> {
        let program = command.get_program().to_string_lossy().into_owned();
        // The kernel kills the child when the lab dies (kill -9 included),
        // so no QEMU or iperf3 outlives it: a killed lab once left QEMU
        // spinning at 100 % of a CPU, skewing every later run. The signal
        // follows the spawning thread; the lab spawns from its main thread.
        crate::util::process::tie_to_parent(&mut command);
        let child = command
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .with_context(|| format!("starting {what} ({program}); is it installed? `cargo xtask setup` installs the lab's packages"))?;
        Ok(ChildGuard {
            child: Some(child),
            what: what.to_string(),
        })
    }

    /// The process id.
    pub fn id(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    /// The exit status if the child has exited.
    pub fn try_status(&mut self) -> Result<Option<ExitStatus>> {
        match self.child.as_mut() {
            Some(child) => child
                .try_wait()
                .with_context(|| format!("waiting for {}", self.what)),
            None => Ok(None),
        }
    }

    /// Waits up to `timeout` for the child to exit; an error (the child is
    /// then killed) when it does not.
    pub fn wait(&mut self, timeout: Duration) -> Result<ExitStatus> {
        self.wait_while(timeout, || Ok(()))
    }

    /// [`ChildGuard::wait`], calling `alive` at every poll: its error (the
    /// child is then killed) ends the wait at once, e.g. when the QEMU
    /// the child talks to has exited.
    pub fn wait_while(
        &mut self,
        timeout: Duration,
        mut alive: impl FnMut() -> Result<()>,
    ) -> Result<ExitStatus> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.try_status()? {
                self.child = None;
                return Ok(status);
            }
            if let Err(e) = alive() {
                self.kill();
                return Err(e.context(format!("{} was killed", self.what)));
            }
            if Instant::now() >= deadline {
                self.kill();
                bail!(
                    "{} did not finish within {} s and was killed",
                    self.what,
                    timeout.as_secs()
                );
            }
            tick()?;
        }
    }

    /// Kills and reaps the child now (nothing when it already exited).
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Runs `command` to completion within `timeout`, its output appended to
/// `log`; an error naming `what` and the log when it fails or times out.
pub fn run_logged(command: Command, what: &str, log: &Path, timeout: Duration) -> Result<()> {
    let mut child = ChildGuard::spawn(command, what, log)?;
    let status = child.wait(timeout)?;
    if !status.success() {
        let text = crate::util::fs::read_limited(log, crate::util::fs::FileLimit::log("log"), "")
            .unwrap_or_default();
        bail!(
            "{what} failed ({status}); its output ({}):\n{}",
            log.display(),
            last_lines(&text, 15)
        );
    }
    Ok(())
}

/// The last `n` lines of `text`, for error messages.
pub fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..]
        .iter()
        .map(|l| printable(l))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `line` without control characters (tabs kept): a guest's console
/// holds terminal queries such as busybox's `ESC [6n`, which a terminal
/// printing an error would answer into the user's shell.
fn printable(line: &str) -> String {
    line.chars()
        .filter(|c| *c == '\t' || !c.is_control())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_dies_with_its_spawner() {
        // The death signal fires when the spawning thread ends: a thread
        // that spawns `sleep` and forgets the guard (no kill on drop)
        // stands in for a lab killed with SIGKILL.
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("log");
        let pid = std::thread::spawn(move || {
            let mut cmd = Command::new("sleep");
            cmd.arg("30");
            let guard = ChildGuard::spawn(cmd, "sleep", &log).unwrap();
            let pid = guard.id();
            std::mem::forget(guard);
            pid
        })
        .join()
        .unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        let state = loop {
            // A zombie (state Z) until reaped: killed, not running.
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let state = stat.rsplit(") ").next().and_then(|r| r.chars().next());
            if state != Some('S') && state != Some('R') || Instant::now() > deadline {
                break state;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        assert!(
            matches!(state, Some('Z') | None),
            "sleep {pid} is {state:?}"
        );
        let _ = rustix::process::waitpid(
            rustix::process::Pid::from_raw(pid as i32),
            rustix::process::WaitOptions::NOHANG,
        );
    }

    #[test]
    fn tails_carry_no_terminal_escapes() {
        let text = "a\n/ # \u{1b}[6necho XL\nb\tc\r\n";
        assert_eq!(last_lines(text, 2), "/ # [6necho XL\nb\tc");
    }

    #[test]
    fn a_child_that_overstays_is_killed_with_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let mut cmd = Command::new("sleep");
        cmd.arg("30");
        let mut child = ChildGuard::spawn(cmd, "sleep", &dir.path().join("log")).unwrap();
        let started = Instant::now();
        let err = child.wait(Duration::from_millis(200)).unwrap_err();
        assert!(err.to_string().contains("did not finish"), "{err}");
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn a_failing_command_shows_its_output() {
        let dir = tempfile::tempdir().unwrap();
        let mut cmd = Command::new("ls");
        cmd.arg("/nonexistent/boom");
        let err = run_logged(
            cmd,
            "the test",
            &dir.path().join("log"),
            Duration::from_secs(5),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("boom") && err.contains("the test"), "{err}");
    }

    #[test]
    fn last_lines_keeps_the_tail() {
        assert_eq!(last_lines("a\nb\nc\n", 2), "b\nc");
        assert_eq!(last_lines("a", 5), "a");
    }
}
