//! The host lab's private network namespace: `xt-host-<pid>-<n>`, a fresh
//! one per session (arm and round), with only its loopback, up. Every
//! command the host lab runs goes through [`Namespace::command`] or
//! [`Namespace::run`] (`ip netns exec NS program args…`, argv only), so
//! its settings and traffic never touch the host's own devices.
//!
//! Dropping a [`Namespace`] kills every process still in it (tbench_srv
//! forks one child per connection, which outlives a killed parent), waits
//! for them to go, and deletes it: on success, error and Ctrl-C alike.
//! Namespaces a killed lab left are removed by the next one
//! ([`remove_stale`]).

use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::lab::process::POLL;
use crate::lab::topology::{cleanup_tool, tool};

/// Prefix of every namespace the host lab creates.
pub const NETNS_PREFIX: &str = "xt-host-";

/// How long the processes of a namespace may take to die once killed.
const KILL_TIMEOUT: Duration = Duration::from_secs(10);

static SERIAL: AtomicU32 = AtomicU32::new(0);

/// A private network namespace; killed and deleted when dropped.
#[derive(Debug)]
pub struct Namespace {
    /// Its name, `xt-host-<pid>-<n>`.
    pub name: String,
    created: bool,
}

impl Namespace {
    /// Creates `xt-host-<pid>-<n>` with its loopback up (it has no other
    /// device). Removed again if bringing `lo` up fails.
    pub fn create() -> Result<Namespace> {
        let n = SERIAL.fetch_add(1, Ordering::SeqCst);
        let name = format!("{NETNS_PREFIX}{}-{n}", std::process::id());
        tool("ip", &["netns", "add", &name])
            .context("creating the host lab's network namespace (the lab runs as root)")?;
        let ns = Namespace {
            name,
            created: true,
        };
        tool("ip", &["-n", &ns.name, "link", "set", "lo", "up"])?;
        Ok(ns)
    }

    /// `ip netns exec NS program args…`, to spawn.
    pub fn command(&self, program: &str, args: &[&str]) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.name, program]).args(args);
        c
    }

    /// Runs `program args…` in the namespace to the end (at most 20 s),
    /// failing with its output; returns its stdout.
    pub fn run(&self, program: &str, args: &[&str]) -> Result<String> {
        let mut argv = vec!["netns", "exec", &self.name, program];
        argv.extend_from_slice(args);
        tool("ip", &argv)
    }

    /// Kills whatever still runs in the namespace and deletes it now;
    /// problems are reported, not returned.
    pub fn remove(&mut self) {
        if !self.created {
            return;
        }
        self.created = false;
        if let Err(e) = kill_all(&self.name) {
            eprintln!("warning: stopping the processes of {}: {e:#}", self.name);
        }
        if let Err(e) = cleanup_tool("ip", &["netns", "del", &self.name]) {
            eprintln!("warning: removing network namespace {}: {e:#}", self.name);
        }
    }
}

impl Drop for Namespace {
    fn drop(&mut self) {
        self.remove();
    }
}

/// The processes in namespace `name` (`ip netns pids`).
pub fn pids(name: &str) -> Result<Vec<u32>> {
    let out = cleanup_tool("ip", &["netns", "pids", name])?;
    Ok(out
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect())
}

/// Whether process `pid` has exited: gone, or a zombie waiting for its
/// parent (for an orphan, init) to reap it.
pub fn exited(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // `pid (comm) S …`: the state follows the last ')'.
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with(['Z', 'X'])),
        Err(_) => true,
    }
}

/// SIGKILLs every process in namespace `name` until none is left and each
/// has exited, within [`KILL_TIMEOUT`]. (A dying process leaves the
/// namespace before it is gone, so `ip netns pids` alone says too early.)
fn kill_all(name: &str) -> Result<()> {
    let deadline = Instant::now() + KILL_TIMEOUT;
    let mut killed: Vec<u32> = Vec::new();
    loop {
        let left = pids(name)?;
        if left.is_empty() {
            killed.retain(|&pid| !exited(pid));
            if killed.is_empty() {
                return Ok(());
            }
        }
        if Instant::now() >= deadline {
            anyhow::bail!(
                "processes {left:?} {killed:?} of {name} were still running after {} s",
                KILL_TIMEOUT.as_secs()
            );
        }
        for pid in &left {
            if !killed.contains(pid) {
                killed.push(*pid);
            }
            let pid = i32::try_from(*pid)
                .ok()
                .and_then(rustix::process::Pid::from_raw);
            if let Some(pid) = pid {
                // Gone already is fine.
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
            }
        }
        std::thread::sleep(POLL);
    }
}

/// Removes namespaces an earlier host lab left (killed with SIGKILL, say):
/// those named after a process id that no longer runs, their processes
/// killed first. Returns their names.
pub fn remove_stale() -> Result<Vec<String>> {
    let mut removed = Vec::new();
    let list = tool("ip", &["netns", "list"])?;
    for name in list.lines().filter_map(|l| l.split_whitespace().next()) {
        let Some(rest) = name.strip_prefix(NETNS_PREFIX) else {
            continue;
        };
        let pid = rest.split('-').next().unwrap_or("");
        let dead = pid
            .parse::<u32>()
            .is_ok_and(|p| !std::path::Path::new(&format!("/proc/{p}")).exists());
        if dead {
            kill_all(name)?;
            cleanup_tool("ip", &["netns", "del", name])?;
            removed.push(name.to_string());
        }
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_running_process_has_not_exited_and_a_reaped_one_has() {
        assert!(!exited(std::process::id()));
        let mut child = Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        assert!(exited(pid));
    }
}
