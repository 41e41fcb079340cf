//! The core model's figures in the size report (`lab --cache-model` on a
//! target with `[lab.timing]`): modelled cycles/packet, packets/s and
//! Mbit/s at the SoC's clock and the counts behind them, as families with
//! the usual statistics and A/A floor in every format, and a note that
//! says it is a model, what it leaves out and which values have no source.

use crate::common::lab_fixture;
use crate::common::report_fixture;

use lab_fixture::{record, with_more_rounds, write, RUN};
use report_fixture::{render, request, Fixture};
use xtask::measure::stats::Verdict;
use xtask::report::lab::{LabReport, Role};
use xtask::report::{Format, Style};
use xtask::results::lab::core_model::{CoreCosts, PredictorInfo, ValueSource};
use xtask::results::lab::{
    CacheCounters, CacheGeometry, CacheModelInfo, CacheRun, CoreCounters, CoreTiming, LabRecord,
    Metric,
};

fn geometry() -> CacheGeometry {
    CacheGeometry {
        size_bytes: 32768,
        ways: 4,
        line_bytes: 32,
    }
}

fn timing() -> CoreTiming {
    CoreTiming {
        core: "MIPS 74Kc (BCM4706)".to_string(),
        from: "targets/brcm47xx.toml [lab.timing]".to_string(),
        costs: CoreCosts {
            clock_mhz: 600.0,
            base_cpi: 1.0,
            taken_branch_cycles: 1.0,
            mispredict_cycles: 12.0,
            l2_hit_cycles: 0.0,
            dram_cycles: 60.0,
        },
        l2: None,
        predictor: PredictorInfo {
            kind: "majority".to_string(),
            entries: 256,
            history_bits: 8,
            return_stack: 4,
            btac: 0,
        },
        sources: vec![
            ValueSource {
                name: "clock_mhz".to_string(),
                value: "600".to_string(),
                source: "datasheet".to_string(),
            },
            ValueSource {
                name: "dram_cycles".to_string(),
                value: "60".to_string(),
                source: "no source: 100 ns assumed".to_string(),
            },
        ],
    }
}

/// The fixture with the core model on every run: instructions from its
/// ns/packet (8 ns each), a taken branch per 8 instructions, and on
/// no-reorder-blocks 20 % fewer taken branches (what reordering is for)
/// with the same misses and mispredictions; 1500-byte frames. Two more
/// rounds than the fixture's three, so that Mann–Whitney can reach a
/// verdict (it cannot with three runs a side).
fn with_core_model() -> LabRecord {
    let mut r = with_more_rounds(record(), 2);
    r.cache_model = Some(CacheModelInfo {
        icache: geometry(),
        dcache: geometry(),
        geometry_from: "targets/brcm47xx.toml [lab.l1]".to_string(),
        plugin_source: "lab/plugin/xtask-cache.c".to_string(),
        plugin_source_sha256: "0".repeat(64),
        plugin_sha256: "1".repeat(64),
        compiler: "gcc (Debian 12.2.0-14) 12.2.0".to_string(),
        qemu_source: "qemu 1:7.2+dfsg-7+deb12u18".to_string(),
        plugin_header_sha256: "2".repeat(64),
        timing: Some(timing()),
    });
    for run in &mut r.runs {
        let packets = run.guest.as_ref().unwrap().guest_work.packets;
        let ns = run
            .metrics
            .iter()
            .find(|m| m.unit == "ns/packet")
            .unwrap()
            .value;
        let insns = (ns / 8.0 * packets as f64) as u64;
        let taken = if run.variant == "no-reorder-blocks" {
            insns / 10
        } else {
            insns / 8
        };
        let core = CoreCounters {
            cond_taken: taken / 2,
            jumps: taken - taken / 2,
            cond_not_taken: insns / 10,
            cond_mispredicts: insns / 100 + u64::from(run.round),
            l2_accesses: insns / 50,
            l2_misses: insns / 50,
            ..Default::default()
        };
        let after = CacheCounters {
            insns,
            l1i_misses: insns / 100,
            l1d_accesses: insns / 3,
            l1d_misses: insns / 100,
            core: Some(core),
        };
        let before = CacheCounters {
            insns: 0,
            l1i_misses: 0,
            l1d_accesses: 0,
            l1d_misses: 0,
            core: Some(CoreCounters::default()),
        };
        let c = CacheRun::new(before, after, packets)
            .unwrap()
            .with_timing(&timing(), Some(1500.0))
            .unwrap();
        run.metrics
            .extend(c.core.as_ref().expect("costed").metrics());
        run.cache_model = Some(c);
    }
    r
}

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
    for m in &family(Metric::CyclesPerPacket.name()).metrics {
        let s = m.stats().unwrap();
        assert!(s.noise_floor.is_some(), "the A/A floor: {m:?}");
        // Fewer taken branches: fewer cycles, whatever ns/packet did.
        assert!(m.percent().unwrap() < 0.0, "{m:?}");
        assert_ne!(s.comparison.verdict, Verdict::TooFewSamples);
    }
    // Packets/s is the inverse of cycles/packet at 600 MHz; Mbit/s at
    // 1500-byte frames is 12,000 bits per packet.
    for (pps, mbit) in family(Metric::PacketsPerSecond.name())
        .metrics
        .iter()
        .zip(&family(Metric::ModelledThroughput.name()).metrics)
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
        families.contains(&Metric::PacketsPerSecond.name()),
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
