//! The QEMU router lab: `cargo xtask lab --target T --variant V...`.
//!
//! Each variant's router kernel is built for a QEMU machine of the target's
//! ISA ([`kernel`]), booted with a Debian initramfs ([`rootfs`]; for a
//! guest Debian has no port of, built from Debian's sources:
//! [`static_guest`]) between two network namespaces (`lan` — tap — guest
//! — tap — `wan`, [`topology`]), and measured with iperf3 through the
//! guest's nftables masquerade.
//!
//! `--lab ssh://root@HOST` measures a real router instead ([`ssh`]): each
//! variant's image is flashed with `sysupgrade -n`, and the same plan
//! ([`runner`]) runs through the router between two endpoints on this
//! machine. [`router`] is the seam both machines implement.
//!
//! `--cache-model` loads the lab's L1 cache model into every QEMU boot
//! ([`cache_model`]): instructions and modelled L1 misses per forwarded
//! packet, counted over each run's traffic.
//!
//! `--lab host` measures this machine's kernel with runtime settings
//! instead ([`host`]). Both kinds of lab are a [`runner::SystemUnderTest`]
//! to the one schedule in [`runner`]: forwarding through a router
//! ([`forwarding`], over a [`router::Bench`]) and the host's own
//! benchmarks.
//!
//! `cargo xtask bench lab` ([`bench`]) times the lab itself: boot to
//! ready, and each run's wall time beyond its iperf3 duration.

pub mod apt;
pub mod bench;
pub mod cache_model;
pub mod console;
pub mod cpio;
pub mod firewall4;
pub mod forwarding;
pub mod guest;
pub mod host;
pub mod iperf;
pub mod kernel;
pub mod process;
pub mod qemu;
pub mod record;
pub mod rootfs;
pub mod router;
pub mod runner;
pub mod sample;
pub mod session;
pub mod ssh;
pub mod static_guest;
pub mod topology;

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use xshell::{cmd, Shell};

use crate::build::toolchain::find_in_path;
use crate::build::BuildOptions;
use crate::inputs::{targets, variants};
use crate::results;
use crate::util::layout::Layout;

