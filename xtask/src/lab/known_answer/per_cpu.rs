//! The known answers of a machine of more than one CPU (`lab
//! --known-answers --cpus 2`): the model must count each
//! CPU's work on that CPU.
//!
//! * **Two pinned loops**: `xl-known branch always` pinned to CPU0 with N
//!   iterations and to CPU1 with 2N at the same time, then with 2N and 4N.
//!   The difference of the two runs per CPU is N iterations on CPU0 and 2N
//!   on CPU1 (start-up cancels): CPU1's user-mode instructions must be
//!   twice CPU0's (±5 %), and CPU0's per iteration those of the loop (4 to
//!   13, as the one-CPU answers' loop executes). User mode, because
//!   without `-icount` each CPU's timer ticks on the host's clock, and
//!   under the plugin a second of it holds few enough instructions that
//!   the kernel's ticks are a large part of a CPU's count (a first run
//!   counting all instructions measured 1.465 and 11.5 per iteration).
//! * **Pointer chase on CPU1**: `xl-known chase` pinned to CPU1 while CPU0
//!   idles, N and 2N loads: CPU1's modelled memory cycles per load must be
//!   the table's `dram_cycles` (±5 %, as on one CPU), and CPU0's over the
//!   N extra loads (the difference of the two runs, so that the shell's
//!   fork and exec on CPU0 cancel) under 5 % of it: an idle CPU's ticks.
//!
//! The programs are pinned with busybox's `taskset` (the guests' busybox
//! has it).

use anyhow::{Context, Result};

use super::answer::{Answer, InGuest, PerIteration, BRANCH_ITERATIONS, CHASE_LOADS, WARM_UP};
use super::program;
use crate::results::lab::core_model::Cycles;
use crate::results::lab::per_cpu::Snapshot;
use crate::results::lab::{CacheCounters, CoreTiming};

fn snapshot(guest: &mut InGuest<'_>) -> Result<Snapshot> {
    guest
        .bed
        .model_counters()?
        .context("the guest runs without the cache model")
}

/// Runs `commands` (one per CPU mask, as `(mask, command)`) at once,
/// each pinned with taskset, and waits for all; errors unless each printed
/// its result.
fn pinned(guest: &mut InGuest<'_>, commands: &[(u32, String)]) -> Result<()> {
    let mut line = String::new();
    for (i, (mask, command)) in commands.iter().enumerate() {
        line.push_str(&format!("taskset {mask:x} {command} > /tmp/xl-pin-{i} & "));
    }
    line.push_str("wait; cat");
    for i in 0..commands.len() {
        line.push_str(&format!(" /tmp/xl-pin-{i}"));
    }
    let out = guest.run(&line)?;
    anyhow::ensure!(
        out.matches("xl-known done").count() == commands.len(),
        "`{line}` printed {} results, not {}:\n{out}",
        out.matches("xl-known done").count(),
        commands.len()
    );
    Ok(())
}

/// Each CPU's counter differences over `commands` run pinned at once,
/// and its user-mode instructions' differences.
fn per_cpu_run(
    guest: &mut InGuest<'_>,
    commands: &[(u32, String)],
) -> Result<(Vec<CacheCounters>, Vec<u64>)> {
    let before = snapshot(guest)?;
    pinned(guest, commands)?;
    let after = snapshot(guest)?;
    anyhow::ensure!(
        before.cpus.len() >= 2 && after.cpus.len() == before.cpus.len(),
        "the model counts {} vCPU(s): the per-CPU answers need a machine of two or more",
        after.cpus.len()
    );
    anyhow::ensure!(
        after.user_insns.len() == after.cpus.len() && before.user_insns.len() == after.cpus.len(),
        "the cache-model plugin counts no user-mode instructions per vCPU (it does with the core model's isa=)"
    );
    let user = before
        .user_insns
        .iter()
        .zip(&after.user_insns)
        .map(|(b, a)| {
            a.checked_sub(*b)
                .context("a user-mode count went backwards")
        })
        .collect::<Result<_>>()?;
    let counters = before
        .cpus
        .iter()
        .zip(&after.cpus)
        .map(|((b, _), (a, _))| a.since(b))
        .collect::<Result<_>>()?;
    Ok((counters, user))
}

