//! The runtime lab: `cargo xtask lab --target T --variant V...`.
//!
//! Every kind of lab runs one flow ([`orchestrate`]: resolve → plan →
//! record → run) over a [`backend::Backend`] that brings up one arm at a
//! time as a [`backend::Testbed`], on which a [`workload::Workload`] runs
//! each run of the schedule ([`runner`]).
//!
//! * QEMU ([`qemu_lab`]): each variant's router kernel is built for a QEMU
//!   machine of the target's ISA ([`kernel`]) and booted with a Debian
//!   initramfs ([`rootfs`]; for a guest Debian has no port of, built from
//!   Debian's sources: [`static_guest`]) on a [`topology`] — data: guests,
//!   endpoints, links — whose network the lab's one owner of namespaces
//!   and taps makes ([`net`]) and whose guests [`session`] boots. The
//!   default topology, `nat-router`, is `lan` — tap — guest — tap —
//!   `wan`, measured with iperf3 through the guest's nftables masquerade
//!   ([`forwarding`]).
//! * `--lab ssh://root@HOST` measures a real router instead ([`ssh`]):
//!   each variant's image is flashed with `sysupgrade -n`, and the same
//!   workload runs through the router between two endpoints on this
//!   machine.
//! * `--lab host` measures this machine's kernel with runtime settings
//!   instead ([`host`]): tbench and iperf3 over a private namespace's
//!   loopback.
//!
//! `--cache-model` loads the lab's L1 cache model into every QEMU boot
//! ([`cache_model`]): instructions and modelled L1 misses per forwarded
//! packet, counted over each run's traffic, and on a target with
//! `[lab.timing]` the core model's cycles, packets/s and Mbit/s at the
//! SoC's clock; `--known-answers` checks that model on guest programs
//! ([`known_answer`]).
//!
//! `cargo xtask bench lab` ([`bench`]) times the lab itself: boot to
//! ready, and each run's wall time beyond its iperf3 duration.

pub mod apt;
pub mod backend;
pub mod bench;
pub mod cache_model;
pub mod console;
pub mod cpio;
pub mod firewall4;
pub mod forwarding;
pub mod guest;
pub mod guest_tbench;
pub mod host;
pub mod iperf;
pub mod kernel;
pub mod known_answer;
pub mod net;
pub mod orchestrate;
pub mod process;
pub mod qemu;
pub mod qemu_lab;
pub mod record;
pub mod rootfs;
pub mod runner;
pub mod sample;
pub mod session;
pub mod ssh;
pub mod static_guest;
pub mod steering;
pub mod topology;
pub mod workload;

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use xshell::Shell;

use crate::build::toolchain::find_in_path;
use crate::build::BuildOptions;
use crate::inputs::variants;
use crate::util::layout::Layout;

