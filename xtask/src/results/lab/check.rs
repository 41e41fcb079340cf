//! What a `lab.json` must hold before any table is made of it: `cargo xtask lab` never writes a record that fails these checks,
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
//! * every metric is one the lab records ([`super::metric::LabMetric`]), in
//!   its unit and within its range (none is negative; UDP loss is at most
//!   100 %; each has a bound no run comes near, at most [`MAX_VALUE`]);
//! * no more than [`MAX_ARMS`] arms, [`MAX_RUNS`] runs and boots,
//!   [`MAX_CONDITIONS`] conditions (checked first: every other check is
//!   linear in the file's size after them);
//! * `settings.runs` is 1 to [`MAX_ROUNDS`], and the settings list no
//!   GRO setting, direction or benchmark twice;
//! * the base (`settings.base`) is an arm, not the A/A control;
//! * `settings.control` is true exactly when an arm is the A/A control;
//!   there is at most one, and it runs the base's variant (and boots its
//!   image);
//! * a run names one of the record's arms, with that arm's variant, a
//!   round below `settings.runs`, and a condition the settings list (a
//!   warm-up may run under any), and records each metric once;
//! * no two measured runs share (arm, round, condition);
//! * a run of a lab that boots (QEMU, a router) follows a recorded boot
//!   of its arm in its round, and no run started before the lab started
//!   or after it finished (runs appended from another lab);
//! * under status `complete`, every arm has `settings.runs` measured runs
//!   under every condition of the settings; a lab that stopped early may
//!   have fewer, and an arm without any is a warning.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use anyhow::Result;

use super::{Arm, LabMetric, LabRecord, RunRecord, Status};

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
    /// An error naming `file`, its refusals (the first `LISTED`, 10) and the
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
            format!("--target {}", crate::util::text::printable(&record.target))
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

/// The most arms a `lab.json` may list: a lab compares a handful of
/// variants; a file with tens of thousands (60,000 arms took 17 s of CPU,
/// 120,000 took 242 s before any refusal) is refused before anything
/// else is looked at.
pub const MAX_ARMS: usize = 256;
/// The most rounds `settings.runs` may declare (as an experiment file's
/// `runs`, 1 to 1000).
pub const MAX_ROUNDS: u32 = 1000;
/// The most conditions (GRO settings × directions, and benchmarks) the
/// settings may list.
pub const MAX_CONDITIONS: usize = 64;
/// The most runs, and the most boots, a `lab.json` may hold: 100,000 runs
/// of 10 s are 11 days of one lab.
pub const MAX_RUNS: usize = 100_000;

