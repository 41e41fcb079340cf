//! The lab's schedule, whatever it measures: rounds of sessions, arms
//! interleaved (A B A B …), one discarded warm-up run per session, then
//! every condition's run; each run's numbers go into `lab.json` as soon as
//! it ends.
//!
//! What a session is comes from the [`SystemUnderTest`]; the lab's one
//! flow ([`super::orchestrate`]) gives it a backend that brings up each
//! arm — booted in QEMU on its topology, flashed onto a real router over
//! SSH, applied as runtime settings in a fresh namespace — and a workload
//! that runs each run on it.

use std::path::Path;

use anyhow::{Context, Result};

mod progress;

use crate::results::lab::check::round_words;
use crate::results::lab::{
    Arm, BootRecord, Condition, LabMetric, LabRecord, MetricValue, RedoneRun, RunRecord, Status,
};
use crate::results::now_rfc3339;
use progress::Progress;

/// Suffix of the A/A control arm's name.
pub const CONTROL_SUFFIX: &str = "~control";

/// How often one session (an arm booted for a round) may stall and boot
/// again before the lab stops: once.
pub const REDO_PER_SESSION: u32 = 1;

/// How many stalled runs one lab redoes in all before it stops: a machine
/// that stalls more often than this is broken, not unlucky
/// (`lab.json` holds no more, [`crate::results::lab::MAX_REDONE`]).
pub const REDO_PER_LAB: usize = crate::results::lab::MAX_REDONE;

/// The error a [`SystemUnderTest`] returns (as the context of its own)
/// when a run could not finish because the machine stopped moving
/// packets: QEMU's emulated e1000 did on two CPUs, the guest
/// alive and its NICs' counters still. In QEMU the runner then boots the
/// arm again and redoes the run ([`REDO_PER_SESSION`], [`REDO_PER_LAB`]),
/// recording it in `lab.json`'s `redone`; on a real router, and for any
/// other error, the lab stops.
#[derive(Debug)]
pub struct Stalled(pub String);

impl std::fmt::Display for Stalled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// What to run.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Measured runs per (arm, condition): the rounds.
    pub runs: u32,
    /// Seconds per run.
    pub duration_seconds: u32,
    /// The warm-up run's condition, first in every session and discarded.
    pub warmup: Condition,
    /// The measured runs of every session, in order.
    pub conditions: Vec<Condition>,
}

/// One run the schedule asks for.
#[derive(Debug, Clone, Copy)]
pub struct RunSpec<'a> {
    /// The arm measured.
    pub arm: &'a Arm,
    /// Round (0-based).
    pub round: u32,
    /// Position among all runs (0-based, warm-ups included).
    pub index: u32,
    /// What it measures under.
    pub condition: Condition,
    /// A discarded warm-up run.
    pub warmup: bool,
    /// Its length, in seconds.
    pub seconds: u32,
}

impl RunSpec<'_> {
    /// This run's record with `metrics`, started at `started` (RFC 3339),
    /// its machine-specific parts (`guest`, `iperf3_client`, `host`) empty
    /// for the system under test to fill in.
    pub fn record(&self, started: String, metrics: Vec<MetricValue>) -> RunRecord {
        RunRecord {
            index: self.index,
            arm: self.arm.name.clone(),
            variant: self.arm.variant.clone(),
            round: self.round,
            condition: self.condition,
            warmup: self.warmup,
            started,
            metrics,
            guest: None,
            iperf3_client: None,
            host: None,
            cache_model: None,
            wall_seconds: None,
            wall_steps: Vec::new(),
        }
    }
}

/// The system under test, as the runner drives it.
pub trait SystemUnderTest {
    /// One arm made ready for one round: a booted guest, a namespace with
    /// the arm's settings applied. Dropping it stops and removes
    /// everything it started, on success, error and Ctrl-C alike.
    type Session;

    /// Makes `arm` ready for `round`, with its files in `dir`; returns the
    /// session and, when it booted something, the boot for `lab.json`.
    fn start(
        &mut self,
        arm: &Arm,
        round: u32,
        dir: &Path,
    ) -> Result<(Self::Session, Option<BootRecord>)>;

    /// Runs `run` in `session`, its raw output kept in `dir`.
    fn measure(
        &mut self,
        session: &mut Self::Session,
        run: RunSpec<'_>,
        dir: &Path,
    ) -> Result<RunRecord>;
}

