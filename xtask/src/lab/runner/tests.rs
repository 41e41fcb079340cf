//! The runner over a scripted system under test.

use super::*;
use crate::results::lab::{Benchmark, LabMetric, MetricValue};

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
#[derive(Default)]
struct Script {
    calls: Vec<String>,
    fail_at: Option<u32>,
    /// Runs (by index) that stall, as a NIC that stops moving packets.
    stall_at: Vec<u32>,
    /// Boots (by the count of starts so far) whose guest hangs.
    hang_at: Vec<usize>,
}

impl SystemUnderTest for Script {
    type Session = String;

    fn start(&mut self, arm: &Arm, round: u32, _: &Path) -> Result<(String, Option<BootRecord>)> {
        let starts = self.calls.iter().filter(|c| c.starts_with("start")).count();
        self.calls.push(format!("start {} r{round}", arm.name));
        if self.hang_at.contains(&starts) {
            return Err(anyhow::anyhow!("no answer within 240 s")
                .context(Stalled("guest router hung while booting".to_string())));
        }
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

    fn measure(&mut self, session: &mut String, run: RunSpec<'_>, _: &Path) -> Result<RunRecord> {
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
            vec![MetricValue::new(LabMetric::Tbench, 1.0)],
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
    let mut s = Script::default();
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
        vec![MetricValue::new(LabMetric::Tbench, 601.2)],
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
    let metric = |name: &str, value: f64, unit: &str| MetricValue {
        name: name.to_string(),
        value,
        unit: unit.to_string(),
    };
    let run = spec.record(
        String::new(),
        vec![
            MetricValue::new(LabMetric::Throughput, 41.5),
            MetricValue::new(LabMetric::CyclesPerPacket, 5210.0),
            MetricValue::new(LabMetric::ModelledThroughput, 611.2),
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
            metric("modelled_cycles_per_packet_total", 9000.0, "cycles/packet"),
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
        fail_at: Some(1),
        ..Script::default()
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

/// `runs` rounds of one 1 s iperf3 run after an iperf3 warm-up, and that
/// condition.
fn iperf3_plan(runs: u32) -> (Condition, Plan) {
    let ip = Condition::Bench {
        bench: Benchmark::Iperf3,
    };
    let plan = Plan {
        runs,
        duration_seconds: 1,
        warmup: ip,
        conditions: vec![ip],
    };
    (ip, plan)
}

/// A run that stalls boots its arm again: a new warm-up, the stalled
/// run done afresh, the session's rest; `redone` names it, and the
/// record passes the reader's checks. A second stall in the same
/// session stops the lab.
#[test]
fn a_stalled_run_boots_its_arm_again_once() {
    let (ip, plan) = iperf3_plan(2);
    let dir = tempfile::tempdir().unwrap();
    // #0 warm-up, #1 baseline's run (stalls), #2 the new warm-up, #3
    // the run again.
    let mut s = Script {
        stall_at: vec![1],
        ..Script::default()
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
        ("baseline", 0, Some(1))
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
        stall_at: vec![1, 3],
        ..Script::default()
    };
    let mut r = record(vec![arm("baseline")]);
    let err = execute(&mut s, &plan, &mut r, dir.path()).unwrap_err();
    assert!(format!("{err:#}").contains("stalled"), "{err:#}");
    assert_eq!(r.redone.len(), 1);
    assert!(!r.status.is_complete());

    // Outside QEMU (a real router: its stall may be the kernel's) the
    // first stall stops the lab.
    let other: LabRecord = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/lab_fixture/host-lab.json"
        ))
        .unwrap(),
    )
    .unwrap();
    let mut s = Script {
        stall_at: vec![1],
        ..Script::default()
    };
    let mut r = record(vec![arm("baseline")]);
    r.machine = other.machine;
    let err = execute(&mut s, &plan, &mut r, dir.path()).unwrap_err();
    assert!(format!("{err:#}").contains("stalled"), "{err:#}");
    assert!(r.redone.is_empty());
}

/// A boot whose guest hangs is booted again once, recorded as a redone
/// boot (no condition, no index); the session then runs as usual.
#[test]
fn a_hung_boot_is_booted_again() {
    let (ip, plan) = iperf3_plan(1);
    let dir = tempfile::tempdir().unwrap();
    let mut s = Script {
        hang_at: vec![1],
        ..Script::default()
    };
    let mut r = record(vec![arm("baseline"), arm("v")]);
    execute(&mut s, &plan, &mut r, dir.path()).unwrap();
    assert_eq!(r.status, Status::Complete);
    let starts: Vec<&String> = s.calls.iter().filter(|c| c.starts_with("start")).collect();
    assert_eq!(starts, ["start baseline r0", "start v r0", "start v r0"]);
    assert_eq!(r.redone.len(), 1);
    assert_eq!((r.redone[0].condition, r.redone[0].index), (None, None));
    assert_eq!(r.samples("v", ip, "tbench").len(), 1);
}
