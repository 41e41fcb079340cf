//! What a forwarding lab is asked ([`LabRequest`]), built by the command
//! line (`cargo xtask lab`), an experiment file's `[lab]` table and the
//! tests from [`LabRequest::qemu`]'s defaults, and the **one** check of
//! which option goes with which lab kind, machine, topology and workload
//! ([`LabRequest::check`]). A refusal is a [`Problem`] naming the
//! request's [`Field`]: the command line words it with the flag
//! ([`Problem`]'s `Display`), an experiment file with its key and line.
//!
//! Each option is defined once, in [`option::OPTIONS`]: its flag, key,
//! range, default and the labs and workload that take it. A new
//! whole-number option is a [`Field`] and its entry there, and its use
//! where the lab resolves the request ([`LabRequest::count`]); the command
//! line, the experiment file, the check, the record and the resume check
//! follow from the table.

use std::path::{Path, PathBuf};

use anyhow::{bail, Result};

use super::topology::{self, Name};
use super::workload;

pub mod option;
mod problem;
mod values;
use crate::inputs::ssh_lab::Destination;
use crate::kernel_build::BuildOptions;
use crate::results::lab::{Flash, IperfOptions};
pub use option::{Field, LabOption, Labs, Shapes, DEFAULT_DURATION_SECONDS, DEFAULT_RUNS, OPTIONS};
pub use problem::{Problem, Words};

/// Which GRO settings of the guest's NICs to measure (`--gro on|off|both`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroChoice {
    /// GRO on (the kernel's default).
    On,
    /// GRO off.
    Off,
    /// Both, each run measured with GRO on and with GRO off.
    Both,
}

impl std::str::FromStr for GroChoice {
    type Err = anyhow::Error;

    /// `on`, `off` or `both`.
    fn from_str(s: &str) -> Result<GroChoice> {
        match s {
            "on" => Ok(GroChoice::On),
            "off" => Ok(GroChoice::Off),
            "both" => Ok(GroChoice::Both),
            _ => bail!("--gro {s:?}: use on, off or both"),
        }
    }
}

impl GroChoice {
    /// The settings, in the order each boot measures them.
    pub fn settings(self) -> Vec<crate::results::lab::Gro> {
        use crate::results::lab::Gro;
        match self {
            GroChoice::On => vec![Gro::On],
            GroChoice::Off => vec![Gro::Off],
            GroChoice::Both => Gro::BOTH.to_vec(),
        }
    }
}

/// Which directions to measure (`--direction lan-to-wan|wan-to-lan|both`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DirectionChoice {
    /// LAN → WAN only (iperf3's client in the LAN sends).
    LanToWan,
    /// WAN → LAN only (`iperf3 -R`).
    WanToLan,
    /// Both, LAN → WAN first.
    Both,
}

impl std::str::FromStr for DirectionChoice {
    type Err = anyhow::Error;

    /// `lan-to-wan`, `wan-to-lan` or `both`.
    fn from_str(s: &str) -> Result<DirectionChoice> {
        match s {
            "lan-to-wan" => Ok(DirectionChoice::LanToWan),
            "wan-to-lan" => Ok(DirectionChoice::WanToLan),
            "both" => Ok(DirectionChoice::Both),
            _ => bail!("--direction {s:?}: use lan-to-wan, wan-to-lan or both"),
        }
    }
}

impl DirectionChoice {
    /// The directions, in the order each boot measures them.
    pub fn directions(self) -> Vec<crate::results::lab::Direction> {
        use crate::results::lab::Direction;
        match self {
            DirectionChoice::LanToWan => vec![Direction::LanToWan],
            DirectionChoice::WanToLan => vec![Direction::WanToLan],
            DirectionChoice::Both => Direction::BOTH.to_vec(),
        }
    }
}

/// Whether the base runs a second time as the A/A control arm.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Control {
    /// It does (`<base>~control`, the noise floor).
    Twin,
    /// It does not (`--no-control`).
    Without,
}

/// What each run of the lab does, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WorkloadSpec {
    /// iperf3 from endpoint `from` to endpoint `to` through the measured
    /// router (`-R` for the other direction), GRO switched per run, with
    /// [`LabRequest::iperf`]'s options.
    Iperf3 {
        /// The client's endpoint (`lan`).
        from: String,
        /// The server's endpoint (`wan`; the mesh's `far`).
        to: String,
    },
    /// tbench inside guest `guest`, over its own loopback, with
    /// [`LabRequest::tbench_clients`] clients.
    Tbench {
        /// The guest (`router`).
        guest: String,
    },
}

