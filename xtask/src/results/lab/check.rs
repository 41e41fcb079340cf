//! What a `lab.json` must hold before any table is made of it (issue #20
//! §5): `cargo xtask lab` never writes a record that fails these checks,
//! so one that does was edited or damaged, and its statistics would be
//! wrong (duplicated runs double n; a negative or huge value moves a mean
//! anywhere; a missing arm leaves an empty section under "complete").
//!
//! [`check`] returns [`Problems`]: refusals, each naming the run at fault
//! as `runs[i] (index i, arm A, round r of N, condition)` (its position in
//! `runs`, then its fields; rounds counted from 1, as the lab's log and the
//! report count them, where `lab.json`'s `round` counts from 0), and
//! warnings a report states in a note. The rules:
//!
//! * every metric is one the lab records ([`super::metric::METRICS`]), in
//!   its unit and within its range (none is negative; UDP loss is at most
//!   100 %; each has a bound no run comes near, at most [`MAX_VALUE`]);
//! * the base (`settings.base`) is an arm, not the A/A control;
//! * a run names one of the record's arms, with that arm's variant, a
//!   round below `settings.runs`, and a condition the settings list (a
//!   warm-up may run under any), and records each metric once;
//! * no two measured runs share (arm, round, condition);
//! * under status `complete`, every arm has `settings.runs` measured runs
//!   under every condition of the settings; a lab that stopped early may
//!   have fewer, and an arm without any is a warning.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Result;

use super::{metric, LabRecord, RunRecord, Status};

/// The largest magnitude a value may have: no lab metric comes near it
/// (1 Tbit/s is 1e6 Mbit/s; a second per packet is 1e9 ns), and sums and
/// squares of a series of such values stay finite and exact enough for
/// the statistics (1e308 made the report print `+inf%` and `NaN%`).
pub const MAX_VALUE: f64 = 1e15;

/// How many refusals an error lists before `… and N more`.
const LISTED: usize = 10;

/// What [`check`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Problems {
    /// Problems that make any table of the record wrong: the reader
    /// refuses the file ([`Problems::refuse`]).
    pub refusals: Vec<String>,
    /// Problems the report states in a note (an arm without measured runs
    /// in a lab that stopped early).
    pub warnings: Vec<String>,
}

impl Problems {
    /// An error naming `file`, its refusals (the first [`LISTED`]) and the
    /// fix; `Ok` without refusals.
    pub fn refuse(&self, record: &LabRecord, file: &Path) -> Result<()> {
        let n = self.refusals.len();
        if n == 0 {
            return Ok(());
        }
        let mut lines: Vec<String> = self
            .refusals
            .iter()
            .take(LISTED)
            .map(|p| format!("  {p}"))
            .collect();
        if n > LISTED {
            lines.push(format!("  … and {} more", n - LISTED));
        }
        let again = if record.machine.host().is_some() {
            "--lab host".to_string()
        } else {
            format!("--target {}", record.target)
        };
        anyhow::bail!(
            "{}: {n} problem{}, so no table from it would be right:\n{}\nrepair or remove those runs, or run the lab again (`cargo xtask lab {again}`); lab.json counts rounds from 0, this message from 1",
            file.display(),
            if n == 1 { "" } else { "s" },
            lines.join("\n")
        )
    }
}

/// `round 2 of 3` for `round` 1 (0-based, as `lab.json` stores it) of
/// `rounds`: how the lab's log, the report and these checks count rounds.
pub fn round_words(round: u32, rounds: u32) -> String {
    format!("round {} of {rounds}", u64::from(round) + 1)
}

/// `runs[12] (index 12, arm baseline, round 3 of 3, lan-to-wan GRO on)`:
/// run `i` of `record` as a message names it.
pub fn run_name(record: &LabRecord, i: usize) -> String {
    let run = &record.runs[i];
    format!(
        "runs[{i}] (index {}, arm {}, {}, {}{})",
        run.index,
        run.arm,
        round_words(run.round, record.settings.runs),
        run.condition.describe(),
        if run.warmup { ", warm-up" } else { "" }
    )
}

