//! A workspace holding the hand-made lab run `lab_fixture/lab.json`
//! (brcm47xx on QEMU malta, 3 runs per arm, direction and GRO setting;
//! arms baseline, baseline~control and no-reorder-blocks), written to
//! `target/xtask/lab/brcm47xx/<RUN>/lab.json` as `cargo xtask lab` would.
//!
//! `crate::common::lab_fixture`, on top of `crate::common::report_fixture`.
#![allow(dead_code)]

use std::path::PathBuf;

use xtask::results::lab::core_model::{CoreCosts, PredictorInfo, ValueSource};
use xtask::results::lab::{
    CacheCounters, CacheGeometry, CacheModelInfo, CacheRun, CoreCounters, CoreTiming, LabRecord,
    RunRecord,
};

use super::report_fixture::Fixture;

/// The fixture's run directory name.
pub const RUN: &str = "20261201T101500Z-4242";

/// The fixture record.
pub fn record() -> LabRecord {
    let file = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/lab_fixture/lab.json");
    let text = std::fs::read_to_string(&file).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// Writes `record` as run `run` of its target in `f`; returns the run
/// directory.
pub fn write(f: &Fixture, run: &str, record: &LabRecord) -> PathBuf {
    let dir = f
        .root()
        .join("target/xtask/lab")
        .join(&record.target)
        .join(run);
    std::fs::create_dir_all(&dir).unwrap();
    record.write(&dir).unwrap();
    dir
}

/// A workspace with the fixture run and no size results.
pub fn lab_only() -> Fixture {
    let f = Fixture::new();
    write(&f, RUN, &record());
    f
}

/// `record` without `arm` (its runs and boots too).
pub fn without_arm(mut record: LabRecord, arm: &str) -> LabRecord {
    record.arms.retain(|a| a.name != arm);
    record.runs.retain(|r| r.arm != arm);
    record.boots.retain(|b| b.arm != arm);
    record.settings.control = record.arms.iter().any(|a| a.control);
    record
}

/// `record` with `extra` more rounds, copies of its first rounds' runs
/// and boots.
pub fn with_more_rounds(mut record: LabRecord, extra: u32) -> LabRecord {
    let rounds = record.settings.runs;
    let boots: Vec<_> = record
        .boots
        .iter()
        .filter(|b| b.round < extra)
        .cloned()
        .collect();
    for mut b in boots {
        b.round += rounds;
        record.boots.push(b);
    }
    let copies: Vec<RunRecord> = record
        .runs
        .iter()
        .filter(|r| r.round < extra)
        .cloned()
        .collect();
    let first = record.runs.len() as u32;
    for (index, mut r) in (first..).zip(copies) {
        r.round += rounds;
        r.index = index;
        record.runs.push(r);
    }
    record.settings.runs += extra;
    record
}

/// The L1 geometry of the core-model fixture: 32 KiB, 4 ways, 32-byte lines.
pub fn geometry() -> CacheGeometry {
    CacheGeometry {
        size_bytes: 32768,
        ways: 4,
        line_bytes: 32,
    }
}

/// A fixture run's modelled instructions, one per 8 ns of its ns/packet
/// over its forwarded packets, and those packets.
pub fn insns_of(run: &RunRecord) -> (u64, u64) {
    let packets = run.guest.as_ref().unwrap().guest_work.packets;
    let ns = run
        .metrics
        .iter()
        .find(|m| m.unit == "ns/packet")
        .unwrap()
        .value;
    ((ns / 8.0 * packets as f64) as u64, packets)
}

/// The cache model's record in the fixture's lab.json: [`geometry`] for
/// both L1 caches, made-up hashes, `timing` (the core model's table) if
/// any.
pub fn cache_model_info(timing: Option<CoreTiming>) -> CacheModelInfo {
    CacheModelInfo {
        icache: geometry(),
        dcache: geometry(),
        geometry_from: "targets/brcm47xx.toml [lab.l1]".to_string(),
        plugin_source: "lab/plugin/xtask-cache.c".to_string(),
        plugin_source_sha256: "0".repeat(64),
        plugin_sha256: "1".repeat(64),
        compiler: "gcc (Debian 12.2.0-14) 12.2.0".to_string(),
        qemu_source: "qemu 1:7.2+dfsg-7+deb12u18".to_string(),
        plugin_header_sha256: "2".repeat(64),
        timing,
    }
}

/// brcm47xx's core timing table as the fixture's runs record it.
pub fn timing() -> CoreTiming {
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
pub fn with_core_model() -> LabRecord {
    let mut r = with_more_rounds(record(), 2);
    r.cache_model = Some(cache_model_info(Some(timing())));
    for run in &mut r.runs {
        let (insns, packets) = insns_of(run);
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
