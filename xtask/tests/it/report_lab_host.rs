//! `size-report` on a hand-made host lab run (`lab_fixture/host-lab.json`:
//! this machine's kernel, tbench with 2 clients, 3 runs of 5 s per arm;
//! arms baseline, baseline~control and lo-no-tso-gso), written where
//! `cargo xtask lab --lab host` writes it. tbench MB/s is a metric family
//! like the QEMU lab's Mbit/s: the seed's lines, the LKP table and the
//! per-run table, with the host lab's note. Update the snapshot with
//! `UPDATE_EXPECT=1 cargo test -p xtask --test it report_lab_host::`.

use crate::common::lab_fixture;
use crate::common::report_fixture;

use std::path::PathBuf;

use expect_test::expect;
use report_fixture::{render, request, Fixture};
use xtask::report::{Format, Style};
use xtask::results::lab::LabRecord;

const RUN: &str = "20261202T091000Z-4343";

fn host_only() -> Fixture {
    let file = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/lab_fixture/host-lab.json");
    let record: LabRecord = serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
    let f = Fixture::new();
    lab_fixture::write(&f, RUN, &record);
    f
}

fn host(format: Format) -> String {
    render(
        &host_only(),
        &request(&["host"], &[]),
        format,
        Style::default(),
    )
}

#[test]
fn text() {
    expect![[r#"
        Runtime lab, host kernel 6.12.57+deb13-amd64 (x86_64), runtime settings in a private network namespace:
        target/xtask/lab/host/20261202T091000Z-4343/lab.json (complete: 3 runs per variant and benchmark of 5 s each, variants interleaved, 1 warm-up run per variant and round discarded; A/A control baseline~control)
        Runtime settings (read back with ethtool -k after every run): baseline: nothing changed; lo-no-tso-gso: ethtool -K lo gso off tso off
        A/A control baseline → baseline~control (the noise floor):
        tbench, 2 clients:
        loopback: 601.6 MB/s → 601.1 MB/s (-0.08%)
          sd ±0.52% → ±0.29%, 95% Welch interval -1.15% … +0.98%, Welch p 0.8238, Mann–Whitney p 1.0000; seeing a change this size takes 404 runs per side (80 % power)
        baseline → lo-no-tso-gso:
        tbench, 2 clients:
        loopback: 601.6 MB/s → 548.6 MB/s (-8.81%)
          sd ±0.52% → ±0.58%, 95% Welch interval -9.99% … -7.63%, Welch p <0.0001, Mann–Whitney p 0.1000: too few runs for Mann–Whitney (4 per side)
        note: measures this machine's kernel, not a router's: Linux 6.12.57+deb13-amd64 on x86_64 (2 CPUs) with runtime settings applied in a private network namespace, so a change here is the kernel's answer to those settings on this machine, under its load
        note: Mann–Whitney U cannot reach p < 0.05 with 3 runs per side: its smallest p is then 0.100, and a change is called significant only when Welch and Mann–Whitney agree, so none can be; it needs 4 runs per side (cargo xtask lab --runs N, default 5)
        What the numbers can show: the host lab measures this machine's kernel, not a router's: tbench MB/s and iperf3 Mbit/s over loopback follow this machine's kernel, CPU and load (other processes, frequency), so only runs interleaved on one quiet machine compare; loopback has no NIC, driver or wire: offload settings there change how the stack segments and checksums, not what a router's hardware does.
    "#]]
    .assert_eq(&host(Format::Text));
}

#[test]
fn mail_has_the_per_run_table() {
    let mail = host(Format::Mail);
    assert!(
        mail.starts_with("Runtime change of lo-no-tso-gso against baseline:\n"),
        "{mail}"
    );
    let table = "tbench, loopback, 2 clients (MB/s):\n\
        run | baseline | baseline~control | lo-no-tso-gso\n\
        ----+----------+------------------+--------------\n\
        1   |    601.2 |            599.8 |         548.3\n\
        2   |    598.7 |            603.1 |         551.9\n\
        3   |    604.9 |            600.4 |         545.6\n\
        avg |    601.6 |            601.1 |         548.6\n";
    assert!(mail.contains(table), "{mail}");
}

#[test]
fn markdown_has_the_lkp_row() {
    let md = host(Format::Markdown);
    assert!(md.contains(
        "| 601.60 ± 0.52% | -8.81% | 548.60 ± 0.58% | -9.99% … -7.63% | <0.0001 | 0.1000 | too few runs for Mann–Whitney (4 per side) | tbench.loopback.clients-2 (MB/s) |"
    ), "{md}");
    assert!(
        md.contains("> Note: measures this machine's kernel, not a router's"),
        "{md}"
    );
}

#[test]
fn csv_json_and_svg_carry_the_family() {
    let csv = host(Format::Csv);
    assert!(
        csv.lines().any(|l| l.starts_with(
            "host,,host kernel 6.12.57+deb13-amd64 (x86_64),baseline,lo-no-tso-gso,clients-2,loopback,"
        ) && l.contains(",tbench,MB/s,3,3,")),
        "{csv}"
    );
    let json: serde_json::Value = serde_json::from_str(&host(Format::Json)).unwrap();
    let lab = &json["labs"][0];
    assert_eq!(lab["host"]["kernel_release"], "6.12.57+deb13-amd64");
    assert!(lab.get("qemu").is_none());
    assert_eq!(lab["series"][0]["bench"]["name"], "tbench");
    assert_eq!(lab["series"][0]["unit"], "MB/s");
    assert_eq!(
        lab["arms"][2]["runtime"]["ethtool"][0]["features"]["tso"],
        "off"
    );
    let svg = host(Format::Svg);
    assert!(
        svg.contains(
            "Runtime lab, host kernel 6.12.57+deb13-amd64 (x86_64): tbench (MB/s), every run"
        ),
        "{}",
        &svg[..svg.len().min(2000)]
    );
}

#[test]
fn a_host_lab_needs_no_build_and_shows_under_all() {
    let f = host_only();
    let report = xtask::report::load(&f.layout(), &request(&["host"], &[])).unwrap();
    assert!(
        report
            .skipped
            .iter()
            .all(|s| !s.contains("cargo xtask build")),
        "{:?}",
        report.skipped
    );
    let all = render(&f, &request(&[], &[]), Format::Text, Style::default());
    assert!(all.contains("tbench, 2 clients:"), "{all}");
}
