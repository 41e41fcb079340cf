//! Subprocesses under supervision: tied to this process, in their own
//! process group, within a deadline, stopped on cancellation, their
//! output in files.
//!
//! A `cp -a` of a kernel tree outlives a `kill -9` of its parent by tens
//! of seconds and keeps writing into a staging directory that the next
//! command must remove ("Directory not empty"). Tied children get SIGKILL
//! from the kernel when the thread that started them ends
//! (`PR_SET_PDEATHSIG`), whatever ends it ([`tie_to_parent`]).
//!
//! [`Supervisor`] starts every long-running child of the crate (QEMU,
//! iperf3, tbench, ssh, `ip`, kbuild's `make`, distccd) the same way: tied,
//! the leader of its own process group, stdin from `/dev/null`, its output
//! where [`Output`] says. [`Supervised::wait`] polls every [`POLL`] until
//! the child exits, its deadline passes or its [`Token`] is cancelled
//! (SIGINT/SIGTERM to this process, [`crate::util::cancel`]); the last two
//! stop it: SIGTERM to the whole group, SIGKILL to the group when anything
//! of it still runs a grace period later. Dropping a [`Supervised`] stops
//! it the same way, so an error or a panic leaves nothing running.
//!
//! Output goes to files, never to pipes nobody reads: a child writing
//! more than a pipe holds (64 KiB) into an unread pipe blocks until its
//! deadline. [`Output::Capture`] uses unnamed temporary files instead;
//! [`Output::Pipes`] is for a caller that reads both pipes as they fill.

use std::fs::File;
use std::io::{Read, Seek};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStderr, ChildStdout, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use rustix::process::{kill_process_group, test_kill_process_group, Pid, Signal};

use crate::util::cancel::Token;

/// How often a wait looks at its child, its deadline and its token. It
/// bounds how late the lab notices that a step ended: every `ip` command,
/// every console round trip, the iperf3 client's exit. At 50 ms these
/// came out in steps of 50 ms (`bench lab`): attaching the taps (ten `ip`
/// commands) took 0.52 s per boot and starting the iperf3 server 0.08 s
/// per run, against 0.16 s and 0.02 s at 10 ms. A look costs
/// microseconds (`waitpid`, `kill(-pgid, 0)`).
pub const POLL: Duration = Duration::from_millis(10);
/// How long [`Supervised::stop`] waits, after SIGKILL, for the group's
/// processes to exit.
pub const KILL_WAIT: Duration = Duration::from_secs(5);

/// How long a stopped child's process group has after SIGTERM before
/// SIGKILL, unless [`Supervisor::grace`] says otherwise: QEMU, iperf3,
/// ssh and `ip` exit within milliseconds of SIGTERM.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(2);

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
            rustix::process::set_parent_process_death_signal(Some(Signal::KILL))
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
/// process ([`tie_to_parent`]) but in this process's group: a terminal's
/// Ctrl-C reaches it (and the `xz` of a `tar -J`) directly.
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

/// A finished child's exit status and output ([`run_captured`]).
#[derive(Debug)]
pub struct Captured {
    /// How it exited, successfully or not.
    pub status: ExitStatus,
    /// Its standard output, invalid UTF-8 replaced.
    pub stdout: String,
    /// Its standard error, invalid UTF-8 replaced.
    pub stderr: String,
}

/// Runs `command` under a [`Supervisor`] named `what`, its output in
/// unnamed temporary files ([`Output::Capture`]), within `timeout` (ended
/// early by SIGINT/SIGTERM); its whole group is stopped when the wait ends
/// early. `hint` follows a failure to start it (`is make installed?`).
///
/// Errors: it cannot be started, the deadline passed or a signal arrived
/// (the group stopped in both cases), its output cannot be read. An
/// unsuccessful exit is no error here: see [`Captured::status`].
pub fn run_captured(
    command: Command,
    what: &str,
    hint: &str,
    timeout: Duration,
) -> Result<Captured> {
    let mut child = Supervisor::new(command, what)
        .output(Output::Capture)
        .hint(hint)
        .spawn()?;
    let status = child.wait(&Limits::within(timeout))?;
    let (stdout, stderr) = child.captured()?;
    Ok(Captured {
        status,
        stdout,
        stderr,
    })
}

