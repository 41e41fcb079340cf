//! Build orchestration: every (target, variant) pair through a backend,
//! then artifacts, measurements and `result.json`.
//!
//! A [`Backend`] turns one [`Job`] into a finished kernel build
//! ([`Built`]). [`kbuild::KernelTree`] configures and runs `make` on a
//! patched kernel tree; [`openwrt::OpenwrtBackend`] (`--openwrt PATH`) does
//! the same with an OpenWrt checkout's config, patches and KCFLAGS.

pub mod artifacts;
pub mod bench;
pub mod ccache;
pub mod command;
pub mod distcc;
pub mod distccd;
pub mod estimate;
pub mod jobserver;
pub mod kbuild;
pub mod link_map;
pub mod openwrt;
pub mod openwrt_image;
pub mod openwrt_kconfig;
pub mod openwrt_lab;
pub mod plan;
pub mod progress;
pub mod reuse;
pub mod scheduler;
pub mod toolchain;

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use xshell::Shell;

use crate::inputs::targets::Target;
use crate::inputs::variants::Variant;
use crate::measure::sections;
use crate::results::{self, BuildResult, Cflags, PatchRecord};
use crate::util::layout::Layout;
use crate::util::lock::{Lock, Wait};
use artifacts::BuildOutputs;
use plan::{JobInputs, PlannedJob};

/// One thing to build: a target with a variant.
#[derive(Debug, Clone)]
pub struct Job {
    /// The target.
    pub target: Target,
    /// The variant.
    pub variant: Variant,
}

impl Job {
    /// `target/variant`, for messages.
    pub fn label(&self) -> String {
        format!("{}/{}", self.target.name, self.variant.name)
    }
}

/// How builds run.
#[derive(Debug, Clone)]
pub struct BuildOptions {
    /// The `-j` budget: [`run`] shares it among the jobs running side by
    /// side through a jobserver; a backend's build gets its worker's fixed
    /// share here. Backends pass [`BuildOptions::parallel`] to make.
    pub jobs: usize,
    /// Stream make's output instead of showing a progress line.
    pub verbose: bool,
    /// Skip up-to-date jobs, or not.
    pub rebuild: Rebuild,
    /// When another run builds the same (target, variant): wait, or fail
    /// at once (`--no-wait`).
    pub wait: Wait,
    /// Compile through ccache (the default), or not (`--no-ccache`).
    pub ccache: ccache::Ccache,
    /// Compile on distcc hosts (`--distcc`), or here.
    pub distcc: distcc::Distcc,
    /// The progress lines and the stop signal the jobs of one run share.
    pub control: progress::RunControl,
}

impl BuildOptions {
    /// The defaults of `cargo xtask build` with a `-j` budget of `jobs`:
    /// a progress line, up-to-date jobs skipped, waiting for another run's
    /// locks, ccache at its default size, no distcc.
    pub fn with_jobs(jobs: usize) -> BuildOptions {
        BuildOptions {
            jobs,
            verbose: false,
            rebuild: Rebuild::IfChanged,
            wait: Wait::Yes,
            ccache: ccache::Ccache::On {
                max_bytes: ccache::parse_size(ccache::DEFAULT_SIZE)
                    .expect("the default ccache size parses"),
            },
            distcc: distcc::Distcc::default(),
            control: progress::RunControl::default(),
        }
    }

    /// `make` with this job's parallelism: a client of the run's
    /// jobserver (`MAKEFLAGS=-j --jobserver-auth=R,W` and the pipe, no
    /// `-j` argument, which would make it start its own), or `-j<jobs>`
    /// without one.
    pub fn parallel(&self, make: xshell::Cmd<'_>) -> std::process::Command {
        match self.control.jobserver() {
            Some(js) => {
                let mut make = std::process::Command::from(make);
                js.configure(&mut make);
                make
            }
            None => make.arg(format!("-j{}", self.jobs)).into(),
        }
    }
}

/// What a backend's build produced, before measuring.
#[derive(Debug, Clone)]
pub struct Built {
    /// Where vmlinux and images are.
    pub outputs: BuildOutputs,
    /// The flags.
    pub cflags: Cflags,
    /// Applied patches, in order (equal to the plan's series).
    pub patches: Vec<PatchRecord>,
    /// sha256 of the final `.config`.
    pub config_sha256: String,
    /// ccache's hits and misses, when the build used it.
    pub ccache: Option<results::CcacheStats>,
    /// The variant whose finished build this one started from
    /// ([`reuse`]), if any.
    pub incremental_from: Option<String>,
    /// OpenWrt mode's record ([`openwrt::OpenwrtBackend`]); `None` otherwise.
    pub openwrt: Option<results::openwrt::OpenwrtRecord>,
    /// Artifacts the backend made itself, already in the results directory,
    /// by file name (an OpenWrt device's kernel image, [`openwrt_image`]).
    pub extra_artifacts: std::collections::BTreeMap<String, results::ArtifactRecord>,
}

