//! Subprocesses that die with the process that started them.
//!
//! A `cp -a` of a kernel tree outlives a `kill -9` of its parent by tens
//! of seconds and keeps writing into a staging directory that the next
//! command must remove ("Directory not empty"). Tied children get SIGKILL
//! from the kernel when the thread that started them ends
//! (`PR_SET_PDEATHSIG`, as the lab does for QEMU), whatever ends it.

use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};

use anyhow::{bail, Context, Result};

/// Makes `command`'s child receive SIGKILL when the thread spawning it
/// ends (with this process, however it ends). If this process is already
/// gone when the child asks for that, the child exits at once instead.
pub fn tie_to_parent(command: &mut Command) {
    let parent = rustix::process::getpid();
    // SAFETY: the closure makes two system calls (prctl, getppid), both
    // async-signal-safe, allocates nothing and touches no memory of the
    // parent.
    unsafe {
        command.pre_exec(move || {
            rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL))
                .map_err(std::io::Error::from)?;
            if rustix::process::getppid() != Some(parent) {
                return Err(std::io::Error::other("the parent process has ended"));
            }
            Ok(())
        });
    }
}

/// Runs `cmd` to completion as [`xshell::Cmd::run`] does (stdin from
/// `/dev/null`; its output goes where the command says), tied to this
/// process ([`tie_to_parent`]).
///
/// Errors: the program cannot be started, or exits unsuccessfully
/// (naming the command line and its status).
pub fn run_tied(cmd: xshell::Cmd<'_>) -> Result<()> {
    let shown = cmd.to_string();
    let mut command = Command::from(cmd);
    tie_to_parent(&mut command);
    let status = command
        .stdin(Stdio::null())
        .status()
        .with_context(|| format!("running `{shown}`"))?;
    if !status.success() {
        bail!("`{shown}` failed ({status})");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tied_command_runs_and_reports_failure() {
        let sh = xshell::Shell::new().unwrap();
        run_tied(xshell::cmd!(sh, "true")).unwrap();
        let err = run_tied(xshell::cmd!(sh, "false")).unwrap_err().to_string();
        assert!(err.contains("`false` failed"), "{err}");
    }
}