/// Where a supervised child's standard output and standard error go.
#[derive(Debug, Clone, Copy)]
pub enum Output<'a> {
    /// Both into one file, created anew (truncated).
    Log(&'a Path),
    /// Both appended to one file (created when missing).
    AppendLog(&'a Path),
    /// Standard output and standard error into two files, created anew.
    Split {
        /// Standard output's file.
        stdout: &'a Path,
        /// Standard error's file.
        stderr: &'a Path,
    },
    /// Each into an unnamed temporary file, read back after the exit by
    /// [`Supervised::captured`].
    Capture,
    /// Two pipes, taken with [`Supervised::take_pipes`]; the caller must
    /// read both while the child runs.
    Pipes,
    /// This process's own standard output and error.
    Inherit,
}

/// What ends a wait besides the child's exit.
#[derive(Debug, Clone, Default)]
pub struct Limits {
    /// How long the wait may take; `None` waits without a deadline.
    pub timeout: Option<Duration>,
    /// Ends the wait when cancelled (a fresh [`Token`] sees only
    /// SIGINT/SIGTERM); `None` lets the child run to its exit or deadline
    /// even after Ctrl-C, for removing what an interrupted run made.
    pub cancel: Option<Token>,
}

impl Limits {
    /// Within `timeout`, ended early by SIGINT/SIGTERM.
    pub fn within(timeout: Duration) -> Limits {
        Limits {
            timeout: Some(timeout),
            cancel: Some(Token::new()),
        }
    }

    /// Within `timeout`, whatever signal arrives: for cleanup steps.
    pub fn cleanup_within(timeout: Duration) -> Limits {
        Limits {
            timeout: Some(timeout),
            cancel: None,
        }
    }

    /// No deadline; ended when `token` is cancelled (or SIGINT/SIGTERM).
    pub fn until_cancelled(token: &Token) -> Limits {
        Limits {
            timeout: None,
            cancel: Some(token.clone()),
        }
    }
}

/// How a wait ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// The child exited by itself, with this status.
    Exited(ExitStatus),
    /// The deadline passed; the child's group was stopped.
    TimedOut,
    /// The token was cancelled; the child's group was stopped.
    Cancelled,
}

/// How to start a supervised child: `Supervisor::new(command, what)`,
/// then [`Supervisor::output`], [`Supervisor::grace`], [`Supervisor::hint`]
/// as needed, then [`Supervisor::spawn`].
#[derive(Debug)]
pub struct Supervisor<'a> {
    command: Command,
    what: String,
    output: Output<'a>,
    grace: Duration,
    hint: &'a str,
    stdin: Stdin,
}

/// Where a supervised child's standard input comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stdin {
    /// `/dev/null`.
    Null,
    /// A pipe the caller holds ([`Supervised::close_stdin`] ends it).
    Piped,
}

impl<'a> Supervisor<'a> {
    /// `command`, named `what` in messages (`QEMU`, `iperf3 server`,
    /// `` `ip link show` ``); by default its output is inherited and its
    /// grace is [`DEFAULT_GRACE`].
    pub fn new(command: Command, what: &str) -> Supervisor<'a> {
        Supervisor {
            command,
            what: what.to_string(),
            output: Output::Inherit,
            grace: DEFAULT_GRACE,
            hint: "",
            stdin: Stdin::Null,
        }
    }

    /// Its standard input a pipe this process holds open until
    /// [`Supervised::close_stdin`] (or the drop of the [`Supervised`]):
    /// for a child that runs until its input ends (`perf stat -- cat`).
    pub fn stdin_piped(self) -> Supervisor<'a> {
        Supervisor {
            stdin: Stdin::Piped,
            ..self
        }
    }

    /// Where its output goes.
    pub fn output(self, output: Output<'a>) -> Supervisor<'a> {
        Supervisor { output, ..self }
    }

    /// How long its group has between SIGTERM and SIGKILL when stopped
    /// (zero: SIGKILL at once).
    pub fn grace(self, grace: Duration) -> Supervisor<'a> {
        Supervisor { grace, ..self }
    }

    /// What a failed start adds to its error, e.g. which package installs
    /// the program.
    pub fn hint(self, hint: &'a str) -> Supervisor<'a> {
        Supervisor { hint, ..self }
    }

    /// Starts the child: stdin from `/dev/null` (or a pipe), tied to the spawning
    /// thread ([`tie_to_parent`]; spawn from a thread that outlives the
    /// child), leader of a new process group.
    ///
    /// Errors: an output file cannot be created (naming it), or the
    /// program cannot be started (naming `what`, the program and the
    /// hint).
    pub fn spawn(self) -> Result<Supervised> {
        let Supervisor {
            mut command,
            what,
            output,
            grace,
            hint,
            stdin,
        } = self;
        let create = |path: &Path| {
            File::create(path).with_context(|| format!("creating {}", path.display()))
        };
        let mut captured = None;
        let mut logs = Vec::new();
        let (out, err): (Stdio, Stdio) = match output {
            Output::Log(path) | Output::AppendLog(path) => {
                let file = match output {
                    Output::Log(_) => create(path)?,
                    _ => std::fs::OpenOptions::new()
                        .create(true)
                        .append(true)
                        .open(path)
                        .with_context(|| format!("opening {}", path.display()))?,
                };
                let err = file
                    .try_clone()
                    .with_context(|| format!("opening {}", path.display()))?;
                logs.push(path.to_path_buf());
                (file.into(), err.into())
            }
            Output::Split { stdout, stderr } => {
                logs.extend([stdout.to_path_buf(), stderr.to_path_buf()]);
                (create(stdout)?.into(), create(stderr)?.into())
            }
            Output::Capture => {
                let temp = || tempfile::tempfile().context("a temporary file for a child's output");
                let (out, err) = (temp()?, temp()?);
                let streams = (out.try_clone()?.into(), err.try_clone()?.into());
                captured = Some((out, err));
                streams
            }
            Output::Pipes => (Stdio::piped(), Stdio::piped()),
            Output::Inherit => (Stdio::inherit(), Stdio::inherit()),
        };
        tie_to_parent(&mut command);
        let program = command.get_program().to_string_lossy().into_owned();
        let child = command
            .stdin(match stdin {
                Stdin::Null => Stdio::null(),
                Stdin::Piped => Stdio::piped(),
            })
            .stdout(out)
            .stderr(err)
            .process_group(0)
            .spawn()
            .with_context(|| {
                let sep = if hint.is_empty() { "" } else { "; " };
                format!("starting {what} ({program}){sep}{hint}")
            })?;
        Ok(Supervised {
            pgid: Pid::from_child(&child),
            child,
            status: None,
            stopped: false,
            what,
            grace,
            logs,
            captured,
        })
    }
}

