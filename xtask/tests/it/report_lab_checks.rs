//! A damaged `lab.json` is refused on read, naming the runs at fault,
//! instead of rendering a confident table of wrong statistics. Each case
//! starts from the fixture run (`lab_fixture/lab.json`, 3 rounds, a
//! complete lab) and damages it as a trial of damaged files did. `--lab-run DIR` then fails
//! with the problems; the default (the newest complete run) passes the
//! file over with a note, as it does an unreadable one.

use crate::common::lab_fixture;
use crate::common::report_fixture;

use expect_test::{expect, Expect};
use lab_fixture::{record, write, RUN};
use report_fixture::{request, Fixture};
use xtask::report::{self, Format, LabRuns, Style};
use xtask::results::lab::{check, LabMetric, LabRecord, Status};

/// The error `size-report --lab-run DIR` gives for `record`; panics with
/// the report it rendered instead (what the trial saw) when there is none.
fn refusal(record: &LabRecord) -> String {
    let f = Fixture::new();
    let dir = write(&f, RUN, record);
    let mut named = request(&[], &[]);
    named.lab = LabRuns::Dirs(vec![dir]);
    match report::load(&f.layout(), &named) {
        Ok(r) => panic!(
            "rendered instead of refusing:\n{}",
            report::render(&r, Format::Text, &Style::default()).unwrap()
        ),
        Err(e) => format!("{e:#}").replace(&format!("{}/", f.root().display()), ""),
    }
}

/// `record` refused with `expected`, and passed over by the default
/// selection with a note that names the same problem.
fn refused(record: LabRecord, expected: Expect) {
    let error = refusal(&record);
    expected.assert_eq(&error);
    passed_over(&record, &error);
}

/// The default selection (the newest complete run) leaves `record` out,
/// with a note naming the first problem of `error`; the size results
/// next to it are still reported.
fn passed_over(record: &LabRecord, error: &str) {
    let f = Fixture::new();
    f.standard("bcm53xx");
    write(&f, RUN, record);
    let r = report::load(&f.layout(), &request(&[], &[])).unwrap();
    assert!(r.labs.is_empty(), "the damaged run was shown");
    assert_eq!(r.targets.len(), 1);
    let first = error.lines().nth(1).unwrap().trim();
    assert!(
        r.skipped
            .iter()
            .any(|n| n.contains("passed over") && n.contains(first)),
        "{:#?}",
        r.skipped
    );
}

/// The fixture's run `i` (its position in `runs`), measured value of
/// `metric` set to `value`.
fn with_value(mut r: LabRecord, i: usize, metric: &str, value: f64) -> LabRecord {
    let m = r.runs[i]
        .metrics
        .iter_mut()
        .find(|m| m.name == metric)
        .unwrap();
    m.value = value;
    r
}

#[test]
fn every_fixture_and_a_lab_that_stopped_early_pass_the_check() {
    for file in ["lab.json", "host-lab.json", "bench-lab.json"] {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/lab_fixture")
            .join(file);
        let r: LabRecord = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let p = check::check(&r);
        assert!(
            p.refusals.is_empty() && p.warnings.is_empty(),
            "{file}: {p:?}"
        );
    }
    // A lab that failed in its second round: fewer runs than declared is
    // what such a lab has, and no problem.
    let mut r = record();
    r.status = Status::Failed {
        reason: "boom".to_string(),
    };
    r.runs.retain(|run| run.round == 0 || run.index < 20);
    let p = check::check(&r);
    assert!(p.refusals.is_empty(), "{p:?}");
}