pub use crate::inputs::lab::LabSpec;
pub use crate::results::lab::Flash;

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
    /// The settings, `true` meaning GRO on.
    pub fn settings(self) -> Vec<bool> {
        match self {
            GroChoice::On => vec![true],
            GroChoice::Off => vec![false],
            GroChoice::Both => vec![true, false],
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

/// Creates `target/xtask/lab/<target>/<started>-<pid>/`, where one lab
/// run writes `lab.json` and its logs (the size report looks there).
pub fn create_run_dir(layout: &Layout, target: &str, started: &str) -> Result<PathBuf> {
    let dir = layout.work_dir().join("lab").join(target).join(format!(
        "{}-{}",
        started.replace([':', '-'], ""),
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    Ok(dir)
}

/// `cargo xtask lab`: [`run`], then the path of the results.
pub fn command(sh: &Shell, layout: &Layout, request: &LabRequest) -> Result<()> {
    if let Some(dir) = run(sh, layout, request)? {
        println!("lab results: {}", dir.join("lab.json").display());
    }
    Ok(())
}

/// Runs the lab as `request` says; returns the lab directory (with
/// `lab.json`), or `None` with `build_only`.
pub fn run(sh: &Shell, layout: &Layout, request: &LabRequest) -> Result<Option<PathBuf>> {
    if let Machine::Ssh(ssh) = &request.machine {
        if request.cache_model {
            bail!("--cache-model simulates caches in QEMU: a real router over SSH has its own (use --lab qemu)");
        }
        if request.openwrt.is_some() {
            bail!("--openwrt builds QEMU lab kernels as OpenWrt builds its QEMU targets; a real router over SSH runs the images its lab file names (build them with `cargo xtask build --openwrt`)");
        }
        return ssh::run(layout, request, ssh);
    }
    // OpenWrt mode's lab kernels and runs live apart from the default
    // mode's, where `size-report --openwrt` finds them.
    let openwrt_layout = request.openwrt.as_ref().map(|_| layout.openwrt_mode());
    let runs_layout = openwrt_layout.as_ref().unwrap_or(layout);
    let all_targets = targets::load_all(&layout.targets_dir())?;
    let target = targets::select(&all_targets, std::slice::from_ref(&request.target))?.remove(0);
    let spec = kernel::spec_of(&target)?.clone();
    let all_variants = variants::load(&layout.variants_file(), &layout.patches_dir())?;
    let names = if request.variants.is_empty() {
        vec![variants::BASELINE.to_string()]
    } else {
        request.variants.clone()
    };
    let chosen = variants::select(&all_variants, &names)?;
    anyhow::ensure!(
        request.runs >= 1 && request.duration_seconds >= 1,
        "--runs and --duration must be at least 1"
    );
    check_host_tools(&spec)?;
    rootfs::check(&spec)
        .with_context(|| format!("the lab cannot make {}'s guest userspace", target.name))?;
    let model = if request.cache_model {
        Some(cache_model::prepare(layout, &target, &spec)?)
    } else {
        None
    };
    if let Some(m) = &model {
        eprintln!(
            "lab: cache model {} (I: {}; D: {}, from {})",
            m.plugin.display(),
            m.info.icache.describe(),
            m.info.dcache.describe(),
            m.info.geometry_from
        );
    }
    topology::start_clean("lab")?;
    let lab_name = kernel::lab_target(&target)?.name;
    let missing: Vec<&str> = chosen
        .iter()
        .filter(|v| {
            !runs_layout
                .results_dir(&lab_name, &v.name)
                .join(results::FILE_NAME)
                .is_file()
        })
        .map(|v| v.name.as_str())
        .collect();
    if !missing.is_empty() {
        eprintln!(
            "lab: no {lab_name} kernel yet for {}: building (a router kernel, 10–25 minutes each on 2 cores; Ctrl-C stops it)",
            missing.join(", ")
        );
    }
    let kernels = kernel::build_all(
        sh,
        runs_layout,
        &target,
        &chosen,
        request.build.clone(),
        request.kernel_src.clone(),
        request.openwrt.as_deref(),
    )?;
    let ruleset = match &request.openwrt {
        Some(_) => firewall4::Ruleset::Firewall4,
        None => firewall4::Ruleset::Lab,
    };
    let initramfs = rootfs::prepare_with(layout, &spec, ruleset)?;
    for k in &kernels {
        eprintln!("lab: kernel {}: {}", k.variant.name, k.image.display());
    }
    eprintln!(
        "lab: initramfs {} ({} bytes)",
        initramfs.path.display(),
        initramfs.size
    );
    if request.build_only {
        return Ok(None);
    }
    let started = results::now_rfc3339();
    let dir = create_run_dir(runs_layout, &target.name, &started)?;
    let prepared = Prepared {
        target: &target,
        spec: &spec,
        kernels: &kernels,
        initramfs: &initramfs,
        model: model.as_ref(),
    };
    measure_qemu(sh, &prepared, request, &dir, started)?;
    Ok(Some(dir))
}

/// What a QEMU lab boots, ready: the target, its `[lab]` table, the lab
/// kernels, the guest's initramfs and the cache model.
pub struct Prepared<'a> {
    /// The target (its lab kernels' results are `<target>-lab`).
    pub target: &'a targets::Target,
    /// The target's `[lab]` table.
    pub spec: &'a LabSpec,
    /// The arms' kernels, the base's first.
    pub kernels: &'a [kernel::LabKernel],
    /// The guest's userspace.
    pub initramfs: &'a rootfs::Initramfs,
    /// The cache model every boot loads (`--cache-model`).
    pub model: Option<&'a cache_model::CacheModel>,
}

/// Boots and measures `prepared`'s kernels as `request` plans it
/// ([`runner::execute`]), `lab.json` and the logs in `dir` (which exists);
/// `started` is the lab's start (RFC 3339).
pub fn measure_qemu(
    sh: &Shell,
    prepared: &Prepared<'_>,
    request: &LabRequest,
    dir: &Path,
    started: String,
) -> Result<()> {
    let Prepared {
        target,
        spec,
        kernels,
        initramfs,
        model,
    } = *prepared;
    let qemu_bin = &spec.qemu;
    let version = cmd!(sh, "{qemu_bin} --version")
        .quiet()
        .read()
        .with_context(|| format!("running {qemu_bin} --version"))?;
    let plan = forwarding::plan(request);
    let arms = forwarding::arms(kernels)?;
    let arms = if request.control {
        runner::with_control(arms)
    } else {
        arms
    };
    let base = &kernels
        .first()
        .context("the lab has no kernel to boot")?
        .variant
        .name;
    let mut lab = record::LabRecord {
        schema: record::SCHEMA,
        status: "running".to_string(),
        target: target.name.clone(),
        lab_target: kernel::lab_target(target)?.name,
        started,
        finished: None,
        settings: forwarding::settings(request, base),
        qemu: Some(record::QemuInfo {
            binary: spec.qemu.clone(),
            version: version.lines().next().unwrap_or_default().to_string(),
            machine: spec.machine.clone(),
            cpu: spec.cpu.clone(),
            smp: spec.smp,
            icount: qemu::ICOUNT.to_string(),
            append: qemu::kernel_cmdline(spec),
        }),
        initramfs: Some(initramfs.clone()),
        router: None,
        host: None,
        cache_model: model.map(|m| m.info.clone()),
        arms,
        boots: Vec::new(),
        runs: Vec::new(),
    };
    lab.write(dir)?;
    eprintln!("lab: writing {}", dir.join(record::FILE_NAME).display());
    let mut bench = session::QemuBench {
        spec,
        initramfs,
        kernels,
        cache_model: model,
    };
    let mut system = forwarding::Forwarding { bench: &mut bench };
    runner::execute(&mut system, &plan, &mut lab, dir)
        .with_context(|| format!("the lab stopped; what it measured is in {}", dir.display()))
}