/// A running child started by [`Supervisor::spawn`]: the leader of its
/// own process group, which is stopped (SIGTERM, SIGKILL after the grace)
/// when a wait ends early or the value is dropped while the child runs.
/// A child that exited by itself is reaped and its group left alone.
#[derive(Debug)]
pub struct Supervised {
    child: Child,
    /// The child's pid, which is its process group's id.
    pgid: Pid,
    /// Its status once reaped.
    status: Option<ExitStatus>,
    /// Whether [`Supervised::stop`] ran.
    stopped: bool,
    what: String,
    grace: Duration,
    /// The files its output goes to, for messages.
    logs: Vec<PathBuf>,
    /// [`Output::Capture`]'s files: standard output, standard error.
    captured: Option<(File, File)>,
}

impl Supervised {
    /// Closes its standard input ([`Supervisor::stdin_piped`]): a child
    /// that reads it to the end then exits. Nothing for a child whose
    /// input is `/dev/null` or already closed.
    pub fn close_stdin(&mut self) {
        drop(self.child.stdin.take());
    }

    /// The child's process id (also its process group's id).
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// What it is, for messages.
    pub fn what(&self) -> &str {
        &self.what
    }

    /// Its exit status once it exited (reaping it), `None` while it runs.
    ///
    /// Errors: `waitpid` fails (naming the child).
    pub fn try_status(&mut self) -> Result<Option<ExitStatus>> {
        if self.status.is_none() {
            self.status = self
                .child
                .try_wait()
                .with_context(|| format!("waiting for {}", self.what))?;
        }
        Ok(self.status)
    }

    /// [`Output::Pipes`]' standard output and standard error, once.
    pub fn take_pipes(&mut self) -> Option<(ChildStdout, ChildStderr)> {
        Some((self.child.stdout.take()?, self.child.stderr.take()?))
    }

    /// Waits until the child exits, `limits` end the wait or `alive`
    /// fails, polling every [`POLL`]; the last three stop it
    /// ([`Supervised::stop`]) before returning.
    ///
    /// Errors: `alive`'s error, with a line saying the child was stopped;
    /// `waitpid` fails.
    pub fn wait_until(
        &mut self,
        limits: &Limits,
        mut alive: impl FnMut() -> Result<()>,
    ) -> Result<Ended> {
        let deadline = limits.timeout.map(|t| Instant::now() + t);
        loop {
            if let Some(status) = self.try_status()? {
                return Ok(Ended::Exited(status));
            }
            if let Err(e) = alive() {
                self.stop();
                return Err(e.context(format!("{} was stopped", self.what)));
            }
            if limits.cancel.as_ref().is_some_and(Token::is_cancelled) {
                self.stop();
                return Ok(Ended::Cancelled);
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                self.stop();
                return Ok(Ended::TimedOut);
            }
            std::thread::sleep(POLL);
        }
    }

    /// Waits for the child's exit within `limits`; returns its status,
    /// successful or not.
    ///
    /// Errors: the deadline passed (naming the child, the timeout in
    /// seconds and its log files), SIGINT/SIGTERM arrived
    /// ([`crate::util::cancel::check`]'s error), the token was cancelled;
    /// the child was stopped in each case.
    pub fn wait(&mut self, limits: &Limits) -> Result<ExitStatus> {
        self.wait_while(limits, || Ok(()))
    }

