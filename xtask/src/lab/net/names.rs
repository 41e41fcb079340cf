//! The names a lab's network gives what it makes ([`Names`]), and the
//! prefixes a dead lab's leftovers are known by ([`super::stale`]).

use std::sync::atomic::{AtomicU32, Ordering};

use anyhow::{bail, Result};

/// Prefix of every namespace the lab creates.
pub const NETNS_PREFIX: &str = "xlab-";
/// Prefix of every tap the lab creates.
pub const TAP_PREFIX: &str = "xl";

/// The names one [`super::Net`] gives what it makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Names {
    /// The lab's process id.
    pub pid: u32,
    /// Which of this process's networks (0–99).
    pub serial: u32,
}

static SERIAL: AtomicU32 = AtomicU32::new(0);

impl Names {
    /// Names for a new network of this process.
    pub fn next() -> Names {
        Names {
            pid: std::process::id(),
            serial: SERIAL.fetch_add(1, Ordering::SeqCst) % 100,
        }
    }

    /// The namespace of `role` (`lan`, `host`): `xlab-<pid>-<n>-<role>`.
    pub fn netns(&self, role: &str) -> String {
        format!("{NETNS_PREFIX}{}-{}-{role}", self.pid, self.serial)
    }

    /// Tap number `index` (0–25): `xl<pid>_<n><a…z>`.
    pub fn tap(&self, index: usize) -> Result<String> {
        let Some(letter) = u8::try_from(index).ok().filter(|i| *i < 26) else {
            bail!("a lab network has at most 26 taps, not {}", index + 1);
        };
        Ok(format!(
            "{TAP_PREFIX}{}_{}{}",
            self.pid,
            self.serial,
            char::from(b'a' + letter)
        ))
    }
}