/// `baseline, baseline~control, no-reorder-blocks`.
fn arm_list(record: &LabRecord) -> String {
    record
        .arms
        .iter()
        .map(|a| a.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Checks `record` against the rules in the module docs, in time linear
/// in its size (after the caps, [`MAX_ARMS`] and the rest, which come
/// first).
pub fn check(record: &LabRecord) -> Problems {
    let too_big = size_problems(record);
    if !too_big.is_empty() {
        return Problems {
            refusals: too_big,
            warnings: Vec::new(),
        };
    }
    let mut missing = settings_problems(&record.settings);
    let mut runs = Vec::new();
    let mut arms: BTreeMap<&str, &Arm> = BTreeMap::new();
    for arm in &record.arms {
        if arms.insert(arm.name.as_str(), arm).is_some() {
            runs.push(format!("arm {} is listed twice in arms", arm.name));
        }
    }
    let base = &record.settings.base;
    match arms.get(base.as_str()) {
        Some(b) if !b.control => missing.extend(control_problems(record, b)),
        _ => missing.push(format!(
            "the base {base} (settings.base) is not one of lab.json's arms ({})",
            arm_list(record)
        )),
    }
    let conditions = record.settings.conditions();
    let boots: Option<BTreeSet<(&str, u32)>> = record.machine.host().is_none().then(|| {
        record
            .boots
            .iter()
            .map(|b| (b.arm.as_str(), b.round))
            .collect()
    });
    let window = Window::of(record);
    for (i, run) in record.runs.iter().enumerate() {
        let mut problems = run_problems(record, &arms, run, &conditions);
        // A run of an arm the record does not list is refused for that
        // alone (run_problems).
        let booted = |b: &BTreeSet<(&str, u32)>| b.contains(&(run.arm.as_str(), run.round));
        if arms.contains_key(run.arm.as_str()) && boots.as_ref().is_some_and(|b| !booted(b)) {
            problems.push(
                "no boot of its arm in its round is recorded (a run from another lab?)".to_string(),
            );
        }
        problems.extend(window.problem(&run.started));
        for problem in problems {
            runs.push(format!("{}: {problem}", run_name(record, i)));
        }
    }
    // Measured runs per (arm, condition), and the first of each (arm,
    // round, condition), in one pass.
    let rounds = record.settings.runs;
    let mut counts: BTreeMap<(&str, usize), usize> = BTreeMap::new();
    let mut seen: BTreeMap<(&str, u32, usize), usize> = BTreeMap::new();
    for (i, run) in record.runs.iter().enumerate().filter(|(_, r)| !r.warmup) {
        let Some(c) = conditions.iter().position(|c| *c == run.condition) else {
            continue;
        };
        if let Some(first) = seen.insert((run.arm.as_str(), run.round, c), i) {
            runs.push(format!(
                "{}: a second measured run of the same arm, round and condition as runs[{first}]",
                run_name(record, i)
            ));
        }
        if run.round < rounds {
            *counts.entry((run.arm.as_str(), c)).or_default() += 1;
        }
    }
    let mut warnings = Vec::new();
    for arm in &record.arms {
        let counts: Vec<(String, usize)> = conditions
            .iter()
            .enumerate()
            .map(|(c, condition)| {
                let n = counts.get(&(arm.name.as_str(), c)).copied().unwrap_or(0);
                (condition.describe(), n)
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
    missing.extend(redone_problems(record, &arms, &conditions));
    Problems {
        refusals: missing,
        warnings,
    }
}

/// `redone`: each of an arm the record lists, in a round it declares,
/// under one of its conditions (or the warm-up), at most one per session
/// and [`super::MAX_REDONE`] in all.
fn redone_problems(
    record: &LabRecord,
    arms: &BTreeMap<&str, &Arm>,
    conditions: &[super::Condition],
) -> Vec<String> {
    let mut out = Vec::new();
    if record.redone.len() > super::MAX_REDONE {
        out.push(format!(
            "redone lists {} runs, more than the {} a lab redoes",
            record.redone.len(),
            super::MAX_REDONE
        ));
        return out;
    }
    let mut sessions = BTreeSet::new();
    for (i, r) in record.redone.iter().enumerate() {
        let what = format!("redone[{i}]");
        if !arms.contains_key(r.arm.as_str()) {
            out.push(format!(
                "{what}: arm {} is not one of lab.json's arms ({})",
                r.arm,
                arm_list(record)
            ));
        }
        if r.round >= record.settings.runs {
            out.push(format!(
                "{what}: round {} is beyond the {} rounds lab.json declares",
                r.round, record.settings.runs
            ));
        }
        if r.condition
            .is_some_and(|c| !r.warmup && !conditions.contains(&c))
        {
            out.push(format!(
                "{what}: a condition lab.json's settings do not list"
            ));
        }
        if !sessions.insert((r.arm.as_str(), r.round)) {
            out.push(format!(
                "{what}: a second redone run of arm {} in one round (the lab redoes one per boot)",
                r.arm
            ));
        }
    }
    out
}

/// Arms, conditions, runs or boots beyond the caps ([`MAX_ARMS`],
/// [`MAX_CONDITIONS`], [`MAX_RUNS`]); `settings.runs` is checked with
/// the other settings.
fn size_problems(record: &LabRecord) -> Vec<String> {
    let s = &record.settings;
    let mut out = Vec::new();
    let mut over = |what: &str, n: usize, max: usize, of: &str| {
        if n > max {
            out.push(format!(
                "{what} holds {n} {of}, more than the {max} a lab records: not a lab's record"
            ));
        }
    };
    over("arms", record.arms.len(), MAX_ARMS, "arms");
    over("runs", record.runs.len(), MAX_RUNS, "runs");
    over("boots", record.boots.len(), MAX_RUNS, "boots");
    let conditions = s
        .gro
        .len()
        .saturating_mul(s.directions.len())
        .saturating_add(s.benches.len());
    over(
        "settings (gro × directions, and benches)",
        conditions,
        MAX_CONDITIONS,
        "conditions",
    );
    out
}

/// What is wrong with the settings on their own: no rounds, too many, a
/// condition listed twice (its rows would be shown twice and counted
/// twice in "N of M changes are called significant").
fn settings_problems(s: &super::Settings) -> Vec<String> {
    let mut out = Vec::new();
    if s.runs == 0 || s.runs > MAX_ROUNDS {
        out.push(format!(
            "settings.runs is {}, but a lab runs 1 to {MAX_ROUNDS} rounds",
            s.runs
        ));
    }
    let mut twice = |key: &str, words: Vec<String>| {
        let mut seen = BTreeSet::new();
        for w in words {
            if !seen.insert(w.clone()) {
                out.push(format!(
                    "settings.{key} lists {w} twice: its rows would be shown, and its changes counted, twice"
                ));
            }
        }
    };
    twice(
        "gro",
        s.gro.iter().map(|g| format!("GRO {}", g.word())).collect(),
    );
    twice(
        "directions",
        s.directions.iter().map(|d| d.name().to_string()).collect(),
    );
    twice("benches", s.benches.iter().map(|b| b.title()).collect());
    out
}

/// The A/A control's problems: `settings.control` against the arms that
/// are controls, more than one, and a control that does not run the
/// base's variant (or boot its image), which is no A/A control.
fn control_problems(record: &LabRecord, base: &Arm) -> Vec<String> {
    let controls: Vec<&Arm> = record.arms.iter().filter(|a| a.control).collect();
    let mut out = Vec::new();
    match (record.settings.control, controls.as_slice()) {
        (true, []) => out.push(
            "settings.control is true, but no arm is the A/A control (control: true)".to_string(),
        ),
        (false, [first, ..]) => out.push(format!(
            "settings.control is false, but arm {} is an A/A control arm",
            first.name
        )),
        (_, [_, _, ..]) => out.push(format!(
            "arms {} are all A/A control arms; a lab runs one",
            controls
                .iter()
                .map(|a| a.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )),
        _ => {}
    }
    for c in controls {
        if c.variant != base.variant {
            out.push(format!(
                "the A/A control arm {} runs variant {}, not the base's {}: it is no A/A control",
                c.name, c.variant, base.variant
            ));
        }
        if let (Some(ck), Some(bk)) = (&c.kernel, &base.kernel) {
            if ck.image_sha256 != bk.image_sha256 {
                out.push(format!(
                    "the A/A control arm {} boots another image than the base {} (sha256 {} and {}): it is no A/A control",
                    c.name,
                    base.name,
                    crate::util::text::prefix(&ck.image_sha256, 12),
                    crate::util::text::prefix(&bk.image_sha256, 12)
                ));
            }
        }
    }
    out
}

/// When the lab ran: from its `started` to its `finished` (when it
/// finished), as RFC 3339 UTC times (`2026-12-01T10:15:12Z`) compare.
struct Window<'a> {
    started: Option<&'a str>,
    finished: Option<&'a str>,
}

impl<'a> Window<'a> {
    fn of(record: &'a LabRecord) -> Window<'a> {
        Window {
            started: utc_seconds(&record.started),
            finished: record.finished.as_deref().and_then(utc_seconds),
        }
    }

    /// Why a run that started at `started` cannot be one of this lab's:
    /// before the lab started or after it finished. Times not written
    /// as the lab writes them are not compared.
    fn problem(&self, started: &str) -> Option<String> {
        let at = utc_seconds(started)?;
        match (self.started, self.finished) {
            (Some(s), _) if at < s => Some(format!(
                "it started at {started}, before the lab did ({s}Z; a run from another lab?)"
            )),
            (_, Some(f)) if at > f => Some(format!(
                "it started at {started}, after the lab finished ({f}Z; a run from another lab?)"
            )),
            _ => None,
        }
    }
}

/// `2026-12-01T10:15:12` of `2026-12-01T10:15:12Z` (or `…12.345Z`), which
/// compare as times; `None` for any other form.
fn utc_seconds(time: &str) -> Option<&str> {
    let seconds = time.get(..19)?;
    let rest = &time[19..];
    let shape = seconds.bytes().enumerate().all(|(i, b)| match i {
        4 | 7 => b == b'-',
        10 => b == b'T',
        13 | 16 => b == b':',
        _ => b.is_ascii_digit(),
    });
    let zulu = rest == "Z"
        || rest
            .strip_prefix('.')
            .and_then(|r| r.strip_suffix('Z'))
            .is_some_and(|f| !f.is_empty() && f.bytes().all(|b| b.is_ascii_digit()));
    (shape && zulu).then_some(seconds)
}

/// What is wrong with `run` on its own (`arms` by name).
fn run_problems(
    record: &LabRecord,
    arms: &BTreeMap<&str, &Arm>,
    run: &RunRecord,
    conditions: &[super::Condition],
) -> Vec<String> {
    let mut out = Vec::new();
    match arms.get(run.arm.as_str()) {
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
    let smp = record.machine.qemu().map(|q| q.smp);
    let mut names = BTreeSet::new();
    for m in &run.metrics {
        if !names.insert(m.name.as_str()) {
            out.push(format!("{} is recorded twice", m.name));
        }
        let Some((metric, cpu)) = LabMetric::parse(&m.name) else {
            out.push(format!(
                "{} is not a metric the lab records ({})",
                m.name,
                LabMetric::ALL.map(LabMetric::name).join(", ")
            ));
            continue;
        };
        // A CPU's share only on a machine of several, of a CPU it had;
        // ns/packet is left out there (host time without -icount).
        match (cpu, smp) {
            (Some(cpu), Some(n)) if n < 2 || cpu >= n => out.push(format!(
                "{} names CPU{cpu}, but the machine had {n} CPU(s) (machine.qemu.smp)",
                m.name
            )),
            (Some(_), None) => out.push(format!(
                "{} is a per-CPU metric of the QEMU lab, but this lab ran no QEMU machine",
                m.name
            )),
            (None, Some(n)) if n > 1 && metric == LabMetric::CpuPerPacket => out.push(format!(
                "{} on a machine of {n} CPUs: the lab leaves ns/packet out without -icount",
                m.name
            )),
            _ => {}
        }
        out.extend(metric.problem(m.value, &m.unit));
    }
    out
}
