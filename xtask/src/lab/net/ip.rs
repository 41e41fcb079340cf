//! Every `ip` and `ethtool` call of the lab: argv only, within
//! [`STEP_TIMEOUT`], its output in the error when it fails, and stopped
//! by Ctrl-C ([`tool`]) or not ([`cleanup_tool`], for removing what the
//! lab made while an interruption unwinds).

use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};

use crate::lab::process::{last_lines, tick, Supervised};
use crate::util::process::{Limits, Output, Supervisor};

/// Longest a single `ip`/`ethtool` call may take.
pub const STEP_TIMEOUT: Duration = Duration::from_secs(20);

/// The kernel's table of IPv4 TCP sockets, for [`wait_listening`].
pub const TCP: &str = "/proc/net/tcp";

/// The kernel's table of IPv6 TCP sockets, for [`wait_listening`].
pub const TCP6: &str = "/proc/net/tcp6";

/// Runs `ip`/`ethtool`/… with `args`, failing with its output (and as
/// soon as Ctrl-C arrived).
pub fn tool(program: &str, args: &[&str]) -> Result<String> {
    run_tool(program, args, Interrupt::Stops)
}

/// Like [`tool`], but runs to the end after Ctrl-C: for cleaning up.
pub fn cleanup_tool(program: &str, args: &[&str]) -> Result<String> {
    run_tool(program, args, Interrupt::Ignored)
}

/// Whether Ctrl-C ends a wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Interrupt {
    /// It does, with an error.
    Stops,
    /// It does not: the call runs to its end or its timeout.
    Ignored,
}

fn run_tool(program: &str, args: &[&str], interrupt: Interrupt) -> Result<String> {
    let mut cmd = Command::new(program);
    cmd.args(args);
    let shown = format!("{program} {}", args.join(" "));
    let limits = match interrupt {
        Interrupt::Stops => Limits::within(STEP_TIMEOUT),
        Interrupt::Ignored => Limits::cleanup_within(STEP_TIMEOUT),
    };
    // Captured in files, not pipes: `ip -json` output longer than a pipe
    // holds would block until the deadline.
    let mut child = Supervisor::new(cmd, &format!("`{shown}`"))
        .output(Output::Capture)
        .hint("is it installed? (`cargo xtask setup`)")
        .spawn()?;
    let status = child.wait(&limits)?;
    let (stdout, stderr) = child.captured()?;
    if !status.success() {
        bail!("`{shown}` failed ({status}): {}", last_lines(&stderr, 5));
    }
    Ok(stdout)
}

/// `ip netns exec NETNS program args…`, to spawn.
pub fn exec(netns: &str, program: &str, args: &[&str]) -> Command {
    let mut c = Command::new("ip");
    c.args(["netns", "exec", netns, program]).args(args);
    c
}

/// Runs `program args…` in `netns` to the end (within [`STEP_TIMEOUT`]),
/// failing with its output; returns its stdout.
pub fn run_in(netns: &str, program: &str, args: &[&str]) -> Result<String> {
    let mut argv = vec!["netns", "exec", netns, program];
    argv.extend_from_slice(args);
    tool("ip", &argv)
}

/// Whether `ip netns list` shows `name`.
pub fn netns_exists(name: &str) -> Result<bool> {
    let list = tool("ip", &["netns", "list"])?;
    Ok(list
        .lines()
        .any(|l| l.split_whitespace().next() == Some(name)))
}

/// Waits up to `timeout` until something listens on TCP `port` in
/// `netns` (its `table`, [`TCP`] or [`TCP6`], read from inside it);
/// fails at once when `server` exits first.
pub fn wait_listening(
    (netns, table): (&str, &str),
    port: u16,
    server: &mut Supervised,
    timeout: Duration,
) -> Result<()> {
    let deadline = Instant::now() + timeout;
    let local = format!(":{port:04X} ");
    loop {
        let table = run_in(netns, "cat", &[table])?;
        // Columns: sl local_address rem_address st …; st 0A is LISTEN.
        let listening = table.lines().any(|l| {
            let cols: Vec<&str> = l.split_whitespace().collect();
            cols.len() > 3 && format!("{} ", cols[1]).ends_with(&local) && cols[3] == "0A"
        });
        if listening {
            return Ok(());
        }
        if let Some(status) = server.try_status()? {
            bail!("the {} exited ({status}) before listening", server.what());
        }
        if Instant::now() >= deadline {
            bail!(
                "the {} did not listen on port {port} within {} s",
                server.what(),
                timeout.as_secs()
            );
        }
        tick()?;
    }
}
