//! A way to build kernels ([`BuildBackend`]): what it is given
//! ([`BuildOptions`]) and what its build produced ([`Built`]).

use std::path::{Path, PathBuf};

use anyhow::Result;
use xshell::Shell;

use super::artifacts::BuildOutputs;
use super::job::{Job, JobInputs, PlannedJob, Unevaluated};
use super::{ccache, distcc, progress};
use crate::results::{self, Cflags, PatchRecord};
use crate::util::lock::Wait;

/// How builds run.
#[derive(Debug, Clone)]
pub struct BuildOptions {
    /// The `-j` budget: [`super::run`] shares it among the jobs running side by
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
    /// ([`super::reuse`]), if any.
    pub incremental_from: Option<String>,
    /// OpenWrt mode's record ([`super::openwrt::OpenwrtBackend`]); `None` otherwise.
    pub openwrt: Option<results::openwrt::OpenwrtRecord>,
    /// Artifacts the backend made itself, already in the results directory,
    /// by file name (an OpenWrt device's kernel image, [`super::openwrt_image`]).
    pub extra_artifacts: std::collections::BTreeMap<String, results::ArtifactRecord>,
}

/// A way to build kernels. `Sync`: jobs run side by side on threads.
pub trait BuildBackend: Sync {
    /// Recorded in `result.json` and the build key (`kernel-tree`).
    fn name(&self) -> &'static str;
    /// Checks everything `jobs` need (compilers, flags, sources, host
    /// tools) before any build starts.
    fn preflight(&self, sh: &Shell, jobs: &[Job]) -> Result<()>;
    /// The source, compiler and series one job will be built from
    /// (after [`BuildBackend::preflight`]); the build key is made from them.
    fn inputs(&self, sh: &Shell, job: &Job) -> Result<JobInputs>;
    /// What [`BuildBackend::inputs`] left unevaluated for `job` (a dry run's
    /// OpenWrt device recipe), if anything; nothing by default.
    fn unevaluated(&self, _job: &Job) -> Option<Unevaluated> {
        None
    }
    /// The kernel object tree a finished build of `job` leaves (where
    /// `vmlinux`, `vmlinux.a` and the `.cmd` files are), for the link map
    /// ([`super::link_map`]); `None` when the backend keeps none.
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
