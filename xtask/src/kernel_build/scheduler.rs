//! Jobs side by side: targets × variants build concurrently, sharing one
//! `-j` budget.
//!
//! With a budget of N and J jobs, `min(N, J)` workers take jobs in plan
//! order, and every make of the run is a client of one GNU make jobserver
//! ([`Jobserver`]) with N slots: never more than N compiles run at once,
//! and a worker that finds the queue empty puts its make's slot in the
//! pipe, so the makes still running take the slots of those that ended. Each worker also has a fixed share of N
//! (`N / workers`, the first `N % workers` one more, adding up to N) in
//! [`BuildOptions::jobs`], for backends that cannot use the jobserver.
//!
//! Jobs that can start from each other's build directory (same target
//! and reuse key, [`super::plan`]: a variant with the same flags and one
//! more patch) form a chain that one worker runs in plan order, so the
//! second finds the first's directory complete ([`super::reuse`]) instead
//! of racing it. Workers take chains, not jobs.
//!
//! The first job to fail stops the run: queued jobs are not started and
//! running makes get SIGTERM ([`super::progress::RunControl::stop`]); the error names the
//! failed job and lists the stopped ones. Jobs that finished keep their
//! results.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result};
use xshell::Shell;

use super::backend::{BuildBackend, BuildOptions};
use super::build_job::{run_job, BuildOutcome};
use super::jobserver::Jobserver;
use super::plan::PlannedJob;
use crate::util::layout::Layout;

/// The `-j` share of each worker: `budget` split over `min(budget, jobs)`
/// workers, largest first, summing to `budget` (at least one worker of
/// `-j1`).
pub fn shares(budget: usize, jobs: usize) -> Vec<usize> {
    let budget = budget.max(1);
    let workers = budget.min(jobs).max(1);
    (0..workers)
        .map(|k| budget / workers + usize::from(k < budget % workers))
        .collect()
}

/// The plan's indices grouped into chains (see the module docs): jobs of
/// one target with equal reuse keys, in plan order; chains ordered by
/// their first job.
pub fn chains(plan: &[PlannedJob]) -> Vec<Vec<usize>> {
    let mut chains: Vec<Vec<usize>> = Vec::new();
    for (i, planned) in plan.iter().enumerate() {
        let same = |c: &&mut Vec<usize>| {
            let first = &plan[c[0]];
            first.job.target.name == planned.job.target.name && first.reuse_key == planned.reuse_key
        };
        match chains.iter_mut().find(|c| same(c)) {
            Some(chain) => chain.push(i),
            None => chains.push(vec![i]),
        }
    }
    chains
}

/// What the workers found, by plan index.
struct Board {
    outcomes: Vec<Option<BuildOutcome>>,
    /// The first failure: the job's label and its error.
    failure: Option<(String, anyhow::Error)>,
    /// Jobs that were running, or queued, when the failure stopped them.
    stopped: Vec<String>,
}

/// Builds every planned job, side by side within the `-j` budget
/// (the module docs have the details), writing
/// `target/xtask/results/<target>/<variant>/`; with [`Rebuild::IfChanged`](super::Rebuild::IfChanged)
/// a job whose result already has its build key prints "up to date" and
/// is skipped. Each job built makes its result in [`building_dir`](super::building_dir) and
/// swaps it with the old one when complete, so a failed, stopped or
/// killed build leaves the old result. The first failure stops the other jobs;
/// results of jobs that finished are kept. Outcomes are in plan order.
///
/// Each job holds the locks of its results and build directories
/// ([`Layout::results_lock`], [`Layout::build_lock`]) from the up-to-date
/// check to its `result.json`: a second run of the same job waits for the
/// first (then finds it up to date), or with [`Wait::No`] fails naming
/// the first's pid.
///
/// [`Wait::No`]: crate::util::lock::Wait::No
pub fn run(
    sh: &Shell,
    layout: &Layout,
    backend: &dyn BuildBackend,
    plan: &[PlannedJob],
    options: BuildOptions,
) -> Result<Vec<BuildOutcome>> {
    let next = AtomicUsize::new(0);
    let board = Mutex::new(Board {
        outcomes: (0..plan.len()).map(|_| None).collect(),
        failure: None,
        stopped: Vec::new(),
    });
    let dir = sh.current_dir();
    let chains = chains(plan);
    let shares = shares(options.jobs, chains.len());
    let jobserver = Jobserver::new(options.jobs, shares.len())?;
    let control = options.control.with_jobserver(Arc::new(jobserver));
    std::thread::scope(|scope| {
        for share in shares {
            let (next, board, dir, control, chains) = (&next, &board, &dir, &control, &chains);
            let options = BuildOptions {
                jobs: share,
                control: control.clone(),
                ..options.clone()
            };
            scope.spawn(move || loop {
                let Some(chain) = chains.get(next.fetch_add(1, Ordering::SeqCst)) else {
                    if let Some(js) = control.jobserver() {
                        js.release_slot();
                    }
                    break;
                };
                for &i in chain {
                    let planned = &plan[i];
                    let label = planned.job.label();
                    if control.is_stopped() {
                        lock(board).stopped.push(format!("{label} (not started)"));
                        continue;
                    }
                    let done = Shell::new()
                        .context("creating a shell")
                        .and_then(|sh| {
                            sh.change_dir(dir);
                            run_job(&sh, layout, backend, planned, &options)
                        })
                        .with_context(|| format!("building {label}"));
                    let mut b = lock(board);
                    match done {
                        Ok(outcome) => b.outcomes[i] = Some(outcome),
                        Err(_) if b.failure.is_some() => b.stopped.push(label),
                        Err(e) => {
                            b.failure = Some((label, e));
                            control.stop();
                        }
                    }
                }
            });
        }
    });
    let board = board.into_inner().unwrap_or_else(|e| e.into_inner());
    if let Some((label, error)) = board.failure {
        let kept: Vec<String> = board
            .outcomes
            .iter()
            .flatten()
            .map(|o| format!("{}/{}", o.result().target.name, o.result().variant.name))
            .collect();
        let mut note = format!("{label} failed");
        if !board.stopped.is_empty() {
            note.push_str(&format!("; stopped: {}", board.stopped.join(", ")));
        }
        if !kept.is_empty() {
            note.push_str(&format!("; results kept: {}", kept.join(", ")));
        }
        return Err(error.context(note));
    }
    Ok(board.outcomes.into_iter().flatten().collect())
}

fn lock(board: &Mutex<Board>) -> std::sync::MutexGuard<'_, Board> {
    board.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_add_up_to_the_budget() {
        assert_eq!(shares(2, 1), [2]);
        assert_eq!(shares(2, 4), [1, 1]);
        assert_eq!(shares(8, 3), [3, 3, 2]);
        assert_eq!(shares(1, 0), [1]);
        for budget in 1..20 {
            for jobs in 0..10 {
                let s = shares(budget, jobs);
                assert_eq!(s.iter().sum::<usize>(), budget);
                assert!(s.len() <= jobs.max(1));
            }
        }
    }
}