impl WorkloadSpec {
    /// What topology `name` runs when nothing else is asked: tbench in
    /// the `loopback` topology's guest; iperf3 from the topology's first
    /// endpoint to its second (nat-router's `lan` → `wan`, the mesh's
    /// `lan` → `far`); `lan` → `wan` for a name the lab does not know
    /// (which [`LabRequest::check`] refuses).
    pub fn of_topology(name: &Name) -> WorkloadSpec {
        if *name == Name::Loopback {
            return WorkloadSpec::Tbench {
                guest: topology::loopback::GUEST.to_string(),
            };
        }
        match topology::named(name)
            .ok()
            .as_ref()
            .map(|t| &t.endpoints[..])
        {
            Some([from, to, ..]) => WorkloadSpec::Iperf3 {
                from: from.name.clone(),
                to: to.name.clone(),
            },
            _ => WorkloadSpec::Iperf3 {
                from: "lan".to_string(),
                to: "wan".to_string(),
            },
        }
    }

    /// The places it runs programs in.
    pub fn places(&self) -> Vec<workload::Place> {
        match self {
            WorkloadSpec::Iperf3 { from, to } => vec![
                workload::Place::Endpoint(from.clone()),
                workload::Place::Endpoint(to.clone()),
            ],
            WorkloadSpec::Tbench { guest } => vec![workload::Place::Guest(guest.clone())],
        }
    }
}

/// What `cargo xtask lab` (QEMU or SSH), an experiment's lab or a test
/// asks; build it from [`LabRequest::qemu`] and check it with
/// [`LabRequest::check`].
#[derive(Debug, Clone)]
pub struct LabRequest {
    /// `--target` spelling.
    pub target: String,
    /// `--variant` names; empty means baseline. The first is the base.
    pub variants: Vec<String>,
    /// Measured runs per (arm, direction, GRO setting).
    pub runs: u32,
    /// Length of one run, in seconds.
    pub duration_seconds: u32,
    /// GRO settings to measure (`--gro`; iperf3 only); `None`: both.
    pub gro: Option<GroChoice>,
    /// Directions to measure (`--direction`; iperf3 only); `None`: both.
    pub direction: Option<DirectionChoice>,
    /// Whether the base runs a second time as an A/A control arm.
    pub control: bool,
    /// Stop after building kernels and the initramfs.
    pub build_only: bool,
    /// Build options for the lab kernels.
    pub build: BuildOptions,
    /// `--kernel-src`.
    pub kernel_src: Option<PathBuf>,
    /// The machine that runs the kernels (`--lab`).
    pub machine: Machine,
    /// Load the L1 cache model into every boot (`--cache-model`; QEMU only).
    pub cache_model: bool,
    /// `--openwrt PATH`: build the lab kernels as this OpenWrt checkout
    /// builds its target for the QEMU machine; QEMU only.
    pub openwrt: Option<PathBuf>,
    /// The guest's NIC model instead of the `[lab]` table's (`--nic`;
    /// QEMU only): one of its `other_nics`.
    pub nic: Option<String>,
    /// The QEMU lab's topology by name (`--topology`; [`Name::KNOWN`]):
    /// `nat-router` (forwarding), `loopback` (tbench inside the guest), or
    /// `mesh`, which adds the reference arm `<base>~mesh-bridged` (the
    /// routers without batman-adv). Set it with [`LabRequest::on_topology`]
    /// to get the topology's workload too.
    pub topology: Name,
    /// What each run does ([`WorkloadSpec::of_topology`] for the
    /// command line; an experiment file's `workload`).
    pub workload: WorkloadSpec,
    /// tbench's clients (`--clients`, `clients`; tbench only); `None`:
    /// [`option::DEFAULT_CLIENTS`].
    pub tbench_clients: Option<u32>,
    /// iperf3's streams, MSS and UDP rate (`--parallel`, `--set-mss`,
    /// `--udp`; iperf3 only).
    pub iperf: IperfOptions,
    /// How many labs this process runs at the same time, this one
    /// included (1: alone; `cargo xtask experiment` runs its targets'
    /// labs side by side). Recorded in `lab.json` when above 1
    /// ([`crate::results::lab::Settings::labs_at_once`]).
    pub labs_at_once: u32,
    /// The mesh's routers in its chain (`--routers N`, 2 to 9; `None`:
    /// two, as the original experiment had); refused on other
    /// topologies ([`topology::named_with`]).
    pub routers: Option<usize>,
    /// The lab machine's CPUs instead of the target file's `[lab] cpus`
    /// (`--cpus N`, an experiment's `[lab] cpus`); QEMU only.
    pub cpus: Option<u32>,
    /// Packet steering instead of the target file's `[lab]
    /// packet_steering` (`--packet-steering`, an experiment's `[lab]
    /// packet_steering`), with where it was asked; QEMU only.
    pub packet_steering: Option<(crate::inputs::steering::SteeringSpec, String)>,
    /// `--resume DIR`: continue the lab that stopped there
    /// (the orchestrator's `Start::Resume`) instead of starting a new one.
    pub resume: Option<PathBuf>,
    /// The whole-number options without a field of their own, by their
    /// experiment-file key ([`LabRequest::count`]); `lab.json` records
    /// them in `settings.options`.
    pub options: option::Extra,
}

