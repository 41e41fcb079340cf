//! `lab.json` files from a hostile trial: no input may panic
//! `size-report`, every value is checked against its metric's unit and
//! range, settings and arms that contradict each other are refused, and
//! the checks take linear time (a crafted file must not stall the
//! report). Each case starts from
//! the fixture run (`lab_fixture/lab.json`: brcm47xx, 3 rounds, arms
//! baseline, baseline~control and no-reorder-blocks).

use crate::common::lab_fixture;
use crate::common::report_fixture;

use lab_fixture::{record, with_more_rounds, write, RUN};
use report_fixture::{request, Fixture};
use xtask::measure::stats::Verdict;
use xtask::report::lab::{LabReport, Role};
use xtask::report::{self, Format, LabRuns, Style};
use xtask::results::lab::{LabMetric, LabRecord, MetricValue};

/// `size-report` of `f` in every format, plain (the newest complete lab
/// run) and with `--lab-run DIR`: the reports, or the errors, as text.
fn every_report(f: &Fixture, dir: &std::path::Path) -> Vec<String> {
    let mut out = Vec::new();
    for runs in [LabRuns::Newest, LabRuns::Dirs(vec![dir.to_path_buf()])] {
        let mut asked = request(&[], &[]);
        asked.lab = runs;
        match report::load(&f.layout(), &asked) {
            Ok(r) => {
                for format in Format::ALL {
                    match report::render(&r, format, &Style::default()) {
                        Ok(text) => out.push(text),
                        Err(e) => out.push(format!("{e:#}")),
                    }
                }
            }
            Err(e) => out.push(format!("{e:#}")),
        }
    }
    out
}

/// A workspace with size results, the lab kernels' results (their
/// `vmlinux` artifact) and `record` as the lab run.
fn workspace(record: &LabRecord) -> (Fixture, std::path::PathBuf) {
    let f = Fixture::new();
    f.standard("bcm53xx");
    for variant in ["baseline", "no-reorder-blocks"] {
        let mut kernel = f.result(
            "bcm53xx",
            variant,
            &[("vmlinux", 1)],
            (30_000, 4_000, 2_000),
        );
        kernel.target.name = "brcm47xx-lab".to_string();
        f.write(kernel, &[]);
    }
    let dir = write(&f, RUN, record);
    (f, dir)
}

/// A non-ASCII character in an arm's `image_sha256` where the report cuts
/// it short (its 12th character) panicked `size-report` (exit 101 in
/// `report/lab/find.rs`), with `--lab-run` and without (the newest
/// complete run is found and read by a plain `size-report`). Now the note
/// that the lab kernel was rebuilt since names it.
#[test]
fn a_non_ascii_image_sha256_does_not_panic_the_report() {
    for sha in ["aéééééééééééééééééééé", "ab€€€€€€€€€€€€€€€"]
    {
        let mut r = record();
        // The base and its A/A control boot the same image.
        for arm in r.arms.iter_mut().filter(|a| a.variant == "baseline") {
            arm.kernel.as_mut().unwrap().image_sha256 = sha.to_string();
        }
        let (f, dir) = workspace(&r);
        let reports = std::panic::catch_unwind(|| every_report(&f, &dir))
            .unwrap_or_else(|_| panic!("size-report panicked on image_sha256 {sha:?}"));
        // The text report of each (format ALL[0]) names it, cut short.
        let cut: String = sha.chars().take(12).collect();
        let naming = reports
            .iter()
            .filter(|t| t.contains(&format!("sha256 {cut} →")))
            .count();
        assert!(naming >= 2, "{reports:#?}");
    }
}

/// The error `size-report --lab-run DIR` gives for `record`; panics with
/// the text report when it renders instead.
fn refusal(record: &LabRecord) -> String {
    let f = Fixture::new();
    let dir = write(&f, RUN, record);
    let mut asked = request(&[], &[]);
    asked.lab = LabRuns::Dirs(vec![dir]);
    match report::load(&f.layout(), &asked) {
        Ok(r) => panic!(
            "rendered instead of refusing:\n{}",
            report::render(&r, Format::Text, &Style::default()).unwrap()
        ),
        Err(e) => format!("{e:#}"),
    }
}

