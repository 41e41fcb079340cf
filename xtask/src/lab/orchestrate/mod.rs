//! The lab's one flow, whatever the machine: **resolve → plan → record →
//! run**, in the manner of cargo-dist (plan first, printed, then
//! execute).
//!
//! 1. *Resolve* (each lab kind, cheap and without side effects): the
//!    target, the variants ([`crate::inputs::variants::select`], which
//!    drops repeats), the lab file or the runtime variants, the host
//!    tools; it yields a [`LabPlan`] and a [`Backend`].
//! 2. *Plan*: [`LabPlan`] is data — the machine in words, the topology,
//!    the workload, the arms with the A/A control, the schedule of every
//!    session — checked ([`LabPlan::check`]: the workload's places exist)
//!    and printed ([`LabPlan::describe`]) before anything runs.
//! 3. *Prepare* ([`Backend::prepare`]): what the machine needs once
//!    (lab kernels built, the router reached, this machine read), after
//!    the stale sweep and with Ctrl-C armed ([`Backend::start_clean`]).
//!    `--build-only` stops here ([`Mode::PrepareOnly`]).
//! 4. *Record*: `target/xtask/lab/<target>/<started>-<pid>/lab.json`
//!    with status running (and this process's pid), the machine, the
//!    arms, the settings.
//! 5. *Run*: [`super::runner::execute`] over [`System`] (the backend
//!    brings up each arm, the workload runs each run), writing the record
//!    after every run and its final status at the end.
//!
//! The QEMU ([`super::qemu_lab`]), SSH ([`super::ssh`]) and host
//! ([`super::host_lab`]) labs are three resolvers and three backends of this
//! one flow.

pub mod plan;
mod resume;

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use super::backend::{Backend, Testbed, Up};
use super::runner::{self, RunSpec, SystemUnderTest};
use super::workload::Workload;
use crate::results;
use crate::results::lab::{Arm, BootRecord, LabRecord, RunRecord, Status, SCHEMA};
use crate::util::layout::Layout;
use crate::util::lock::{Lock, Wait};
pub use plan::{reference_arm_name, Control, LabPlan, Mode};

/// The runner's system under test: `backend` brings up each arm,
/// `workload` runs each run on it.
pub struct System<'a> {
    /// The machine.
    pub backend: &'a mut dyn Backend,
    /// What each run does.
    pub workload: &'a dyn Workload,
}

impl SystemUnderTest for System<'_> {
    type Session = Box<dyn Testbed>;

    fn start(
        &mut self,
        arm: &Arm,
        round: u32,
        dir: &Path,
    ) -> Result<(Box<dyn Testbed>, Option<BootRecord>)> {
        let tag = format!("r{round}-{}", arm.name.replace('~', "-"));
        let Up { bed, boot } = self.backend.bring_up(arm, round, &tag, dir)?;
        Ok((bed, boot))
    }

    fn measure(
        &mut self,
        bed: &mut Box<dyn Testbed>,
        run: RunSpec<'_>,
        dir: &Path,
    ) -> Result<RunRecord> {
        self.workload.run(bed.as_mut(), run, dir)
    }
}

/// `target/xtask/lab/<target>/<started>-<pid>/` under `layout`'s work
/// directory (`started` RFC 3339, its `:` and `-` dropped): where a lab
/// started now by this process records.
pub fn run_dir(layout: &Layout, target: &str, started: &str) -> PathBuf {
    layout.work_dir().join("lab").join(target).join(format!(
        "{}-{}",
        started.replace([':', '-'], ""),
        std::process::id()
    ))
}

/// Creates `target/xtask/lab/<target>/<started>-<pid>/` under `layout`'s
/// work directory, where one lab run writes `lab.json` and its logs (the
/// size report looks there).
pub fn create_run_dir(layout: &Layout, target: &str, started: &str) -> Result<PathBuf> {
    let dir = run_dir(layout, target, started);
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    Ok(dir)
}

/// Where the flow records: a new lab directory, or one to take over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Start {
    /// A new directory from [`create_run_dir`].
    New,
    /// A new lab in this directory, made when the lab records (an
    /// experiment names it beforehand, to find it again after a crash).
    NewIn(PathBuf),
    /// The lab in this directory: kept if its `lab.json` is complete;
    /// taken over if it says running with a pid that no longer runs (or
    /// failed): its runs are kept and the runner continues with the next
    /// ([`runner::execute`]). Refused while its pid still runs, and when
    /// its target, arms or settings are not the plan's.
    Resume(PathBuf),
}

