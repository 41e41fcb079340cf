//! What the known-answer programs share: their sizes, one answer
//! ([`Answer`]) with what one iteration did ([`PerIteration`]), and the
//! measured guest they run in (`InGuest`).

use std::time::Duration;

use anyhow::{Context, Result};
use serde::Serialize;

use crate::lab::backend::Testbed;
use crate::results::lab::core_model::Cycles;
use crate::results::lab::CacheCounters;

/// Iterations of the branch loop (the difference between its two runs):
/// enough that what else the guest does in the run (a timer tick, the
/// shell, the program's start) moves a count per iteration by under 1 %.
pub const BRANCH_ITERATIONS: u64 = 1_000_000;
/// Loads of the pointer chase: eight passes over its 32,768 lines.
pub const CHASE_LOADS: u64 = 262_144;
/// Iterations of each program's warm-up run, before the two measured
/// ones: the first run of a program faults its pages in and runs kernel
/// paths the others do not.
pub(super) const WARM_UP: u64 = 1_000;
/// For one run of a program in the guest (the largest runs 2N
/// iterations under the plugin: seconds, slower on a loaded machine).
pub(super) const PROGRAM_TIMEOUT: Duration = Duration::from_secs(300);

/// One iteration of a program, from the difference of its two runs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PerIteration {
    /// Instructions.
    pub insns: f64,
    /// Conditional branches.
    pub cond_branches: f64,
    /// Taken branches and jumps.
    pub taken: f64,
    /// Conditional branches mispredicted.
    pub cond_mispredicts: f64,
    /// L1 D-cache misses.
    pub l1d_misses: f64,
    /// L2 misses of fetches and loads (every L1 miss without an L2).
    pub l2_misses: f64,
    /// Modelled cycles by cause.
    pub cycles: Cycles,
}

/// One known answer: what the model must give, and what it gave.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Answer {
    /// The guest command, with N (`xl-known branch random N`).
    pub program: String,
    /// What is compared (`mispredictions per iteration`).
    pub quantity: String,
    /// The expected value in words, with its reason.
    pub expected: String,
    /// The ranges a measured value passes in.
    pub accept: Vec<(f64, f64)>,
    /// The measured value.
    pub measured: f64,
    /// Whether it is in one of `accept`.
    pub pass: bool,
    /// Everything one iteration did.
    pub per_iteration: PerIteration,
}

pub(super) fn counters(guest: &mut InGuest<'_>) -> Result<CacheCounters> {
    Ok(guest
        .bed
        .model_counters()?
        .context("the guest runs without the cache model")?
        .total)
}

/// The measured guest of a testbed booted with the model: where the
/// programs run ([`Testbed::guest_shell`]) and whose counters are read
/// ([`Testbed::model_counters`]).
pub(super) struct InGuest<'a> {
    pub(super) bed: &'a mut dyn Testbed,
    pub(super) name: &'a str,
}

impl InGuest<'_> {
    /// Runs `command` in the guest within [`PROGRAM_TIMEOUT`].
    pub(super) fn run(&mut self, command: &str) -> Result<String> {
        self.bed.guest_shell(self.name, command, PROGRAM_TIMEOUT)
    }
}
