//! Putting an arm's kernel on the router and checking it is the one
//! running: copy the image (`scp -O`), `sysupgrade -n` it, wait for the
//! reboot (a new `/proc/sys/kernel/random/boot_id`, polled within the
//! reboot timeout), then compare `/proc/version` with the build's banner.
//!
//! The banner: the kernel's `/proc/version` prints `linux_banner`
//! (`Linux version <release> (<user>@<host>) (<compiler>) <version>`),
//! which is also a string in vmlinux's `.rodata`. The workbench builds
//! with fixed `KBUILD_BUILD_USER`/`HOST` (`xtask@xtask`), timestamp and
//! build number, so the banner of a build is its identity: equal text
//! means the router runs that build's kernel (or one built from the same
//! release, compiler and configuration banner).

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use super::remote::{Ssh, SSH_FAILED};
use crate::lab::process::tick;

/// Where the image goes on the router (a fixed name: nothing from the lab
/// file reaches the remote command line).
pub const REMOTE_IMAGE: &str = "/tmp/xtask-sysupgrade.bin";

/// Seconds between two attempts to reach a rebooting router.
const RETRY: Duration = Duration::from_secs(5);

/// The start of the banner.
const BANNER: &[u8] = b"Linux version ";

/// The `Linux version …` banner in `vmlinux` (up to its newline), if any:
/// the first occurrence followed by a digit, printable ASCII throughout.
pub fn banner_of(vmlinux: &Path) -> Result<Option<String>> {
    let bytes = crate::util::fs::read_bytes_limited(
        vmlinux,
        crate::util::fs::FileLimit::binary("vmlinux"),
        "",
    )?;
    Ok(find_banner(&bytes))
}

fn find_banner(bytes: &[u8]) -> Option<String> {
    let mut from = 0;
    while let Some(i) = find(&bytes[from..], BANNER).map(|i| i + from) {
        let rest = &bytes[i..];
        let end = rest
            .iter()
            .position(|&b| b == b'\n' || b == 0)
            .unwrap_or(rest.len());
        let text = &rest[..end];
        let starts_with_digit = text.get(BANNER.len()).is_some_and(u8::is_ascii_digit);
        if starts_with_digit && text.iter().all(|&b| (0x20..0x7f).contains(&b)) {
            return Some(String::from_utf8_lossy(text).into_owned());
        }
        from = i + 1;
    }
    None
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// The router's `/proc/version`, without its trailing newline.
pub fn proc_version(ssh: &Ssh) -> Result<String> {
    let text = ssh
        .check(&["cat", "/proc/version"])
        .context("reading the router's /proc/version")?;
    Ok(text.trim_end_matches('\n').to_string())
}

/// The router's boot id (a new one at every boot).
pub fn boot_id(ssh: &Ssh) -> Result<String> {
    Ok(ssh
        .check(&["cat", "/proc/sys/kernel/random/boot_id"])
        .context("reading the router's boot id")?
        .trim()
        .to_string())
}

/// The router's uptime in seconds.
pub fn uptime(ssh: &Ssh) -> Result<f64> {
    let text = ssh.check(&["cat", "/proc/uptime"])?;
    text.split_whitespace()
        .next()
        .and_then(|s| s.parse().ok())
        .with_context(|| format!("the router's /proc/uptime is {text:?}"))
}

/// Flashes `image` with `sysupgrade -n` (settings not kept) and waits for
/// the router to come back with a new boot id; returns the seconds from
/// starting sysupgrade until it answered again.
pub fn flash(ssh: &Ssh, image: &Path) -> Result<f64> {
    let before = boot_id(ssh).context("before flashing")?;
    ssh.copy(image, REMOTE_IMAGE)
        .with_context(|| format!("copying {} to the router", image.display()))?;
    let started = Instant::now();
    let reboot = Duration::from_secs(ssh.timeouts.reboot_seconds.into());
    // sysupgrade checks the image, then kills the session as it writes:
    // ssh ends with the command's status when it refused the image, with
    // 255 when the connection dropped, or not before our deadline.
    match ssh.run_within(&["sysupgrade", "-n", REMOTE_IMAGE], reboot) {
        Ok(out) if out.status.success() || out.status.code() == Some(SSH_FAILED) => {}
        Ok(out) => bail!(
            "sysupgrade refused {} ({}): {}{}",
            image.display(),
            out.status,
            out.stdout,
            out.stderr
        ),
        Err(e) if crate::lab::process::interrupted() => return Err(e),
        Err(e) => eprintln!("lab: {e:#}; waiting for the reboot all the same"),
    }
    wait_rebooted(ssh, &before, started, reboot)?;
    Ok(started.elapsed().as_secs_f64())
}

/// Polls the router every [`RETRY`] until it answers with a boot id other
/// than `before`, failing once `timeout` has passed since `started`.
fn wait_rebooted(ssh: &Ssh, before: &str, started: Instant, timeout: Duration) -> Result<()> {
    let mut last = String::new();
    while started.elapsed() < timeout {
        match boot_id(ssh) {
            Ok(id) if id != before => return Ok(()),
            Ok(_) => last = "it still runs the boot it had before sysupgrade".to_string(),
            Err(e) => last = format!("{e:#}"),
        }
        let next = Instant::now() + RETRY;
        while Instant::now() < next {
            tick()?;
        }
    }
    bail!(
        "the router did not come back within {} s after sysupgrade (last: {last})",
        timeout.as_secs()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_banner_is_found_among_other_strings() {
        let mut bytes = b"\x7fELF\0\0Linux version %s\0junk".to_vec();
        bytes.extend_from_slice(
            b"\0Linux version 6.12.57 (xtask@xtask) (arm-linux-gnueabi-gcc (Debian 12.2.0-14) 12.2.0, GNU ld 2.40) #1 SMP Thu Jan  1 00:00:00 UTC 1970\n\0rest",
        );
        assert_eq!(
            find_banner(&bytes).as_deref(),
            Some("Linux version 6.12.57 (xtask@xtask) (arm-linux-gnueabi-gcc (Debian 12.2.0-14) 12.2.0, GNU ld 2.40) #1 SMP Thu Jan  1 00:00:00 UTC 1970")
        );
        assert_eq!(find_banner(b"no banner here"), None);
        assert_eq!(find_banner(b"Linux version 6.1\xff\n"), None);
    }
}
