//! The seams between the lab's one flow ([`super::orchestrate`]) and what
//! it measures.
//!
//! * A [`Backend`] is a kind of lab: it makes the lab ready once
//!   ([`Backend::prepare`]: builds the lab kernels, reaches the router,
//!   reads this machine's kernel) and then brings up one arm at a time
//!   ([`Backend::bring_up`]: boots the arm's kernel in QEMU on its
//!   topology, flashes it onto a real router, applies runtime settings in
//!   a fresh namespace). [`super::qemu_lab::QemuBackend`],
//!   [`super::ssh::SshBackend`], [`super::host_lab::HostBackend`], and a fake
//!   in the orchestrator's tests.
//! * What it brings up is a [`Testbed`]: where the workload's endpoints
//!   are ([`Endpoints`]), what can be switched (GRO) and sampled (the
//!   measured guest's counters, the cache model's), and how to run a
//!   command inside a guest. Dropping it ends what was started for it
//!   (QEMU, namespaces, taps).
//! * A workload ([`super::workload::Workload`]) runs on a testbed; the
//!   schedule ([`super::runner`]), the statistics and `lab.json` are the
//!   same whatever the machine.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::Path;
use std::time::Duration;

use anyhow::{bail, Context, Result};

use super::guest::SamplePoint;
use super::sample::GuestSample;
use crate::results::lab::per_cpu::Snapshot;
use crate::results::lab::{Arm, BootRecord};
use crate::results::lab::{CacheModelInfo, CoreTiming, MachineInfo};

pub use crate::results::lab::gro::Gro;

/// Where one endpoint of a testbed is on this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndpointUp {
    /// Its name (`lan`), as a topology and a workload call it.
    pub name: String,
    /// The network namespace its programs run in.
    pub netns: String,
    /// Its address there, when the lab knows it.
    pub address: Option<IpAddr>,
}

/// Every endpoint of a testbed, and what the path between them does.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Endpoints {
    /// The endpoints.
    pub list: Vec<EndpointUp>,
    /// The address a server beyond the router sees a client as when the
    /// path masquerades (the router's WAN address); `None` when nothing
    /// translates.
    pub masquerade: Option<IpAddr>,
}

impl Endpoints {
    /// The endpoint called `name`, or an error naming the ones there are.
    pub fn get(&self, name: &str) -> Result<&EndpointUp> {
        self.list.iter().find(|e| e.name == name).with_context(|| {
            let known: Vec<&str> = self.list.iter().map(|e| e.name.as_str()).collect();
            format!(
                "this lab has no endpoint {name:?} (it has {})",
                if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                }
            )
        })
    }

    /// The address of endpoint `name`, or an error when the lab does not
    /// know it.
    pub fn address(&self, name: &str) -> Result<IpAddr> {
        self.get(name)?
            .address
            .with_context(|| format!("the lab does not know endpoint {name}'s address"))
    }
}

/// One arm's kernel (or settings) up, with the network around it.
pub trait Testbed {
    /// Where the workload's hosts run.
    fn endpoints(&self) -> &Endpoints;

    /// Switches GRO on the forwarding interfaces.
    fn set_gro(&mut self, gro: Gro) -> Result<()> {
        bail!("this lab has no router to switch GRO {} on", gro.word())
    }

    /// The measured router's counters now: `/proc/stat`'s CPU ticks, the
    /// two counted interfaces' packet and byte counters, uptime, NIC
    /// interrupts; `point` says which side of a run's traffic it is on.
    fn sample(&mut self, point: SamplePoint) -> Result<GuestSample> {
        let _ = point;
        bail!("this lab has no router to sample")
    }

    /// What to add to an error: the consoles' last lines, the last remote
    /// command's output.
    fn diagnostics(&self) -> String {
        String::new()
    }

    /// An error when the testbed is gone (a QEMU exited), with what it
    /// left to read; `Ok` while it runs or when that cannot be told.
    fn check_alive(&mut self) -> Result<()> {
        Ok(())
    }

    /// The cache model's counters now (a QEMU guest booted with
    /// `--cache-model`), the sums and each vCPU's; `None` without a model.
    fn model_counters(&mut self) -> Result<Option<Snapshot>> {
        Ok(None)
    }

    /// Starts the measured router's own counters for a run's traffic (a
    /// real router with `perf`: [`super::ssh::perf`]); nothing where there
    /// are none.
    fn start_router_counters(&mut self) -> Result<()> {
        Ok(())
    }

    /// Stops them: each event's count over the traffic by perf's name
    /// (`cycles`), the events the router's core counted; `None` where
    /// nothing counted.
    fn stop_router_counters(&mut self) -> Result<Option<BTreeMap<String, u64>>> {
        Ok(None)
    }

    /// The measured router's CPUs: on more than one, QEMU runs without
    /// `-icount` and the guest's CPU time is host time, so the workload
    /// records no ns/packet.
    fn cpus(&self) -> u32 {
        1
    }

    /// Runs `command` in guest `guest`'s shell within `timeout`, failing
    /// on a non-zero status; its output. For workloads that run inside a
    /// guest (tbench on the variant kernel's own loopback).
    fn guest_shell(&mut self, guest: &str, command: &str, timeout: Duration) -> Result<String> {
        let _ = (command, timeout);
        bail!("this lab has no guest {guest:?} to run a command in")
    }

    /// The core model's timing table the cache model's counters are
    /// costed with (`--cache-model` on a target with `[lab.timing]`);
    /// `None` without one.
    fn model_timing(&self) -> Option<&CoreTiming> {
        None
    }

    /// What the arm's runtime settings read back now (device → feature →
    /// `on`/`off`); empty where an arm is a kernel.
    fn settings_read_back(&mut self) -> Result<BTreeMap<String, BTreeMap<String, String>>> {
        Ok(BTreeMap::new())
    }
}

/// A testbed brought up for one arm, and how that went.
pub struct Up {
    /// The testbed.
    pub bed: Box<dyn Testbed>,
    /// The boot, for `lab.json`; `None` when nothing booted (the host
    /// lab).
    pub boot: Option<BootRecord>,
}

/// What `lab.json` records of a backend once it is ready.
#[derive(Debug, Clone, PartialEq)]
pub struct Prepared {
    /// The kernels' results directory name (`brcm47xx-lab`).
    pub lab_target: String,
    /// What runs the arms.
    pub machine: MachineInfo,
    /// The arms, the base first, without the A/A control (the
    /// orchestrator adds it).
    pub arms: Vec<Arm>,
    /// The cache model every boot loads (`--cache-model`).
    pub cache_model: Option<CacheModelInfo>,
}

/// A kind of lab (see the module docs).
pub trait Backend {
    /// Readies this process and machine before anything else: Ctrl-C
    /// armed, what a killed lab left removed ([`super::net::start_clean`]).
    fn start_clean(&mut self) -> Result<()> {
        super::net::start_clean("lab")
    }

    /// Makes the lab ready: builds, reaches, reads; every check before
    /// anything runs on the machine.
    fn prepare(&mut self) -> Result<Prepared>;

    /// Brings up `arm`'s kernel (or settings) for `round`; its logs go
    /// into `dir`, named after `tag` (`r0-baseline`).
    fn bring_up(&mut self, arm: &Arm, round: u32, tag: &str, dir: &Path) -> Result<Up>;
}
