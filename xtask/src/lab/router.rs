//! The seam between the lab's plan ([`super::runner`]) and the machine it
//! measures. A [`Bench`] brings up one arm's kernel at a time — QEMU boots
//! it ([`super::session::QemuBench`]), a real router is flashed with it and
//! reboots ([`super::ssh::SshBench`]) — and hands back a [`Router`]: the
//! router under test, which switches GRO and reads the counters the
//! samples need, and says where iperf3's client and server run
//! ([`Endpoints`]). The runner, the statistics and `lab.json` are the same
//! whatever the machine.

use std::path::Path;

use anyhow::Result;

use super::guest::SamplePoint;
use super::record::{Arm, BootRecord};
use super::sample::GuestSample;
use crate::results::lab::CacheCounters;

pub use crate::results::lab::gro::Gro;

/// Where iperf3 runs on this machine, and what its server must see.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoints {
    /// Network namespace of the iperf3 client (the LAN host).
    pub lan_netns: String,
    /// Network namespace of the iperf3 server (the WAN host).
    pub wan_netns: String,
    /// The server's address in `wan_netns`; the client connects to it.
    pub server_ip: String,
    /// The router's WAN address: the client's address as the server must
    /// see it after the router's masquerade.
    pub router_wan_ip: String,
}

/// One arm's kernel, up and forwarding between the two endpoints.
/// Dropping it ends what the machine started for it (QEMU, namespaces).
pub trait Router {
    /// Where iperf3 runs.
    fn endpoints(&self) -> &Endpoints;

    /// Switches GRO on the router's forwarding interfaces.
    fn set_gro(&mut self, gro: Gro) -> Result<()>;

    /// The router's counters now: `/proc/stat`'s CPU ticks, both
    /// interfaces' packet and byte counters, uptime, NIC interrupts;
    /// `point` says which side of a run's traffic it is on.
    fn sample(&mut self, point: SamplePoint) -> Result<GuestSample>;

    /// What to add to an error about this router: the console's last
    /// lines, the last remote command's output.
    fn diagnostics(&self) -> String;

    /// An error when the router is gone (its QEMU exited), with what it
    /// left to read; `Ok` while it runs or when that cannot be told.
    fn check_alive(&mut self) -> Result<()> {
        Ok(())
    }

    /// The cache model's counters now (a QEMU guest booted with
    /// `--cache-model`); `None` without a model.
    fn model_counters(&mut self) -> Result<Option<CacheCounters>> {
        Ok(None)
    }
}

/// A router brought up for one arm, and how that went.
pub struct Up {
    /// The router under test.
    pub router: Box<dyn Router>,
    /// The boot, for `lab.json`.
    pub boot: BootRecord,
}

/// A machine that brings up the arms' kernels in turn.
pub trait Bench {
    /// Brings up `arm`'s kernel for `round` (boots it, or flashes it and
    /// waits for the reboot); its logs go into `dir`, named after `tag`
    /// (`r0-baseline`).
    fn bring_up(&mut self, arm: &Arm, round: u32, tag: &str, dir: &Path) -> Result<Up>;
}
