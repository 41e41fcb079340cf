//! The QEMU router lab: `cargo xtask lab --target T --variant V...`.
//!
//! Each variant's router kernel is built for a QEMU machine of the target's
//! ISA ([`kernel`]), booted with a Debian initramfs ([`rootfs`]) between two
//! network namespaces (`lan` — tap — guest — tap — `wan`, [`topology`]),
//! and measured with iperf3 through the guest's nftables masquerade.

pub mod console;
pub mod cpio;
pub mod emulated;
pub mod guest;
pub mod host;
pub mod kernel;
pub mod process;
pub mod qemu;
pub mod record;
pub mod rootfs;
pub mod runner;
pub mod sample;
pub mod session;

pub mod topology;

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use xshell::{cmd, Shell};

use crate::build::toolchain::find_in_path;
use crate::build::BuildOptions;
use crate::inputs::{targets, variants};
use crate::results;
use crate::util::layout::Layout;

pub use crate::inputs::lab::LabSpec;

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
    /// Whether the base runs a second time as an A/A control arm.
    pub control: bool,
    /// Stop after building kernels and the initramfs.
    pub build_only: bool,
    /// Build options for the lab kernels.
    pub build: BuildOptions,
    /// `--kernel-src`.
    pub kernel_src: Option<PathBuf>,
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
/// iproute2, ethtool, nftables).
pub fn host_packages(spec: &LabSpec) -> Vec<String> {
    let mut p: Vec<String> = HOST_TOOLS.iter().map(|(_, p)| p.to_string()).collect();
    p.push("nftables".to_string());
    p.push(spec.qemu_package.clone());
    p
}

/// Fails naming every missing host program and the packages to install.
pub fn check_host_tools(spec: &LabSpec) -> Result<()> {
    let mut tools: Vec<(&str, &str)> = HOST_TOOLS.to_vec();
    tools.push((&spec.qemu, &spec.qemu_package));
    let missing: Vec<(&str, &str)> = tools
        .into_iter()
        .filter(|(t, _)| find_in_path(t).is_none())
        .collect();
    if !missing.is_empty() {
        let names: Vec<&str> = missing.iter().map(|(t, _)| *t).collect();
        let packages: Vec<&str> = missing.iter().map(|(_, p)| *p).collect();
        bail!(
            "the lab needs {} on the host: run `apt-get install {}` (or `cargo xtask setup`)",
            names.join(", "),
            packages.join(" ")
        );
    }
    Ok(())
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
    rootfs::check_arch(&spec.guest_arch)
        .with_context(|| format!("the lab cannot run {} yet", target.name))?;
    process::install_interrupt_handler();
    let stale = topology::remove_stale()?;
    if !stale.is_empty() {
        eprintln!(
            "lab: removed what an interrupted lab left: {}",
            stale.join(", ")
        );
    }
    let kernels = kernel::build_all(
        sh,
        layout,
        &target,
        &chosen,
        request.build.clone(),
        request.kernel_src.clone(),
    )?;
    let initramfs = rootfs::prepare(layout, &spec.guest_arch)?;
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
    let qemu_bin = &spec.qemu;
    let version = cmd!(sh, "{qemu_bin} --version")
        .quiet()
        .read()
        .with_context(|| format!("running {qemu_bin} --version"))?;
    let started = results::now_rfc3339();
    let dir = layout
        .work_dir()
        .join("lab")
        .join(&target.name)
        .join(format!(
            "{}-{}",
            started.replace([':', '-'], ""),
            std::process::id()
        ));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    // Each direction with each GRO setting, as the lab always ran them.
    let conditions: Vec<record::Condition> = record::Direction::BOTH
        .into_iter()
        .flat_map(|direction| {
            request
                .gro
                .settings()
                .into_iter()
                .map(move |gro| record::Condition::Forward { direction, gro })
        })
        .collect();
    let plan = runner::Plan {
        runs: request.runs,
        duration_seconds: request.duration_seconds,
        warmup: record::Condition::Forward {
            direction: record::Direction::LanToWan,
            gro: request.gro.settings()[0],
        },
        conditions,
    };
    let arms = runner::with_control(emulated::arms(&kernels)?, request.control);
    let mut lab = record::LabRecord {
        schema: record::SCHEMA,
        status: "running".to_string(),
        target: target.name.clone(),
        lab_target: kernel::lab_target(&target)?.name,
        started,
        finished: None,
        settings: record::Settings {
            runs: plan.runs,
            duration_seconds: plan.duration_seconds,
            gro: request.gro.settings(),
            directions: record::Direction::BOTH.to_vec(),
            warmup_runs_per_boot: 1,
            base: chosen[0].name.clone(),
            control: request.control,
            benches: Vec::new(),
        },
        qemu: Some(record::QemuInfo {
            binary: spec.qemu.clone(),
            version: version.lines().next().unwrap_or_default().to_string(),
            machine: spec.machine.clone(),
            cpu: spec.cpu.clone(),
            smp: spec.smp,
            icount: qemu::ICOUNT.to_string(),
            append: qemu::kernel_cmdline(&spec),
        }),
        initramfs: Some(initramfs.clone()),
        host: None,
        arms,
        boots: Vec::new(),
        runs: Vec::new(),
    };
    lab.write(&dir)?;
    eprintln!("lab: writing {}", dir.join(record::FILE_NAME).display());
    let mut system = emulated::Emulated {
        spec: &spec,
        initramfs: &initramfs,
        kernels: &kernels,
    };
    runner::execute(&mut system, &plan, &mut lab, &dir)
        .with_context(|| format!("the lab stopped; what it measured is in {}", dir.display()))?;
    Ok(Some(dir))
}
