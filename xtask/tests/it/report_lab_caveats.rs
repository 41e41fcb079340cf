//! What a QEMU lab's report says its figures can and cannot show follows
//! what the lab measured: a `--udp` lab adds the datagrams lost as a
//! family and says what the loss measures; tbench inside the guest
//! (`--topology loopback`) speaks of tbench MB/s on the guest's loopback,
//! not of forwarding Mbit/s and ns/packet. From the hand-made runs in
//! `lab_fixture/` (the QEMU fixture, and the host fixture's tbench runs
//! moved onto the QEMU fixture's machine). In the mesh a note says which
//! endpoints "LAN to WAN" and "WAN to LAN" are; a lab run side by side with
//! others says which figures that load moved.

use crate::common::lab_fixture;
use crate::common::report_fixture;

use std::path::PathBuf;

use lab_fixture::{record, write, RUN};
use report_fixture::{render, request, Fixture};
use xtask::report::lab::LabReport;
use xtask::report::{Format, Style};
use xtask::results::lab::{BootRecord, IperfOptions, LabMetric, LabRecord, MetricValue};

/// The QEMU fixture as a `--udp 50` lab: every run lost `0.1 × round` %.
fn udp() -> LabRecord {
    let mut r = record();
    r.settings.iperf3 = IperfOptions {
        udp_mbit: Some(50),
        ..IperfOptions::default()
    };
    for run in &mut r.runs {
        run.metrics.push(MetricValue {
            name: LabMetric::UdpLost.name().to_string(),
            value: 0.1 * f64::from(run.round),
            unit: LabMetric::UdpLost.unit().to_string(),
        });
    }
    r
}

#[test]
fn a_udp_lab_reports_its_loss_and_says_what_it_measures() {
    let l = LabReport::new(PathBuf::from("/lab"), udp(), &[]).unwrap();
    let caveats = l.caveats();
    assert!(
        caveats.iter().any(|c| c.starts_with("UDP loss % is")),
        "{caveats:?}"
    );
    assert!(l
        .series
        .iter()
        .any(|s| s.family == LabMetric::UdpLost.name() && s.unit == "%"));
    let f = Fixture::new();
    write(&f, RUN, &udp());
    let text = render(
        &f,
        &request(&["brcm47xx"], &[]),
        Format::Text,
        Style::default(),
    );
    assert!(text.contains("UDP datagrams lost"), "{text}");
    assert!(text.contains("of 10 s each (iperf3 -u -b 50M)"), "{text}");

    // TCP labs say nothing of UDP.
    let tcp = LabReport::new(PathBuf::from("/lab"), record(), &[]).unwrap();
    assert!(!tcp.caveats().iter().any(|c| c.contains("UDP")));
}

#[test]
fn tbench_in_the_guest_is_not_described_as_forwarding() {
    let file = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/lab_fixture/host-lab.json");
    let mut r: LabRecord = serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
    r.machine = record().machine;
    // A guest boots once per arm and round.
    let template = record().boots[0].clone();
    let mut sessions: Vec<(String, u32)> =
        r.runs.iter().map(|x| (x.arm.clone(), x.round)).collect();
    sessions.dedup();
    r.boots = sessions
        .into_iter()
        .map(|(arm, round)| BootRecord {
            arm,
            round,
            ..template.clone()
        })
        .collect();
    let l = LabReport::new(PathBuf::from("/lab"), r, &[]).unwrap();
    let caveats = l.caveats();
    assert!(
        caveats
            .iter()
            .any(|c| c.starts_with("tbench MB/s inside the guest")
                && c.contains("under -icount shift=3,align=off,sleep=on counts instructions")),
        "{caveats:?}"
    );
    assert!(
        !caveats
            .iter()
            .any(|c| c.contains("Mbit/s") || c.contains("ns/packet")),
        "{caveats:?}"
    );
}

#[test]
fn the_mesh_says_which_endpoints_its_directions_are() {
    let mut r = record();
    r.topology = Some(xtask::results::lab::TopologyName::Mesh);
    let l = LabReport::new(PathBuf::from("/lab"), r, &[]).unwrap();
    assert!(
        l.notes
            .iter()
            .any(|n| n
                .starts_with("in the mesh, \"LAN to WAN\" is the LAN endpoint behind router 1")),
        "{:?}",
        l.notes
    );
    let nat = LabReport::new(PathBuf::from("/lab"), record(), &[]).unwrap();
    assert!(!nat.notes.iter().any(|n| n.starts_with("in the mesh")));
}

#[test]
fn a_lab_run_side_by_side_says_which_figures_the_load_moved() {
    let mut r = record();
    r.settings.labs_at_once = Some(2);
    let l = LabReport::new(PathBuf::from("/lab"), r, &[]).unwrap();
    let note = l
        .notes
        .iter()
        .find(|n| n.starts_with("measured side by side: 2 labs ran at once"))
        .unwrap_or_else(|| panic!("{:?}", l.notes));
    assert!(note.contains("labs = \"serial\""), "{note}");
    let alone = LabReport::new(PathBuf::from("/lab"), record(), &[]).unwrap();
    assert!(!alone.notes.iter().any(|n| n.contains("side by side")));
}
