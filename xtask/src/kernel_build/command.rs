//! `cargo xtask build`: from the command line's names to a plan, then
//! either the plan printed (`--dry-run`) or the builds.

use std::path::PathBuf;

use anyhow::{Context, Result};
use xshell::Shell;

use super::backend::{BuildBackend, BuildOptions, Rebuild};
use super::ccache::Ccache;
use super::distcc::Distcc;
use super::kbuild::KbuildBackend;
use super::openwrt::OpenwrtBackend;
use super::plan::{self, PlannedJob};
use super::toolchain;
use crate::inputs::{targets, variants};
use crate::util::layout::Layout;
use crate::util::lock::Wait;

/// Whether `build` builds or only prints the plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BuildMode {
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
    pub mode: BuildMode,
    /// Compile through ccache (default), or not (`--no-ccache`).
    pub ccache: Ccache,
    /// Compile on distcc hosts (`--distcc HOSTS`), or here (default).
    pub distcc: Distcc,
    /// `--openwrt PATH`: configure, patch and flag each target as this
    /// OpenWrt checkout does ([`super::openwrt::OpenwrtBackend`]).
    pub openwrt: Option<PathBuf>,
}

/// Runs `request`: selects targets × variants, checks and plans every job,
/// then builds (or prints the plan for [`BuildMode::DryRun`]).
///
/// Errors: unknown target or variant names (with the known ones), anything
/// preflight finds (each problem listed), the first failing build.
pub fn run(sh: &Shell, layout: &Layout, request: &BuildRequest) -> Result<()> {
    let planned = plan(sh, layout, request)?;
    if request.mode == BuildMode::DryRun {
        print!("{}", describe_plan(&planned.layout, &planned.jobs));
        return Ok(());
    }
    build(sh, &planned, request)
}

/// A checked plan of a [`BuildRequest`]: every job with its build key,
/// the layout its results go to (OpenWrt mode's with `--openwrt`) and
/// the backend that builds them.
pub struct Planned {
    /// Where the results go.
    pub layout: Layout,
    /// Every job, in order.
    pub jobs: Vec<PlannedJob>,
    backend: Box<dyn BuildBackend>,
}

impl Planned {
    /// The jobs whose result.json already has their build key (or, on a
    /// dry run that left an input unevaluated, would have it unless that
    /// input changed).
    pub fn up_to_date(&self) -> Vec<&PlannedJob> {
        self.jobs
            .iter()
            .filter(|p| status(&self.layout, p).0.starts_with(UP_TO_DATE))
            .collect()
    }
}

/// Selects targets × variants of `request`, checks (preflight) and plans
/// every job; builds nothing.
///
/// Errors: unknown target or variant names (with the known ones), missing
/// ccache or distcc for [`BuildMode::Build`], anything preflight finds.
pub fn plan(sh: &Shell, layout: &Layout, request: &BuildRequest) -> Result<Planned> {
    let layout = match &request.openwrt {
        Some(_) => layout.openwrt_mode(),
        None => layout.clone(),
    };
    let layout = &layout;
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
    plan_jobs(sh, layout, request, &jobs)
}

/// Checks (preflight) and plans `jobs`, built as `request` says (mode,
/// ccache, distcc, `--openwrt`, `--kernel-src`; its targets and variants
/// are not read): what [`plan()`] does after selecting the jobs, for a
/// caller that makes its own (`patches size-bisect`'s states). `layout` is
/// already the mode's ([`Layout::openwrt_mode`] with `--openwrt`).
///
/// Errors: missing ccache or distcc for [`BuildMode::Build`], anything
/// preflight finds.
pub fn plan_jobs(
    sh: &Shell,
    layout: &Layout,
    request: &BuildRequest,
    jobs: &[super::Job],
) -> Result<Planned> {
    if request.ccache != Ccache::Off
        && request.mode == BuildMode::Build
        && toolchain::find_in_path("ccache").is_none()
    {
        anyhow::bail!(
            "nothing was built: ccache is not installed; run `apt-get install ccache` \
             (or `cargo xtask setup`), or build with --no-ccache"
        );
    }
    if request.distcc != Distcc::Off
        && request.mode == BuildMode::Build
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
    let backend: Box<dyn BuildBackend> = match &request.openwrt {
        // A dry run builds and runs nothing: not even make on the
        // checkout's image Makefiles, which are code.
        Some(checkout) if request.mode == BuildMode::DryRun => Box::new(
            OpenwrtBackend::new(layout.clone(), checkout, request.kernel_src.clone())?
                .without_image_makefiles(),
        ),
        Some(checkout) => Box::new(OpenwrtBackend::new(
            layout.clone(),
            checkout,
            request.kernel_src.clone(),
        )?),
        None => Box::new(KbuildBackend::new(
            layout.clone(),
            request.kernel_src.clone(),
        )),
    };
    let jobs = plan::plan(sh, layout, backend.as_ref(), jobs)?;
    Ok(Planned {
        layout: layout.clone(),
        jobs,
        backend,
    })
}

/// Builds every job of `planned` that is not up to date (all of them
/// with [`Rebuild::Always`]), side by side within `request.jobs`.
///
/// Errors: the first failing build.
pub fn build(sh: &Shell, planned: &Planned, request: &BuildRequest) -> Result<()> {
    let outcomes = build_outcomes(sh, planned, request)?;
    println!(
        "{} job(s) done; results in {}",
        outcomes.len(),
        planned.layout.results_root().display()
    );
    Ok(())
}