/// `baseline, baseline~control, no-reorder-blocks`.
fn arm_list(record: &LabRecord) -> String {
    record
        .arms
        .iter()
        .map(|a| a.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Checks `record` against the rules in the module docs.
pub fn check(record: &LabRecord) -> Problems {
    let mut missing = Vec::new();
    let mut runs = Vec::new();
    let base = &record.settings.base;
    if !record.arms.iter().any(|a| a.name == *base && !a.control) {
        missing.push(format!(
            "the base {base} (settings.base) is not one of lab.json's arms ({})",
            arm_list(record)
        ));
    }
    let arm_names: Vec<&str> = record.arms.iter().map(|a| a.name.as_str()).collect();
    for (i, name) in arm_names.iter().enumerate() {
        if arm_names[..i].contains(name) {
            runs.push(format!("arm {name} is listed twice in arms"));
        }
    }
    let conditions = record.settings.conditions();
    for (i, run) in record.runs.iter().enumerate() {
        for problem in run_problems(record, run, &conditions) {
            runs.push(format!("{}: {problem}", run_name(record, i)));
        }
    }
    let mut seen: BTreeMap<(&str, u32, String), usize> = BTreeMap::new();
    for (i, run) in record.runs.iter().enumerate().filter(|(_, r)| !r.warmup) {
        let key = (run.arm.as_str(), run.round, run.condition.describe());
        if let Some(first) = seen.insert(key, i) {
            runs.push(format!(
                "{}: a second measured run of the same arm, round and condition as runs[{first}]",
                run_name(record, i)
            ));
        }
    }
    let mut warnings = Vec::new();
    let rounds = record.settings.runs;
    for arm in &record.arms {
        let counts: Vec<(String, usize)> = conditions
            .iter()
            .map(|c| {
                let n = record
                    .runs
                    .iter()
                    .filter(|r| {
                        !r.warmup && r.arm == arm.name && r.condition == *c && r.round < rounds
                    })
                    .count();
                (c.describe(), n)
            })
            .collect();
        if record.status == Status::Complete {
            let short: Vec<String> = counts
                .iter()
                .filter(|(_, n)| *n < rounds as usize)
                .map(|(c, n)| format!("{c} {n}/{rounds}"))
                .collect();
            if !short.is_empty() {
                missing.push(format!(
                    "arm {} has fewer than the {rounds} runs lab.json declares per condition, though its status is complete: {}",
                    arm.name,
                    short.join(", ")
                ));
            }
        } else if counts.iter().all(|(_, n)| *n == 0) {
            warnings.push(format!(
                "{} has no measured run in this lab run, so it is not compared",
                arm.name
            ));
        }
    }
    missing.extend(runs);
    Problems {
        refusals: missing,
        warnings,
    }
}

/// What is wrong with `run` on its own.
fn run_problems(
    record: &LabRecord,
    run: &RunRecord,
    conditions: &[super::Condition],
) -> Vec<String> {
    let mut out = Vec::new();
    match record.arms.iter().find(|a| a.name == run.arm) {
        None => out.push(format!(
            "arm {} is not one of lab.json's arms ({})",
            run.arm,
            arm_list(record)
        )),
        Some(a) if a.variant != run.variant => out.push(format!(
            "its variant is {}, but arm {} runs {}",
            run.variant, a.name, a.variant
        )),
        Some(_) => {}
    }
    if run.round >= record.settings.runs {
        out.push(format!(
            "beyond the {} rounds lab.json declares",
            record.settings.runs
        ));
    }
    if !run.warmup && !conditions.contains(&run.condition) {
        out.push("a condition lab.json's settings do not list".to_string());
    }
    for (k, m) in run.metrics.iter().enumerate() {
        if run.metrics[..k].iter().any(|o| o.name == m.name) {
            out.push(format!("{} is recorded twice", m.name));
        }
        match metric::spec(&m.name) {
            Some(spec) => out.extend(spec.problem(m.value, &m.unit)),
            None => out.push(format!(
                "{} is not a metric the lab records ({})",
                m.name,
                metric::METRICS.map(|s| s.name).join(", ")
            )),
        }
    }
    out
}
