//! The supervisor against real children (`sh`, `sleep`, `true`, `false`):
//! synchronised by what the child writes, polled within bounded time.

use std::os::unix::process::ExitStatusExt;

use super::*;

/// `sh -c SCRIPT` (a fixed script of the test, as argv).
fn sh(script: &str) -> Command {
    let mut c = Command::new("sh");
    c.args(["-c", script]);
    c
}

/// Polls (1 ms steps, at most 10 s) until `found` returns something.
fn poll<T>(mut found: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(t) = found() {
            return t;
        }
        assert!(start.elapsed() < Duration::from_secs(10), "gave up polling");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// The first line of `log` once it holds a whole line.
fn first_line(log: &Path) -> String {
    poll(|| {
        let text = std::fs::read_to_string(log).ok()?;
        let (line, _) = text.split_once('\n')?;
        Some(line.to_string())
    })
}

/// Whether `pid` runs (a zombie, killed and not yet reaped, does not).
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rsplit_once(") ")
            .is_some_and(|(_, r)| !r.starts_with('Z'))
    })
}

#[test]
fn a_tied_command_runs_and_reports_failure() {
    let sh = xshell::Shell::new().unwrap();
    run_tied(xshell::cmd!(sh, "true")).unwrap();
    let err = run_tied(xshell::cmd!(sh, "false")).unwrap_err().to_string();
    assert!(err.contains("`false` failed"), "{err}");
}

#[test]
fn a_child_dies_with_its_spawner() {
    // The death signal fires when the spawning thread ends: a thread that
    // spawns `sleep` and forgets the value (no stop on drop) stands in for
    // a process killed with SIGKILL.
    let pid = std::thread::spawn(|| {
        let mut cmd = Command::new("sleep");
        cmd.arg("30");
        let child = Supervisor::new(cmd, "sleep").spawn().unwrap();
        let pid = child.id();
        std::mem::forget(child);
        pid
    })
    .join()
    .unwrap();
    poll(|| (!running(pid)).then_some(()));
    let _ = rustix::process::waitpid(
        Pid::from_raw(pid as i32),
        rustix::process::WaitOptions::NOHANG,
    );
}

#[test]
fn a_child_ignoring_sigterm_is_killed_after_the_grace() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    // `exec` keeps the ignored SIGTERM: sleep ignores it too.
    let cmd = sh("trap '' TERM; echo ready; exec sleep 100");
    let grace = Duration::from_millis(300);
    let mut child = Supervisor::new(cmd, "stubborn")
        .output(Output::Log(&log))
        .grace(grace)
        .spawn()
        .unwrap();
    // Only once the trap is set: an earlier SIGTERM would end sh itself.
    assert_eq!(first_line(&log), "ready");
    let started = Instant::now();
    let status = child.stop().unwrap();
    assert_eq!(status.signal(), Some(Signal::KILL.as_raw()), "{status}");
    assert!(started.elapsed() >= grace, "killed before the grace");
}

#[test]
fn a_child_that_takes_sigterm_is_not_killed() {
    let mut cmd = Command::new("sleep");
    cmd.arg("100");
    let mut child = Supervisor::new(cmd, "sleep")
        .grace(Duration::from_secs(30))
        .spawn()
        .unwrap();
    let started = Instant::now();
    let status = child.stop().unwrap();
    assert_eq!(status.signal(), Some(Signal::TERM.as_raw()), "{status}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "waited the grace"
    );
}

#[test]
fn a_deadline_stops_the_whole_group() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    // sh's background sleep is a grandchild of this process, in sh's group.
    let cmd = sh("sleep 100 & echo $!; wait");
    let mut child = Supervisor::new(cmd, "the shell")
        .output(Output::Log(&log))
        .spawn()
        .unwrap();
    let grandchild: u32 = first_line(&log).parse().unwrap();
    assert!(running(grandchild));
    let err = child
        .wait(&Limits::within(Duration::from_millis(200)))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("the shell did not finish within 0.2 s") && err.contains("log"),
        "{err}"
    );
    poll(|| (!running(grandchild)).then_some(()));
}

/// `stop` returns only once nothing of the group runs: a killed
/// grandchild exits when it next gets a CPU, after its parent was reaped.
#[test]
fn no_grandchild_runs_once_stop_returns() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let cmd = sh("sleep 100 & sleep 100 & echo $!; wait");
    let mut child = Supervisor::new(cmd, "the shell")
        .output(Output::Log(&log))
        .grace(Duration::ZERO)
        .spawn()
        .unwrap();
    let grandchild: u32 = first_line(&log).parse().unwrap();
    let status = child.stop().unwrap();
    assert_eq!(status.signal(), Some(Signal::KILL.as_raw()), "{status}");
    assert!(!running(grandchild), "a grandchild runs after stop");
    assert!(!child.group_running());
}