/// `record` with metric `name` in `unit` added to every run, `value(i)`
/// for run `i`.
fn with_metric(
    mut r: LabRecord,
    name: &str,
    unit: &str,
    value: impl Fn(usize) -> f64,
) -> LabRecord {
    for (i, run) in r.runs.iter_mut().enumerate() {
        run.metrics.push(MetricValue {
            name: name.to_string(),
            value: value(i),
            unit: unit.to_string(),
        });
    }
    r
}

/// Every metric is checked against its unit and range: a negative UDP
/// loss (-50 %), a loss over 100 %, a loss recorded in Mbit/s (shown as
/// "%"), negative modelled cycles/packet and packets/s, and a metric the
/// lab never records. Before, only six metrics had a check: these were
/// accepted, and the negative ones called significant.
#[test]
fn every_metric_is_checked_against_its_unit_and_range() {
    let arm_of = |r: &LabRecord, i: usize| r.runs[i].arm.clone();
    let base = record();
    for (name, unit, bad, problem) in [
        (LabMetric::UdpLost.name(), LabMetric::UdpLost.unit(), -50.0, "udp_lost is -50 %, but udp_lost cannot be negative"),
        (LabMetric::UdpLost.name(), LabMetric::UdpLost.unit(), 150.0, "udp_lost is 150 %, more than the 100 % it can be"),
        (LabMetric::UdpLost.name(), LabMetric::Throughput.unit(), 12.0, "udp_lost is in Mbit/s, but the lab records it in %"),
        (
            LabMetric::CyclesPerPacket.name(),
            LabMetric::CyclesPerPacket.unit(),
            -3000.0,
            "modelled_cycles_per_packet is -3000 cycles/packet, but modelled_cycles_per_packet cannot be negative",
        ),
        (
            LabMetric::PacketsPerSecond.name(),
            LabMetric::PacketsPerSecond.unit(),
            -250000.0,
            "modelled_packets_per_second is -250000 packets/s, but modelled_packets_per_second cannot be negative",
        ),
        ("latency", "ms", 1.0, "latency is not a metric the lab records"),
    ] {
        // Every run of the variant has the bad value, the others 1.
        let r = with_metric(base.clone(), name, unit, |i| {
            if arm_of(&base, i) == "no-reorder-blocks" {
                bad
            } else {
                1.0
            }
        });
        let err = refusal(&r);
        assert!(err.contains(problem), "{name} {bad} {unit}: {err}");
    }
}

/// The verdicts `LabReport::new` gives the variant no-reorder-blocks, as
/// `(family, kind, item, verdict)`.
fn verdicts(r: LabRecord) -> Vec<(String, String, String, Verdict)> {
    let l = LabReport::new("/lab".into(), r, &[]).unwrap();
    l.comparisons
        .iter()
        .filter(|c| c.role == Role::Variant)
        .flat_map(|c| &c.families)
        .flat_map(|f| f.metrics.iter().map(move |m| (f, m)))
        .map(|(f, m)| {
            (
                f.name.clone(),
                m.kind.clone(),
                m.item.clone(),
                m.stats().unwrap().comparison.verdict,
            )
        })
        .collect()
}

