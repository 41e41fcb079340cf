//! `cargo xtask bench build`: how fast the workbench builds, from one run
//! on this machine, against the goals of [`report`]:
//!
//! 1. **Overhead**: (a) the backend's `make` steps run by hand
//!    ([`raw`]) in a fresh `O=` directory, then (b) `build --no-ccache
//!    --force` of the same job from a fresh build directory, through the
//!    library (plan and [`super::run`]); both vmlinux sha256 must agree.
//! 2. **ccache**: the tool with a private, empty cache (cold), then again
//!    from an empty build directory (warm): times, hits and misses.
//! 3. **Patch-only variant**: built (no ccache) right after 1b, the base's
//!    full build, so that a workbench that reuses a sibling's build
//!    directory can; its time as a fraction of 1b, and what its
//!    `result.json` records about reuse (`incremental_from`). It runs
//!    before step 2, which empties the base's build directory, and with
//!    ccache off like 1b, so that kbuild sees the same compiler command and
//!    the fraction shows reuse, not ccache. Its build directory is removed
//!    afterwards, so that none of the base's later builds can start from
//!    it (each checks that it did not).
//! 4. **distcc**: the tool through a real `distccd` on 127.0.0.1
//!    ([`super::distccd::LocalDistccd`], stopped on every path), no
//!    ccache; its log must show the objects it compiled, and vmlinux must
//!    have 1b's sha256.
//!
//! Everything happens in `target/xtask/bench/` ([`Layout::with_work_dir`]):
//! builds, results, ccache and distcc state of its own, emptied at the
//! start of each run; the unpacked and patched sources are shared with the
//! workspace. The user's `build/` and `results/` are never touched. Times
//! are wall clock ([`Instant`]) in seconds.

pub mod raw;
pub mod report;

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, ensure, Context, Result};
use xshell::Shell;

use crate::inputs::{targets, variants};
use crate::kernel_build::ccache::{self, Ccache};
use crate::kernel_build::distcc::{self, Distcc};
use crate::kernel_build::distccd::{self, LocalDistccd};
use crate::kernel_build::kbuild::KbuildBackend;
use crate::kernel_build::progress::{is_object_line, RunControl};
use crate::kernel_build::{plan, toolchain, BuildOptions, Job, Rebuild};
use crate::patches::patched_source;
use crate::results::{self, BuildResult, CcacheStats};
use crate::util::hash::sha256_file;
use crate::util::layout::Layout;
use crate::util::lock::{Lock, Wait};
use report::{BenchReport, CcacheSteps, DistccStep, Overhead, PatchOnly, Reuse};

/// The default `--patch-variant`.
pub const DEFAULT_PATCH_VARIANT: &str = "deinline-napi-schedule";

/// What `bench build` was asked for.
#[derive(Debug, Clone)]
pub struct BuildBenchRequest {
    /// `--target`: one target (not `all`).
    pub target: String,
    /// `--variant`: the base variant.
    pub base: String,
    /// `--patch-variant`: the base's flags and kconfig lines plus patches.
    pub patch_variant: String,
    /// `-j` of every build (raw make included).
    pub jobs: usize,
    /// Stream make's output instead of progress lines.
    pub verbose: bool,
    /// `--json FILE`: the numbers, written atomically.
    pub json: Option<PathBuf>,
    /// `--skip`: steps left out (on a router target each full build takes
    /// 10–25 minutes here).
    pub skip: Vec<BenchStep>,
}

/// A step `--skip` can leave out; the overhead (1) and the patch-only
/// variant (3) always run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BenchStep {
    /// Step 2: ccache cold, then warm (two full builds' worth).
    Ccache,
    /// Step 4: a full build through a distccd on 127.0.0.1.
    Distcc,
}

impl std::str::FromStr for BenchStep {
    type Err = String;

    /// `ccache` or `distcc`.
    fn from_str(s: &str) -> Result<BenchStep, String> {
        match s {
            "ccache" => Ok(BenchStep::Ccache),
            "distcc" => Ok(BenchStep::Distcc),
            _ => Err(format!(
                "unknown step {s:?}: --skip takes ccache and distcc (the overhead and patch-only steps always run)"
            )),
        }
    }
}

/// The benchmark's work directory: `target/xtask/bench/`.
pub fn work_dir(layout: &Layout) -> PathBuf {
    layout.work_dir().join("bench")
}