#[test]
fn no_runs_or_only_warm_ups_under_a_complete_status_is_refused() {
    let mut empty = record();
    empty.runs.clear();
    let mut warm_ups = record();
    warm_ups.runs.retain(|run| run.warmup);
    for r in [empty, warm_ups] {
        refused(
            r,
            expect![[r#"
                --lab-run target/xtask/lab/brcm47xx/20261201T101500Z-4242: target/xtask/lab/brcm47xx/20261201T101500Z-4242/lab.json: 3 problems, so no table from it would be right:
                  arm baseline has fewer than the 3 runs lab.json declares per condition, though its status is complete: lan-to-wan GRO on 0/3, wan-to-lan GRO on 0/3, lan-to-wan GRO off 0/3, wan-to-lan GRO off 0/3
                  arm baseline~control has fewer than the 3 runs lab.json declares per condition, though its status is complete: lan-to-wan GRO on 0/3, wan-to-lan GRO on 0/3, lan-to-wan GRO off 0/3, wan-to-lan GRO off 0/3
                  arm no-reorder-blocks has fewer than the 3 runs lab.json declares per condition, though its status is complete: lan-to-wan GRO on 0/3, wan-to-lan GRO on 0/3, lan-to-wan GRO off 0/3, wan-to-lan GRO off 0/3
                repair or remove those runs, or run the lab again (`cargo xtask lab --target brcm47xx`); lab.json counts rounds from 0, this message from 1"#]],
        );
    }
}

#[test]
fn duplicated_runs_are_refused_rather_than_doubling_n() {
    let mut r = record();
    let copies: Vec<_> = r.runs.iter().filter(|run| !run.warmup).cloned().collect();
    let first = r.runs.len() as u32;
    for (index, mut run) in (first..).zip(copies) {
        run.index = index;
        r.runs.push(run);
    }
    let error = refusal(&r);
    let lines: Vec<&str> = error.lines().take(3).collect();
    expect![[r#"
        [
            "--lab-run target/xtask/lab/brcm47xx/20261201T101500Z-4242: target/xtask/lab/brcm47xx/20261201T101500Z-4242/lab.json: 36 problems, so no table from it would be right:",
            "  runs[45] (index 45, arm baseline, round 1 of 3, lan-to-wan GRO on): a second measured run of the same arm, round and condition as runs[1]",
            "  runs[46] (index 46, arm baseline, round 1 of 3, lan-to-wan GRO off): a second measured run of the same arm, round and condition as runs[2]",
        ]
    "#]]
    .assert_debug_eq(&lines);
    assert!(error.contains("\n  … and 26 more\n"), "{error}");
    passed_over(&r, &error);
}

#[test]
fn a_negative_throughput_is_refused() {
    refused(
        with_value(record(), 11, LabMetric::Throughput.name(), -180.2),
        expect![[r#"
            --lab-run target/xtask/lab/brcm47xx/20261201T101500Z-4242: target/xtask/lab/brcm47xx/20261201T101500Z-4242/lab.json: 1 problem, so no table from it would be right:
              runs[11] (index 11, arm no-reorder-blocks, round 1 of 3, lan-to-wan GRO on): throughput is -180.2 Mbit/s, but throughput cannot be negative
            repair or remove those runs, or run the lab again (`cargo xtask lab --target brcm47xx`); lab.json counts rounds from 0, this message from 1"#]],
    );
}

#[test]
fn a_value_too_large_to_average_is_refused() {
    refused(
        with_value(record(), 11, LabMetric::Throughput.name(), 1e308),
        expect![[r#"
            --lab-run target/xtask/lab/brcm47xx/20261201T101500Z-4242: target/xtask/lab/brcm47xx/20261201T101500Z-4242/lab.json: 1 problem, so no table from it would be right:
              runs[11] (index 11, arm no-reorder-blocks, round 1 of 3, lan-to-wan GRO on): throughput is 1e308 Mbit/s, more than the 1e6 Mbit/s it can be
            repair or remove those runs, or run the lab again (`cargo xtask lab --target brcm47xx`); lab.json counts rounds from 0, this message from 1"#]],
    );
}

#[test]
fn a_variant_whose_runs_were_removed_is_named() {
    let mut r = record();
    r.runs.retain(|run| run.arm != "no-reorder-blocks");
    refused(
        r,
        expect![[r#"
            --lab-run target/xtask/lab/brcm47xx/20261201T101500Z-4242: target/xtask/lab/brcm47xx/20261201T101500Z-4242/lab.json: 1 problem, so no table from it would be right:
              arm no-reorder-blocks has fewer than the 3 runs lab.json declares per condition, though its status is complete: lan-to-wan GRO on 0/3, wan-to-lan GRO on 0/3, lan-to-wan GRO off 0/3, wan-to-lan GRO off 0/3
            repair or remove those runs, or run the lab again (`cargo xtask lab --target brcm47xx`); lab.json counts rounds from 0, this message from 1"#]],
    );
}

#[test]
fn a_variant_whose_runs_were_renamed_is_named() {
    let mut r = record();
    for run in r
        .runs
        .iter_mut()
        .filter(|run| run.arm == "no-reorder-blocks")
    {
        run.arm = "no-reorder-blocks-v2".to_string();
    }
    let error = refusal(&r);
    let lines: Vec<&str> = error.lines().take(3).collect();
    expect![[r#"
        [
            "--lab-run target/xtask/lab/brcm47xx/20261201T101500Z-4242: target/xtask/lab/brcm47xx/20261201T101500Z-4242/lab.json: 16 problems, so no table from it would be right:",
            "  arm no-reorder-blocks has fewer than the 3 runs lab.json declares per condition, though its status is complete: lan-to-wan GRO on 0/3, wan-to-lan GRO on 0/3, lan-to-wan GRO off 0/3, wan-to-lan GRO off 0/3",
            "  runs[10] (index 10, arm no-reorder-blocks-v2, round 1 of 3, lan-to-wan GRO on, warm-up): arm no-reorder-blocks-v2 is not one of lab.json's arms (baseline, baseline~control, no-reorder-blocks)",
        ]
    "#]]
    .assert_debug_eq(&lines);
    passed_over(&r, &error);
}

#[test]
fn a_changed_unit_is_refused() {
    let mut r = with_value(record(), 11, LabMetric::Throughput.name(), 0.1802);
    r.runs[11].metrics[0].unit = "Gbit/s".to_string();
    refused(
        r,
        expect![[r#"
            --lab-run target/xtask/lab/brcm47xx/20261201T101500Z-4242: target/xtask/lab/brcm47xx/20261201T101500Z-4242/lab.json: 1 problem, so no table from it would be right:
              runs[11] (index 11, arm no-reorder-blocks, round 1 of 3, lan-to-wan GRO on): throughput is in Gbit/s, but the lab records it in Mbit/s
            repair or remove those runs, or run the lab again (`cargo xtask lab --target brcm47xx`); lab.json counts rounds from 0, this message from 1"#]],
    );
}

#[test]
fn a_lab_that_stopped_before_a_variant_says_so_instead_of_an_empty_section() {
    let mut r = record();
    r.status = Status::Failed {
        reason: "no-reorder-blocks did not boot".to_string(),
    };
    r.runs.retain(|run| run.arm != "no-reorder-blocks");
    let f = Fixture::new();
    let dir = write(&f, RUN, &r);
    let mut named = request(&[], &[]);
    named.lab = LabRuns::Dirs(vec![dir]);
    let report = report::load(&f.layout(), &named).unwrap();
    let text = report::render(&report, Format::Text, &Style::default()).unwrap();
    assert!(!text.contains("baseline → no-reorder-blocks:"), "{text}");
    assert!(
        text.contains("\nnote: no-reorder-blocks has no measured run in this lab run, so it is not compared\n"),
        "{text}"
    );
}

#[test]
fn a_base_without_an_arm_is_refused() {
    let mut r = record();
    r.settings.base = "baseline-old".to_string();
    let error = refusal(&r);
    assert!(
        error.contains("\n  the base baseline-old (settings.base) is not one of lab.json's arms (baseline, baseline~control, no-reorder-blocks)\n"),
        "{error}"
    );
}
