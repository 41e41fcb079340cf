//! `cargo xtask experiment FILE`: one experiment file
//! ([`file`](mod@file): `experiments/<name>.toml`) as one command — plan first
//! ([`plan`]: builds with which are up to date, labs, report, printed),
//! then every build (side by side within `-j`, through the build
//! orchestration), every lab, and the report in each format.
//!
//! One experiment runs at a time: a second refuses, naming the first's
//! pid (`target/xtask/experiments/experiment.lock`, [`Lock`]).
//!
//! A killed experiment resumes when run again: finished builds are up to
//! date (their build keys), and each lab's directory is kept in
//! `target/xtask/experiments/<name>/state.json` before the lab starts, so
//! the next run takes it over ([`crate::lab::orchestrate::Start::Resume`]): its
//! finished runs are kept and the runner continues with the next.

pub mod file;
pub mod hint;
pub mod plan;
pub mod request;
pub mod rootfs;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use xshell::Shell;

use crate::kernel_build::command;
use crate::lab::orchestrate::Start;
use crate::report::{self, LabRuns, ReportRequest, Style, SymbolOptions};
use crate::util::layout::Layout;
use crate::util::lock::{Lock, Wait};

pub use request::{EarlierLabs, ExperimentRequest, Run};

/// `target/xtask/experiments/<name>/state.json`: where each target's lab
/// of the experiment records.
#[derive(Debug, Default, Serialize, Deserialize)]
struct State {
    labs: BTreeMap<String, PathBuf>,
}

/// The largest `state.json` read: it names one directory per lab target,
/// a few hundred bytes.
const MAX_STATE_BYTES: u64 = 1 << 20;

fn state_file(layout: &Layout, name: &str) -> PathBuf {
    layout
        .work_dir()
        .join("experiments")
        .join(name)
        .join("state.json")
}

/// The lock one experiment holds while it runs.
pub fn lock_file(layout: &Layout) -> PathBuf {
    layout
        .work_dir()
        .join("experiments")
        .join("experiment.lock")
}

/// Takes the experiment lock: one experiment at a time on this
/// workspace.
///
/// Errors: another holds it ("… pid N holds …experiment.lock").
pub fn lock(layout: &Layout) -> Result<Lock> {
    let path = lock_file(layout);
    let taken = Lock::acquire(&path, "the experiment runner", Wait::No);
    // The lock's own message advises --no-wait, which `experiment` has
    // not: say what to do instead when another experiment holds it.
    if taken.is_err() && path.is_file() && matches!(Lock::try_acquire(&path), Ok(None)) {
        bail!(
            "another experiment is running: {} holds {}; run this one when it has finished",
            crate::util::lock::holder_of(&path),
            path.display()
        );
    }
    taken
}

impl State {
    /// Reads `path` through the capped, non-blocking reader: a symlink
    /// to `/dev/zero` or a FIFO there (while this run holds
    /// `experiment.lock`) is refused at once, not read until memory runs
    /// out or waited on for ever. A missing file is a first run.
    fn read(path: &Path) -> Result<State> {
        let limit = crate::util::fs::FileLimit {
            what: "experiment state file",
            max_bytes: MAX_STATE_BYTES,
        };
        match crate::util::fs::read_limited(path, limit, "remove it, or run with --fresh") {
            Ok(text) => serde_json::from_str(&text).with_context(|| {
                format!("reading {}; remove it, or run with --fresh", path.display())
            }),
            Err(e) if crate::util::fs::is_not_found(&e) => Ok(State::default()),
            Err(e) => Err(e),
        }
    }

    fn write(&self, path: &Path) -> Result<()> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        crate::util::fs::write_atomic(path, serde_json::to_string_pretty(self)?.as_bytes())
    }
}

