//! `size-report --lab-run A --lab-run B --agreement` on generated runs:
//! a core-model run (modelled packets/s) beside throughput runs whose
//! %change per condition the test chooses, so that every cell verdict
//! (agree, opposite signs, one not established, neither) is known.

use crate::common::lab_fixture;
use crate::common::report_fixture;

use lab_fixture::{record, with_core_model, with_more_rounds, write};
use report_fixture::{render, request, Fixture};
use xtask::report::lab::agreement::{agreement, CellVerdict};
use xtask::report::lab::LabReport;
use xtask::report::{Format, LabRuns, Style};
use xtask::results::lab::{Condition, Direction, Gro, LabMetric, LabRecord};

/// The fixture's runs, 6 rounds, with throughput 100 Mbit/s on the base
/// and the control and 100 × (1 + change/100) on no-reorder-blocks, where
/// `change` is `changes`' entry for the run's (direction, GRO); each
/// value moved by a small zero-sum jitter per round (±0.3 %), different
/// for each arm.
fn throughput_run(changes: [(Direction, Gro, f64); 4]) -> LabRecord {
    const JITTER: [f64; 6] = [0.3, -0.2, 0.1, -0.3, 0.2, -0.1];
    let mut r = with_more_rounds(record(), 3);
    for run in &mut r.runs {
        let Condition::Forward { direction, gro } = run.condition else {
            continue;
        };
        let change = match run.arm.as_str() {
            "no-reorder-blocks" => changes
                .iter()
                .find(|(d, g, _)| *d == direction && *g == gro)
                .map_or(0.0, |c| c.2),
            _ => 0.0,
        };
        let shift = match run.arm.as_str() {
            "baseline" => 0,
            "baseline~control" => 2,
            _ => 4,
        };
        let jitter = JITTER[(run.round as usize + shift) % JITTER.len()];
        for m in &mut run.metrics {
            if m.name == LabMetric::Throughput.name() {
                m.value = 100.0 * (1.0 + change / 100.0) * (1.0 + jitter / 100.0);
            }
        }
    }
    r
}

fn report(record: LabRecord) -> LabReport {
    LabReport::new("/lab".into(), record, &[]).unwrap()
}

use Direction::{LanToWan as L2W, WanToLan as W2L};

#[test]
fn each_cell_is_called_by_both_runs_verdicts() {
    // The model: no-reorder-blocks takes 20 % fewer taken branches, so
    // more modelled packets/s in every cell, each established.
    let model = report(with_core_model());
    let measured = report(throughput_run([
        (L2W, Gro::On, 5.0),
        (L2W, Gro::Off, -5.0),
        (W2L, Gro::On, 0.0),
        (W2L, Gro::Off, 0.0),
    ]));
    let a = agreement(&[model, measured.clone()]).unwrap();
    assert_eq!(
        a.runs.map(|r| r.metrics),
        [
            vec![LabMetric::PacketsPerSecond],
            vec![LabMetric::Throughput]
        ]
    );
    let verdicts: Vec<String> = a
        .cells
        .iter()
        .map(|c| format!("{} {} {}: {}", c.variant, c.item, c.kind, c.verdict.name()))
        .collect();
    assert_eq!(
        verdicts,
        [
            "no-reorder-blocks lan-to-wan gro-off: opposite-signs",
            "no-reorder-blocks lan-to-wan gro-on: agree",
            "no-reorder-blocks wan-to-lan gro-off: only-a",
            "no-reorder-blocks wan-to-lan gro-on: only-a",
        ]
    );
    for c in &a.cells {
        assert!(c.sides[0].percent > 0.0, "{c:?}");
    }

    // Two measurements: the other cells' verdicts.
    let other = report(throughput_run([
        (L2W, Gro::On, 5.0),
        (L2W, Gro::Off, 0.0),
        (W2L, Gro::On, 3.0),
        (W2L, Gro::Off, 0.0),
    ]));
    let b = agreement(&[measured, other]).unwrap();
    let counts: Vec<(CellVerdict, usize)> = b.counts().into_iter().filter(|c| c.1 > 0).collect();
    assert_eq!(
        counts,
        [
            (CellVerdict::Agree, 1),
            (CellVerdict::OnlyFirst, 1),
            (CellVerdict::OnlySecond, 1),
            (CellVerdict::Neither, 1)
        ]
    );
    let err = agreement(&[report(with_core_model())])
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("has 1") && err.contains("--lab-run A --lab-run B"),
        "{err}"
    );
}

