//! The cache model's metrics in the size report (`lab --cache-model`):
//! three more families with the same statistics as ns/packet (the A/A
//! floor, the verdicts), in every format, and notes that say it is a
//! model; a lab.json without the model reads and reports as before.

use crate::common::lab_fixture;
use crate::common::report_fixture;

use lab_fixture::{record, with_more_rounds, write, RUN};
use report_fixture::{render, request, Fixture};
use xtask::measure::stats::Verdict;
use xtask::report::lab::{LabReport, Role};
use xtask::report::{Format, Style};
use xtask::results::lab::{CacheCounters, CacheRun, LabMetric, LabRecord, MetricValue};

/// The fixture with the model's counters on every run: instructions from
/// its ns/packet (8 ns each), L1I misses 1 % of them, 10 % more on
/// no-reorder-blocks, L1D misses a steady 3 per 1000 instructions.
fn with_model() -> LabRecord {
    let mut r = record();
    r.cache_model = Some(lab_fixture::cache_model_info(None));
    for run in &mut r.runs {
        let (insns, packets) = lab_fixture::insns_of(run);
        let factor = if run.variant == "no-reorder-blocks" {
            1.1
        } else {
            1.0
        };
        let after = CacheCounters {
            insns: 1_000_000 + insns,
            l1i_misses: 5_000 + (insns as f64 * 0.01 * factor) as u64 + u64::from(run.round),
            l1d_accesses: 300_000 + insns / 3,
            l1d_misses: 2_000 + insns * 3 / 1000,
            core: None,
        };
        let before = CacheCounters {
            insns: 1_000_000,
            l1i_misses: 5_000,
            l1d_accesses: 300_000,
            l1d_misses: 2_000,
            core: None,
        };
        let c = CacheRun::new(before, after, packets).unwrap();
        for (name, unit, v) in [
            (
                LabMetric::InsnsPerPacket.name(),
                LabMetric::InsnsPerPacket.unit(),
                c.work.insns_per_packet,
            ),
            (
                LabMetric::L1iMissesPerPacket.name(),
                LabMetric::L1iMissesPerPacket.unit(),
                c.work.l1i_misses_per_packet,
            ),
            (
                LabMetric::L1dMissesPerPacket.name(),
                LabMetric::L1iMissesPerPacket.unit(),
                c.work.l1d_misses_per_packet,
            ),
        ] {
            run.metrics.push(MetricValue {
                name: name.to_string(),
                value: (v.unwrap() * 1000.0).round() / 1000.0,
                unit: unit.to_string(),
            });
        }
        run.cache_model = Some(c);
    }
    r
}

#[test]
fn the_model_s_families_get_the_same_statistics() {
    // 5 rounds, so that Mann–Whitney can agree with Welch.
    let l = LabReport::new("/lab".into(), with_more_rounds(with_model(), 2), &[]).unwrap();
    let names = |role: Role| -> Vec<String> {
        let c = l.comparisons.iter().find(|c| c.role == role).unwrap();
        c.families
            .iter()
            .map(|f| format!("{} ({})", f.name, f.unit))
            .collect()
    };
    assert_eq!(
        names(Role::Variant),
        [
            "throughput (Mbit/s)",
            "guest_cpu_per_packet (ns/packet)",
            "guest_insns_per_packet (insns/packet)",
            "l1i_misses_per_packet (misses/packet)",
            "l1d_misses_per_packet (misses/packet)",
        ]
    );
    assert_eq!(names(Role::Control), names(Role::Variant));
    let variant = &l.comparisons[1];
    let l1i = variant
        .families
        .iter()
        .find(|f| f.name == LabMetric::L1iMissesPerPacket.name())
        .unwrap();
    for m in &l1i.metrics {
        let s = m.stats().unwrap();
        // +10 % misses per instruction on top of the ns/packet change.
        let ns = variant.families[1]
            .metrics
            .iter()
            .find(|n| n.kind == m.kind && n.item == m.item)
            .unwrap()
            .percent()
            .unwrap();
        let expected = (1.0 + ns / 100.0) * 1.1 * 100.0 - 100.0;
        assert!(
            (m.percent().unwrap() - expected).abs() < 0.05,
            "{}.{}: {:?} against {expected}",
            m.item,
            m.kind,
            m.percent()
        );
        assert_eq!(s.comparison.verdict, Verdict::Significant, "{m:?}");
        assert!(
            s.noise_floor.is_some(),
            "the A/A control gives the floor: {m:?}"
        );
    }
    let note = l
        .notes
        .iter()
        .find(|n| n.starts_with("the cache model ran"))
        .expect("a note on the model");
    assert!(
        note.contains("fed by TCG's instruction stream")
            && note.contains("no timing, no prefetch, no TLB, no L2")
            && note.contains("I: 32 KiB, 4-way, 32-byte lines"),
        "{note}"
    );
    assert!(
        l.caveats()
            .iter()
            .any(|c| c.starts_with("L1I/L1D misses/packet are misses of a model")),
        "{:?}",
        l.caveats()
    );
}

#[test]
fn every_format_shows_the_model() {
    let f = Fixture::new();
    write(&f, RUN, &with_model());
    let req = request(&[], &[]);
    let text = render(&f, &req, Format::Text, Style::default());
    for line in [
        "Guest instructions per packet, GRO on:",
        "Modelled L1I misses per packet, GRO off:",
        "Modelled L1D misses per packet, GRO on:",
        "note: the cache model ran (--cache-model)",
    ] {
        assert!(text.contains(line), "{line:?} missing:\n{text}");
    }
    let json: serde_json::Value =
        serde_json::from_str(&render(&f, &req, Format::Json, Style::default())).unwrap();
    let lab = &json["labs"][0];
    assert_eq!(lab["cache_model"]["icache"]["size_bytes"], 32768);
    let families: Vec<&str> = lab["comparisons"][1]["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["family"].as_str().unwrap())
        .collect();
    assert!(
        families.contains(&LabMetric::L1iMissesPerPacket.name()),
        "{families:?}"
    );
    let markdown = render(&f, &req, Format::Markdown, Style::default());
    assert!(markdown.contains("misses/packet"), "{markdown}");
    let svg = render(&f, &req, Format::Svg, Style::default());
    assert!(
        svg.contains("Modelled L1I misses per packet"),
        "an SVG panel"
    );
}

#[test]
fn a_lab_without_the_model_reports_as_before() {
    let l = LabReport::new("/lab".into(), record(), &[]).unwrap();
    assert!(l.cache_model.is_none());
    assert!(l.comparisons.iter().all(|c| c.families.len() == 2));
    assert!(
        !l.notes.iter().any(|n| n.contains("cache model")),
        "{:?}",
        l.notes
    );
    assert!(l
        .caveats()
        .iter()
        .any(|c| c.starts_with("neither shows cache, TLB or branch-layout effects")));
}