/// Where `target`'s lab records: the directory `state` kept (taken over
/// if it holds a `lab.json`, else made there), or a new one, kept in
/// `state` first.
fn lab_start(layout: &Layout, state: &mut State, state_path: &Path, target: &str) -> Result<Start> {
    if let Some(dir) = state.labs.get(target) {
        kept_lab_dir(layout, target, dir).map_err(|why| {
            anyhow::anyhow!(
                "{}: labs.{target} = {:?} {why}; a kept lab directory is \
                 target/xtask/lab/{target}/<run>/, as the experiment writes it. Remove the \
                 file, or run with --fresh",
                state_path.display(),
                crate::util::text::printable(&dir.display().to_string())
            )
        })?;
        if dir.join(crate::results::lab::FILE_NAME).is_file() {
            return Ok(Start::Resume(dir.clone()));
        }
        return Ok(Start::NewIn(dir.clone()));
    }
    let dir = crate::lab::orchestrate::run_dir(layout, target, &crate::results::now_rfc3339());
    state.labs.insert(target.to_string(), dir.clone());
    state.write(state_path)?;
    Ok(Start::NewIn(dir))
}

/// Why `dir`, read from `state.json` for `target`, is not a directory the
/// experiment would have kept: it must be one plain component (what
/// [`crate::lab::orchestrate::run_dir`] names: letters, digits, `-`)
/// below `target/xtask/lab/<target>/` of `layout`, and, when it exists, a
/// directory rather than a symlink to one elsewhere. Otherwise the lab
/// would read and write, and a resume rewrite, a `lab.json` anywhere.
fn kept_lab_dir(layout: &Layout, target: &str, dir: &Path) -> std::result::Result<(), String> {
    let root = layout.work_dir().join("lab").join(target);
    let plain = dir.strip_prefix(&root).ok().and_then(|rest| {
        let mut parts = rest.components();
        match (parts.next(), parts.next()) {
            (Some(std::path::Component::Normal(name)), None) => name.to_str(),
            _ => None,
        }
    });
    match plain {
        Some(name)
            if !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') => {
        }
        _ => return Err(format!("is not a directory of {}", root.display())),
    }
    match std::fs::symlink_metadata(dir) {
        Ok(m) if !m.is_dir() => Err("is not a directory (a symlink or a file)".to_string()),
        _ => Ok(()),
    }
}

/// Runs `request` (see the module docs).
///
/// Errors: the experiment file's problems (file, line and fix) and
/// anything the plan refuses, before anything builds; another experiment
/// running (its pid); a labs' topology or workload this branch's QEMU lab
/// cannot run yet; the first failing build or lab; the report.
pub fn command(sh: &Shell, layout: &Layout, request: &ExperimentRequest) -> Result<()> {
    let started = Instant::now();
    let experiment = file::load(layout, &request.file)?;
    output_stays_in(layout, &experiment)?;
    let mut plan = plan::plan(sh, layout, experiment, request.jobs, request.run)?;
    print!("{}", plan.describe());
    // The real run gives the estimate its dry run gave, before it starts.
    print!("{}", plan.estimate());
    if request.run == Run::DryRun {
        return Ok(());
    }
    if let Some(lab) = plan.labs.iter().find(|l| l.lab.is_none()) {
        bail!(
            "nothing was built: the lab of {} cannot run on this branch yet (see its plan above); \
             remove [lab] from {} for sizes only",
            lab.target,
            plan.experiment.file.display()
        );
    }
    let _lock = lock(layout)?;
    crate::util::cancel::install_handler();
    let planned = started.elapsed();
    command::build(sh, &plan.builds, &plan.build_request)?;
    let built = started.elapsed();

    let e = &plan.experiment;
    let state_path = state_file(layout, &e.name);
    let mut state = match request.labs {
        EarlierLabs::Resume => State::read(&state_path)?,
        EarlierLabs::Fresh => State::default(),
    };
    let mut starts = Vec::new();
    for lab in &plan.labs {
        // In OpenWrt mode the lab, like `lab --openwrt`, records in OpenWrt
        // mode's layout (the builds' layout).
        starts.push(lab_start(
            &plan.builds.layout,
            &mut state,
            &state_path,
            &lab.target,
        )?);
    }
    // Each lab runs the plan printed above, resolved once.
    let labs = side_by_side::run(
        &plan.builds.layout,
        (&e.name, plan.labs_at_once),
        std::mem::take(&mut plan.labs),
        starts,
    )?;
    let lab_dirs = labs.dirs;
    let labbed = started.elapsed();

    output_stays_in(layout, e)?;
    std::fs::create_dir_all(&e.report.output)
        .with_context(|| format!("creating {}", e.report.output.display()))?;
    output_stays_in(layout, e)?;
    let report_request = ReportRequest {
        targets: e.targets.clone(),
        base: e.variants[0].clone(),
        variants: e.variants[1..].to_vec(),
        symbols: e.report.symbols.then_some(SymbolOptions {
            mode: Default::default(),
            fold_clones: false,
        }),
        by: None,
        devices: e.report.devices.clone(),
        rootfs: e.report.rootfs.clone(),
        allow_mismatch: false,
        agreement: false,
        lab: if lab_dirs.is_empty() {
            LabRuns::Off
        } else {
            LabRuns::Dirs(lab_dirs)
        },
    };
    for (format, path) in &plan.reports {
        let symbols = if *format == report::Format::Svg {
            None
        } else {
            report_request.symbols
        };
        let r = ReportRequest {
            symbols,
            ..report_request.clone()
        };
        report::run(
            &plan.builds.layout,
            &r,
            *format,
            &Style::default(),
            Some(path),
        )?;
    }
    println!(
        "experiment {}: done in {}; report in {}",
        e.name,
        Phases {
            plan: planned,
            builds: built - planned,
            labs: labbed - built,
            lab_kernels: labs.kernels,
            report: started.elapsed() - labbed,
        },
        e.report.output.display()
    );
    Ok(())
}