#[test]
fn the_report_shows_the_cells_after_the_runs_in_every_format_it_has() {
    let f = Fixture::new();
    let model = write(&f, "20261201T101500Z-1", &with_core_model());
    let measured = write(
        &f,
        "20261201T111500Z-2",
        &throughput_run([
            (L2W, Gro::On, 5.0),
            (L2W, Gro::Off, -5.0),
            (W2L, Gro::On, 0.0),
            (W2L, Gro::Off, 0.0),
        ]),
    );
    let mut r = request(&["brcm47xx"], &[]);
    r.lab = LabRuns::Dirs(vec![model, measured]);
    r.agreement = true;
    let text = render(&f, &r, Format::Text, Style::default());
    let tail = &text[text.find("Agreement of two lab runs").expect(&text)..];
    assert!(
        tail.contains("Modelled packets/s at the SoC's clock"),
        "{tail}"
    );
    assert!(
        tail.contains("no-reorder-blocks LAN to WAN, GRO off: A +"),
        "{tail}"
    );
    assert!(
        tail.contains("4 cells: 1 agree, 1 opposite signs, 2 only A established, 0 only B established, 0 neither established"),
        "{tail}"
    );
    assert!(
        tail.contains("The runs answer in different metrics (A: Modelled packets/s"),
        "{tail}"
    );
    let md = render(&f, &r, Format::Markdown, Style::default());
    assert!(md.contains("### Agreement of two lab runs"), "{md}");
    assert!(
        md.contains("| no-reorder-blocks | LAN to WAN, GRO on | +"),
        "{md}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&render(&f, &r, Format::Json, Style::default())).unwrap();
    let a = &json["agreement"];
    assert_eq!(a["counts"]["agree"], 1, "{a}");
    assert_eq!(a["counts"]["only-a"], 2, "{a}");
    assert_eq!(a["metrics"][0][0], "modelled_packets_per_second");
    assert_eq!(a["cells"][0]["cell_metrics"][1], "throughput");
    assert_eq!(a["cells"].as_array().unwrap().len(), 4);
    for format in [Format::Csv, Format::Svg] {
        let report = xtask::report::load(&f.layout(), &r).unwrap();
        let err = xtask::report::render(&report, format, &Style::default())
            .unwrap_err()
            .to_string();
        assert!(err.contains("--agreement has no CSV or SVG form"), "{err}");
    }
}

/// A newline in what lab.json says of its machine cannot start a line of
/// its own (the hostile trial forged `fake: agree` that way).
#[test]
fn a_newline_in_lab_json_stays_inside_its_line() {
    let mut forged = throughput_run([
        (L2W, Gro::On, 5.0),
        (L2W, Gro::Off, 0.0),
        (W2L, Gro::On, 0.0),
        (W2L, Gro::Off, 0.0),
    ]);
    if let xtask::results::lab::MachineInfo::Qemu { qemu, .. } = &mut forged.machine {
        qemu.cpu = "24Kc\nfake: agree".to_string();
    } else {
        panic!("the fixture is a QEMU run");
    }
    let a = agreement(&[report(with_core_model()), report(forged)]).unwrap();
    let text = xtask::report::lab::agreement::text(
        std::path::Path::new("/"),
        &a,
        xtask::report::Decimal::Point,
    );
    assert!(!text.lines().any(|l| l.starts_with("fake")), "{text}");
    assert!(text.contains("24Kc\\nfake: agree"), "{text}");
}

/// Nor can a newline in a lab directory's name, on the line that names
/// its lab.json, in any format with lines.
#[test]
fn a_newline_in_a_lab_directory_s_name_stays_inside_its_line() {
    let f = Fixture::new();
    let dir = write(&f, "20261201T101500Z-1\nforged line", &with_core_model());
    let mut r = request(&["brcm47xx"], &[]);
    r.lab = LabRuns::Dirs(vec![dir]);
    for format in [Format::Text, Format::Mail, Format::Markdown] {
        let out = render(&f, &r, format, Style::default());
        assert!(
            !out.lines().any(|l| l.starts_with("forged line")),
            "{format:?}:\n{out}"
        );
        assert!(out.contains("-1\\nforged line"), "{format:?}:\n{out}");
    }
}