/// Runs the benchmark (see the module docs), prints the table on stdout,
/// writes `--json`, and returns the report. A goal missed is not an error.
///
/// Errors: a missing tool (naming its Debian package), an unknown target or
/// variant, a `--patch-variant` that changes more than patches, another
/// benchmark running, any build failing, distccd not starting.
pub fn run(sh: &Shell, layout: &Layout, request: &BuildBenchRequest) -> Result<BenchReport> {
    require_tools()?;
    let (base_job, variant_job) = jobs(layout, request)?;
    let work = work_dir(layout);
    std::fs::create_dir_all(&work).with_context(|| format!("creating {}", work.display()))?;
    let _bench = Lock::acquire(
        &work.join("bench.lock"),
        &format!("the build benchmark's directory {}", work.display()),
        Wait::No,
    )?;
    empty_except_lock(&work)?;
    let bench = layout.with_work_dir(&work);
    // Ctrl-C (or SIGTERM) stops the running make and later steps (the
    // run's token sees it) instead of killing this process, so that
    // distccd's guard still stops it.
    crate::util::cancel::install_handler();
    let control = RunControl::default();
    let backend = KbuildBackend::new(bench.clone(), None);
    let started = results::now_rfc3339();
    let t = base_job.target.name.clone();

    step("checking tools, flags and sources, preparing both patched trees");
    let jobs_both = [base_job.clone(), variant_job.clone()];
    let planned = plan::plan(sh, &bench, &backend, &jobs_both)?;
    let kernel_version = planned[0].inputs.source.version.clone();
    let tool = Tool {
        sh,
        layout: &bench,
        backend: &backend,
        control: &control,
        jobs: request.jobs,
        verbose: request.verbose,
    };

    step("1a: raw make, fresh O= directory, no ccache");
    let raw_dir = work.join("raw");
    let raw = {
        let tree = backend.source_tree(sh, &base_job)?;
        let _in_use = patched_source::lock_for_use(&bench, &tree, Wait::Yes)?;
        raw::build(
            sh,
            &base_job,
            &tree.dir,
            &raw_dir.join(&t),
            request.jobs,
            &raw_dir.join(format!("{t}.log")),
        )?
    };
    let raw_sha = sha256_file(&raw.vmlinux)?;
    note(&format!("raw make: {}", report::seconds(raw.seconds)));

    step("1b: xtask build --no-ccache --force, fresh build directory");
    let full = tool.build(&base_job, Ccache::Off, Distcc::Off, true)?;
    let tool_sha = sha256_file(&bench.build_dir(&t, &base_job.variant.name).join("vmlinux"))?;

    step(&format!(
        "3: {} after {}, no ccache",
        variant_job.variant.name, base_job.variant.name
    ));
    let variant = tool.build(&variant_job, Ccache::Off, Distcc::Off, false)?;
    // Gone, so that the base's later builds cannot start from it: they
    // are from empty build directories.
    remove_dir(&bench.build_dir(&t, &variant_job.variant.name))?;

    let ccache = if request.skip.contains(&BenchStep::Ccache) {
        None
    } else {
        step("2a: ccache cold (private, empty cache)");
        remove_dir(&ccache::cache_dir(&bench))?;
        let cold = tool.build(&base_job, Ccache::default(), Distcc::Off, true)?;
        step("2b: ccache warm (fresh build directory)");
        let warm = tool.build(&base_job, Ccache::default(), Distcc::Off, true)?;
        Some(CcacheSteps {
            cold_seconds: cold.seconds,
            cold: cold.stats()?,
            warm_seconds: warm.seconds,
            warm: warm.stats()?,
        })
    };

    let distcc = if request.skip.contains(&BenchStep::Distcc) {
        None
    } else {
        step("4: distcc through a distccd on 127.0.0.1, no ccache");
        let state = distcc::state_dir(&bench);
        std::fs::create_dir_all(&state).with_context(|| format!("creating {}", state.display()))?;
        let daemon = LocalDistccd::start(&work, request.jobs)?;
        let hosts = daemon.hosts();
        let built = tool.build(&base_job, Ccache::Off, hosts.clone(), true);
        let log = daemon.log();
        daemon.stop();
        let remote = built?;
        let counts = distccd::count_jobs(&log?);
        let distcc_sha = sha256_file(&bench.build_dir(&t, &base_job.variant.name).join("vmlinux"))?;
        Some(DistccStep {
            hosts: match hosts {
                Distcc::Hosts(h) => h,
                Distcc::Off => String::new(),
            },
            seconds: remote.seconds,
            objects_compiled: counts.compiled,
            errors: counts.errors,
            vmlinux_sha256: distcc_sha,
        })
    };

    let report = BenchReport {
        schema: report::SCHEMA,
        target: t,
        base: base_job.variant.name.clone(),
        patch_variant: variant_job.variant.name.clone(),
        jobs: request.jobs,
        kernel_version,
        started,
        overhead: Overhead {
            raw_seconds: raw.seconds,
            tool_seconds: full.seconds,
            tool_plan_seconds: full.plan_seconds,
            overhead_percent: report::overhead_percent(raw.seconds, full.seconds),
            raw_vmlinux_sha256: raw_sha,
            tool_vmlinux_sha256: tool_sha,
        },
        ccache,
        patch_only: PatchOnly {
            full_build: "1b (xtask build, no ccache, fresh build directory)".into(),
            full_seconds: full.seconds,
            full_objects: full.objects,
            variant_seconds: variant.seconds,
            variant_objects: variant.objects,
            fraction_percent: report::fraction_percent(variant.seconds, full.seconds),
            reuse: variant.reuse.clone(),
        },
        distcc,
    };
    println!("{}", report.render());
    if let Some(file) = &request.json {
        let json =
            serde_json::to_vec_pretty(&report.to_json()).context("serialising the report")?;
        crate::util::fs::write_atomic(file, &json)
            .with_context(|| format!("writing --json {}", file.display()))?;
        println!("numbers written to {}", file.display());
    }
    Ok(report)
}

