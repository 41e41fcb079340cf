//! The core model's figures in the size report (`lab --cache-model` on a
//! target with `[lab.timing]`): modelled cycles/packet, packets/s and
//! Mbit/s at the SoC's clock and the counts behind them, as families with
//! the usual statistics and A/A floor in every format, and a note that
//! says it is a model, what it leaves out and which values have no source.

use crate::common::lab_fixture;
use crate::common::report_fixture;

use lab_fixture::{with_core_model, write, RUN};
use report_fixture::{render, request, Fixture};
use xtask::measure::stats::Verdict;
use xtask::report::lab::{LabReport, Role};
use xtask::report::{Format, Style};
use xtask::results::lab::LabMetric;

#[test]
fn the_modelled_families_get_the_usual_statistics() {
    let l = LabReport::new("/lab".into(), with_core_model(), &[]).unwrap();
    let names = |role: Role| -> Vec<String> {
        let c = l.comparisons.iter().find(|c| c.role == role).unwrap();
        c.families
            .iter()
            .map(|f| format!("{} ({})", f.name, f.unit))
            .collect()
    };
    assert_eq!(
        names(Role::Variant)[2..],
        [
            "modelled_cycles_per_packet (cycles/packet)",
            "modelled_packets_per_second (packets/s)",
            "modelled_throughput (Mbit/s)",
            "taken_branches_per_packet (branches/packet)",
            "mispredicts_per_packet (mispredicts/packet)",
            "l2_misses_per_packet (misses/packet)",
        ]
    );
    assert_eq!(names(Role::Control), names(Role::Variant));
    let variant = &l.comparisons[1];
    let family = |name: &str| variant.families.iter().find(|f| f.name == name).unwrap();
    for m in &family(LabMetric::CyclesPerPacket.name()).metrics {
        let s = m.stats().unwrap();
        assert!(s.noise_floor.is_some(), "the A/A floor: {m:?}");
        // Fewer taken branches: fewer cycles, whatever ns/packet did.
        assert!(m.percent().unwrap() < 0.0, "{m:?}");
        assert_ne!(s.comparison.verdict, Verdict::TooFewSamples);
    }
    // Packets/s is the inverse of cycles/packet at 600 MHz; Mbit/s at
    // 1500-byte frames is 12,000 bits per packet.
    for (pps, mbit) in family(LabMetric::PacketsPerSecond.name())
        .metrics
        .iter()
        .zip(&family(LabMetric::ModelledThroughput.name()).metrics)
    {
        let ratio = mbit.base().mean() * 1e6 / pps.base().mean();
        assert!((ratio - 12_000.0).abs() < 1.0, "{ratio}");
    }
    let note = l
        .notes
        .iter()
        .find(|n| n.starts_with("the modelled cycles/packet"))
        .expect("a note on the core model");
    for words in [
        "a model, not a measurement",
        "in-order MIPS 74Kc (BCM4706) at 600 MHz",
        "12 × mispredictions",
        "no L2",
        "majority predictor of 256 counters",
        "leaves out out-of-order and dual issue, prefetch",
        "a run on one CPU leaves out the router's other core",
        "no source for dram_cycles",
    ] {
        assert!(note.contains(words), "{words:?} missing: {note}");
    }
    assert!(
        l.caveats()
            .iter()
            .any(|c| c.starts_with("modelled cycles/packet prices those counts")),
        "{:?}",
        l.caveats()
    );
}

#[test]
fn every_format_shows_the_modelled_figures_and_says_they_are_a_model() {
    let f = Fixture::new();
    write(&f, RUN, &with_core_model());
    let req = request(&[], &[]);
    let text = render(&f, &req, Format::Text, Style::default());
    for line in [
        "Modelled cycles per packet, GRO on:",
        "Modelled packets/s at the SoC's clock, GRO off:",
        "Modelled Mbit/s at the SoC's clock, GRO on:",
        "note: the modelled cycles/packet, packets/s and Mbit/s are a model",
    ] {
        assert!(text.contains(line), "{line:?} missing:\n{text}");
    }
    let mail = render(&f, &req, Format::Mail, Style::default());
    // The summary's rows of every family; every run of the modelled
    // packets/s, the answer at the SoC's clock.
    assert!(
        mail.contains("\nModelled cycles per packet (cycles/packet):\n"),
        "{mail}"
    );
    assert!(
        mail.contains(
            "\nModelled packets/s at the SoC's clock, LAN to WAN, GRO on (packets/s):\nrun |"
        ),
        "{mail}"
    );
    assert!(!mail.contains("Modelled cycles per packet, LAN to WAN, GRO on (cycles/packet):"));
    let markdown = render(&f, &req, Format::Markdown, Style::default());
    assert!(markdown.contains("cycles/packet") && markdown.contains("a model, not a measurement"));
    let json: serde_json::Value =
        serde_json::from_str(&render(&f, &req, Format::Json, Style::default())).unwrap();
    let lab = &json["labs"][0];
    assert_eq!(lab["cache_model"]["timing"]["costs"]["clock_mhz"], 600.0);
    let families: Vec<&str> = lab["comparisons"][0]["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["family"].as_str().unwrap())
        .collect();
    assert!(
        families.contains(&LabMetric::PacketsPerSecond.name()),
        "{families:?}"
    );
    let csv = render(&f, &req, Format::Csv, Style::default());
    assert!(
        csv.contains("modelled_cycles_per_packet") && csv.contains("a model, not a measurement")
    );
    let svg = render(&f, &req, Format::Svg, Style::default());
    assert!(svg.contains("Modelled cycles per packet"), "an SVG panel");
    assert!(svg.contains("(a model: in-order core"), "its caption");
}