impl LabRequest {
    /// A QEMU lab of `target` with the command line's defaults: the
    /// baseline against itself with the A/A control, 5 runs of 10 s both
    /// ways with GRO on and off, iperf3 `lan` → `wan` on the `nat-router`
    /// topology, the target file's machine; callers change what they
    /// need (`LabRequest::qemu("brcm47xx").with(|r| r.runs = 2)`).
    pub fn qemu(target: &str) -> Self {
        Self {
            target: target.to_string(),
            variants: Vec::new(),
            runs: DEFAULT_RUNS,
            duration_seconds: DEFAULT_DURATION_SECONDS,
            gro: None,
            direction: None,
            control: true,
            build_only: false,
            build: BuildOptions::with_jobs(
                std::thread::available_parallelism().map_or(1, |n| n.get()),
            ),
            kernel_src: None,
            machine: Machine::Qemu,
            cache_model: false,
            openwrt: None,
            nic: None,
            topology: Name::NatRouter,
            workload: WorkloadSpec::Iperf3 {
                from: "lan".to_string(),
                to: "wan".to_string(),
            },
            tbench_clients: None,
            iperf: IperfOptions::default(),
            labs_at_once: 1,
            routers: None,
            cpus: None,
            packet_steering: None,
            resume: None,
            options: option::Extra::new(),
        }
    }

    /// The request on topology `name` (a [`Name`], or its spelling:
    /// `"mesh"`) with the workload it runs ([`WorkloadSpec::of_topology`]).
    pub fn on_topology(mut self, name: impl Into<Name>) -> Self {
        self.topology = name.into();
        self.workload = WorkloadSpec::of_topology(&self.topology);
        self
    }

    /// The request with `change` made to it: `LabRequest::qemu(t).with(|r|
    /// r.runs = 2)`, where a struct literal would list what it keeps.
    pub fn with(mut self, change: impl FnOnce(&mut Self)) -> Self {
        change(&mut self);
        self
    }

    /// Whether the base runs a second time as the A/A control arm.
    pub fn control(&self) -> Control {
        if self.control {
            Control::Twin
        } else {
            Control::Without
        }
    }

    /// GRO settings to measure (both unless asked).
    pub fn gro_settings(&self) -> Vec<crate::results::lab::Gro> {
        self.gro.unwrap_or(GroChoice::Both).settings()
    }

    /// Directions to measure (both unless asked).
    pub fn directions(&self) -> Vec<crate::results::lab::Direction> {
        self.direction.unwrap_or(DirectionChoice::Both).directions()
    }

    /// tbench's clients (2 unless asked).
    pub fn clients(&self) -> u32 {
        self.tbench_clients.unwrap_or(option::DEFAULT_CLIENTS)
    }

    /// `iperf3 lan → wan`, `iperf3 -P8 -M 536 lan → far`, `tbench in
    /// guest router, 2 clients`.
    pub fn describe_workload(&self) -> String {
        match &self.workload {
            WorkloadSpec::Iperf3 { from, to } => match self.iperf.describe() {
                o if o.is_empty() => format!("iperf3 {from} → {to}"),
                o => format!("iperf3 {o} {from} → {to}"),
            },
            WorkloadSpec::Tbench { guest } => {
                format!("tbench in guest {guest}, {} clients", self.clients())
            }
        }
    }

