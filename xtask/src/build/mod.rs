//! Build orchestration: every (target, variant) pair through a backend,
//! then artifacts, measurements and `result.json`.
//!
//! A [`Backend`] turns one [`Job`] into a finished kernel build
//! ([`Built`]). Today there is [`kbuild::KernelTree`], which configures
//! and runs `make` on a patched kernel tree; an OpenWrt-buildroot backend
//! (running `make` in an OpenWrt tree) fits the same trait.

pub mod artifacts;
pub mod kbuild;
pub mod progress;
pub mod toolchain;

use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result};
use xshell::Shell;

use crate::inputs::targets::Target;
use crate::inputs::variants::Variant;
use crate::measure::sections;
use crate::results::{self, BuildResult, Cflags, PatchRecord};
use crate::util::layout::Layout;
use artifacts::BuildOutputs;

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
#[derive(Debug, Clone, Copy)]
pub struct BuildOptions {
    /// `make -j`.
    pub jobs: usize,
    /// Stream make's output instead of showing a progress line.
    pub verbose: bool,
}

/// What a backend's build produced, before measuring.
#[derive(Debug, Clone)]
pub struct Built {
    /// Where vmlinux and images are.
    pub outputs: BuildOutputs,
    /// Full kernel version, e.g. `6.12.117`.
    pub kernel_version: String,
    /// Tarball or tree the source came from.
    pub kernel_source: String,
    /// Its sha256, for a tarball.
    pub kernel_source_sha256: Option<String>,
    /// First line of the compiler's `--version`.
    pub compiler: String,
    /// The flags.
    pub cflags: Cflags,
    /// Applied patches.
    pub patches: Vec<PatchRecord>,
    /// sha256 of the final `.config`.
    pub config_sha256: String,
}

/// A way to build kernels.
pub trait Backend {
    /// Recorded in `result.json` (`kernel-tree`).
    fn name(&self) -> &'static str;
    /// Checks everything `jobs` need (compilers, flags, sources, host
    /// tools) before any build starts.
    fn preflight(&self, sh: &Shell, jobs: &[Job]) -> Result<()>;
    /// Builds one job, writing make's output to `log`.
    fn build(&self, sh: &Shell, job: &Job, options: BuildOptions, log: &Path) -> Result<Built>;
}

/// Builds every job in order, writing `target/xtask/results/<target>/<variant>/`.
///
/// Checks all jobs first ([`Backend::preflight`]). For each job the old
/// `result.json` is removed before building, and the new one written last.
/// Returns the results, in job order; stops at the first failure.
pub fn run(
    sh: &Shell,
    layout: &Layout,
    backend: &dyn Backend,
    jobs: &[Job],
    options: BuildOptions,
) -> Result<Vec<BuildResult>> {
    backend.preflight(sh, jobs)?;
    let mut results = Vec::new();
    for job in jobs {
        let result = build_one(sh, layout, backend, job, options)
            .with_context(|| format!("building {}", job.label()))?;
        eprintln!("{}", summary_line(&result));
        results.push(result);
    }
    Ok(results)
}

fn build_one(
    sh: &Shell,
    layout: &Layout,
    backend: &dyn Backend,
    job: &Job,
    options: BuildOptions,
) -> Result<BuildResult> {
    // The previous results of this job go first, result.json before the
    // rest: an interrupted build leaves no record and no stale artifacts.
    let dir = layout.results_dir(&job.target.name, &job.variant.name);
    let record = dir.join(results::FILE_NAME);
    if record.exists() {
        std::fs::remove_file(&record).with_context(|| format!("removing {}", record.display()))?;
    }
    if dir.exists() {
        std::fs::remove_dir_all(&dir).with_context(|| format!("emptying {}", dir.display()))?;
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let started = results::now_rfc3339();
    let clock = Instant::now();
    let log = dir.join("build.log");
    let built = backend.build(sh, job, options, &log)?;
    let artifacts = artifacts::produce(sh, &job.target, &built.outputs, &dir)?;
    let vmlinux_sections = sections::berkeley_sizes(&built.outputs.vmlinux)?;
    let result = BuildResult {
        schema: results::SCHEMA,
        target: job.target.name.clone(),
        openwrt_target: job.target.openwrt.clone(),
        soc: job.target.soc.clone(),
        arch: job.target.arch.clone(),
        variant: job.variant.name.clone(),
        variant_description: job.variant.description.clone(),
        backend: backend.name().to_string(),
        kernel_version: built.kernel_version,
        kernel_source: built.kernel_source,
        kernel_source_sha256: built.kernel_source_sha256,
        compiler: built.compiler,
        kbuild_cflags: built.cflags,
        artifacts,
        vmlinux_sections,
        patches: built.patches,
        config_sha256: built.config_sha256,
        started,
        finished: results::now_rfc3339(),
        duration_seconds: (clock.elapsed().as_secs_f64() * 10.0).round() / 10.0,
    };
    result.write(&dir)?;
    Ok(result)
}

/// One line per finished build: sizes of every artifact and the wall time.
pub fn summary_line(result: &BuildResult) -> String {
    let sizes: Vec<String> = result
        .artifacts
        .iter()
        .map(|(name, a)| format!("{name} {}", a.size))
        .collect();
    format!(
        "{}/{}: {} bytes; vmlinux text {} data {} bss {}; {:.0} s",
        result.target,
        result.variant,
        sizes.join(", "),
        result.vmlinux_sections.text,
        result.vmlinux_sections.data,
        result.vmlinux_sections.bss,
        result.duration_seconds
    )
}