pub use crate::inputs::lab::LabSpec;
pub use crate::results::lab::Flash;
pub use orchestrate::create_run_dir;

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
    pub fn settings(self) -> Vec<record::Gro> {
        match self {
            GroChoice::On => vec![record::Gro::On],
            GroChoice::Off => vec![record::Gro::Off],
            GroChoice::Both => record::Gro::BOTH.to_vec(),
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
    pub fn directions(self) -> Vec<record::Direction> {
        match self {
            DirectionChoice::LanToWan => vec![record::Direction::LanToWan],
            DirectionChoice::WanToLan => vec![record::Direction::WanToLan],
            DirectionChoice::Both => record::Direction::BOTH.to_vec(),
        }
    }
}

/// What `cargo xtask lab` was asked to do.
#[derive(Debug, Clone)]
pub struct LabRequest {
    /// `--target` spelling.
    pub target: String,
    /// `--variant` names; empty means baseline. The first is the base.
    pub variants: Vec<String>,
    /// Measured runs per (arm, direction, GRO setting).
    pub runs: u32,
    /// Length of one iperf3 run, in seconds.
    pub duration_seconds: u32,
    /// GRO settings to measure.
    pub gro: GroChoice,
    /// Directions to measure.
    pub direction: DirectionChoice,
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
    /// builds its target for the QEMU machine ([`openwrt`]); QEMU only.
    pub openwrt: Option<PathBuf>,
    /// The guest's NIC model instead of the `[lab]` table's (`--nic`;
    /// QEMU only): one of its `other_nics`.
    pub nic: Option<String>,
    /// The QEMU lab's topology by name (`--topology`; [`topology::NAMES`]):
    /// `nat-router` (forwarding), `loopback` (tbench inside the guest), or
    /// `mesh`, which adds the reference arm `<base>~mesh-bridged` (the
    /// routers without batman-adv).
    pub topology: String,
    /// tbench's clients in the `loopback` topology (`--clients`).
    pub tbench_clients: u32,
    /// iperf3's streams and MSS (`--parallel`, `--set-mss`).
    pub iperf: crate::results::lab::IperfOptions,
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
    /// ([`orchestrate::Start::Resume`]) instead of starting a new one.
    pub resume: Option<PathBuf>,
}

impl LabRequest {
    /// A QEMU lab of `target` with the command line's defaults: the
    /// baseline against itself with the A/A control, 5 runs of 10 s both
    /// ways with GRO on and off, on the `nat-router` topology, the target
    /// file's machine; callers change what they need
    /// (`LabRequest { runs: 2, ..LabRequest::qemu("brcm47xx") }`).
    pub fn qemu(target: &str) -> LabRequest {
        LabRequest {
            target: target.to_string(),
            variants: Vec::new(),
            runs: 5,
            duration_seconds: 10,
            gro: GroChoice::Both,
            direction: DirectionChoice::Both,
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
            topology: topology::nat_router::NAME.to_string(),
            tbench_clients: 2,
            iperf: Default::default(),
            labs_at_once: 1,
            routers: None,
            cpus: None,
            packet_steering: None,
            resume: None,
        }
    }

    /// Whether the base runs a second time as the A/A control arm.
    pub fn control(&self) -> orchestrate::Control {
        if self.control {
            orchestrate::Control::Twin
        } else {
            orchestrate::Control::Without
        }
    }
}

/// The machine that runs the kernels (`--lab`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Machine {
    /// The QEMU machine of the target's `[lab]` table (`--lab qemu`).
    Qemu,
    /// A real router over SSH (`--lab ssh://root@HOST --lab-file FILE`).
    Ssh(ssh::SshRequest),
}

impl Machine {
    /// From `--lab` (`qemu`, `ssh` or `ssh://[USER@]HOST[:PORT]`),
    /// `--lab-file` and `--no-flash` ([`Flash::NotFlashed`]); the lab file
    /// and `--no-flash` belong to SSH only.
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
        let lab_file = lab_file
            .context("--lab ssh needs --lab-file FILE (the router's interfaces, the endpoints, the images)")?
            .to_path_buf();
        Ok(Machine::Ssh(ssh::SshRequest {
            destination,
            lab_file,
            flash,
        }))
    }
}

/// Host programs the lab runs, with their Debian packages (the target's
/// QEMU comes from its `[lab]` table).
pub const HOST_TOOLS: &[(&str, &str)] = &[
    ("iperf3", "iperf3"),
    ("ip", "iproute2"),
    ("ethtool", "ethtool"),
    ("apt-get", "apt"),
    ("dpkg-deb", "dpkg"),
];

/// Debian packages the lab needs on the host for `spec` (QEMU, iperf3,
/// iproute2, ethtool, nftables; a static guest's cross compiler, static
/// C library and build tools), and openssh-client for a real router
/// over SSH (`--lab ssh://…`).
pub fn host_packages(spec: &LabSpec) -> Vec<String> {
    let mut p: Vec<String> = HOST_TOOLS.iter().map(|(_, p)| p.to_string()).collect();
    p.push("nftables".to_string());
    p.push(spec.qemu_package.clone());
    if spec.l1.is_some() {
        p.extend(cache_model::host_packages());
    }
    if let Some(g) = &spec.static_guest {
        p.extend(static_guest::host_packages(g));
    }
    p.extend(ssh::HOST_TOOLS.iter().map(|(_, p)| p.to_string()));
    p.sort();
    p.dedup();
    p
}

/// Fails naming every missing host program and the packages to install.
pub fn check_host_tools(spec: &LabSpec) -> Result<()> {
    let mut tools: Vec<(&str, &str)> = HOST_TOOLS.to_vec();
    tools.push((&spec.qemu, &spec.qemu_package));
    require_tools("the lab", &tools)
}

