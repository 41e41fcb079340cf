//! What the known-answer programs share: their sizes, one answer
//! ([`Answer`]) with what one iteration did ([`PerIteration`]), and the
//! measured guest they run in (`InGuest`).

use std::time::Duration;

use anyhow::{Context, Result};
use serde::Serialize;
use statrs::statistics::{Data, Median};

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

impl PerIteration {
    /// Each count's median over `pairs` (statrs's median: the mean of the
    /// middle two for an even count); the cycles' `total` is the median of
    /// the totals, not the sum of the medians. Panics on no pairs.
    pub fn median(pairs: &[PerIteration]) -> PerIteration {
        assert!(!pairs.is_empty(), "a median of no measurements");
        let m = |f: fn(&PerIteration) -> f64| {
            Data::new(pairs.iter().map(f).collect::<Vec<f64>>()).median()
        };
        PerIteration {
            insns: m(|p| p.insns),
            cond_branches: m(|p| p.cond_branches),
            taken: m(|p| p.taken),
            cond_mispredicts: m(|p| p.cond_mispredicts),
            l1d_misses: m(|p| p.l1d_misses),
            l2_misses: m(|p| p.l2_misses),
            cycles: Cycles {
                base: m(|p| p.cycles.base),
                taken: m(|p| p.cycles.taken),
                mispredicts: m(|p| p.cycles.mispredicts),
                l2: m(|p| p.cycles.l2),
                dram: m(|p| p.cycles.dram),
                total: m(|p| p.cycles.total),
            },
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn one(insns: f64, dram: f64) -> PerIteration {
        let c = Cycles {
            base: insns,
            taken: 1.0,
            mispredicts: 0.0,
            l2: 0.0,
            dram,
            total: insns + 1.0 + dram,
        };
        PerIteration {
            insns,
            cond_branches: 1.0,
            taken: 1.0,
            cond_mispredicts: 0.0,
            l1d_misses: 1.0,
            l2_misses: 1.0,
            cycles: c,
        }
    }

    #[test]
    fn a_noisy_count_in_the_pair_of_the_median_answer_does_not_reach_the_median() {
        // The CI run's chase: the pair whose memory cycles were the median
        // had 2.3 instructions per load, the others 3.
        let pairs = [
            one(3.0, 59.0),
            one(2.336, 59.6),
            one(3.01, 60.1),
            one(2.99, 60.4),
            one(3.02, 58.0),
        ];
        let m = PerIteration::median(&pairs);
        assert_eq!(m.insns, 3.0);
        assert_eq!(m.cycles.dram, 59.6);
        // The totals' median is the first pair's, not insns + 1 + dram.
        assert_eq!(m.cycles.total, 63.0);
        assert_eq!(PerIteration::median(&pairs[..2]).insns, (3.0 + 2.336) / 2.0);
    }
}
