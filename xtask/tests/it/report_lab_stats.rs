//! What the size report concludes from a lab run: a change is significant
//! only when Welch's interval excludes 0, Mann–Whitney agrees and it
//! exceeds the A/A control's noise floor; Mann–Whitney's limits with few
//! runs are stated; which lab run a report shows; lab and size results
//! side by side.

use crate::common::lab_fixture;
use crate::common::report_fixture;

use expect_test::expect;
use lab_fixture::{lab_only, record, with_more_rounds, without_arm, write, RUN};
use report_fixture::{render, request, Fixture};
use xtask::measure::stats::Verdict;
use xtask::report::lab::{LabComparison, LabReport, Role};
use xtask::report::{self, Format, LabRuns, Style};
use xtask::results::lab::LabRecord;

fn lab(record: LabRecord) -> LabReport {
    LabReport::new("/lab".into(), record, &[]).unwrap()
}

/// (metric, %change, verdict) of `comparison`, as the LKP names them.
fn verdicts(c: &LabComparison) -> Vec<(String, String, Verdict)> {
    c.families
        .iter()
        .flat_map(|f| {
            f.metrics.iter().map(move |m| {
                let s = m.stats().unwrap();
                (
                    xtask::report::lab::lkp_name(f, m),
                    format!("{:+.2}", m.percent().unwrap()),
                    s.comparison.verdict,
                )
            })
        })
        .collect()
}