/// ccache, distcc and distccd, each named with its Debian package.
fn require_tools() -> Result<()> {
    let missing: Vec<String> = [
        ("ccache", "ccache"),
        ("distcc", "distcc"),
        ("distccd", "distcc"),
    ]
    .into_iter()
    .filter(|(program, _)| toolchain::find_in_path(program).is_none())
    .map(|(program, package)| format!("{program} (`apt-get install {package}`)"))
    .collect();
    if !missing.is_empty() {
        bail!(
            "the build benchmark needs {}; `cargo xtask setup --tests` installs them",
            missing.join(", ")
        );
    }
    Ok(())
}

/// The base job and the patch-only variant's job on the one target.
fn jobs(layout: &Layout, request: &BuildBenchRequest) -> Result<(Job, Job)> {
    let all = targets::load_all(&layout.targets_dir())?;
    let chosen = targets::select(&all, std::slice::from_ref(&request.target))?;
    let [target] = chosen.as_slice() else {
        bail!(
            "--target {}: the benchmark builds one target; name one (arm-tiny, bcm53xx, …)",
            request.target
        );
    };
    let all_variants = variants::load(&layout.variants_file(), &layout.patches_dir())?;
    ensure!(
        request.base != request.patch_variant,
        "--variant and --patch-variant are both {:?}; the patch-only variant must add a patch",
        request.base
    );
    let names = [request.base.clone(), request.patch_variant.clone()];
    let chosen = variants::select(&all_variants, &names)?;
    let [base, patched] = chosen.as_slice() else {
        bail!("expected two variants, {names:?}");
    };
    check_patch_only(base, patched)?;
    let job = |variant: &variants::Variant| Job {
        target: target.clone(),
        variant: variant.clone(),
    };
    Ok((job(base), job(patched)))
}

/// `patched` has `base`'s flags and kconfig lines, and `base`'s patches
/// followed by at least one more.
pub fn check_patch_only(base: &variants::Variant, patched: &variants::Variant) -> Result<()> {
    let mut differ = Vec::new();
    if patched.os_flags != base.os_flags || patched.o2_flags != base.o2_flags {
        differ.push("its flags");
    }
    if patched.kconfig != base.kconfig {
        differ.push("its kconfig lines");
    }
    if !(patched.patches.len() > base.patches.len() && patched.patches.starts_with(&base.patches)) {
        differ.push("its patches (it must add at least one to the base's)");
    }
    ensure!(
        differ.is_empty(),
        "--patch-variant {} is not a patch-only variant of {}: {} differ; \
         pick one in patches/variants.toml that only adds patches (e.g. {DEFAULT_PATCH_VARIANT})",
        patched.name,
        base.name,
        differ.join(", ")
    );
    Ok(())
}

/// The tool's builds in the benchmark's layout: one job each, from an
/// empty build directory, always rebuilt.
struct Tool<'a> {
    sh: &'a Shell,
    layout: &'a Layout,
    backend: &'a KbuildBackend,
    control: &'a RunControl,
    jobs: usize,
    verbose: bool,
}

