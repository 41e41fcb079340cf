//! QEMU as the lab's [`SystemUnderTest`]: each session boots an arm's
//! lab kernel between two namespaces ([`Guest`]); each run is iperf3
//! through its masquerade in one direction with GRO on or off, giving
//! Mbit/s and the guest's CPU time per forwarded packet (ns/packet).

use std::path::Path;

use anyhow::{bail, Context, Result};

use super::guest::GUEST_WAN_IP;
use super::kernel::LabKernel;
use super::record::{
    Arm, BootRecord, Condition, Metric, RunRecord, CPU_PER_PACKET, MBIT_PER_S, NS_PER_PACKET,
    THROUGHPUT,
};
use super::rootfs::Initramfs;
use super::runner::{round_to, RunSpec, SystemUnderTest};
use super::sample::{iperf_peer, iperf_summary, GuestWork};
use super::session::Guest;
use crate::inputs::lab::LabSpec;
use crate::results::lab::{ArmKernel, GuestRun};
use crate::results::now_rfc3339;
use crate::util::hash::sha256_file;

/// The QEMU machine of a target's `[lab]` table with its lab kernels.
pub struct Emulated<'a> {
    /// The target's `[lab]` table.
    pub spec: &'a LabSpec,
    /// The guest's userspace.
    pub initramfs: &'a Initramfs,
    /// Each variant's lab kernel.
    pub kernels: &'a [LabKernel],
}

/// The arms of `kernels`, in order: each kernel's variant with its image.
pub fn arms(kernels: &[LabKernel]) -> Result<Vec<Arm>> {
    kernels
        .iter()
        .map(|k| {
            Ok(Arm {
                name: k.variant.name.clone(),
                variant: k.variant.name.clone(),
                control: false,
                kernel: Some(ArmKernel {
                    results_dir: k.image.parent().map(Path::to_path_buf).unwrap_or_default(),
                    image: k.image.clone(),
                    image_sha256: sha256_file(&k.image)?,
                    config_sha256: k.result.config_sha256.clone(),
                    vmlinux_text: k.result.vmlinux_sections.text,
                }),
                runtime: None,
            })
        })
        .collect()
}

impl SystemUnderTest for Emulated<'_> {
    type Session = Guest;

    fn start(&mut self, arm: &Arm, round: u32, dir: &Path) -> Result<(Guest, Option<BootRecord>)> {
        let kernel = self
            .kernels
            .iter()
            .find(|k| k.variant.name == arm.variant)
            .with_context(|| format!("no lab kernel for arm {}", arm.name))?;
        let tag = format!("r{round}-{}", arm.name.replace('~', "-"));
        let console_log = format!("console-{tag}.log");
        let guest = Guest::boot(
            self.spec,
            (&kernel.image, kernel.dtb.as_deref()),
            &self.initramfs.path,
            &dir.join(&console_log),
            &dir.join(format!("qemu-{tag}.log")),
        )?;
        let boot = BootRecord {
            arm: arm.name.clone(),
            round,
            boot_seconds: round_to(guest.boot_seconds, 3),
            guest_uptime_at_ready: guest.uptime_at_ready,
            console_log,
            qemu_argv: guest.qemu_argv.clone(),
        };
        Ok((guest, Some(boot)))
    }

    fn measure(&mut self, guest: &mut Guest, run: RunSpec<'_>, dir: &Path) -> Result<RunRecord> {
        let Condition::Forward { direction, gro } = run.condition else {
            bail!(
                "the QEMU lab measures forwarding, not {}",
                run.condition.describe()
            );
        };
        guest.set_gro(gro)?;
        let started = now_rfc3339();
        let prefix = format!("run{:03}", run.index);
        let out = guest.iperf(direction, run.seconds, dir, &prefix)?;
        let summary = iperf_summary(&out.client)?;
        let peer = iperf_peer(&out.server);
        if peer.as_deref() != Some(GUEST_WAN_IP) {
            bail!(
                "the WAN side saw the client as {peer:?}, not as the router's {GUEST_WAN_IP}: \
                 the masquerade did not happen\n{}",
                guest.console_tail()
            );
        }
        let work = GuestWork::between(&out.before, &out.after);
        let mut metrics = vec![Metric {
            name: THROUGHPUT.to_string(),
            value: round_to(summary.mbit_per_s, 3),
            unit: MBIT_PER_S.to_string(),
        }];
        if let Some(ns) = work.ns_per_packet {
            metrics.push(Metric {
                name: CPU_PER_PACKET.to_string(),
                value: round_to(ns, 1),
                unit: NS_PER_PACKET.to_string(),
            });
        }
        Ok(RunRecord {
            index: run.index,
            arm: run.arm.name.clone(),
            variant: run.arm.variant.clone(),
            round: run.round,
            condition: run.condition,
            warmup: run.warmup,
            started,
            metrics,
            guest: Some(GuestRun {
                guest_before: out.before,
                guest_after: out.after,
                guest_work: work,
                server_saw_peer: peer,
            }),
            iperf3_client: Some(out.client),
            host: None,
        })
    }
}