#[test]
fn a_change_inside_the_a_a_floor_is_not_significant_one_outside_it_is() {
    // 5 rounds (the fixture's 3 and copies of its first 2): with 3 runs a
    // side Mann–Whitney cannot agree with Welch, so nothing would be.
    let l = lab(with_more_rounds(record(), 2));
    assert_eq!(l.comparisons[0].role, Role::Control);
    let variant = &l.comparisons[1];
    assert_eq!(variant.arm, "no-reorder-blocks");
    // WAN to LAN with GRO on: +0.70%, both tests agree, but the A/A
    // control moved +1.25%: within the noise. LAN to WAN: +5.72% against a
    // floor of 0.25%: significant.
    expect![[r#"
        [
            (
                "throughput.lan-to-wan.gro-on",
                "+5.72",
                Significant,
            ),
            (
                "throughput.wan-to-lan.gro-on",
                "+0.70",
                WithinNoise,
            ),
            (
                "throughput.lan-to-wan.gro-off",
                "+0.47",
                IntervalContainsZero,
            ),
            (
                "throughput.wan-to-lan.gro-off",
                "+2.97",
                Significant,
            ),
            (
                "guest_cpu_per_packet.lan-to-wan.gro-on",
                "-2.34",
                Significant,
            ),
            (
                "guest_cpu_per_packet.wan-to-lan.gro-on",
                "-0.24",
                Significant,
            ),
            (
                "guest_cpu_per_packet.lan-to-wan.gro-off",
                "+0.01",
                IntervalContainsZero,
            ),
            (
                "guest_cpu_per_packet.wan-to-lan.gro-off",
                "+0.16",
                WithinNoise,
            ),
        ]
    "#]]
    .assert_debug_eq(&verdicts(variant));
    let floor = variant.families[0].metrics[1].stats().unwrap().noise_floor;
    assert!(
        (floor.unwrap() - 1.253989968080265).abs() < 1e-12,
        "{floor:?}"
    );

    // The same samples without the control: no floor, so the two tests
    // alone decide, and the report says so.
    let alone = lab(without_arm(
        with_more_rounds(record(), 2),
        "baseline~control",
    ));
    assert_eq!(alone.comparisons.len(), 1);
    let v = verdicts(&alone.comparisons[0]);
    assert_eq!(v[1].2, Verdict::Significant, "{v:?}");
    assert!(
        alone.notes.iter().any(|n| n.starts_with("no A/A control")),
        "{:?}",
        alone.notes
    );

    // The fixture's 3 rounds: Welch's interval leaves 0 for five of the
    // changes (the percentile bootstrap called four of them significant),
    // but Mann–Whitney cannot agree with 3 runs a side.
    let three = lab(record());
    let v = verdicts(&three.comparisons[1]);
    assert!(v.iter().all(|m| m.2 != Verdict::Significant), "{v:?}");
    assert_eq!(
        v.iter().filter(|m| m.2 == Verdict::TooFewSamples).count(),
        5,
        "{v:?}"
    );
}

#[test]
fn the_report_says_when_mann_whitney_cannot_reach_0_05() {
    let note = |l: &LabReport| {
        l.notes
            .iter()
            .find(|n| n.starts_with("Mann–Whitney"))
            .cloned()
    };
    expect![[r#"
        Some(
            "Mann–Whitney U cannot reach p < 0.05 with 3 runs per side: its smallest p is then 0.100, and a change is called significant only when Welch and Mann–Whitney agree, so none can be; it needs 4 runs per side (cargo xtask lab --runs N, default 5)",
        )
    "#]]
    .assert_debug_eq(&note(&lab(record())));
    // 2 more rounds: 5 runs per side, the smallest p is 2/252.
    let five = lab(with_more_rounds(record(), 2));
    assert_eq!(five.settings.runs, 5);
    assert_eq!(note(&five), None);
    let c = five.comparisons[1].families[0].metrics[0].stats().unwrap();
    assert_eq!(c.comparison.base.n, 5);
    assert!((c.comparison.mann_whitney_min_p - 2.0 / 252.0).abs() < 1e-12);
}

#[test]
fn a_lab_of_the_base_alone_lists_its_means() {
    let only_base = without_arm(
        without_arm(record(), "baseline~control"),
        "no-reorder-blocks",
    );
    let f = Fixture::new();
    write(&f, RUN, &only_base);
    let out = render(&f, &request(&[], &[]), Format::Text, Style::default());
    expect![[r#"
        Runtime lab, brcm47xx on QEMU malta -cpu 74Kf (lab kernels brcm47xx-lab):
        target/xtask/lab/brcm47xx/20261201T101500Z-4242/lab.json (complete: 3 runs per variant, direction and GRO setting of 10 s each, variants interleaved, 1 warm-up run per boot discarded; no A/A control)
        baseline:
        Throughput, GRO on:
        LAN to WAN: 170.6 Mbit/s ±0.86% (3 runs)
        WAN to LAN: 175.3 Mbit/s ±0.43% (3 runs)
        Throughput, GRO off:
        LAN to WAN: 150.1 Mbit/s ±0.64% (3 runs)
        WAN to LAN: 155.1 Mbit/s ±0.62% (3 runs)
        Guest CPU per packet, GRO on:
        LAN to WAN: 82017 ns/packet ±0.09% (3 runs)
        WAN to LAN: 83510 ns/packet ±0.04% (3 runs)
        Guest CPU per packet, GRO off:
        LAN to WAN: 91017 ns/packet ±0.08% (3 runs)
        WAN to LAN: 92010 ns/packet ±0.04% (3 runs)
        note: nothing compared: the lab ran only baseline; compare a variant with `cargo xtask lab --target brcm47xx --variant baseline --variant <VARIANT>`
        What the numbers can show: Mbit/s is the emulator's forwarding speed: it follows host load (other processes, CPU frequency), so only runs interleaved on one quiet host compare; ns/packet is the guest's CPU time per forwarded packet: under -icount shift=3,align=off,sleep=on guest time counts instructions, so it is a path-length proxy that host load does not move; neither shows cache, TLB or branch-layout effects (what block reordering changes): those need real hardware.
    "#]].assert_eq(&out);
    let csv = render(&f, &request(&[], &[]), Format::Csv, Style::default());
    assert_eq!(csv.lines().count(), 1 + 1 + 8, "{csv}");
    assert!(
        csv.contains("\nbrcm47xx-lab,,QEMU malta (74Kf),baseline,,gro-on,lan-to-wan,170.63333333333333,,,,throughput,Mbit/s,3,,0.8639712595231918,"),
        "{csv}"
    );
    let mail = render(&f, &request(&[], &[]), Format::Mail, Style::default());
    assert!(
        mail.starts_with("Runtime lab of baseline:\n\nRuntime lab, brcm47xx"),
        "{mail}"
    );
}

#[test]
fn the_newest_complete_run_is_shown_unless_one_is_named() {
    let f = lab_only();
    let mut newer = record();
    newer.started = "2026-12-02T08:00:00Z".to_string();
    newer.finished = None;
    // Its runs ran that day, after it started.
    for run in &mut newer.runs {
        run.started = run.started.replace("2026-12-01T", "2026-12-02T");
    }
    newer.status = xtask::results::lab::Status::Running { pid: None };
    let newer_dir = write(&f, "20261202T080000Z-5151", &newer);
    let report = report::load(&f.layout(), &request(&[], &[])).unwrap();
    assert_eq!(report.labs.len(), 1);
    assert!(report.labs[0].dir.ends_with(RUN));
    expect![[r#"
        [
            "brcm47xx: lab run target/xtask/lab/brcm47xx/20261202T080000Z-5151 passed over, its status is \"running\" (show it with --lab-run target/xtask/lab/brcm47xx/20261202T080000Z-5151)",
        ]
    "#]]
    .assert_debug_eq(&report.skipped);
    let mut named = request(&[], &[]);
    named.lab = LabRuns::Dirs(vec![newer_dir.join("lab.json")]);
    let report = report::load(&f.layout(), &named).unwrap();
    assert_eq!(report.labs[0].dir, newer_dir);
    assert!(report.labs[0].notes[0].contains("not complete (running)"));
}

/// `--lab-run X` given three times (as the directory, its lab.json and
/// `X/.`) shows the run once; before, the lab was printed three times.
#[test]
fn a_run_named_three_times_is_shown_once() {
    let f = lab_only();
    let dir = f.root().join("target/xtask/lab/brcm47xx").join(RUN);
    let mut named = request(&[], &[]);
    named.lab = LabRuns::Dirs(vec![dir.clone(), dir.join("lab.json"), dir.join(".")]);
    let report = report::load(&f.layout(), &named).unwrap();
    assert_eq!(report.labs.len(), 1);
    assert_eq!(report.labs[0].dir, dir);
    let text = report::render(&report, Format::Text, &Style::default()).unwrap();
    assert_eq!(text.matches("Runtime lab, brcm47xx").count(), 1, "{text}");
}

#[test]
fn sizes_and_the_lab_side_by_side() {
    let f = lab_only();
    f.standard("bcm53xx");
    let mail = render(&f, &request(&[], &[]), Format::Mail, Style::default());
    assert!(
        mail.starts_with("Size and runtime change of no-reorder-blocks against baseline:\n\n"),
        "{mail}"
    );
    assert!(mail.contains("\nBCM47094 (bcm53xx/generic):\n"), "{mail}");
    assert!(
        mail.contains("\nRuntime lab, brcm47xx on QEMU malta"),
        "{mail}"
    );
    // The lab's target without size results: the lab, and a note.
    let report = report::load(&f.layout(), &request(&["brcm47xx"], &[])).unwrap();
    assert!(report.targets.is_empty());
    assert_eq!(report.labs.len(), 1);
    expect![[r#"
        [
            "brcm47xx: no size results, only the lab's (`cargo xtask build --target brcm47xx --variant baseline --variant <VARIANT>`)",
        ]
    "#]]
    .assert_debug_eq(&report.skipped);
    // Sizes only.
    let mut sizes = request(&[], &[]);
    sizes.lab = LabRuns::Off;
    let report = report::load(&f.layout(), &sizes).unwrap();
    assert!(report.labs.is_empty());
    assert_eq!(report.targets.len(), 1);
}

#[test]
fn a_lab_kernel_rebuilt_since_the_run_is_noted() {
    let f = lab_only();
    let mut r = f.result("bcm53xx", "baseline", &[], (30_000, 4_000, 2_000));
    r.target.name = "brcm47xx-lab".to_string();
    f.write(r, &[]);
    let report = report::load(&f.layout(), &request(&["brcm47xx"], &[])).unwrap();
    let notes = &report.labs[0].notes;
    assert!(
        notes.iter().any(|n| n.starts_with(
            "brcm47xx-lab/baseline was rebuilt after this lab run: its vmlinux is not the one the lab booted"
        )),
        "{notes:?}"
    );
}

#[test]
fn a_bcm53xx_like_lab_calls_only_the_changes_that_are_there() {
    // lab_fixture/bcm53xx-like.json: 4 rounds with the cache model, drawn
    // from known distributions (lab_fixture/bcm53xx-like.py); the true
    // changes of no-reorder-blocks are +1 % ns/packet and insns/packet
    // LAN to WAN and -8 % L1I misses everywhere, nothing else.
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/lab_fixture/bcm53xx-like.json");
    let record: LabRecord = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let l = lab(record);
    let real = |name: &str| {
        name.starts_with("l1i_misses_per_packet.")
            || (name.starts_with("guest_cpu_per_packet.lan-to-wan")
                || name.starts_with("guest_insns_per_packet.lan-to-wan"))
    };
    let v = verdicts(&l.comparisons[1]);
    let called: Vec<&str> = v
        .iter()
        .filter(|m| m.2 == Verdict::Significant)
        .map(|m| m.0.as_str())
        .collect();
    // The percentile bootstrap called 8: these 6, ns/packet LAN to WAN GRO
    // off (Welch p 0.060, Mann–Whitney p 0.057) and L1D misses WAN to LAN
    // GRO on (no change there; Welch p 0.032, Mann–Whitney p 0.057).
    expect![[r#"
        [
            "guest_insns_per_packet.lan-to-wan.gro-on",
            "guest_insns_per_packet.lan-to-wan.gro-off",
            "l1i_misses_per_packet.lan-to-wan.gro-on",
            "l1i_misses_per_packet.wan-to-lan.gro-on",
            "l1i_misses_per_packet.lan-to-wan.gro-off",
            "l1i_misses_per_packet.wan-to-lan.gro-off",
        ]
    "#]]
    .assert_debug_eq(&called);
    assert!(called.iter().all(|n| real(n)), "{called:?}");
    let l1d = v
        .iter()
        .find(|m| m.0 == "l1d_misses_per_packet.wan-to-lan.gro-on")
        .unwrap();
    assert_eq!(l1d.2, Verdict::TestsDisagree);
    assert!(
        l.notes
            .iter()
            .any(|n| n.starts_with("6 of 20 changes are called significant; were none real, chance would call at most 1.0 of them")),
        "{:?}",
        l.notes
    );
}

#[test]
fn the_mail_counts_the_runs_each_row_measured() {
    // A lab stopped in its last round: the variant lost its round 2.
    let mut stopped = record();
    stopped
        .runs
        .retain(|r| !(r.arm == "no-reorder-blocks" && r.round == 2));
    stopped.status = xtask::results::lab::Status::Failed {
        reason: "interrupted (Ctrl-C or SIGTERM)".to_string(),
    };
    let f = Fixture::new();
    let dir = write(&f, RUN, &stopped);
    let mut named = request(&[], &[]);
    named.lab = LabRuns::Dirs(vec![dir.join("lab.json")]);
    let mail = render(&f, &named, Format::Mail, Style::default());
    let row = mail
        .lines()
        .find(|l| l.starts_with("  LAN to WAN, GRO on "))
        .unwrap_or_else(|| panic!("{mail}"));
    assert!(row.contains("|  3/2 |"), "{row}");
    assert!(!mail.contains("runs per side):"), "{mail}");
}
