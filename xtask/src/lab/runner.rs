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

use super::record::{Arm, BootRecord, Condition, LabRecord, Metric, RedoneRun, RunRecord, Status};
use crate::results::lab::check::round_words;
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
/// packets: QEMU's emulated e1000 did on two CPUs (issue #27), the guest
/// alive and its NICs' counters still. The runner then boots the arm
/// again and redoes the run ([`REDO_PER_SESSION`], [`REDO_PER_LAB`]),
/// recording it in `lab.json`'s `redone`; any other error stops the lab.
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
    pub fn record(&self, started: String, metrics: Vec<Metric>) -> RunRecord {
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
            let (mut session, boot) = system
                .start(arm, round, dir)
                .with_context(|| format!("starting {} ({words})", arm.name))?;
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
                if let Some(stalled) = stalled {
                    if redone_here < REDO_PER_SESSION && record.redone.len() < REDO_PER_LAB {
                        let reason = stalled.0.lines().next().unwrap_or_default().to_string();
                        progress.println(&format!(
                            "{who}: {} {words}, {}: {reason}; booting {} again to redo it",
                            arm.name,
                            condition.describe(),
                            arm.name
                        ));
                        record.redone.push(RedoneRun {
                            arm: arm.name.clone(),
                            round,
                            condition,
                            warmup,
                            index,
                            reason,
                        });
                        record.write(dir)?;
                        redone_here += 1;
                        index += 1;
                        // A new session warms up again: one run more,
                        // unless the warm-up was what stalled.
                        progress.add(u64::from(!warmup));
                        continue 'session;
                    }
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

/// One line per run for the terminal, its round counted from 1 of
/// `rounds` (`baseline round 1 of 4 lan-to-wan GRO on: …`). Metrics that
/// share a unit are named: the cache model's `L1I`/`L1D`/`L2` misses,
/// its `emulated`/`modelled` Mbit/s (iperf3 through QEMU, and the core
/// model's estimate for the real CPU), and on several CPUs each CPU's
/// share (`CPU1 L1I … misses/packet`) and the sum (`all CPUs …`).
pub fn run_line(run: &RunRecord, rounds: u32) -> String {
    use crate::results::lab::per_cpu::{split_cpu_metric, CYCLES_PER_PACKET_TOTAL};
    use crate::results::lab::{
        L1D_MISSES_PER_PACKET, L1I_MISSES_PER_PACKET, L2_MISSES_PER_PACKET, MODELLED_THROUGHPUT,
        THROUGHPUT,
    };
    let modelled = run.metrics.iter().any(|m| m.name == MODELLED_THROUGHPUT);
    let metrics: Vec<String> = run
        .metrics
        .iter()
        .map(|m| {
            // A CPU's share on a machine of several: `CPU1 L1I …`.
            let (name, cpu) = match split_cpu_metric(&m.name) {
                Some((family, cpu)) => (family, format!("CPU{cpu} ")),
                None if m.name == CYCLES_PER_PACKET_TOTAL => (m.name.as_str(), "all CPUs ".into()),
                None => (m.name.as_str(), String::new()),
            };
            let which = match name {
                L1I_MISSES_PER_PACKET => "L1I ",
                L1D_MISSES_PER_PACKET => "L1D ",
                L2_MISSES_PER_PACKET => "L2 ",
                THROUGHPUT if modelled => "emulated ",
                MODELLED_THROUGHPUT => "modelled ",
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
mod tests {
    use super::*;
    use crate::results::lab::{Benchmark, Metric};

    fn arm(name: &str) -> Arm {
        Arm {
            name: name.to_string(),
            variant: name.to_string(),
            control: false,
            kernel: None,
            runtime: None,
            topology: None,
        }
    }

    /// Records what the runner asks for, as a system would see it.
    struct Script {
        calls: Vec<String>,
        fail_at: Option<u32>,
        /// Runs (by index) that stall, as a NIC that stops moving packets.
        stall_at: Vec<u32>,
    }

    impl SystemUnderTest for Script {
        type Session = String;

        fn start(
            &mut self,
            arm: &Arm,
            round: u32,
            _: &Path,
        ) -> Result<(String, Option<BootRecord>)> {
            self.calls.push(format!("start {} r{round}", arm.name));
            // A guest boots (the record's machine is QEMU's).
            let boot = BootRecord {
                arm: arm.name.clone(),
                round,
                boot_seconds: 1.0,
                guest_uptime_at_ready: None,
                console_log: String::new(),
                qemu_argv: Vec::new(),
                kernel: None,
                wall_steps: Vec::new(),
                qdisc: None,
            };
            Ok((arm.name.clone(), Some(boot)))
        }

        fn measure(
            &mut self,
            session: &mut String,
            run: RunSpec<'_>,
            _: &Path,
        ) -> Result<RunRecord> {
            if self.fail_at == Some(run.index) {
                anyhow::bail!("boom");
            }
            if self.stall_at.contains(&run.index) {
                self.calls.push(format!("{session} #{} stalled", run.index));
                return Err(
                    anyhow::anyhow!("iperf3 client did not finish").context(Stalled(
                        "the lan-to-wan run stalled\nconsole tail".to_string(),
                    )),
                );
            }
            self.calls.push(format!(
                "{session} #{} {}{}",
                run.index,
                run.condition.describe(),
                if run.warmup { " warm-up" } else { "" }
            ));
            Ok(run.record(
                String::new(),
                vec![Metric {
                    name: "tbench".to_string(),
                    value: 1.0,
                    unit: "MB/s".to_string(),
                }],
            ))
        }
    }

    fn record(arms: Vec<Arm>) -> LabRecord {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/lab_fixture/lab.json"
        ))
        .unwrap();
        let mut r: LabRecord = serde_json::from_str(&text).unwrap();
        r.arms = arms;
        r.runs.clear();
        r.boots.clear();
        r
    }

    #[test]
    fn arms_interleave_with_a_warm_up_per_session() {
        let tb = Condition::Bench {
            bench: Benchmark::Tbench { clients: 2 },
        };
        let ip = Condition::Bench {
            bench: Benchmark::Iperf3,
        };
        let plan = Plan {
            runs: 2,
            duration_seconds: 1,
            warmup: tb,
            conditions: vec![tb, ip],
        };
        let arms = with_control(vec![arm("baseline"), arm("lo-no-tso-gso")]);
        assert_eq!(arms[1].name, "baseline~control");
        assert!(arms[1].control && arms[1].variant == "baseline");
        let mut r = record(arms);
        let dir = tempfile::tempdir().unwrap();
        let mut s = Script {
            calls: Vec::new(),
            fail_at: None,
            stall_at: Vec::new(),
        };
        execute(&mut s, &plan, &mut r, dir.path()).unwrap();
        assert_eq!(r.status, Status::Complete);
        assert_eq!(r.runs.len(), 2 * 3 * 3);
        let starts: Vec<&String> = s.calls.iter().filter(|c| c.starts_with("start")).collect();
        assert_eq!(
            starts,
            [
                "start baseline r0",
                "start baseline~control r0",
                "start lo-no-tso-gso r0",
                "start baseline r1",
                "start baseline~control r1",
                "start lo-no-tso-gso r1"
            ]
        );
        assert_eq!(s.calls[1], "baseline #0 tbench, 2 clients warm-up");
        assert_eq!(s.calls[3], "baseline #2 iperf3, 1 TCP stream");
        assert_eq!(r.samples("lo-no-tso-gso", tb, "tbench").len(), 2);
        // What the runner writes passes the reader's checks once the
        // settings describe the plan (the fixture's are the QEMU lab's).
        r.settings.runs = plan.runs;
        r.settings.gro.clear();
        r.settings.directions.clear();
        r.settings.benches = vec![Benchmark::Tbench { clients: 2 }, Benchmark::Iperf3];
        let problems = crate::results::lab::check::check(&r);
        assert_eq!(problems, Default::default());
    }

    #[test]
    fn a_run_s_line_counts_rounds_from_1() {
        let tb = Condition::Bench {
            bench: Benchmark::Tbench { clients: 2 },
        };
        let a = arm("baseline");
        let spec = RunSpec {
            arm: &a,
            round: 3,
            index: 7,
            condition: tb,
            warmup: false,
            seconds: 1,
        };
        let run = spec.record(
            String::new(),
            vec![Metric {
                name: "tbench".to_string(),
                value: 601.2,
                unit: "MB/s".to_string(),
            }],
        );
        assert_eq!(
            run_line(&run, 4),
            "baseline round 4 of 4 tbench, 2 clients: 601.2 MB/s"
        );
    }

    /// A cache-model run printed two unlabelled Mbit/s figures (iperf3's
    /// through QEMU and the core model's); each is named now.
    #[test]
    fn a_cache_model_run_s_line_names_its_two_throughputs() {
        use crate::results::lab::{
            CYCLES_PER_PACKET, CYCLES_PER_PACKET_UNIT, MBIT_PER_S, MODELLED_THROUGHPUT, THROUGHPUT,
        };
        let ip = Condition::Bench {
            bench: Benchmark::Iperf3,
        };
        let a = arm("baseline");
        let spec = RunSpec {
            arm: &a,
            round: 0,
            index: 1,
            condition: ip,
            warmup: false,
            seconds: 1,
        };
        let metric = |name: &str, value: f64, unit: &str| Metric {
            name: name.to_string(),
            value,
            unit: unit.to_string(),
        };
        let run = spec.record(
            String::new(),
            vec![
                metric(THROUGHPUT, 41.5, MBIT_PER_S),
                metric(CYCLES_PER_PACKET, 5210.0, CYCLES_PER_PACKET_UNIT),
                metric(MODELLED_THROUGHPUT, 611.2, MBIT_PER_S),
            ],
        );
        assert_eq!(
            run_line(&run, 1),
            "baseline round 1 of 1 iperf3, 1 TCP stream: emulated 41.5 Mbit/s, 5210 cycles/packet, modelled 611.2 Mbit/s"
        );
        // On two CPUs each CPU's share is named, and the sum.
        let two = spec.record(
            String::new(),
            vec![
                metric(
                    "modelled_cycles_per_packet_total",
                    9000.0,
                    CYCLES_PER_PACKET_UNIT,
                ),
                metric("l1i_misses_per_packet_cpu1", 3.5, "misses/packet"),
                metric("guest_insns_per_packet_cpu0", 611.4, "insns/packet"),
                metric("l2_misses_per_packet", 0.5, "misses/packet"),
            ],
        );
        assert_eq!(
            run_line(&two, 1),
            "baseline round 1 of 1 iperf3, 1 TCP stream: all CPUs 9000 cycles/packet, CPU1 L1I 3.5 misses/packet, CPU0 611.4 insns/packet, L2 0.5 misses/packet"
        );
    }

    #[test]
    fn a_failed_run_leaves_a_failed_record() {
        let tb = Condition::Bench {
            bench: Benchmark::Tbench { clients: 2 },
        };
        let plan = Plan {
            runs: 1,
            duration_seconds: 1,
            warmup: tb,
            conditions: vec![tb],
        };
        let mut r = record(vec![arm("baseline")]);
        let dir = tempfile::tempdir().unwrap();
        let mut s = Script {
            calls: Vec::new(),
            fail_at: Some(1),
            stall_at: Vec::new(),
        };
        let err = execute(&mut s, &plan, &mut r, dir.path()).unwrap_err();
        assert!(format!("{err:#}").contains("boom"), "{err:#}");
        // Rounds count from 1 in messages and the log, as in the report's
        // run tables (lab.json's `round` counts from 0).
        assert!(
            format!("{err:#}").starts_with("baseline round 1 of 1, tbench, 2 clients: boom"),
            "{err:#}"
        );
        let written = LabRecord::read(dir.path()).unwrap();
        assert!(
            matches!(&written.status, Status::Failed { reason } if reason.contains("boom")),
            "{:?}",
            written.status
        );
        assert_eq!(written.runs.len(), 1);
    }

    /// A run that stalls boots its arm again: a new warm-up, the stalled
    /// run done afresh, the session's rest; `redone` names it, and the
    /// record passes the reader's checks. A second stall in the same
    /// session stops the lab.
    #[test]
    fn a_stalled_run_boots_its_arm_again_once() {
        let ip = Condition::Bench {
            bench: Benchmark::Iperf3,
        };
        let plan = Plan {
            runs: 2,
            duration_seconds: 1,
            warmup: ip,
            conditions: vec![ip],
        };
        let dir = tempfile::tempdir().unwrap();
        // #0 warm-up, #1 baseline's run (stalls), #2 the new warm-up, #3
        // the run again.
        let mut s = Script {
            calls: Vec::new(),
            fail_at: None,
            stall_at: vec![1],
        };
        let mut r = record(vec![arm("baseline"), arm("v")]);
        execute(&mut s, &plan, &mut r, dir.path()).unwrap();
        assert_eq!(r.status, Status::Complete);
        assert_eq!(
            &s.calls[..5],
            [
                "start baseline r0",
                "baseline #0 iperf3, 1 TCP stream warm-up",
                "baseline #1 stalled",
                "start baseline r0",
                "baseline #2 iperf3, 1 TCP stream warm-up",
            ]
        );
        assert_eq!(r.redone.len(), 1);
        let redone = &r.redone[0];
        assert_eq!(
            (redone.arm.as_str(), redone.round, redone.index),
            ("baseline", 0, 1)
        );
        assert_eq!(redone.reason, "the lan-to-wan run stalled");
        assert!(!redone.warmup);
        assert_eq!(r.samples("baseline", ip, "tbench").len(), 2);
        assert_eq!(r.boots.len(), 5);
        let indexes: Vec<u32> = r.runs.iter().map(|r| r.index).collect();
        assert!(!indexes.contains(&1), "{indexes:?}");
        r.settings.runs = plan.runs;
        r.settings.gro.clear();
        r.settings.directions.clear();
        r.settings.benches = vec![Benchmark::Iperf3];
        r.settings.control = false;
        assert_eq!(crate::results::lab::check::check(&r), Default::default());

        // Stalling again after the new boot stops the lab, naming the stall.
        let mut s = Script {
            calls: Vec::new(),
            fail_at: None,
            stall_at: vec![1, 3],
        };
        let mut r = record(vec![arm("baseline")]);
        let err = execute(&mut s, &plan, &mut r, dir.path()).unwrap_err();
        assert!(format!("{err:#}").contains("stalled"), "{err:#}");
        assert_eq!(r.redone.len(), 1);
        assert!(!r.status.is_complete());
    }
}