/// Whether `experiment`'s report directory, as far as it exists, is
/// really below `target/xtask`: [`file::load`] checks the path as
/// written, and a symbolic link on the way (`target/xtask/experiments` →
/// elsewhere) would take the reports out of it.
///
/// Errors: the directory it leads to, and the fix.
fn output_stays_in(layout: &Layout, experiment: &file::Experiment) -> Result<()> {
    let output = &experiment.report.output;
    let Ok(work) = layout.work_dir().canonicalize() else {
        // No target/xtask yet: nothing below it can be a link.
        return Ok(());
    };
    let Some(existing) = output.ancestors().find(|a| a.exists()) else {
        return Ok(());
    };
    let real = existing
        .canonicalize()
        .with_context(|| format!("resolving {}", existing.display()))?;
    if !real.starts_with(&work) {
        bail!(
            "{}: report.output {} leads to {} (through a symbolic link), outside {}; remove the link or name another directory",
            experiment.file.display(),
            output.display(),
            real.display(),
            work.display()
        );
    }
    // Nor into the records a link leads to (file::report_output refuses
    // them as written).
    for records in ["results", "lab", "openwrt/results", "openwrt/lab"] {
        let Ok(dir) = work.join(records).canonicalize() else {
            continue;
        };
        if real.starts_with(&dir) {
            bail!(
                "{}: report.output {} leads to {} (through a symbolic link), inside {}, where \
                 builds and labs keep their records; remove the link or name another directory",
                experiment.file.display(),
                output.display(),
                real.display(),
                dir.display()
            );
        }
    }
    Ok(())
}

/// Wall time of an experiment's phases, for its last line (which says
/// how much of an experiment's time its labs take).
struct Phases {
    plan: Duration,
    builds: Duration,
    labs: Duration,
    lab_kernels: Option<Duration>,
    report: Duration,
}

impl std::fmt::Display for Phases {
    /// `1h 3m 20s (plan 10s, builds 40m, labs 22m of which building lab
    /// kernels 5m, report 1m 10s; the labs 35 % of it)`, to the second.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let show = |d: Duration| humantime::format_duration(Duration::from_secs(d.as_secs()));
        let total = self.plan + self.builds + self.labs + self.report;
        let share = |d: Duration| 100.0 * d.as_secs_f64() / total.as_secs_f64().max(1e-9);
        write!(
            f,
            "{} (plan {}, builds {}, labs {}",
            show(total),
            show(self.plan),
            show(self.builds),
            show(self.labs)
        )?;
        if let Some(k) = self.lab_kernels {
            write!(f, " of which building lab kernels {}", show(k))?;
        }
        write!(
            f,
            ", report {}; the labs {:.0} % of it)",
            show(self.report),
            share(self.labs)
        )
    }
}

mod side_by_side;
#[cfg(test)]
mod tests;