/// A condition listed twice in the settings (`gro: [true, false, true]`)
/// printed its rows twice and counted its changes twice in "N of M
/// changes are called significant"; a run of another lab appended (no
/// boot of its arm in its round, started before this lab did) was taken
/// as a sample; `settings.runs = 0` with no runs was "complete";
/// `control = true` without a control arm, a control arm under
/// `control = false`, and a control arm of another variant than the base
/// (then called the A/A control, its spread the noise floor) were
/// accepted. Each is refused now, naming the problem.
#[test]
fn settings_and_arms_that_contradict_each_other_are_refused() {
    let mut twice = record();
    twice.settings.gro.push(twice.settings.gro[0]);
    assert!(
        refusal(&twice).contains("settings.gro lists GRO on twice"),
        "{}",
        refusal(&twice)
    );

    let mut appended = with_more_rounds(record(), 1);
    appended.boots.retain(|b| b.round < 3);
    for run in appended.runs.iter_mut().filter(|r| r.round == 3) {
        run.started = run.started.replace("2026-12-01T", "2026-11-20T");
    }
    let err = refusal(&appended);
    assert!(
        err.contains("round 4 of 4, lan-to-wan GRO on, warm-up): no boot of its arm in its round is recorded (a run from another lab?)"),
        "{err}"
    );
    assert!(err.contains("before the lab did"), "{err}");

    let mut none = record();
    none.settings.runs = 0;
    none.runs.clear();
    none.boots.clear();
    let err = refusal(&none);
    assert!(
        err.contains("settings.runs is 0, but a lab runs 1 to 1000 rounds"),
        "{err}"
    );

    let mut no_control = lab_fixture::without_arm(record(), "baseline~control");
    no_control.settings.control = true;
    let err = refusal(&no_control);
    assert!(
        err.contains("settings.control is true, but no arm is the A/A control"),
        "{err}"
    );
    let mut unannounced = record();
    unannounced.settings.control = false;
    let err = refusal(&unannounced);
    assert!(
        err.contains("settings.control is false, but arm baseline~control is an A/A control arm"),
        "{err}"
    );

    let mut other = record();
    other.arms[1].variant = "no-reorder-blocks".to_string();
    for run in other
        .runs
        .iter_mut()
        .filter(|r| r.arm == "baseline~control")
    {
        run.variant = "no-reorder-blocks".to_string();
    }
    let err = refusal(&other);
    assert!(
        err.contains("the A/A control arm baseline~control runs variant no-reorder-blocks, not the base's baseline: it is no A/A control"),
        "{err}"
    );
}

/// The same constant on both sides but for a shift of 1e-9 Mbit/s (far
/// below the 0.001 Mbit/s the lab records) has no spread, so every test
/// called it: "significant" in every condition. It is no change now.
#[test]
fn a_shift_below_the_recorded_precision_is_no_change() {
    let mut r = with_more_rounds(record(), 2);
    for run in &mut r.runs {
        let shift = if run.arm == "no-reorder-blocks" {
            1e-9
        } else {
            0.0
        };
        for m in run
            .metrics
            .iter_mut()
            .filter(|m| m.name == LabMetric::Throughput.name())
        {
            m.value = 100.0 + shift;
        }
    }
    let throughput: Vec<_> = verdicts(r.clone())
        .into_iter()
        .filter(|v| v.0 == LabMetric::Throughput.name())
        .collect();
    assert_eq!(throughput.len(), 4);
    assert!(
        throughput.iter().all(|v| v.3 == Verdict::BelowResolution),
        "{throughput:?}"
    );
    let l = LabReport::new("/lab".into(), r, &[]).unwrap();
    let text = xtask::report::lab::verdict_text(
        l.comparisons[1].families[0].metrics[0].stats().unwrap(),
        Role::Variant,
        Default::default(),
    );
    assert_eq!(text, "no change the recorded values can hold");
}

/// 60,000 arms (3.7 MB) took 17 s of CPU and 120,000 took 242 s before
/// the file was refused: the checks compared every arm with every other.
/// Arms, runs, boots and conditions are capped now, the cap is checked
/// first, and the rest is linear.
#[test]
fn sixty_thousand_arms_are_refused_at_once() {
    let mut r = record();
    let template = r.arms[2].clone();
    r.arms.extend((0..60_000).map(|i| xtask::results::lab::Arm {
        name: format!("arm-{i}"),
        ..template.clone()
    }));
    let f = Fixture::new();
    let dir = write(&f, RUN, &r);
    let mut asked = request(&[], &[]);
    asked.lab = LabRuns::Dirs(vec![dir]);
    let clock = std::time::Instant::now();
    let err = format!("{:#}", report::load(&f.layout(), &asked).unwrap_err());
    let took = clock.elapsed();
    assert!(
        err.contains("arms holds 60003 arms, more than the 256 a lab records"),
        "{err}"
    );
    assert!(
        took < std::time::Duration::from_secs(5),
        "refusing took {took:?}"
    );
}

