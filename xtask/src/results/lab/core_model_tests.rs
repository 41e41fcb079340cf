//! Tests of the core model's counters, costs and metrics.

use super::super::counters::FIELDS;
use super::*;

fn costs() -> CoreCosts {
    CoreCosts {
        clock_mhz: 1000.0,
        base_cpi: 1.0,
        taken_branch_cycles: 1.0,
        mispredict_cycles: 10.0,
        l2_hit_cycles: 20.0,
        dram_cycles: 100.0,
    }
}

#[test]
fn the_formula_adds_each_cost() {
    let l1 = CacheCounters {
        insns: 10_000,
        l1i_misses: 30,
        l1d_accesses: 3_000,
        l1d_misses: 50,
        core: None,
    };
    let core = CoreCounters {
        l1d_store_misses: 10,
        l2_accesses: 80,
        l2_misses: 12,
        l2_store_misses: 2,
        cond_taken: 600,
        cond_not_taken: 900,
        jumps: 400,
        cond_mispredicts: 70,
        return_mispredicts: 5,
        indirect_mispredicts: 4,
        target_mispredicts: 1,
        ..Default::default()
    };
    let c = Cycles::of(&l1, &core, &costs());
    // 10,000 + 1,000 taken + 80 × 10 + (30 + 40) × 20 + 10 × 80.
    assert_eq!(
        (c.base, c.taken, c.mispredicts, c.l2, c.dram),
        (10_000.0, 1_000.0, 800.0, 1_400.0, 800.0)
    );
    assert_eq!(c.total, 14_000.0);
    let w = CoreWork::new(&l1, &core, 10, Some(1000.0), &costs()).unwrap();
    assert_eq!(w.cycles_per_packet.total, 1_400.0);
    // 10^9 cycles/s over 1,400 cycles per packet.
    assert!((w.packets_per_second - 714_285.714).abs() < 0.001);
    assert!((w.mbit_per_s.unwrap() - 5_714.285_714).abs() < 0.001);
    let names: Vec<String> = w.metrics().into_iter().map(|m| m.name).collect();
    assert_eq!(
        names[..3],
        [
            LabMetric::CyclesPerPacket,
            LabMetric::PacketsPerSecond,
            LabMetric::ModelledThroughput
        ]
        .map(|m| m.name())
    );
    assert!(CoreWork::new(&l1, &core, 0, None, &costs()).is_err());
    // Without an L2 every fetch and load miss costs DRAM's latency.
    let no_l2 = CoreCosts {
        l2_hit_cycles: 0.0,
        ..costs()
    };
    let flat = CoreCounters {
        l2_misses: 80,
        l2_store_misses: 10,
        ..core
    };
    let c = Cycles::of(&l1, &flat, &no_l2);
    assert_eq!((c.l2, c.dram), (0.0, 7_000.0));
}

#[test]
fn snapshot_fields_parse_all_or_nothing() {
    let values: Vec<String> = (0..FIELDS.len()).map(|i| (i * 10).to_string()).collect();
    let mut fields: Vec<(&str, &str)> = FIELDS
        .iter()
        .zip(&values)
        .map(|(f, v)| (*f, v.as_str()))
        .collect();
    let c = CoreCounters::from_fields(&fields).unwrap().unwrap();
    assert_eq!((c.l1d_writebacks, c.unaligned), (10, 150));
    assert_eq!(CoreCounters::from_fields(&[("insns", "5")]).unwrap(), None);
    fields.remove(3);
    let err = CoreCounters::from_fields(&fields).unwrap_err();
    assert!(err.to_string().contains("l2_misses"), "{err}");
    let later = CoreCounters { jumps: 1, ..c };
    assert!(later.since(&c).is_err());
    assert_eq!(c.since(&later).unwrap().jumps, 79);
}