/// Runs the flow (see the module docs): prints `plan`, prepares
/// `backend`, records and runs in a new directory under `layout`'s work
/// directory; returns it (`None` with [`Mode::PrepareOnly`]).
pub fn run(
    layout: &Layout,
    plan: &LabPlan,
    backend: &mut dyn Backend,
    mode: Mode,
) -> Result<Option<PathBuf>> {
    run_from(layout, plan, backend, mode, Start::New)
}

/// [`run`], recording where `start` says.
pub fn run_from(
    layout: &Layout,
    plan: &LabPlan,
    backend: &mut dyn Backend,
    mode: Mode,
    start: Start,
) -> Result<Option<PathBuf>> {
    plan.check()?;
    match mode {
        Mode::Run => eprint!("{}", plan.describe()),
        // The whole plan is printed where it runs (an experiment prints it
        // first, then builds every lab's kernels before any lab runs).
        Mode::PrepareOnly => eprintln!(
            "lab of {}: the lab kernels and the guest's userspace only ({})",
            plan.target, plan.machine
        ),
    }
    // Held until this lab ends: a second `--resume` of the same
    // directory is refused, naming this pid, before it reads lab.json.
    let _resuming = match &start {
        Start::Resume(dir) => Some(Lock::acquire(
            &layout.lab_run_lock(dir),
            &format!("the lab {} (resumed)", dir.display()),
            Wait::No,
        )?),
        _ => None,
    };
    let taken_over = match &start {
        Start::Resume(dir) => Some(resume::take_over(plan, dir)?),
        _ => None,
    };
    backend.start_clean()?;
    let prepared = backend.prepare()?;
    let variants: Vec<&str> = prepared.arms.iter().map(|a| a.variant.as_str()).collect();
    if variants != plan.variants {
        bail!(
            "the lab prepared arms {variants:?}, but the plan has {:?}",
            plan.variants
        );
    }
    if let (Some(record), Start::Resume(dir)) = (&taken_over, &start) {
        resume::check_machine(record, &prepared, dir)?;
        if record.status == Status::Complete {
            eprintln!(
                "lab: {} is complete ({} runs); kept",
                dir.join(crate::results::lab::FILE_NAME).display(),
                record.runs.len()
            );
            return Ok(Some(dir.clone()));
        }
    }
    if mode == Mode::PrepareOnly {
        return Ok(None);
    }
    if let (Some(mut record), Start::Resume(dir)) = (taken_over, &start) {
        record.status = Status::running_here();
        record.finished = None;
        record.write(dir)?;
        return execute(plan, backend, &mut record, dir).map(|()| Some(dir.clone()));
    }
    let started = results::now_rfc3339();
    let dir = match start {
        Start::NewIn(dir) => {
            std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
            dir
        }
        _ => create_run_dir(layout, &plan.target, &started)?,
    };
    let mut arms = match plan.control {
        Control::Twin => runner::with_control(prepared.arms),
        Control::Without => prepared.arms,
    };
    if let (Some(t), Some(base)) = (&plan.reference, arms.first()) {
        let mut reference = base.clone();
        reference.name = reference_arm_name(&base.variant, t);
        reference.control = false;
        reference.topology = Some(t.name.clone());
        arms.push(reference);
    }
    let mut record = LabRecord {
        schema: SCHEMA,
        status: Status::running_here(),
        target: plan.target.clone(),
        lab_target: prepared.lab_target,
        started,
        finished: None,
        settings: plan.settings.clone(),
        machine: prepared.machine,
        topology: plan.topology.as_ref().map(|t| t.name.clone()),
        cache_model: prepared.cache_model,
        arms,
        boots: Vec::new(),
        runs: Vec::new(),
        redone: Vec::new(),
    };
    record.write(&dir)?;
    eprintln!(
        "lab: writing {}",
        dir.join(crate::results::lab::FILE_NAME).display()
    );
    execute(plan, backend, &mut record, &dir)?;
    Ok(Some(dir))
}

fn execute(
    plan: &LabPlan,
    backend: &mut dyn Backend,
    record: &mut LabRecord,
    dir: &Path,
) -> Result<()> {
    let mut system = System {
        backend,
        workload: plan.workload.as_ref(),
    };
    runner::execute(&mut system, &plan.schedule, record, dir)
        .with_context(|| {
            format!(
                "the lab stopped; what it measured is in {dir}; `cargo xtask lab` with the same flags and `--resume {dir}` continues it (an experiment resumes its labs when run again)",
                dir = dir.display()
            )
        })
}

#[cfg(test)]
mod tests;