/// `arms` with the first one's A/A control twin (`<base>~control`, the
/// same variant, `control: true`) after it.
pub fn with_control(mut arms: Vec<Arm>) -> Vec<Arm> {
    if !arms.is_empty() {
        let mut twin = arms[0].clone();
        twin.name = format!("{}{CONTROL_SUFFIX}", twin.variant);
        twin.control = true;
        arms.insert(1, twin);
    }
    arms
}

/// Runs the plan on `system` for every arm of `record`, writing `record`
/// into `dir` after every run. Measured runs already in `record` (a lab
/// taken over after its runner was killed) are kept and not run again: a
/// session whose measured runs are all there is not booted, one that is
/// missing some boots afresh (with its own warm-up) and runs only those. Each run's `wall_seconds` is the wall time
/// of [`SystemUnderTest::measure`] (writing `lab.json` after it is not
/// included). On an error the record is written with a failed
/// [`Status`] naming it, and the error returned.
pub fn execute(
    system: &mut impl SystemUnderTest,
    plan: &Plan,
    record: &mut LabRecord,
    dir: &Path,
) -> Result<()> {
    let outcome = execute_inner(system, plan, record, dir);
    record.finished = Some(now_rfc3339());
    record.status = match &outcome {
        Ok(()) => Status::Complete,
        Err(e) => Status::Failed {
            reason: format!("{e:#}"),
        },
    };
    record.write(dir)?;
    outcome
}

fn execute_inner(
    system: &mut impl SystemUnderTest,
    plan: &Plan,
    record: &mut LabRecord,
    dir: &Path,
) -> Result<()> {
    let arms = record.arms.clone();
    let mut index = record.runs.iter().map(|r| r.index + 1).max().unwrap_or(0);
    let schedule: Vec<(Condition, bool)> = std::iter::once((plan.warmup, true))
        .chain(plan.conditions.iter().map(|&c| (c, false)))
        .collect();
    let kept = |record: &LabRecord, arm: &Arm, round: u32, condition: Condition| {
        record
            .runs
            .iter()
            .any(|r| !r.warmup && r.arm == arm.name && r.round == round && r.condition == condition)
    };
    let sessions: Vec<(u32, &Arm)> = (0..plan.runs)
        .flat_map(|round| arms.iter().map(move |arm| (round, arm)))
        .filter(|&(round, arm)| !plan.conditions.iter().all(|&c| kept(record, arm, round, c)))
        .collect();
    let total: u64 = sessions
        .iter()
        .map(|&(round, arm)| {
            1 + plan
                .conditions
                .iter()
                .filter(|&&c| !kept(record, arm, round, c))
                .count() as u64
        })
        .sum();
    let progress = Progress::new(total);
    // Labs side by side write to one terminal: each line names its target.
    let who = match record.settings.labs_at_once {
        Some(_) => format!("lab {}", record.target),
        None => "lab".to_string(),
    };
    for (round, arm) in sessions {
        // Rounds count from 1 wherever people read them (lab.json's
        // `round` counts from 0).
        let words = round_words(round, plan.runs);
        // One redo per session, counting one a killed runner made.
        let mut redone_here = record
            .redone
            .iter()
            .filter(|r| r.arm == arm.name && r.round == round)
            .count() as u32;
        'session: loop {
            let started = system.start(arm, round, dir);
            let stalled = started
                .as_ref()
                .err()
                .and_then(|e| e.downcast_ref::<Stalled>());
            if let Some(reason) = stalled.and_then(|s| redo(record, redone_here, s)) {
                progress.println(&format!(
                    "{who}: {} {words}: {reason}; booting it again",
                    arm.name
                ));
                record.redone.push(RedoneRun {
                    arm: arm.name.clone(),
                    round,
                    condition: None,
                    warmup: false,
                    index: None,
                    reason,
                });
                record.write(dir)?;
                redone_here += 1;
                continue 'session;
            }
            let (mut session, boot) =
                started.with_context(|| format!("starting {} ({words})", arm.name))?;
            if let Some(boot) = boot {
                progress.println(&format!(
                    "{who}: {} {words}: ready after {:.1} s",
                    arm.name, boot.boot_seconds
                ));
                record.boots.push(boot);
                record.write(dir)?;
            }
            for &(condition, warmup) in &schedule {
                if !warmup && kept(record, arm, round, condition) {
                    continue;
                }
                let spec = RunSpec {
                    arm,
                    round,
                    index,
                    condition,
                    warmup,
                    seconds: plan.duration_seconds,
                };
                let clock = std::time::Instant::now();
                let measured = system.measure(&mut session, spec, dir);
                let stalled = measured
                    .as_ref()
                    .err()
                    .and_then(|e| e.downcast_ref::<Stalled>());
                if let Some(reason) = stalled.and_then(|s| redo(record, redone_here, s)) {
                    progress.println(&format!(
                        "{who}: {} {words}, {}: {reason}; booting {} again to redo it",
                        arm.name,
                        condition.describe(),
                        arm.name
                    ));
                    record.redone.push(RedoneRun {
                        arm: arm.name.clone(),
                        round,
                        condition: Some(condition),
                        warmup,
                        index: Some(index),
                        reason,
                    });
                    record.write(dir)?;
                    redone_here += 1;
                    index += 1;
                    // A new session warms up again: one run more, unless
                    // the warm-up was what stalled.
                    progress.add(u64::from(!warmup));
                    continue 'session;
                }
                let mut run = measured
                    .with_context(|| format!("{} {words}, {}", arm.name, condition.describe()))?;
                run.wall_seconds = Some(round_to(clock.elapsed().as_secs_f64(), 3));
                progress.done(&format!("{who}: {}", run_line(&run, plan.runs)));
                record.runs.push(run);
                record.write(dir)?;
                index += 1;
            }
            break;
        }
    }
    Ok(())
}