/// Fails when a program of `tools` (program, Debian package) is not on
/// `PATH`, naming every missing one and the `apt-get install` that adds
/// them; `who` begins the message ("the SSH lab").
pub fn require_tools(who: &str, tools: &[(&str, &str)]) -> Result<()> {
    let missing: Vec<&(&str, &str)> = tools
        .iter()
        .filter(|(t, _)| find_in_path(t).is_none())
        .collect();
    if !missing.is_empty() {
        let names: Vec<&str> = missing.iter().map(|(t, _)| *t).collect();
        let mut packages: Vec<&str> = missing.iter().map(|(_, p)| *p).collect();
        packages.sort_unstable();
        packages.dedup();
        bail!(
            "{who} needs {} on this machine: run `apt-get install {}` (or `cargo xtask setup`)",
            names.join(", "),
            packages.join(" ")
        );
    }
    Ok(())
}

/// `names` selected from `patches/variants.toml` (baseline when empty),
/// in order; [`variants::select`] drops repeats.
pub fn chosen_variants(layout: &Layout, names: &[String]) -> Result<Vec<variants::Variant>> {
    let all = variants::load(&layout.variants_file(), &layout.patches_dir())?;
    let names = if names.is_empty() {
        vec![variants::BASELINE.to_string()]
    } else {
        names.to_vec()
    };
    variants::select(&all, &names)
}

/// `cargo xtask lab`: [`run`], then the path of the results.
pub fn command(sh: &Shell, layout: &Layout, request: &LabRequest) -> Result<()> {
    if let Some(dir) = run(sh, layout, request)? {
        println!("lab results: {}", dir.join("lab.json").display());
    }
    Ok(())
}

/// Runs the lab as `request` says ([`orchestrate::run`] of the QEMU or
/// SSH lab's plan and backend); returns the lab directory (with
/// `lab.json`), or `None` with `build_only`.
pub fn run(sh: &Shell, layout: &Layout, request: &LabRequest) -> Result<Option<PathBuf>> {
    let mode = if request.build_only {
        orchestrate::Mode::PrepareOnly
    } else {
        orchestrate::Mode::Run
    };
    let start = match &request.resume {
        Some(_) if request.build_only => {
            bail!("--resume continues a lab's runs; --build-only runs none: leave one out")
        }
        Some(dir) => orchestrate::Start::Resume(dir.clone()),
        None => orchestrate::Start::New,
    };
    match &request.machine {
        Machine::Ssh(ssh) => {
            if request.cache_model {
                bail!("--cache-model simulates caches in QEMU: a real router over SSH has its own (use --lab qemu)");
            }
            if request.build_only {
                bail!("--build-only builds QEMU lab kernels; build a router's kernels with `cargo xtask build`");
            }
            if let Some(n) = request.routers {
                bail!("--routers {n} chains QEMU guests in the mesh: a real router over SSH is the lab file's network (use --lab qemu)");
            }
            if request.topology != topology::nat_router::NAME {
                bail!("--topology {} boots QEMU guests: a real router over SSH is the lab file's network (use --lab qemu)", request.topology);
            }
            request.iperf.check()?;
            if request.openwrt.is_some() {
                bail!("--openwrt builds QEMU lab kernels as OpenWrt builds its QEMU targets; a real router over SSH runs the images its lab file names (build them with `cargo xtask build --openwrt`)");
            }
            if request.nic.is_some() {
                bail!("--nic picks the QEMU guest's NIC: a real router over SSH has its own (use --lab qemu)");
            }
            if request.cpus.is_some() || request.packet_steering.is_some() {
                bail!("--cpus and --packet-steering shape the QEMU machine: a real router over SSH has its own CPUs and runs its own steering (use --lab qemu)");
            }
            if request.topology != topology::nat_router::NAME {
                bail!("--topology {} boots QEMU guests: a real router over SSH is the lab file's network (use --lab qemu)", request.topology);
            }
            let (plan, mut backend) = ssh::resolve(layout, request, ssh)?;
            orchestrate::run_from(layout, &plan, &mut backend, mode, start)
        }
        Machine::Qemu => {
            // OpenWrt mode's lab kernels and runs live apart from the
            // default mode's, where `size-report --openwrt` finds them.
            let openwrt_layout = request.openwrt.as_ref().map(|_| layout.openwrt_mode());
            let runs_layout = openwrt_layout.as_ref().unwrap_or(layout);
            let (plan, mut backend) = qemu_lab::resolve((sh, layout), request)?;
            orchestrate::run_from(runs_layout, &plan, &mut backend, mode, start)
        }
    }
}