    /// [`Supervised::wait`], calling `alive` at every poll: its error
    /// (the child is then stopped) ends the wait at once, e.g. when the
    /// QEMU the child talks to has exited.
    pub fn wait_while(
        &mut self,
        limits: &Limits,
        alive: impl FnMut() -> Result<()>,
    ) -> Result<ExitStatus> {
        match self.wait_until(limits, alive)? {
            Ended::Exited(status) => Ok(status),
            Ended::TimedOut => bail!(
                "{} did not finish within {} and was killed{}",
                self.what,
                seconds(limits.timeout.unwrap_or_default()),
                self.logs_note()
            ),
            Ended::Cancelled => {
                crate::util::cancel::check()?;
                bail!("{} was stopped: its run was cancelled", self.what)
            }
        }
    }

    /// Stops the child now, unless it already exited: SIGTERM to its
    /// process group, then SIGKILL to the group when anything of it still
    /// runs after the grace (seconds, [`Supervisor::grace`]); reaps the
    /// child, then waits up to 5 s ([`KILL_WAIT`]) until no process of the
    /// group runs (a zombie does not), and returns regardless. Returns the
    /// child's status (`None` if it could not be reaped). A child that had
    /// already exited is not signalled: what it left in its group runs on.
    pub fn stop(&mut self) -> Option<ExitStatus> {
        if self.stopped || self.status.is_some() {
            return self.status;
        }
        self.stopped = true;
        let end = Instant::now() + self.grace;
        if !self.grace.is_zero() {
            // Failing only when the group is gone already.
            let _ = kill_process_group(self.pgid, Signal::TERM);
            while Instant::now() < end {
                if self.status.is_none() {
                    self.status = self.child.try_wait().ok().flatten();
                }
                if self.status.is_some() && !self.group_alive() {
                    return self.status;
                }
                std::thread::sleep(POLL);
            }
        }
        let _ = kill_process_group(self.pgid, Signal::KILL);
        if self.status.is_none() {
            self.status = self.child.wait().ok();
        }
        // A killed process exits only once it next runs, which on a loaded
        // machine takes a while: its grandchildren may still run here.
        let end = Instant::now() + KILL_WAIT;
        while self.group_running() && Instant::now() < end {
            std::thread::sleep(POLL);
        }
        self.status
    }

    /// The child's standard output and standard error so far
    /// ([`Output::Capture`]), invalid UTF-8 replaced.
    ///
    /// Errors: the output was not captured, or a file cannot be read.
    pub fn captured(&mut self) -> Result<(String, String)> {
        let what = &self.what;
        let Some((out, err)) = self.captured.as_mut() else {
            bail!("the output of {what} was not captured");
        };
        let read = |f: &mut File| -> Result<String> {
            let mut bytes = Vec::new();
            f.rewind()
                .and_then(|()| f.read_to_end(&mut bytes))
                .with_context(|| format!("reading the output of {what}"))?;
            Ok(String::from_utf8_lossy(&bytes).into_owned())
        };
        Ok((read(out)?, read(err)?))
    }

    /// Whether a process of the group still runs: one that exists and is
    /// not a zombie ([`proc_stat`]).
    fn group_running(&self) -> bool {
        if !self.group_alive() {
            return false;
        }
        let pgid = self.pgid.as_raw_nonzero().get();
        let Ok(dir) = std::fs::read_dir("/proc") else {
            return false;
        };
        dir.filter_map(Result::ok)
            .filter_map(|entry| entry.file_name().to_str()?.parse().ok())
            .filter_map(proc_stat)
            .any(|stat| stat.pgrp == pgid && !stat.exited())
    }

    /// Whether any process of the group still exists (zombies included:
    /// a killed grandchild counts until its new parent reaps it).
    fn group_alive(&self) -> bool {
        !matches!(
            test_kill_process_group(self.pgid),
            Err(rustix::io::Errno::SRCH)
        )
    }

    /// `; its output: LOG…`, or nothing when it has no log file.
    fn logs_note(&self) -> String {
        if self.logs.is_empty() {
            return String::new();
        }
        let logs: Vec<String> = self.logs.iter().map(|l| l.display().to_string()).collect();
        format!("; its output: {}", logs.join(", "))
    }
}

impl Drop for Supervised {
    fn drop(&mut self) {
        self.stop();
    }
}

/// `d` for messages: `20 s`, `0.3 s`.
fn seconds(d: Duration) -> String {
    if d.subsec_nanos() == 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

mod proc_stat;
pub use proc_stat::{proc_stat, ProcStat};

#[cfg(test)]
mod tests;
