//! What a killed lab left (SIGKILL, a power cut): namespaces, taps and
//! QEMU's socket directories named after a process id that no longer
//! runs. Its QEMU, iperf3 and tbench died with it (they get SIGKILL when
//! the lab dies, [`crate::util::process::Supervised`]; a forking server
//! left in a namespace is killed with it here).

use anyhow::{Context, Result};

use super::ip::{cleanup_tool, tool};
use super::names::{NETNS_PREFIX, TAP_PREFIX};
use super::processes::kill_all;

/// Namespaces of older labs, removed like the current ones: the host
/// lab's `xt-host-<pid>-<n>` before one owner named every namespace.
const OLD_NETNS_PREFIXES: &[&str] = &["xt-host-"];

/// Readies this process for a lab: Ctrl-C and SIGTERM stop it cleanly
/// ([`crate::util::cancel::install_handler`]), and what a killed lab left
/// is removed ([`remove_stale`]) and named on stderr after `who` (`lab`,
/// `bench`).
pub fn start_clean(who: &str) -> Result<()> {
    crate::util::cancel::install_handler();
    let stale = remove_stale()?;
    if !stale.is_empty() {
        eprintln!(
            "{who}: removed what an interrupted lab left: {}",
            stale.join(", ")
        );
    }
    Ok(())
}

/// Prefix of a boot's directory in the system's temporary directory (QEMU's
/// console and cache-model sockets): `xlab-<pid>-`, so that
/// [`remove_stale`] knows a dead lab's.
pub fn socket_dir_prefix() -> String {
    format!("{NETNS_PREFIX}{}-", std::process::id())
}

/// The process id a lab name carries after `prefix`, if it has that
/// prefix: `xlab-<pid>-…`, `xl<pid>_<n><letter>`.
fn owner(name: &str) -> Option<u32> {
    let netns = std::iter::once(NETNS_PREFIX)
        .chain(OLD_NETNS_PREFIXES.iter().copied())
        .find_map(|p| name.strip_prefix(p));
    if let Some(rest) = netns {
        return rest.split('-').next()?.parse().ok();
    }
    None
}

/// The process id of a lab tap `xl<pid>_<n><letter>`.
fn tap_owner(name: &str) -> Option<u32> {
    let (pid, rest) = name.strip_prefix(TAP_PREFIX)?.split_once('_')?;
    let (serial, letter) = rest.split_at(rest.len().checked_sub(1)?);
    let is_tap = !serial.is_empty()
        && serial.bytes().all(|b| b.is_ascii_digit())
        && letter.bytes().all(|b| b.is_ascii_lowercase());
    is_tap.then(|| pid.parse().ok()).flatten()
}

fn dead(pid: u32) -> bool {
    !std::path::Path::new(&format!("/proc/{pid}")).exists()
}

/// Removes namespaces (their processes killed first), taps and socket
/// directories an earlier lab process left: those named after a process
/// id that no longer runs. Returns what was removed.
pub fn remove_stale() -> Result<Vec<String>> {
    let mut removed = Vec::new();
    let tmp = std::env::temp_dir();
    if let Ok(entries) = std::fs::read_dir(&tmp) {
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if owner(&name).is_some_and(dead) && entry.path().is_dir() {
                std::fs::remove_dir_all(entry.path())
                    .with_context(|| format!("removing {}", entry.path().display()))?;
                removed.push(entry.path().display().to_string());
            }
        }
    }
    let netns = tool("ip", &["netns", "list"])?;
    for name in netns.lines().filter_map(|l| l.split_whitespace().next()) {
        if owner(name).is_some_and(dead) {
            kill_all(name)?;
            cleanup_tool("ip", &["netns", "del", name])?;
            removed.push(name.to_string());
        }
    }
    let links = std::fs::read_dir("/sys/class/net").context("reading /sys/class/net")?;
    for link in links {
        let name = link?.file_name().to_string_lossy().into_owned();
        if tap_owner(&name).is_some_and(dead) {
            cleanup_tool("ip", &["link", "del", &name])?;
            removed.push(name);
        }
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leftovers_are_known_by_their_owner() {
        assert_eq!(owner("xlab-123-0-lan"), Some(123));
        assert_eq!(owner("xlab-77-ssh-wan"), Some(77));
        assert_eq!(owner("xt-host-55-3"), Some(55));
        assert_eq!(owner("lan"), None);
        assert_eq!(owner("xlab-x-0"), None);
        assert_eq!(tap_owner("xl123_0a"), Some(123));
        // Older labs' taps: `l` and `w`.
        assert_eq!(tap_owner("xl123_45w"), Some(123));
        assert_eq!(tap_owner("xl123_4"), None);
        assert_eq!(tap_owner("xl123_A"), None);
        assert_eq!(tap_owner("xlan0"), None);
    }
}
