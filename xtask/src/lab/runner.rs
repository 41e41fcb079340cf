//! The lab's schedule: rounds of boots, arms interleaved (A B A B …), one
//! discarded warm-up run per boot, then every (direction, GRO) run; each
//! run's numbers go into `lab.json` as soon as it ends. The machine is a
//! [`Bench`]: QEMU, or a real router over SSH.

use std::path::Path;

use anyhow::{bail, Context, Result};

use super::iperf;
use super::kernel::LabKernel;
use super::record::{
    Arm, Direction, LabRecord, Metric, RunRecord, CPU_PER_PACKET, MBIT_PER_S, NS_PER_PACKET,
    THROUGHPUT,
};
use super::router::{Bench, Gro, Router, Up};
use super::sample::{iperf_peer, iperf_summary, GuestWork};
use crate::results::now_rfc3339;
use crate::util::hash::sha256_file;

/// Suffix of the A/A control arm's name.
pub const CONTROL_SUFFIX: &str = "~control";

/// What to run.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Measured runs per (arm, direction, GRO).
    pub runs: u32,
    /// Seconds per iperf3 run.
    pub duration_seconds: u32,
    /// GRO settings.
    pub gro: Vec<bool>,
    /// Directions.
    pub directions: Vec<Direction>,
    /// Whether the base runs twice (A/A control).
    pub control: bool,
}

/// The arms: the base, its control twin (when asked), the other variants.
pub fn arms(kernels: &[LabKernel], control: bool) -> Result<Vec<(Arm, LabKernel)>> {
    let mut arms = Vec::new();
    for (i, k) in kernels.iter().enumerate() {
        let arm = |name: String, control: bool| -> Result<(Arm, LabKernel)> {
            Ok((
                Arm {
                    name,
                    variant: k.variant.name.clone(),
                    control,
                    results_dir: k.image.parent().map(Path::to_path_buf).unwrap_or_default(),
                    image: k.image.clone(),
                    image_sha256: sha256_file(&k.image)?,
                    config_sha256: k.result.config_sha256.clone(),
                    vmlinux_text: k.result.vmlinux_sections.text,
                },
                k.clone(),
            ))
        };
        arms.push(arm(k.variant.name.clone(), false)?);
        if i == 0 && control {
            arms.push(arm(format!("{}{CONTROL_SUFFIX}", k.variant.name), true)?);
        }
    }
    Ok(arms)
}

/// Runs the plan on `bench`, writing `record` into `dir` after every run.
/// On an error the record is written with `status: failed: …` and the
/// error returned.
pub fn execute(
    bench: &mut dyn Bench,
    arms: &[Arm],
    plan: &Plan,
    record: &mut LabRecord,
    dir: &Path,
) -> Result<()> {
    let outcome = execute_inner(bench, arms, plan, record, dir);
    record.finished = Some(now_rfc3339());
    record.status = match &outcome {
        Ok(()) => "complete".to_string(),
        Err(e) => format!("failed: {e:#}"),
    };
    record.write(dir)?;
    outcome
}

fn execute_inner(
    bench: &mut dyn Bench,
    arms: &[Arm],
    plan: &Plan,
    record: &mut LabRecord,
    dir: &Path,
) -> Result<()> {
    let mut index = 0u32;
    for round in 0..plan.runs {
        for arm in arms {
            let tag = format!("r{round}-{}", arm.name.replace('~', "-"));
            let Up { mut router, boot } = bench
                .bring_up(arm, round, &tag, dir)
                .with_context(|| format!("bringing up {} (round {round})", arm.name))?;
            eprintln!(
                "lab: round {round} {}: router ready after {:.1} s",
                arm.name, boot.boot_seconds
            );
            record.boots.push(boot);
            record.write(dir)?;
            let mut schedule = vec![(Direction::LanToWan, plan.gro[0], true)];
            for &direction in &plan.directions {
                for &gro in &plan.gro {
                    schedule.push((direction, gro, false));
                }
            }
            for (direction, gro, warmup) in schedule {
                let run = measure(
                    router.as_mut(),
                    (arm, round, index),
                    (direction, gro, warmup),
                    plan.duration_seconds,
                    dir,
                )
                .with_context(|| {
                    format!(
                        "{} round {round}, {}, GRO {}",
                        arm.name,
                        direction.name(),
                        on_off(gro)
                    )
                })?;
                eprintln!("lab: {}", run_line(&run));
                record.runs.push(run);
                record.write(dir)?;
                index += 1;
            }
        }
    }
    Ok(())
}

fn measure(
    router: &mut dyn Router,
    (arm, round, index): (&Arm, u32, u32),
    (direction, gro, warmup): (Direction, bool, bool),
    seconds: u32,
    dir: &Path,
) -> Result<RunRecord> {
    router.set_gro(Gro::from(gro))?;
    let started = now_rfc3339();
    let prefix = format!("run{index:03}");
    let out = iperf::run(router, direction, seconds, dir, &prefix)?;
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
    Ok(RunRecord {
        index,
        arm: arm.name.clone(),
        variant: arm.variant.clone(),
        round,
        direction,
        gro,
        warmup,
        started,
        metrics,
        guest_before: out.before,
        guest_after: out.after,
        guest_work: work,
        server_saw_peer: peer,
        iperf3_client: out.client,
    })
}

/// One line per run for the terminal.
pub fn run_line(run: &RunRecord) -> String {
    let value = |name: &str| {
        run.metrics
            .iter()
            .find(|m| m.name == name)
            .map_or("-".to_string(), |m| format!("{} {}", m.value, m.unit))
    };
    format!(
        "{}{} round {} {} GRO {}: {}, {} ({} packets, {} per NIC interrupt)",
        run.arm,
        if run.warmup { " (warm-up)" } else { "" },
        run.round,
        run.direction.name(),
        on_off(run.gro),
        value(THROUGHPUT),
        value(CPU_PER_PACKET),
        run.guest_work.packets,
        run.guest_work
            .packets_per_interrupt
            .map_or("-".to_string(), |p| format!("{p:.1}"))
    )
}

fn on_off(on: bool) -> &'static str {
    if on {
        "on"
    } else {
        "off"
    }
}

fn round_to(x: f64, decimals: i32) -> f64 {
    let f = 10f64.powi(decimals);
    (x * f).round() / f
}
