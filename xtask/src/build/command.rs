//! `cargo xtask build`: from the command line's names to a plan, then
//! either the plan printed (`--dry-run`) or the builds.

use std::path::PathBuf;

use anyhow::{Context, Result};
use xshell::Shell;

use super::ccache::Ccache;
use super::distcc::Distcc;
use super::kbuild::KernelTree;
use super::openwrt::OpenwrtBackend;
use super::plan::{self, PlannedJob};
use super::{toolchain, Backend, BuildOptions, Rebuild};
use crate::inputs::{targets, variants};
use crate::util::layout::Layout;
use crate::util::lock::Wait;

/// Whether `build` builds or only prints the plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// Build every job that is not up to date.
    #[default]
    Build,
    /// Print each job, its build key and whether a result with that key
    /// exists; build nothing.
    DryRun,
}

/// What `cargo xtask build` was asked for.
#[derive(Debug, Clone)]
pub struct BuildRequest {
    /// `--target` spellings (file name, OpenWrt name, alias, `all`).
    pub targets: Vec<String>,
    /// Variant names; empty: `baseline`.
    pub variants: Vec<String>,
    /// The `-j` budget all jobs share; at least 1.
    pub jobs: usize,
    /// `--kernel-src`: a tarball or an unpacked tree.
    pub kernel_src: Option<PathBuf>,
    /// Stream make's output.
    pub verbose: bool,
    /// Skip up-to-date jobs, or not (`--force`).
    pub rebuild: Rebuild,
    /// Wait for another run building the same job, or fail (`--no-wait`).
    pub wait: Wait,
    /// Build, or print the plan.
    pub mode: Mode,
    /// Compile through ccache (default), or not (`--no-ccache`).
    pub ccache: Ccache,
    /// Compile on distcc hosts (`--distcc HOSTS`), or here (default).
    pub distcc: Distcc,
    /// `--openwrt PATH`: configure, patch and flag each target as this
    /// OpenWrt checkout does ([`super::openwrt::OpenwrtBackend`]).
    pub openwrt: Option<PathBuf>,
}

/// Runs `request`: selects targets × variants, checks and plans every job,
/// then builds (or prints the plan for [`Mode::DryRun`]).
///
/// Errors: unknown target or variant names (with the known ones), anything
/// preflight finds (each problem listed), the first failing build.
pub fn run(sh: &Shell, layout: &Layout, request: &BuildRequest) -> Result<()> {
    let openwrt_layout;
    let layout = match &request.openwrt {
        Some(_) => {
            openwrt_layout = layout.openwrt_mode();
            &openwrt_layout
        }
        None => layout,
    };
    let all_targets = targets::load_all(&layout.targets_dir())?;
    let chosen = targets::select(&all_targets, &request.targets)?;
    let all_variants = variants::load(&layout.variants_file(), &layout.patches_dir())?;
    let names = if request.variants.is_empty() {
        vec![variants::BASELINE.to_string()]
    } else {
        request.variants.clone()
    };
    let chosen_variants = variants::select(&all_variants, &names)?;
    let jobs = plan::jobs(&chosen, &chosen_variants);
    if request.ccache != Ccache::Off
        && request.mode == Mode::Build
        && toolchain::find_in_path("ccache").is_none()
    {
        anyhow::bail!(
            "nothing was built: ccache is not installed; run `apt-get install ccache` \
             (or `cargo xtask setup`), or build with --no-ccache"
        );
    }
    if request.distcc != Distcc::Off
        && request.mode == Mode::Build
        && toolchain::find_in_path("distcc").is_none()
    {
        anyhow::bail!("nothing was built: --distcc needs distcc; run `apt-get install distcc`");
    }
    if request.distcc != Distcc::Off {
        // distcc makes its lock and state directories, not their parent.
        let dir = super::distcc::state_dir(layout);
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("creating {}; is target/xtask writable?", dir.display()))?;
    }
    let backend: Box<dyn Backend> = match &request.openwrt {
        Some(checkout) => Box::new(OpenwrtBackend::new(
            layout.clone(),
            checkout,
            request.kernel_src.clone(),
        )?),
        None => Box::new(KernelTree::new(layout.clone(), request.kernel_src.clone())),
    };
    let backend = backend.as_ref();
    let plan = plan::plan(sh, layout, backend, &jobs)?;
    if request.mode == Mode::DryRun {
        print!("{}", describe_plan(layout, &plan));
        return Ok(());
    }
    // SIGINT or SIGTERM sent to this process alone (a CI timeout, `kill`)
    // stops the makes too (the run's token sees it), instead of leaving
    // them running without it; a terminal's Ctrl-C reaches them anyway.
    crate::util::cancel::install_handler();
    let control = super::progress::RunControl::default();
    let options = BuildOptions {
        jobs: request.jobs,
        verbose: request.verbose,
        rebuild: request.rebuild,
        wait: request.wait,
        ccache: request.ccache,
        distcc: request.distcc.clone(),
        control,
    };
    let outcomes = super::run(sh, layout, backend, &plan, options)?;
    println!(
        "{} job(s) done; results in {}",
        outcomes.len(),
        layout.results_root().display()
    );
    Ok(())
}

/// The plan as `--dry-run` prints it: one line per job, `target/variant`,
/// the build key, and `up to date`, `build (no result)`, `build (inputs
/// changed)` or `build (tree source: always rebuilt)`.
pub fn describe_plan(layout: &Layout, plan: &[PlannedJob]) -> String {
    let mut out = String::new();
    for planned in plan {
        let dir = layout.results_dir(&planned.job.target.name, &planned.job.variant.name);
        let status = match crate::results::BuildResult::read(&dir) {
            _ if planned.inputs.source.sha256.is_none() => "build (tree source: always rebuilt)",
            Ok(r) if planned.is_up_to_date(&r) => "up to date",
            Ok(_) => "build (inputs changed)",
            Err(_) => "build (no result)",
        };
        out.push_str(&format!(
            "{:<32} {}  {status}\n",
            planned.job.label(),
            planned.key
        ));
    }
    out
}
