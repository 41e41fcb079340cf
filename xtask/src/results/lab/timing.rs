//! Where a run's wall time goes: `wall_steps` in each run of `lab.json`,
//! one [`WallStep`] per step of a forwarding run, in the order they ran;
//! and in each QEMU boot, where `boot_seconds` went. `cargo xtask bench
//! lab` reads them to show the per-run overhead beyond iperf3's duration
//! step by step.

use serde::{Deserialize, Serialize};

/// Switching GRO on both of the router's interfaces (`ethtool -K` over
/// the guest's console).
pub const GRO: &str = "gro";
/// Starting the iperf3 server in the WAN namespace, until it listens.
pub const SERVER_START: &str = "iperf3_server_start";
/// The router's counters before the traffic (a console round trip).
pub const SAMPLE_BEFORE: &str = "sample_before";
/// The cache model's counters before the traffic (`--cache-model`).
pub const MODEL_BEFORE: &str = "cache_model_before";
/// The iperf3 client, from its start to its exit: the run's duration plus
/// iperf3's own start (connect, parameter exchange) and end (results
/// exchange).
pub const CLIENT: &str = "iperf3_client";
/// The cache model's counters after the traffic (`--cache-model`).
pub const MODEL_AFTER: &str = "cache_model_after";
/// The router's counters after the traffic.
pub const SAMPLE_AFTER: &str = "sample_after";
/// Waiting for the iperf3 server to exit after its one test.
pub const SERVER_EXIT: &str = "iperf3_server_exit";

/// A boot: from starting QEMU until its console socket accepts (QEMU
/// starts the guest once connected).
pub const BOOT_CONSOLE: &str = "qemu_console";
/// A boot: until QEMU opened both taps and they are attached.
pub const BOOT_TAPS: &str = "taps";
/// A boot: the guest's kernel and `/init`, until READY.
pub const BOOT_READY: &str = "guest_to_ready";
/// A boot: after READY, until every guest pinged every endpoint (ARP
/// resolved both ways; a mesh records its own `mesh-up` instead).
pub const BOOT_REACH: &str = "endpoints_reached";

/// One timed step of a run or a boot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WallStep {
    /// [`GRO`], [`SERVER_START`], [`SAMPLE_BEFORE`], [`MODEL_BEFORE`],
    /// [`CLIENT`], [`MODEL_AFTER`], [`SAMPLE_AFTER`] or [`SERVER_EXIT`];
    /// a boot's [`BOOT_CONSOLE`], [`BOOT_TAPS`], [`BOOT_READY`] or
    /// [`BOOT_REACH`].
    pub step: String,
    /// Wall seconds it took.
    pub seconds: f64,
}

/// Times steps as they run, into [`WallStep`]s (milliseconds kept).
#[derive(Debug, Default)]
pub struct Stopwatch {
    steps: Vec<WallStep>,
}

impl Stopwatch {
    /// Runs `f` and records its wall time as `step`, also when it fails.
    pub fn time<T>(&mut self, step: &str, f: impl FnOnce() -> T) -> T {
        let started = std::time::Instant::now();
        let out = f();
        self.steps.push(WallStep {
            step: step.to_string(),
            seconds: (started.elapsed().as_secs_f64() * 1e3).round() / 1e3,
        });
        out
    }

    /// Appends `other`'s steps after these.
    pub fn extend(&mut self, other: Stopwatch) {
        self.steps.extend(other.steps);
    }

    /// The steps timed so far, in order.
    pub fn into_steps(self) -> Vec<WallStep> {
        self.steps
    }
}