/// The one-line reason to redo what `stalled` stopped, or `None` when the
/// session (`redone_here` so far) or the lab has used its redos, or when
/// the machine is not QEMU: a real router that stops forwarding may be the
/// variant's fault, and the lab stops there for the developer to see.
fn redo(record: &LabRecord, redone_here: u32, stalled: &Stalled) -> Option<String> {
    let emulated = record.machine.qemu().is_some();
    (emulated && redone_here < REDO_PER_SESSION && record.redone.len() < REDO_PER_LAB)
        .then(|| stalled.0.lines().next().unwrap_or_default().to_string())
}

/// One line per run for the terminal, its round counted from 1 of
/// `rounds` (`baseline round 1 of 4 lan-to-wan GRO on: …`). Metrics that
/// share a unit are named: the cache model's `L1I`/`L1D`/`L2` misses,
/// its `emulated`/`modelled` Mbit/s (iperf3 through QEMU, and the core
/// model's estimate for the real CPU), and on several CPUs each CPU's
/// share (`CPU1 L1I … misses/packet`) and the sum (`all CPUs …`).
pub fn run_line(run: &RunRecord, rounds: u32) -> String {
    let modelled = run
        .metrics
        .iter()
        .any(|m| m.is(LabMetric::ModelledThroughput));
    let metrics: Vec<String> = run
        .metrics
        .iter()
        .map(|m| {
            // A CPU's share on a machine of several: `CPU1 L1I …`.
            let parsed = LabMetric::parse(&m.name);
            let cpu = match parsed {
                Some((_, Some(cpu))) => format!("CPU{cpu} "),
                Some((LabMetric::CyclesPerPacketTotal, None)) => "all CPUs ".into(),
                _ => String::new(),
            };
            let which = match parsed.map(|(metric, _)| metric) {
                Some(LabMetric::L1iMissesPerPacket) => "L1I ",
                Some(LabMetric::L1dMissesPerPacket) => "L1D ",
                Some(LabMetric::L2MissesPerPacket) => "L2 ",
                Some(LabMetric::Throughput) if modelled => "emulated ",
                Some(LabMetric::ModelledThroughput) => "modelled ",
                _ => "",
            };
            format!("{cpu}{which}{} {}", m.value, m.unit)
        })
        .collect();
    let extra = match &run.guest {
        Some(g) => format!(
            " ({} packets, {} per NIC interrupt)",
            g.guest_work.packets,
            g.guest_work
                .packets_per_interrupt
                .map_or("-".to_string(), |p| format!("{p:.1}"))
        ),
        None => String::new(),
    };
    format!(
        "{}{} {} {}: {}{extra}",
        run.arm,
        if run.warmup { " (warm-up)" } else { "" },
        round_words(run.round, rounds),
        run.condition.describe(),
        if metrics.is_empty() {
            "-".to_string()
        } else {
            metrics.join(", ")
        }
    )
}

/// `x` rounded to `decimals` decimals.
pub fn round_to(x: f64, decimals: i32) -> f64 {
    let f = 10f64.powi(decimals);
    (x * f).round() / f
}

#[cfg(test)]
mod tests;