/// A QEMU machine's CPUs, steering, qdisc and per-CPU metrics as the lab
/// writes them, or a refusal naming the field. Before: `smp` 4294967295
/// made the report lay out a family per CPU until memory ran out (exit
/// 134); per-CPU metrics of CPUs the machine never had (`_cpu63`,
/// `_cpu01`, on one CPU) were accepted and vanished from every format;
/// steering masks `zz`, `irq_cpu` 4294967295 and a qdisc with a newline
/// (a Markdown heading of its own) were printed.
#[test]
fn a_machine_s_cpus_steering_and_qdisc_are_checked() {
    use xtask::results::lab::steering::{NicSteering, Steering};
    use xtask::results::lab::MachineInfo;
    let with = |smp: u32, edit: &dyn Fn(&mut LabRecord)| {
        let mut r = record();
        if let MachineInfo::Qemu { qemu, .. } = &mut r.machine {
            qemu.smp = smp;
        }
        if smp > 1 {
            // As the lab records a machine of several CPUs: no ns/packet.
            for run in &mut r.runs {
                run.metrics.retain(|m| m.name != "guest_cpu_per_packet");
            }
        }
        edit(&mut r);
        r
    };
    let steering = |rps: &str, irq: Option<u32>| {
        Some(Box::new(Steering {
            asked: "rps_cpus=2".into(),
            from: "--packet-steering".into(),
            resolved: String::new(),
            nics: vec![NicSteering {
                nic: "lan".into(),
                rps_cpus: rps.into(),
                xps_cpus: None,
                irq_cpu: irq,
                threaded_napi: false,
                napi_cpu: None,
            }],
        }))
    };
    let set_steering = |rps: &'static str, irq: Option<u32>| {
        move |r: &mut LabRecord| {
            if let MachineInfo::Qemu { qemu, .. } = &mut r.machine {
                qemu.steering = steering(rps, irq);
            }
        }
    };
    for (r, problem) in [
        (with(u32::MAX, &|_| {}), "machine.qemu.smp is 4294967295"),
        (with(0, &|_| {}), "machine.qemu.smp is 0"),
        (with(2, &set_steering("zz", None)), "rps_cpus is \"zz\""),
        (with(2, &set_steering("4", None)), "rps_cpus is \"4\""),
        (
            with(2, &set_steering("2", Some(u32::MAX))),
            "irq_cpu is CPU4294967295",
        ),
        (
            with(2, &|r| {
                r.boots[0].qdisc = Some("fq_codel\n## injected".into())
            }),
            "boots[0].qdisc",
        ),
        (
            with(2, &|r| {
                if let MachineInfo::Qemu { qemu, .. } = &mut r.machine {
                    qemu.steering = steering("2", None);
                    qemu.steering.as_mut().unwrap().from = "x\n## injected".into();
                }
            }),
            "steering.from holds control characters",
        ),
        (
            with_metric(
                with(2, &|_| {}),
                "guest_insns_per_packet_cpu63",
                "insns/packet",
                |_| 1.0,
            ),
            "names CPU63, but the machine had 2 CPU(s)",
        ),
        (
            with_metric(
                with(1, &|_| {}),
                "guest_insns_per_packet_cpu1",
                "insns/packet",
                |_| 1.0,
            ),
            "names CPU1, but the machine had 1 CPU(s)",
        ),
        (
            with_metric(
                with(2, &|_| {}),
                "guest_insns_per_packet_cpu01",
                "insns/packet",
                |_| 1.0,
            ),
            "guest_insns_per_packet_cpu01 is not a metric the lab records",
        ),
    ] {
        let err = refusal(&r);
        assert!(err.contains(problem), "{problem}: {err}");
    }
}