/// [`build`] without its closing line: each job's outcome, in plan order.
///
/// Errors: the first failing build.
pub fn build_outcomes(
    sh: &Shell,
    planned: &Planned,
    request: &BuildRequest,
) -> Result<Vec<super::BuildOutcome>> {
    let layout = &planned.layout;
    // A killed `results merge` left its staging directories among the
    // results this run writes.
    crate::results::archive::place::remove_stale(layout)?;
    // SIGINT or SIGTERM (Ctrl-C, a CI timeout, `kill`) stops the makes
    // too (the run's token sees it): each runs in its own process group
    // (util::process), which a terminal's Ctrl-C does not reach.
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
    super::run(sh, layout, planned.backend.as_ref(), &planned.jobs, options)
}

/// The plan as `--dry-run` prints it: one line per job, `target/variant`,
/// the build key, and `up to date`, `build (no result)`, `build (inputs
/// changed)`, `build (result.json unreadable)` or `build (tree source:
/// always rebuilt)`; then a `note:` line for each unreadable result.json
/// saying what is wrong with it (the build replaces it). A job with an
/// unevaluated input (a dry run's OpenWrt device recipe) has no key in
/// the plan, is `up to date unless …` changed when its result matches
/// everything else, and a note says what was not evaluated and why.
pub fn describe_plan(layout: &Layout, plan: &[PlannedJob]) -> String {
    let mut out = String::new();
    let mut notes = String::new();
    let (mut jobs, mut recipes) = (Vec::new(), Vec::new());
    for planned in plan {
        let (status, note) = status(layout, planned);
        if let Some(note) = note {
            notes.push_str(&format!("note: {note}\n"));
        }
        let key = match &planned.unevaluated {
            Some(u) => {
                jobs.push(planned.job.label());
                if !recipes.contains(&u.what) {
                    recipes.push(u.what.clone());
                }
                "(not known: see the note below)"
            }
            None => &planned.key,
        };
        out.push_str(&format!(
            "{:<32} {key:<64}  {status}\n",
            planned.job.label()
        ));
    }
    if !jobs.is_empty() {
        notes.push_str(&format!(
            "note: a dry run does not evaluate the OpenWrt checkout's image Makefiles: they are \
             code that make runs ($(shell …) in them would run). The device recipes ({}) are \
             read only when building, so the build keys of {} are known only then\n",
            recipes.join("; "),
            jobs.join(", ")
        ));
    }
    out + &notes
}

const UP_TO_DATE: &str = "up to date";

/// The status of a job whose result matches all but an unevaluated input.
const UP_TO_DATE_UNLESS: &str =
    "up to date unless its device recipe changed (not evaluated on a dry run)";

/// `up to date`, `build (no result)`, `build (inputs changed)`, `build
/// (result.json unreadable)` (with what is wrong with it) or `build (tree
/// source: always rebuilt)`; [`UP_TO_DATE_UNLESS`] for a job with an
/// unevaluated input whose result matches the rest.
fn status(layout: &Layout, planned: &PlannedJob) -> (&'static str, Option<String>) {
    let dir = layout.results_dir(&planned.job.target.name, &planned.job.variant.name);
    match crate::results::BuildResult::read(&dir) {
        _ if planned.inputs.source.sha256.is_none() => {
            ("build (tree source: always rebuilt)", None)
        }
        Ok(r) if planned.is_up_to_date(&r) => (UP_TO_DATE, None),
        Ok(r)
            if planned.unevaluated.is_some()
                && planned.up_to_date_unless_unevaluated_changed(&r) =>
        {
            (UP_TO_DATE_UNLESS, None)
        }
        Ok(_) => ("build (inputs changed)", None),
        Err(e) if crate::util::fs::is_not_found(&e) => ("build (no result)", None),
        Err(e) => ("build (result.json unreadable)", Some(format!("{e:#}"))),
    }
}
#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::SourceRecord;

    /// `--dry-run` over a result.json that is a symlink to /dev/zero says
    /// what is wrong with it; before, it read /dev/zero until the OOM
    /// killer ended it (23.5 GB).
    #[test]
    fn a_result_json_that_is_a_device_is_named_not_read() {
        let project = Layout::from_manifest_dir();
        let target = targets::Target::load(&project.targets_dir().join("arm-tiny.toml")).unwrap();
        let variant = variants::load(&project.variants_file(), &project.patches_dir())
            .unwrap()
            .remove(0);
        let planned = PlannedJob {
            target: plan::target_record(&target).unwrap(),
            variant: plan::variant_record(&variant, &project.patches_dir()).unwrap(),
            job: super::super::Job { target, variant },
            inputs: plan::JobInputs {
                source: SourceRecord {
                    version: "6.12.117".into(),
                    origin: "/usr/src/linux-source-6.12.tar.xz".into(),
                    sha256: Some("1".repeat(64)),
                },
                compiler: "gcc".into(),
                patches: Vec::new(),
            },
            key: "2".repeat(64),
            reuse_key: String::new(),
            unevaluated: None,
        };
        let dir = tempfile::tempdir().unwrap();
        let scratch = Layout::new(dir.path());
        let results = scratch.results_dir(&planned.job.target.name, &planned.job.variant.name);
        std::fs::create_dir_all(&results).unwrap();
        std::os::unix::fs::symlink("/dev/zero", results.join(crate::results::FILE_NAME)).unwrap();
        let out = describe_plan(&scratch, std::slice::from_ref(&planned));
        assert!(out.contains("build (result.json unreadable)"), "{out}");
        assert!(out.contains("a symlink to /dev/zero"), "{out}");
        std::fs::remove_file(results.join(crate::results::FILE_NAME)).unwrap();
        let out = describe_plan(&scratch, &[planned]);
        assert!(out.contains("build (no result)"), "{out}");
    }
}
