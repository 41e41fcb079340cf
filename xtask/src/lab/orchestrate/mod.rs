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
//! ([`super::host`]) labs are three resolvers and three backends of this
//! one flow.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use super::backend::{Backend, Testbed, Up};
use super::record::{Arm, BootRecord, LabRecord, RunRecord, Settings, Status, SCHEMA};
use super::runner::{self, RunSpec, SystemUnderTest};
use super::topology::Topology;
use super::workload::{check_places, Workload};
use crate::results;
use crate::util::layout::Layout;
use crate::util::lock::{Lock, Wait};

/// Whether the flow runs the plan or stops once the machine is ready.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Prepare, record and run.
    Run,
    /// Prepare only (`--build-only`: the lab kernels and the initramfs).
    PrepareOnly,
}

/// Whether the base runs a second time as the A/A control arm.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Control {
    /// It does (`<base>~control`, the noise floor).
    Twin,
    /// It does not (`--no-control`).
    Without,
}

/// What the lab will do, before it does anything (see the module docs).
pub struct LabPlan {
    /// `lab.json`'s target, and the directory under `target/xtask/lab/`
    /// (`brcm47xx`, `host`).
    pub target: String,
    /// The machine in words: `QEMU malta -cpu 74Kf`, `router
    /// root@192.168.1.1 over SSH`, `this machine's kernel`.
    pub machine: String,
    /// The QEMU lab's topology; `None` where the network is the lab
    /// file's (SSH) or one namespace (host).
    pub topology: Option<Topology>,
    /// The endpoints and guests the machine offers when there is no
    /// topology (the SSH lab's `lan` and `wan`, the host lab's `host`).
    pub places: (Vec<String>, Vec<String>),
    /// What each run does.
    pub workload: Box<dyn Workload>,
    /// A reference arm: the base's kernel on this topology instead (the
    /// mesh's "without batman-adv", [`super::topology::Name::MeshBridged`]),
    /// run after the other arms as `<base>~<topology>`.
    pub reference: Option<Topology>,
    /// The arms' variants, the base first, without repeats.
    pub variants: Vec<String>,
    /// The A/A control.
    pub control: Control,
    /// The schedule of every session.
    pub schedule: runner::Plan,
    /// `lab.json`'s settings.
    pub settings: Settings,
}

impl LabPlan {
    /// The arms' names in run order: the base, its A/A twin, the others.
    pub fn arm_names(&self) -> Vec<String> {
        let mut names = self.variants.clone();
        if self.control == Control::Twin && !names.is_empty() {
            names.insert(1, format!("{}{}", names[0], runner::CONTROL_SUFFIX));
        }
        if let (Some(t), Some(base)) = (&self.reference, self.variants.first()) {
            names.push(reference_arm_name(base, t));
        }
        names
    }

    /// Runs (warm-ups included) and boots the plan makes: every round
    /// boots each arm once and runs its warm-up and each condition.
    pub fn runs_and_boots(&self) -> (u64, u64) {
        let boots = u64::from(self.schedule.runs) * self.arm_names().len() as u64;
        (boots * (self.schedule.conditions.len() as u64 + 1), boots)
    }

    /// Fails when the plan cannot run: no variant, no run, no condition,
    /// or a workload whose places the topology (or the machine) lacks.
    pub fn check(&self) -> Result<()> {
        if self.variants.is_empty() {
            bail!("the lab has no variant to measure");
        }
        if self.schedule.runs < 1 || self.schedule.duration_seconds < 1 {
            bail!("--runs and --duration must be at least 1");
        }
        if self.schedule.conditions.is_empty() {
            bail!("the lab has nothing to measure in a session");
        }
        match &self.topology {
            Some(t) => {
                t.check()?;
                if let Some(r) = &self.reference {
                    r.check()?;
                    let endpoints: Vec<String> =
                        r.endpoints.iter().map(|e| e.name.clone()).collect();
                    let guests: Vec<String> = r.guests.iter().map(|g| g.name.clone()).collect();
                    check_places(
                        self.workload.as_ref(),
                        (&endpoints, &guests),
                        &format!("topology {}", r.name),
                    )?;
                }
                let endpoints: Vec<String> = t.endpoints.iter().map(|e| e.name.clone()).collect();
                let guests: Vec<String> = t.guests.iter().map(|g| g.name.clone()).collect();
                check_places(
                    self.workload.as_ref(),
                    (&endpoints, &guests),
                    &format!("topology {}", t.name),
                )
            }
            None => check_places(
                self.workload.as_ref(),
                (&self.places.0, &self.places.1),
                &self.machine,
            ),
        }
    }

    /// The plan as printed before anything runs: machine, network,
    /// workload, arms, one session, the number of runs.
    pub fn describe(&self) -> String {
        let mut out = format!("lab plan for {}:\n", self.target);
        out.push_str(&format!("  machine:  {}\n", self.machine));
        if let Some(t) = &self.topology {
            out.push_str(&format!("  topology: {} ({})\n", t.name, t.summary));
            for line in t.describe() {
                out.push_str(&format!("    {line}\n"));
            }
        }
        if let Some(r) = &self.reference {
            out.push_str(&format!(
                "  reference: {} ({}), booting the base's kernel\n",
                r.name, r.summary
            ));
        }
        out.push_str(&format!("  workload: {}\n", self.workload.describe()));
        let arms = self.arm_names();
        let twin = arms
            .iter()
            .map(|a| {
                if a.ends_with(runner::CONTROL_SUFFIX) {
                    format!("{a} (A/A control)")
                } else if self.reference.is_some() && Some(a) == arms.last() {
                    format!("{a} (reference)")
                } else {
                    a.clone()
                }
            })
            .collect::<Vec<_>>()
            .join(", ");
        out.push_str(&format!("  arms:     {twin}\n"));
        let s = &self.schedule;
        let conditions: Vec<String> = s.conditions.iter().map(|c| c.describe()).collect();
        out.push_str(&format!(
            "  session:  warm-up {} (discarded), then {}\n",
            s.warmup.describe(),
            conditions.join(", ")
        ));
        let per_session = s.conditions.len() as u64 + 1;
        let (runs, _) = self.runs_and_boots();
        let traffic = runs * u64::from(s.duration_seconds);
        out.push_str(&format!(
            "  runs:     {} round{} × {} arm{} × {per_session} runs of {} s = {runs} runs, {} of traffic\n",
            s.runs,
            if s.runs == 1 { "" } else { "s" },
            arms.len(),
            if arms.len() == 1 { "" } else { "s" },
            s.duration_seconds,
            humantime::format_duration(std::time::Duration::from_secs(traffic))
        ));
        out
    }
}

/// The reference arm's name: `<base>~<topology>` (`baseline~mesh-bridged`).
pub fn reference_arm_name(base: &str, topology: &Topology) -> String {
    format!("{base}~{}", topology.name)
}

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
                dir.join(super::record::FILE_NAME).display(),
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
        dir.join(super::record::FILE_NAME).display()
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

mod resume;

#[cfg(test)]
mod tests;
