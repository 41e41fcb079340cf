//! The lab's children: QEMU, iperf3, tbench and the builds of the
//! guest's userspace, each a [`Supervised`] child
//! ([`crate::util::process`]) with its output in a log file.
//!
//! Every wait polls in steps of [`POLL`] until a deadline, so no step of
//! the lab can hang, and returns an error as soon as SIGINT or SIGTERM
//! arrived ([`crate::util::cancel`], the one token every long step
//! polls): the callers' guards then stop QEMU and iperf3 and remove the
//! namespaces and taps as the error unwinds.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use anyhow::{bail, Result};

pub use crate::util::cancel::{check as check_interrupted, interrupted};
pub use crate::util::process::{Limits, Supervised, POLL};
use crate::util::process::{Output, Supervisor};

/// What a lab child that cannot start adds to its error.
const INSTALL_HINT: &str = "is it installed? `cargo xtask setup` installs the lab's packages";

/// Sleeps one [`POLL`] step, failing when interrupted.
pub fn tick() -> Result<()> {
    check_interrupted()?;
    std::thread::sleep(POLL);
    Ok(())
}

/// Spawns `command` (named `what` in messages) with stdin closed and
/// stdout and stderr in `log` (created anew). The kernel kills it when
/// the lab dies (kill -9 included), so no QEMU or iperf3 outlives it: a
/// killed lab once left QEMU spinning at 100 % of a CPU, skewing every
/// later run. The signal follows the spawning thread; the lab spawns from
/// its main thread.
///
/// Errors: `log` cannot be created, or the program cannot start (naming
/// it and `cargo xtask setup`).
pub fn spawn(command: Command, what: &str, log: &Path) -> Result<Supervised> {
    Supervisor::new(command, what)
        .output(Output::Log(log))
        .hint(INSTALL_HINT)
        .spawn()
}

/// [`spawn`], with stdout to `stdout` and stderr to `stderr` (files
/// created anew).
pub fn spawn_split(
    command: Command,
    what: &str,
    stdout: &Path,
    stderr: &Path,
) -> Result<Supervised> {
    Supervisor::new(command, what)
        .output(Output::Split { stdout, stderr })
        .hint(INSTALL_HINT)
        .spawn()
}

/// Runs `command` to completion within `timeout`, its output appended to
/// `log`; an error naming `what` and the log when it fails or times out.
pub fn run_appending_to_log(
    command: Command,
    what: &str,
    log: &Path,
    timeout: Duration,
) -> Result<()> {
    let status = spawn(command, what, log)?.wait(&Limits::within(timeout))?;
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
    use std::time::Instant;

    use super::*;

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
        let mut child = spawn(cmd, "sleep", &dir.path().join("log")).unwrap();
        let started = Instant::now();
        let err = child
            .wait(&Limits::within(Duration::from_millis(200)))
            .unwrap_err();
        assert!(err.to_string().contains("did not finish"), "{err}");
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn a_failing_command_shows_its_output() {
        let dir = tempfile::tempdir().unwrap();
        let mut cmd = Command::new("ls");
        cmd.arg("/nonexistent/boom");
        let err = run_appending_to_log(
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