/// One timed build of the tool.
struct Timed {
    result: BuildResult,
    /// Plan and build: seconds.
    seconds: f64,
    /// The plan alone: seconds.
    plan_seconds: f64,
    /// Whether it started from a sibling's build directory.
    reuse: Reuse,
    /// Objects it compiled, counted in its `build.log`.
    objects: u64,
}

impl Timed {
    fn stats(&self) -> Result<CcacheStats> {
        self.result
            .ccache
            .context("a ccache build recorded no ccache stats")
    }
}

impl Tool<'_> {
    /// `cargo xtask build --force` of `job` from an empty build directory:
    /// the plan, then [`super::run`], timed together. A build of the base
    /// variant (`fresh`) must not have started from a sibling's build
    /// directory.
    fn build(&self, job: &Job, ccache: Ccache, distcc: Distcc, fresh: bool) -> Result<Timed> {
        if self.control.is_stopped() {
            bail!("interrupted");
        }
        remove_dir(&self.layout.build_dir(&job.target.name, &job.variant.name))?;
        let options = BuildOptions {
            jobs: self.jobs,
            verbose: self.verbose,
            rebuild: Rebuild::Always,
            wait: Wait::Yes,
            ccache,
            distcc,
            control: self.control.clone(),
        };
        let clock = Instant::now();
        let planned = plan::plan(
            self.sh,
            self.layout,
            self.backend,
            std::slice::from_ref(job),
        )?;
        let plan_seconds = clock.elapsed().as_secs_f64();
        let outcomes =
            crate::kernel_build::run(self.sh, self.layout, self.backend, &planned, options)?;
        let seconds = clock.elapsed().as_secs_f64();
        let result = outcomes
            .into_iter()
            .next()
            .with_context(|| format!("{}: the build returned no result", job.label()))?
            .result()
            .clone();
        let results_dir = self.layout.results_dir(&job.target.name, &job.variant.name);
        let reuse = match &result.incremental_from {
            Some(from) => Reuse::From(from.clone()),
            None => Reuse::No,
        };
        if let (true, Reuse::From(from)) = (fresh, &reuse) {
            bail!(
                "{}: the build started from {from}'s build directory, so it does not time a \
                 build from scratch; remove that directory and run the benchmark again",
                job.label()
            );
        }
        Ok(Timed {
            result,
            seconds,
            plan_seconds,
            reuse,
            objects: objects_in_log(&results_dir.join("build.log"))?,
        })
    }
}

/// Objects compiled according to a build's `build.log` (kbuild's `CC` and
/// `AS` lines, as the progress line counts them).
fn objects_in_log(log: &Path) -> Result<u64> {
    let text = crate::util::fs::read_limited(
        log,
        crate::util::fs::FileLimit::log("build log"),
        "run the benchmark again",
    )?;
    Ok(text.lines().filter(|l| is_object_line(l)).count() as u64)
}

/// Removes `dir` and everything in it, if it exists.
fn remove_dir(dir: &Path) -> Result<()> {
    match std::fs::remove_dir_all(dir) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(e).with_context(|| format!("removing {}", dir.display()))
        }
        _ => Ok(()),
    }
}

/// Empties the benchmark's directory, keeping its lock file.
fn empty_except_lock(work: &Path) -> Result<()> {
    for entry in std::fs::read_dir(work).with_context(|| format!("reading {}", work.display()))? {
        let path = entry?.path();
        if path.file_name().is_some_and(|n| n == "bench.lock") {
            continue;
        }
        if path.is_dir() && !path.is_symlink() {
            remove_dir(&path)?;
        } else {
            std::fs::remove_file(&path).with_context(|| format!("removing {}", path.display()))?;
        }
    }
    Ok(())
}

fn step(what: &str) {
    eprintln!("== bench: {what}");
}

fn note(what: &str) {
    eprintln!("   {what}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_variant_that_adds_patches_is_patch_only() {
        let layout = Layout::from_manifest_dir();
        let all = variants::load(&layout.variants_file(), &layout.patches_dir()).unwrap();
        let get = |n: &str| all.iter().find(|v| v.name == n).unwrap().clone();
        let base = get(variants::BASELINE);
        check_patch_only(&base, &get(DEFAULT_PATCH_VARIANT)).unwrap();
        let err = check_patch_only(&base, &get("no-reorder-blocks")).unwrap_err();
        let msg = format!("{err:#}");
        assert!(
            msg.contains("its flags") && msg.contains("its patches"),
            "{msg}"
        );
        assert!(check_patch_only(&base, &base).is_err());
    }
}
