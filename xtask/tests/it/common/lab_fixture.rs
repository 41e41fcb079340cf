//! A workspace holding the hand-made lab run `lab_fixture/lab.json`
//! (brcm47xx on QEMU malta, 3 runs per arm, direction and GRO setting;
//! arms baseline, baseline~control and no-reorder-blocks), written to
//! `target/xtask/lab/brcm47xx/<RUN>/lab.json` as `cargo xtask lab` would.
//!
//! `crate::common::lab_fixture`, on top of `crate::common::report_fixture`.
#![allow(dead_code)]

use std::path::PathBuf;

use xtask::results::lab::{LabRecord, RunRecord};

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