#[test]
fn a_cancelled_token_stops_the_child() {
    let token = Token::new();
    let mut cmd = Command::new("sleep");
    cmd.arg("100");
    let mut child = Supervisor::new(cmd, "sleep").spawn().unwrap();
    let pid = child.id();
    token.cancel();
    let ended = child
        .wait_until(&Limits::until_cancelled(&token), || Ok(()))
        .unwrap();
    assert_eq!(ended, Ended::Cancelled);
    assert!(!running(pid));
    let mut cmd = Command::new("sleep");
    cmd.arg("100");
    let mut child = Supervisor::new(cmd, "sleep").spawn().unwrap();
    let err = child.wait(&Limits::until_cancelled(&token)).unwrap_err();
    assert_eq!(err.to_string(), "sleep was stopped: its run was cancelled");
}

#[test]
fn output_lands_in_the_files() {
    let dir = tempfile::tempdir().unwrap();
    // The child, run to its exit, with its output where `output` says.
    let echo = |output: Output<'_>| {
        let mut child = Supervisor::new(sh("echo out; echo err >&2"), "echo")
            .output(output)
            .spawn()
            .unwrap();
        child
            .wait(&Limits::within(Duration::from_secs(10)))
            .unwrap();
        child
    };
    let log = dir.path().join("log");
    echo(Output::Log(&log));
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("out\n") && text.contains("err\n"), "{text:?}");
    echo(Output::AppendLog(&log));
    let appended = std::fs::read_to_string(&log).unwrap();
    assert_eq!(appended.len(), 2 * text.len(), "{appended:?}");
    let (stdout, stderr) = (dir.path().join("o"), dir.path().join("e"));
    echo(Output::Split {
        stdout: &stdout,
        stderr: &stderr,
    });
    assert_eq!(std::fs::read_to_string(&stdout).unwrap(), "out\n");
    assert_eq!(std::fs::read_to_string(&stderr).unwrap(), "err\n");
    assert_eq!(
        echo(Output::Capture).captured().unwrap(),
        ("out\n".to_string(), "err\n".to_string())
    );
}

#[test]
fn captured_output_larger_than_a_pipe_does_not_block() {
    // 1 MiB, sixteen times what a pipe holds.
    let mut child = Supervisor::new(sh("head -c 1048576 /dev/zero"), "head")
        .output(Output::Capture)
        .spawn()
        .unwrap();
    child
        .wait(&Limits::within(Duration::from_secs(20)))
        .unwrap();
    assert_eq!(child.captured().unwrap().0.len(), 1 << 20);
}

#[test]
fn a_failing_child_reports_its_status_and_a_missing_one_its_name() {
    let mut child = Supervisor::new(sh("exit 3"), "three").spawn().unwrap();
    let status = child
        .wait(&Limits::within(Duration::from_secs(10)))
        .unwrap();
    assert_eq!(status.code(), Some(3));
    assert_eq!(child.try_status().unwrap(), Some(status));
    let err = Supervisor::new(Command::new("/nonexistent/prog"), "the tool")
        .hint("install it")
        .spawn()
        .unwrap_err()
        .to_string();
    assert_eq!(err, "starting the tool (/nonexistent/prog); install it");
}

/// proc(5)'s fields of this process, and of a child whose `comm` holds
/// `)` and spaces (a copy of `sleep` so named): running, in its own
/// process group, then gone or a zombie once stopped.
#[test]
fn proc_stat_reads_state_and_process_group() {
    let me = proc_stat(std::process::id()).expect("this process's stat");
    assert!(!me.exited(), "{me:?}");
    assert_eq!(me.pgrp, rustix::process::getpgrp().as_raw_nonzero().get());
    let dir = tempfile::tempdir().unwrap();
    let odd = dir.path().join("x) R 1 (y");
    std::fs::copy("/bin/sleep", &odd).unwrap();
    let mut cmd = Command::new(&odd);
    cmd.arg("100");
    let mut child = Supervisor::new(cmd, "sleep").spawn().unwrap();
    let stat = poll(|| proc_stat(child.id()).filter(|s| s.state == 'S'));
    assert_eq!(stat.pgrp, child.id() as i32, "its own group");
    child.stop();
    assert!(proc_stat(child.id()).is_none_or(|s| s.exited()));
}