    /// Every rule of which option goes with which lab: the first
    /// [`Problem`], naming its [`Field`]. In order: the options
    /// [`option::OPTIONS`] gives only the QEMU lab, on a real router over
    /// SSH (and its lab file); the topology and `--routers`; options of
    /// the other workload (forwarding ones on tbench, tbench's on iperf3;
    /// the cache model on a workload that forwards nothing); each count's
    /// range and the options that contradict each other; the workload's
    /// places on the topology; and last [`Problem::NotRunnable`], a
    /// workload the QEMU lab does not run yet. Target-dependent checks
    /// (the NIC models, `[lab.l1]`) are the resolver's.
    pub fn check(&self) -> std::result::Result<(), Problem> {
        let given = self.given();
        let option = |f: &Field| f.option().copied();
        if let Machine::Ssh(ssh) = &self.machine {
            if let Some(f) = given
                .iter()
                .find(|f| option(f).is_some_and(|o| !o.labs.ssh))
            {
                return Err(Problem::QemuOnly(*f));
            }
            if ssh.lab_file.as_os_str().is_empty() {
                return Err(Problem::NeedsLabFile);
            }
        }
        let net = topology::named_with(&self.topology, self.routers).map_err(|e| {
            let field = if self.topology.is_known() {
                Field::Routers
            } else {
                Field::Topology
            };
            Problem::Topology(field, e.to_string())
        })?;
        if let Some(mtu) = self.count(Field::Mtu) {
            net.clone()
                .with_mtu(mtu)
                .check()
                .map_err(|e| Problem::Topology(Field::Mtu, e.to_string()))?;
        }
        let tbench = matches!(self.workload, WorkloadSpec::Tbench { .. });
        if tbench && self.cache_model {
            return Err(Problem::ForwardsNothing {
                topology: net.name.clone(),
            });
        }
        for f in &given {
            match option(f).map(|o| o.shapes) {
                Some(Shapes::Forwarding) if tbench => return Err(Problem::ForwardingOnly(*f)),
                Some(Shapes::Tbench) if !tbench => return Err(Problem::TbenchOnly(*f)),
                _ => {}
            }
        }
        for f in [Field::Runs, Field::Duration].iter().chain(&given) {
            if let (Some(c), Some(v)) = (f.count(), self.count(*f)) {
                if !(c.min..=c.max).contains(&v) {
                    return Err(Problem::OutOfRange(*f, v));
                }
            }
        }
        if given.contains(&Field::Mss) && given.contains(&Field::Udp) {
            return Err(Problem::Conflict(Field::Mss, Field::Udp));
        }
        let endpoints: Vec<String> = net.endpoints.iter().map(|e| e.name.clone()).collect();
        let guests: Vec<String> = net.guests.iter().map(|g| g.name.clone()).collect();
        let missing = workload::missing_places(self.workload.places(), (&endpoints, &guests));
        if !missing.is_empty() {
            return Err(Problem::MissingPlaces {
                workload: self.describe_workload(),
                missing,
                topology: net.name,
                endpoints,
                guests,
            });
        }
        // What the QEMU lab runs: iperf3 from the topology's first
        // endpoint to its second (`-R` for the other direction), and
        // tbench inside the loopback topology's one guest.
        let runnable = match &self.workload {
            WorkloadSpec::Iperf3 { from, to } => {
                net.name != Name::Loopback
                    && endpoints.len() >= 2
                    && from == &endpoints[0]
                    && to == &endpoints[1]
            }
            WorkloadSpec::Tbench { guest } => {
                net.name == Name::Loopback && guest == topology::loopback::GUEST
            }
        };
        if !runnable {
            return Err(Problem::NotRunnable {
                topology: net.name,
                workload: self.describe_workload(),
            });
        }
        Ok(())
    }
}

/// The machine that runs the kernels (`--lab`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Machine {
    /// The QEMU machine of the target's `[lab]` table (`--lab qemu`).
    Qemu,
    /// A real router over SSH (`--lab ssh://root@HOST --lab-file FILE`).
    Ssh(SshRequest),
}

impl Machine {
    /// From `--lab` (`qemu`, `ssh` or `ssh://[USER@]HOST[:PORT]`),
    /// `--lab-file` and `--no-flash` ([`Flash::NotFlashed`]); the lab file
    /// and `--no-flash` belong to SSH only. Without `--lab-file` the SSH
    /// machine's lab file is empty, which [`LabRequest::check`] refuses.
    pub fn from_args(lab: &str, lab_file: Option<&Path>, flash: Flash) -> Result<Machine> {
        if lab == "qemu" {
            if lab_file.is_some() || flash == Flash::NotFlashed {
                bail!("--lab-file and --no-flash are for a real router (--lab ssh://root@HOST)");
            }
            return Ok(Machine::Qemu);
        }
        let destination = match lab {
            "ssh" => None,
            _ if lab.starts_with("ssh://") => {
                Some(crate::inputs::ssh_lab::Destination::parse(lab)?)
            }
            _ => bail!(
                "--lab {lab:?}: use qemu, ssh://[USER@]HOST[:PORT] for a real router, or host"
            ),
        };
        Ok(Machine::Ssh(SshRequest {
            destination,
            lab_file: lab_file.map(Path::to_path_buf).unwrap_or_default(),
            flash,
        }))
    }
}

/// What `--lab ssh…` asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SshRequest {
    /// The destination `--lab ssh://…` named, if it named one.
    pub destination: Option<Destination>,
    /// `--lab-file`.
    pub lab_file: PathBuf,
    /// Whether to flash each arm's image (`--no-flash`: not).
    pub flash: Flash,
}

#[cfg(test)]
#[path = "request_tests.rs"]
mod tests;