fn memory_cycles(c: &CacheCounters, timing: &CoreTiming) -> Result<f64> {
    let core = c.core.context("no core counters")?;
    let y = Cycles::of(c, &core, &timing.costs);
    Ok(y.l2 + y.dram)
}

fn answer(
    program: String,
    quantity: &str,
    expected: String,
    accept: (f64, f64),
    measured: f64,
) -> Answer {
    Answer {
        program,
        quantity: quantity.to_string(),
        expected,
        accept: vec![accept],
        measured,
        pass: (accept.0..=accept.1).contains(&measured),
        per_iteration: PerIteration {
            insns: 0.0,
            cond_branches: 0.0,
            taken: 0.0,
            cond_mispredicts: 0.0,
            l1d_misses: 0.0,
            l2_misses: 0.0,
            cycles: Cycles::default(),
        },
    }
}

/// The per-CPU answers (see the module docs).
pub(super) fn answers(guest: &mut InGuest<'_>, timing: &CoreTiming) -> Result<Vec<Answer>> {
    let path = program::GUEST_PATH;
    let n = BRANCH_ITERATIONS;
    let branch = |count: u64| format!("{path} branch always {count}");
    pinned(guest, &[(1, branch(WARM_UP)), (2, branch(WARM_UP))])?;
    let (_, one) = per_cpu_run(guest, &[(1, branch(n)), (2, branch(2 * n))])?;
    let (_, two) = per_cpu_run(guest, &[(1, branch(2 * n)), (2, branch(4 * n))])?;
    let d = |cpu: usize| two[cpu] as f64 - one[cpu] as f64;
    let mut out = vec![
        answer(
            format!("taskset 1 {path} branch always N & taskset 2 {path} branch always 2N"),
            "CPU1's user-mode instructions ÷ CPU0's",
            "2 (CPU1 ran twice CPU0's iterations at the same time; each CPU counts its own), ±5 %"
                .to_string(),
            (1.9, 2.1),
            d(1) / d(0),
        ),
        answer(
            format!("taskset 1 {path} branch always N"),
            "CPU0's user-mode instructions per iteration",
            "the loop's: 4 to 13, as on one CPU".to_string(),
            (3.5, 13.0),
            d(0) / n as f64,
        ),
    ];
    let chase = |count: u64| format!("{path} chase {count}");
    pinned(guest, &[(2, chase(WARM_UP))])?;
    let n = CHASE_LOADS;
    let (one, _) = per_cpu_run(guest, &[(2, chase(n))])?;
    let (two, _) = per_cpu_run(guest, &[(2, chase(2 * n))])?;
    let dram = timing.costs.dram_cycles;
    let per_load = |cpu: usize| -> Result<f64> {
        Ok((memory_cycles(&two[cpu], timing)? - memory_cycles(&one[cpu], timing)?) / n as f64)
    };
    out.push(answer(
        format!("taskset 2 {path} chase N"),
        "CPU1's modelled memory cycles per load",
        format!("{dram} (the table's dram_cycles, as on one CPU), ±5 %"),
        (dram * 0.95, dram * 1.05),
        per_load(1)?,
    ));
    // CPU0 idled: what it did over the chase's N extra loads, per load
    // (start-up on CPU0 cancels in the difference; a negative one, CPU0
    // busier in the shorter run, reads as its size).
    let idle = (memory_cycles(&two[0], timing)? - memory_cycles(&one[0], timing)?).abs() / n as f64;
    out.push(answer(
        format!("taskset 2 {path} chase N (CPU0 idle)"),
        "CPU0's modelled memory cycles per CPU1 load",
        format!("≈ 0: CPU0 idles (under 5 % of {dram})"),
        (0.0, dram * 0.05),
        idle,
    ));
    Ok(out)
}
