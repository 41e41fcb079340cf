//! One planned job built: its locks, the up-to-date check, the backend's
//! build, the measurements, and its result swapped into place.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use xshell::Shell;

use super::artifacts;
use super::backend::{BuildBackend, BuildOptions, Rebuild};
use super::job::{Job, PlannedJob};
use super::link_map;
use crate::measure::sections;
use crate::results::{self, BuildResult};
use crate::util::layout::Layout;
use crate::util::lock::{Lock, Wait};

/// What happened to one planned job.
#[derive(Debug, Clone)]
pub enum BuildOutcome {
    /// Built now.
    Built(BuildResult),
    /// A complete result with the same build key was already there.
    UpToDate(BuildResult),
}

impl BuildOutcome {
    /// The result, built now or before.
    pub fn result(&self) -> &BuildResult {
        match self {
            BuildOutcome::Built(r) | BuildOutcome::UpToDate(r) => r,
        }
    }
}

/// The existing result of `planned` when it has the plan's build key.
pub fn up_to_date(layout: &Layout, planned: &PlannedJob) -> Option<BuildResult> {
    let dir = layout.results_dir(&planned.job.target.name, &planned.job.variant.name);
    BuildResult::read(&dir)
        .ok()
        .filter(|r| planned.is_up_to_date(r))
}

/// One job: its locks, the up-to-date check, then the build.
pub fn run_job(
    sh: &Shell,
    layout: &Layout,
    backend: &dyn BuildBackend,
    planned: &PlannedJob,
    options: &BuildOptions,
) -> Result<BuildOutcome> {
    let _locks = lock_job(layout, &planned.job, options.wait)?;
    if options.rebuild == Rebuild::IfChanged {
        if let Some(result) = up_to_date(layout, planned) {
            options.control.println(&format!(
                "{}: up to date ({})",
                planned.job.label(),
                &planned.key[..16]
            ));
            after_build(layout, backend, planned, &result, options);
            return Ok(BuildOutcome::UpToDate(result));
        }
    }
    let result = build_one(sh, layout, backend, planned, options.clone())?;
    options.control.println(&summary_line(&result));
    after_build(layout, backend, planned, &result, options);
    Ok(BuildOutcome::Built(result))
}

/// What follows a build, or an up-to-date result that lacks it: the link
/// map's attribution (`attribution.json`, [`link_map`]) when it is missing
/// or of another vmlinux and the object tree still holds this result's
/// vmlinux. It is a measurement of a finished build: one that fails is a
/// warning line (the result stands; `size-report` says what is missing and why).
fn after_build(
    layout: &Layout,
    backend: &dyn BuildBackend,
    planned: &PlannedJob,
    result: &BuildResult,
    options: &BuildOptions,
) {
    let job = &planned.job;
    let dir = layout.results_dir(&job.target.name, &job.variant.name);
    let warn = |what: &str, e: anyhow::Error| {
        options
            .control
            .println(&format!("warning: {}: {what}: {e:#}", job.label()));
    };
    if let Err(e) = attribute(backend, job, result, &dir) {
        warn("no link-map attribution (size-report --by)", e);
    }
}

/// Writes `dir/attribution.json` for `result` unless it has one of its
/// vmlinux (see [`after_build`]).
fn attribute(
    backend: &dyn BuildBackend,
    job: &Job,
    result: &BuildResult,
    dir: &Path,
) -> Result<()> {
    let Some(vmlinux) = result.artifacts.get("vmlinux") else {
        return Ok(());
    };
    let fix = "it is made again by the next `cargo xtask build` of this job";
    let current = results::attribution::AttributionRecord::read(dir, fix)
        .ok()
        .flatten()
        .is_some_and(|r| r.vmlinux_sha256 == vmlinux.sha256);
    if current {
        return Ok(());
    }
    let Some(tree) = backend.object_tree(job) else {
        return Ok(());
    };
    let built = tree.join("vmlinux");
    if !built.is_file() || crate::util::hash::sha256_file(&built)? != vmlinux.sha256 {
        anyhow::bail!(
            "{} is not this result's vmlinux any more (rebuild with --force to attribute it)",
            built.display()
        );
    }
    link_map::attribution(&tree, &dir.join("vmlinux"), &vmlinux.sha256)?.write(dir)
}

