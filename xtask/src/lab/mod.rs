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
pub mod cache_model;
pub mod console;
pub mod cpio;
pub mod firewall4;
pub mod forwarding;
pub mod guest;
pub mod guest_tbench;
pub mod host_lab;
pub mod host_tools;
pub mod iperf;
pub mod kernel;
pub mod known_answer;
pub mod net;
pub mod orchestrate;
pub mod process;
pub mod qemu;
pub mod qemu_lab;
pub mod request;
pub mod rootfs;
pub mod runner;
pub mod sample;
pub mod session;
pub mod ssh;
pub mod static_guest;
pub mod steering;
pub mod topology;
pub mod variants;
pub mod workload;

use std::path::PathBuf;

use anyhow::{bail, Result};
use xshell::Shell;

use crate::util::layout::Layout;

pub use crate::inputs::lab::LabSpec;
pub use crate::results::lab::Flash;
pub use host_tools::{check_host_tools, require_tools, HOST_TOOLS};
pub use orchestrate::create_run_dir;
pub use request::{
    DirectionChoice, Field, GroChoice, LabRequest, Machine, Problem, WorkloadSpec, OPTIONS,
};
pub use variants::chosen_variants;

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

/// `cargo xtask lab`: [`run`], then the path of the results.
pub fn command(sh: &Shell, layout: &Layout, request: &LabRequest) -> Result<()> {
    if let Some(dir) = run(sh, layout, request)? {
        println!("lab results: {}", dir.join("lab.json").display());
    }
    Ok(())
}

/// Runs the lab as `request` says ([`orchestrate::run_from`] of the QEMU
/// or SSH lab's plan and backend, a new lab or the one `--resume` names);
/// returns the lab directory (with
/// `lab.json`), or `None` with `build_only`.
pub fn run(sh: &Shell, layout: &Layout, request: &LabRequest) -> Result<Option<PathBuf>> {
    let mode = if request.build_only {
        orchestrate::Mode::PrepareOnly
    } else {
        orchestrate::Mode::Run
    };
    request.check()?;
    let start = match &request.resume {
        Some(_) if request.build_only => {
            bail!("--resume continues a lab's runs; --build-only runs none: leave one out")
        }
        Some(dir) if !dir.join(crate::results::lab::FILE_NAME).is_file() => bail!(
            "--resume {}: no {} there; pass the directory a stopped lab's error names (target/xtask/lab/<target>/<run>)",
            dir.display(),
            crate::results::lab::FILE_NAME
        ),
        Some(dir) => orchestrate::Start::Resume(dir.clone()),
        None => orchestrate::Start::New,
    };
    match &request.machine {
        Machine::Ssh(ssh) => {
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
