//! The processes in a lab's namespace: listing them, whether one has
//! exited, and killing them all before the namespace goes.

use std::time::{Duration, Instant};

use anyhow::{bail, Result};

use super::ip::cleanup_tool;
use crate::lab::process::POLL;

/// How long the processes of a namespace may take to die once killed.
const KILL_TIMEOUT: Duration = Duration::from_secs(10);

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
    crate::util::process::proc_stat(pid).is_none_or(|s| s.exited())
}

/// SIGKILLs every process in namespace `name` until none is left and each
/// has exited, within 10 s. (A dying process leaves the
/// namespace before it is gone, so `ip netns pids` alone says too early.)
pub fn kill_all(name: &str) -> Result<()> {
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
            bail!(
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