/// A way to build kernels. `Sync`: jobs run side by side on threads.
pub trait Backend: Sync {
    /// Recorded in `result.json` and the build key (`kernel-tree`).
    fn name(&self) -> &'static str;
    /// Checks everything `jobs` need (compilers, flags, sources, host
    /// tools) before any build starts.
    fn preflight(&self, sh: &Shell, jobs: &[Job]) -> Result<()>;
    /// The source, compiler and series one job will be built from
    /// (after [`Backend::preflight`]); the build key is made from them.
    fn inputs(&self, sh: &Shell, job: &Job) -> Result<JobInputs>;
    /// What [`Backend::inputs`] left unevaluated for `job` (a dry run's
    /// OpenWrt device recipe), if anything; nothing by default.
    fn unevaluated(&self, _job: &Job) -> Option<plan::Unevaluated> {
        None
    }
    /// The kernel object tree a finished build of `job` leaves (where
    /// `vmlinux`, `vmlinux.a` and the `.cmd` files are), for the link map
    /// ([`link_map`]); `None` when the backend keeps none.
    fn object_tree(&self, _job: &Job) -> Option<PathBuf> {
        None
    }
    /// Builds one planned job, writing make's output to `log`.
    fn build(
        &self,
        sh: &Shell,
        planned: &PlannedJob,
        options: BuildOptions,
        log: &Path,
    ) -> Result<Built>;
}

/// The end of a backend's preflight: every problem found, or nothing.
///
/// Errors: "nothing was built; fix these first:" and one line per problem
/// (duplicates dropped).
pub fn preflight_verdict(mut problems: Vec<String>) -> Result<()> {
    problems.dedup();
    if !problems.is_empty() {
        anyhow::bail!(
            "nothing was built; fix these first:\n- {}",
            problems.join("\n- ")
        );
    }
    Ok(())
}

/// Whether a job whose result is up to date is built again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Rebuild {
    /// Skip jobs whose `result.json` has the plan's build key.
    #[default]
    IfChanged,
    /// Build every job (`--force`).
    Always,
}

/// What happened to one planned job.
#[derive(Debug, Clone)]
pub enum Outcome {
    /// Built now.
    Built(BuildResult),
    /// A complete result with the same build key was already there.
    UpToDate(BuildResult),
}

impl Outcome {
    /// The result, built now or before.
    pub fn result(&self) -> &BuildResult {
        match self {
            Outcome::Built(r) | Outcome::UpToDate(r) => r,
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

/// Builds every planned job, side by side within the `-j` budget
/// ([`scheduler::run`] has the details), writing
/// `target/xtask/results/<target>/<variant>/`; with [`Rebuild::IfChanged`]
/// a job whose result already has its build key prints "up to date" and
/// is skipped. Each job built makes its result in [`building_dir`] and
/// swaps it with the old one when complete, so a failed, stopped or
/// killed build leaves the old result. The first failure stops the other jobs;
/// results of jobs that finished are kept. Outcomes are in plan order.
///
/// Each job holds the locks of its results and build directories
/// ([`Layout::results_lock`], [`Layout::build_lock`]) from the up-to-date
/// check to its `result.json`: a second run of the same job waits for the
/// first (then finds it up to date), or with [`Wait::No`] fails naming
/// the first's pid.
pub fn run(
    sh: &Shell,
    layout: &Layout,
    backend: &dyn Backend,
    plan: &[PlannedJob],
    options: BuildOptions,
) -> Result<Vec<Outcome>> {
    scheduler::run(sh, layout, backend, plan, options)
}

/// One job: its locks, the up-to-date check, then the build.
fn run_job(
    sh: &Shell,
    layout: &Layout,
    backend: &dyn Backend,
    planned: &PlannedJob,
    options: &BuildOptions,
) -> Result<Outcome> {
    let _locks = lock_job(layout, &planned.job, options.wait)?;
    if options.rebuild == Rebuild::IfChanged {
        if let Some(result) = up_to_date(layout, planned) {
            options.control.println(&format!(
                "{}: up to date ({})",
                planned.job.label(),
                &planned.key[..16]
            ));
            after_build(layout, backend, planned, &result, options);
            return Ok(Outcome::UpToDate(result));
        }
    }
    let result = build_one(sh, layout, backend, planned, options.clone())?;
    options.control.println(&summary_line(&result));
    after_build(layout, backend, planned, &result, options);
    Ok(Outcome::Built(result))
}

/// What follows a build, or an up-to-date result that lacks it: the link
/// map's attribution (`attribution.json`, [`link_map`]) when it is missing
/// or of another vmlinux and the object tree still holds this result's
/// vmlinux. It is a measurement of a finished build: one that fails is a
/// warning line (the result stands; `size-report` says what is missing and why).
fn after_build(
    layout: &Layout,
    backend: &dyn Backend,
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
fn attribute(backend: &dyn Backend, job: &Job, result: &BuildResult, dir: &Path) -> Result<()> {
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
    backend: &dyn Backend,
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
