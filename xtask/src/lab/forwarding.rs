//! Forwarding through a router as the lab's [`SystemUnderTest`]: each
//! session is an arm's kernel brought up by a [`Bench`] — QEMU boots it
//! ([`super::session::QemuBench`]), a real router is flashed with it over
//! SSH ([`super::ssh`]) — and each run is iperf3 through the router's
//! masquerade in one direction with GRO on or off, giving Mbit/s and the
//! router's CPU time per forwarded packet (ns/packet), and with the cache
//! model ([`super::cache_model`]) instructions and modelled L1 I- and
//! D-cache misses per forwarded packet.

use std::path::Path;

use anyhow::{bail, Result};

use super::iperf;
use super::kernel::LabKernel;
use super::record::{
    Arm, BootRecord, Condition, Metric, RunRecord, Settings, CPU_PER_PACKET, MBIT_PER_S,
    NS_PER_PACKET, THROUGHPUT,
};
use super::router::{Bench, Gro, Router, Up};
use super::runner::{round_to, Plan, RunSpec, SystemUnderTest};
use super::sample::{iperf_peer, iperf_summary, GuestWork};
use super::LabRequest;
use crate::results::lab::core_model::mean_frame_bytes;
use crate::results::lab::timing::{self, Stopwatch};
use crate::results::lab::{
    ArmKernel, CacheRun, CoreTiming, GuestRun, INSNS_PER_PACKET, INSNS_PER_PACKET_UNIT,
    L1D_MISSES_PER_PACKET, L1I_MISSES_PER_PACKET, MISSES_PER_PACKET,
};
use crate::results::now_rfc3339;
use crate::util::hash::sha256_file;

/// A [`Bench`] driven by the runner: QEMU or a real router.
pub struct Forwarding<'a> {
    /// The machine that brings up each arm's kernel.
    pub bench: &'a mut dyn Bench,
    /// The core model's timing table, which costs each run the cache
    /// model read (`--cache-model` on a target with `[lab.timing]`).
    pub timing: Option<&'a CoreTiming>,
}

/// The plan of `request`: each direction with each GRO setting, as the
/// lab always ran them, after a LAN → WAN warm-up with the first setting.
pub fn plan(request: &LabRequest) -> Plan {
    let gro = request.gro.settings();
    let directions = request.direction.directions();
    let conditions = directions
        .iter()
        .copied()
        .flat_map(|direction| {
            gro.iter()
                .map(move |&gro| Condition::Forward { direction, gro })
        })
        .collect();
    Plan {
        runs: request.runs,
        duration_seconds: request.duration_seconds,
        warmup: Condition::Forward {
            direction: directions[0],
            gro: gro[0],
        },
        conditions,
    }
}

/// `lab.json`'s settings of a forwarding lab of `request` based on `base`.
pub fn settings(request: &LabRequest, base: &str) -> Settings {
    Settings {
        runs: request.runs,
        duration_seconds: request.duration_seconds,
        gro: request.gro.settings(),
        directions: request.direction.directions(),
        warmup_runs_per_boot: 1,
        base: base.to_string(),
        control: request.control,
        benches: Vec::new(),
    }
}

/// The arms of QEMU lab `kernels`, in order: each kernel's variant with
/// its image.
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

impl SystemUnderTest for Forwarding<'_> {
    type Session = Box<dyn Router>;

    fn start(
        &mut self,
        arm: &Arm,
        round: u32,
        dir: &Path,
    ) -> Result<(Box<dyn Router>, Option<BootRecord>)> {
        let tag = format!("r{round}-{}", arm.name.replace('~', "-"));
        let Up { router, boot } = self.bench.bring_up(arm, round, &tag, dir)?;
        Ok((router, Some(boot)))
    }

    fn measure(
        &mut self,
        router: &mut Box<dyn Router>,
        run: RunSpec<'_>,
        dir: &Path,
    ) -> Result<RunRecord> {
        let Condition::Forward { direction, gro } = run.condition else {
            bail!(
                "a router lab measures forwarding, not {}",
                run.condition.describe()
            );
        };
        let router = router.as_mut();
        let mut watch = Stopwatch::default();
        watch.time(timing::GRO, || router.set_gro(Gro::from(gro)))?;
        let started = now_rfc3339();
        let prefix = format!("run{:03}", run.index);
        let out = iperf::run(router, direction, run.seconds, dir, &prefix)?;
        let mut wall_steps = watch.into_steps();
        wall_steps.extend(out.steps.iter().cloned());
        let summary = iperf_summary(&out.client)?;
        let peer = iperf_peer(&out.server);
        let expected = router.endpoints().router_wan_ip.clone();
        if peer.as_deref() != Some(expected.as_str()) {
            bail!(
                "the WAN side saw the client as {peer:?}, not as the router's {expected}: \
                 the masquerade did not happen\n{}",
                router.diagnostics()
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
        let frame_bytes = mean_frame_bytes(&out.before, &out.after);
        let cache_model = out
            .model
            .map(|(before, after)| CacheRun::new(before, after, work.packets))
            .transpose()?
            .map(|c| match self.timing {
                Some(t) => c.with_timing(t, frame_bytes),
                None => Ok(c),
            })
            .transpose()?;
        if let Some(c) = &cache_model {
            let w = &c.work;
            for (name, unit, value, decimals) in [
                (
                    INSNS_PER_PACKET,
                    INSNS_PER_PACKET_UNIT,
                    w.insns_per_packet,
                    1,
                ),
                (
                    L1I_MISSES_PER_PACKET,
                    MISSES_PER_PACKET,
                    w.l1i_misses_per_packet,
                    3,
                ),
                (
                    L1D_MISSES_PER_PACKET,
                    MISSES_PER_PACKET,
                    w.l1d_misses_per_packet,
                    3,
                ),
            ] {
                if let Some(v) = value {
                    metrics.push(Metric {
                        name: name.to_string(),
                        value: round_to(v, decimals),
                        unit: unit.to_string(),
                    });
                }
            }
            metrics.extend(c.core.iter().flat_map(|core| core.metrics()));
        }
        Ok(RunRecord {
            guest: Some(GuestRun {
                guest_before: out.before,
                guest_after: out.after,
                guest_work: work,
                server_saw_peer: peer,
            }),
            iperf3_client: Some(out.client),
            cache_model,
            wall_steps,
            ..run.record(started, metrics)
        })
    }
}
