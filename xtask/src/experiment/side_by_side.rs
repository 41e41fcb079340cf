//! The experiment's labs, side by side: up to
//! [`ExperimentPlan::labs_at_once`] labs run at the same time, each on its own
//! thread, taking the next target's lab from one queue; their kernels are
//! built first, one lab after another, so the builds keep their `-j`
//! budget. A lab that fails stops the queue (labs already running finish
//! their runs; every run is in its `lab.json`, and the next `experiment`
//! resumes them); the error names each failed target.
//!
//! Running side by side is safe because every lab's namespaces, taps and
//! sockets carry this process's pid and a serial of their own
//! ([`crate::lab::net::Names`]), the initramfs and kernels are made under
//! locks, and Ctrl-C reaches every lab through the one cancellation flag.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};

use super::plan::LabItem;
use crate::lab::orchestrate::{self, LabPlan, Mode, Start};
use crate::lab::qemu_lab::QemuBackend;
use crate::util::layout::Layout;

/// The labs' directories in the plan's order, and how long building
/// their kernels took before they ran side by side.
pub struct Done {
    /// Each lab's directory, in the plan's order.
    pub dirs: Vec<PathBuf>,
    /// Wall time of the lab kernels' builds; `None` when the labs run one
    /// after another, each building its own kernels as it starts.
    pub kernels: Option<Duration>,
}

/// Runs `labs` (an experiment's, taken out of its [`super::plan::ExperimentPlan`] with
/// `labs_at_once` of them at a time), each as it was resolved and
/// printed, `starts[i]` saying where lab `i` records. Side by side, each
/// lab's plan first runs in [`Mode::PrepareOnly`] (its kernels, one lab
/// after another), then in [`Mode::Run`] on its thread: the same plan and
/// backend, whose kernels are then built.
///
/// Errors: a lab kernel that does not build (before any lab runs); each
/// lab that failed, by target.
pub fn run(
    layout: &Layout,
    (name, labs_at_once): (&str, u32),
    labs: Vec<LabItem<'_>>,
    starts: Vec<Start>,
) -> Result<Done> {
    let mut resolved = Vec::new();
    for item in labs {
        let lab = item.lab.context("a lab this branch cannot run")?;
        resolved.push((item.target, lab));
    }
    let mut kernels = None;
    if labs_at_once > 1 {
        let started = Instant::now();
        for (target, (plan, backend)) in &mut resolved {
            eprintln!(
                "experiment {name}: the lab kernels of {target} (before the labs run side by side)"
            );
            orchestrate::run_from(layout, plan, backend, Mode::PrepareOnly, Start::New)?;
        }
        kernels = Some(started.elapsed());
    }
    let dirs = queued(
        name,
        resolved,
        starts,
        labs_at_once,
        |(plan, mut backend): (LabPlan, QemuBackend<'_>), start| {
            orchestrate::run_from(layout, &plan, &mut backend, Mode::Run, start)?
                .context("the lab returned no directory")
        },
    )?;
    Ok(Done { dirs, kernels })
}

/// Runs `run_one` on each of `labs` (target, lab) with `starts[i]`, up to
/// `at_once` at a time (on this thread when 1), taking the next from one
/// queue; after a failure no further lab starts. The directories in
/// `labs`' order.
///
/// Errors: each failed lab, by target, and those not started.
fn queued<L: Send>(
    name: &str,
    labs: Vec<(String, L)>,
    starts: Vec<Start>,
    at_once: u32,
    run_one: impl Fn(L, Start) -> Result<PathBuf> + Sync,
) -> Result<Vec<PathBuf>> {
    let targets: Vec<String> = labs.iter().map(|(t, _)| t.clone()).collect();
    let queue: Mutex<VecDeque<(usize, L, Start)>> = Mutex::new(
        labs.into_iter()
            .zip(starts)
            .enumerate()
            .map(|(i, ((_, lab), start))| (i, lab, start))
            .collect(),
    );
    let results: Mutex<Vec<Option<Result<PathBuf>>>> =
        Mutex::new((0..targets.len()).map(|_| None).collect());
    let failed = AtomicBool::new(false);
    let workers = (at_once.max(1) as usize).min(targets.len().max(1));
    let work = || loop {
        if failed.load(Ordering::SeqCst) {
            break;
        }
        let Some((i, lab, start)) = queue.lock().unwrap_or_else(|e| e.into_inner()).pop_front()
        else {
            break;
        };
        eprintln!("experiment {name}: the lab of {}", targets[i]);
        let outcome = run_one(lab, start);
        if outcome.is_err() {
            failed.store(true, Ordering::SeqCst);
        }
        results.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(outcome);
    };
    if workers == 1 {
        // One after another, on this thread, as a lab alone runs (the
        // kernel kills a lab's QEMU when the thread that started it ends).
        work();
    } else {
        std::thread::scope(|s| {
            for _ in 0..workers {
                s.spawn(work);
            }
        });
    }
    let results = results.into_inner().unwrap_or_else(|e| e.into_inner());
    let mut dirs = Vec::new();
    let mut errors = Vec::new();
    for (result, target) in results.into_iter().zip(&targets) {
        match result {
            Some(Ok(dir)) => dirs.push(dir),
            Some(Err(e)) => errors.push(format!("the lab of {target}: {e:#}")),
            None => errors.push(format!(
                "the lab of {target}: not started, as another lab failed"
            )),
        }
    }
    match errors.as_slice() {
        [] => Ok(dirs),
        [one] => Err(anyhow!("{one}")),
        _ => bail!("{}", errors.join("\n")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::time::Duration;

    /// Labs that are their targets' names.
    fn labs(targets: &[&str]) -> Vec<(String, String)> {
        targets
            .iter()
            .map(|t| (t.to_string(), t.to_string()))
            .collect()
    }

    fn starts(n: usize) -> Vec<Start> {
        (0..n)
            .map(|i| Start::NewIn(PathBuf::from(format!("/lab/{i}"))))
            .collect()
    }

    #[test]
    fn two_at_once_overlap_and_keep_the_plan_s_order() {
        // a and b each wait (at most 10 s) until both are inside run_one:
        // one after another, a would fail.
        let inside = AtomicUsize::new(0);
        let dirs = queued(
            "x",
            labs(&["a", "b", "c", "d"]),
            starts(4),
            2,
            |r, start| {
                if r == "a" || r == "b" {
                    inside.fetch_add(1, Ordering::SeqCst);
                    let t = std::time::Instant::now();
                    while inside.load(Ordering::SeqCst) < 2 {
                        if t.elapsed() > Duration::from_secs(10) {
                            bail!("{r} ran alone");
                        }
                        std::thread::sleep(Duration::from_millis(1));
                    }
                }
                match start {
                    Start::NewIn(d) => Ok(d.join(&r)),
                    _ => unreachable!(),
                }
            },
        )
        .unwrap();
        let names: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
        assert_eq!(names, ["/lab/0/a", "/lab/1/b", "/lab/2/c", "/lab/3/d"]);
    }

    #[test]
    fn a_failure_stops_the_queue_and_names_every_target() {
        let err = queued("x", labs(&["a", "b", "c"]), starts(3), 1, |r, _| {
            if r == "a" {
                bail!("QEMU exited");
            }
            std::thread::sleep(Duration::from_millis(1));
            Ok(PathBuf::from("/lab"))
        })
        .unwrap_err()
        .to_string();
        assert!(err.contains("the lab of a: QEMU exited"), "{err}");
        assert!(err.contains("the lab of b: not started"), "{err}");
        assert!(err.contains("the lab of c: not started"), "{err}");
    }
}