/// Takes the results lock, then the build lock, of `job` (always in this
/// order, so two runs cannot deadlock).
fn lock_job(layout: &Layout, job: &Job, wait: Wait) -> Result<[Lock; 2]> {
    let (t, v) = (&job.target.name, &job.variant.name);
    let results = Lock::acquire(
        &layout.results_lock(t, v),
        &format!(
            "the results directory {}",
            layout.results_dir(t, v).display()
        ),
        wait,
    )?;
    let build = Lock::acquire(
        &layout.build_lock(t, v),
        &format!("the build directory {}", layout.build_dir(t, v).display()),
        wait,
    )?;
    Ok([results, build])
}

fn build_one(
    sh: &Shell,
    layout: &Layout,
    backend: &dyn BuildBackend,
    planned: &PlannedJob,
    options: BuildOptions,
) -> Result<BuildResult> {
    let job = &planned.job;
    // The new result is made in `.<variant>.building/` beside the old one
    // and swapped with it when complete (as `results merge` puts a result
    // in place): a build that fails or is killed (SIGKILL too) leaves the
    // old result as it was, and its own partial log there.
    let dir = layout.results_dir(&job.target.name, &job.variant.name);
    let building = building_dir(layout, &job.target.name, &job.variant.name);
    if std::fs::symlink_metadata(&building).is_ok() {
        std::fs::remove_dir_all(&building)
            .with_context(|| format!("removing {}", building.display()))?;
    }
    std::fs::create_dir_all(&building)
        .with_context(|| format!("creating {}", building.display()))?;
    let started = results::now_rfc3339();
    let clock = Instant::now();
    let log = building.join("build.log");
    let built = backend.build(sh, planned, options, &log)?;
    anyhow::ensure!(
        built.patches == planned.inputs.patches,
        "the series applied differs from the planned one (a patch changed during the build?); build again"
    );
    let mut artifacts = artifacts::produce(sh, &job.target, &built.outputs, &building)?;
    artifacts.extend(built.extra_artifacts.clone());
    let vmlinux_sections = sections::berkeley_sizes(&built.outputs.vmlinux)?;
    let result = BuildResult {
        schema: results::SCHEMA,
        build_key: planned.key.clone(),
        target: planned.target.clone(),
        variant: planned.variant.clone(),
        backend: backend.name().to_string(),
        kernel_source: planned.inputs.source.clone(),
        compiler: planned.inputs.compiler.clone(),
        kbuild_cflags: built.cflags,
        patches: built.patches,
        config_sha256: built.config_sha256,
        artifacts,
        lzma: artifacts::lzma_parameters(&job.target),
        vmlinux_sections,
        started,
        finished: results::now_rfc3339(),
        duration_seconds: (clock.elapsed().as_secs_f64() * 10.0).round() / 10.0,
        ccache: built.ccache,
        incremental_from: built.incremental_from,
        openwrt: built.openwrt,
    };
    result.write(&building)?;
    let aside = building.with_file_name(format!(".{}.old", job.variant.name));
    match results::archive::place::swap_into_place(&building, &dir, &aside) {
        Ok(Some(old)) => std::fs::remove_dir_all(&old)
            .with_context(|| format!("removing the replaced result {}", old.display()))?,
        Ok(None) => {}
        Err(
            results::archive::place::Swap::Failed(e) | results::archive::place::Swap::Stranded(e),
        ) => return Err(e),
    }
    Ok(result)
}

/// Where a build of (`target`, `variant`) makes its result before it
/// replaces `results/<target>/<variant>/`:
/// `results/<target>/.<variant>.building/` (hidden: no report or export
/// takes it for a result). A failed or killed build leaves it there with
/// its partial `build.log`; the next build of the job removes it.
pub fn building_dir(layout: &Layout, target: &str, variant: &str) -> PathBuf {
    layout
        .results_root()
        .join(target)
        .join(format!(".{variant}.building"))
}

/// One line per finished build: sizes of every artifact, the wall time and
/// ccache's hits and misses.
pub fn summary_line(result: &BuildResult) -> String {
    let sizes: Vec<String> = result
        .artifacts
        .iter()
        .map(|(name, a)| format!("{name} {}", a.size))
        .collect();
    let mut cache = match result.ccache {
        Some(c) => format!("; ccache {} hits, {} misses", c.hits, c.misses),
        None => "; no ccache".to_string(),
    };
    if let Some(base) = &result.incremental_from {
        cache.push_str(&format!("; incremental from {base}'s build"));
    }
    format!(
        "{}/{}: {} bytes; vmlinux text {} data {} bss {}; {:.0} s{cache}",
        result.target.name,
        result.variant.name,
        sizes.join(", "),
        result.vmlinux_sections.text,
        result.vmlinux_sections.data,
        result.vmlinux_sections.bss,
        result.duration_seconds
    )
}
