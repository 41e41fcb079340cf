//! Jobs side by side: a fake backend records how many builds run at once
//! and the `-j` they were given; a failing job stops the others (a real
//! `sleep` run through the same runner as make gets SIGTERM) and the
//! results of jobs that finished are kept.

use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use xshell::Shell;
use xtask::inputs::targets::Target;
use xtask::inputs::variants::Variant;
use xtask::kernel_build::artifacts::BuildOutputs;
use xtask::kernel_build::ccache::Ccache;
use xtask::kernel_build::plan::{JobInputs, PlannedJob};
use xtask::kernel_build::progress::{run_logged, RunControl};
use xtask::kernel_build::{self, BuildBackend, BuildOptions, Built, Job, Rebuild};
use xtask::results::{self, Cflags, SourceRecord};
use xtask::util::layout::Layout;
use xtask::util::lock::Wait;

/// A project with one target and `variants` variants.
fn project(variants: &[&str]) -> (tempfile::TempDir, Layout, Vec<Job>) {
    let dir = tempfile::tempdir().unwrap();
    let toml = dir.path().join("targets/t.toml");
    std::fs::create_dir_all(toml.parent().unwrap()).unwrap();
    std::fs::write(
        &toml,
        "openwrt = \"ramips/mt7621\"\nsoc = \"S\"\ncpu = \"c\"\narch = \"mips\"\ncross_compile = \"mipsel-linux-gnu-\"\ncompiler_package = \"p\"\nkernel = \"6.12\"\nartifacts = [\"vmlinux\"]\n[kconfig]\nbase = \"allnoconfig\"\n",
    )
    .unwrap();
    let target = Target::load(&toml).unwrap();
    let jobs = variants
        .iter()
        .map(|name| Job {
            target: target.clone(),
            variant: Variant {
                name: name.to_string(),
                description: String::new(),
                // Other flags per variant: no two jobs share a reuse key.
                os_flags: format!("-Os -DVARIANT_{name}"),
                o2_flags: "-O2".into(),
                patches: vec![],
                kconfig: vec![],
            },
        })
        .collect();
    let layout = Layout::new(dir.path());
    (dir, layout, jobs)
}

/// Sleeps (through the make runner) and records concurrency; variants
/// named `fail*` fail after `fail_after`, `slow*` sleep 30 s (until
/// stopped), others sleep `work` and succeed with this test binary as
/// their "vmlinux" (an ELF file).
struct FakeBackend {
    work: Duration,
    fail_after: Duration,
    running: AtomicUsize,
    most_running: AtomicUsize,
    jobs_in_use: AtomicUsize,
    most_jobs_in_use: AtomicUsize,
}

impl FakeBackend {
    fn new(work: Duration, fail_after: Duration) -> FakeBackend {
        FakeBackend {
            work,
            fail_after,
            running: AtomicUsize::new(0),
            most_running: AtomicUsize::new(0),
            jobs_in_use: AtomicUsize::new(0),
            most_jobs_in_use: AtomicUsize::new(0),
        }
    }
}

impl BuildBackend for FakeBackend {
    fn name(&self) -> &'static str {
        "fake"
    }
    fn preflight(&self, _: &Shell, _: &[Job]) -> anyhow::Result<()> {
        Ok(())
    }
    fn inputs(&self, _: &Shell, _: &Job) -> anyhow::Result<JobInputs> {
        Ok(JobInputs {
            source: SourceRecord {
                version: "6.12.0".into(),
                origin: "fixture".into(),
                sha256: Some("0".repeat(64)),
            },
            compiler: "gcc 12".into(),
            patches: Vec::new(),
        })
    }
    fn build(
        &self,
        _: &Shell,
        planned: &PlannedJob,
        options: BuildOptions,
        log: &Path,
    ) -> anyhow::Result<Built> {
        let job = &planned.job;
        let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
        self.most_running.fetch_max(now, Ordering::SeqCst);
        let j = self.jobs_in_use.fetch_add(options.jobs, Ordering::SeqCst) + options.jobs;
        self.most_jobs_in_use.fetch_max(j, Ordering::SeqCst);
        let name = job.variant.name.as_str();
        let seconds = if name.starts_with("fail") {
            self.fail_after
        } else if name.starts_with("slow") {
            Duration::from_secs(30)
        } else {
            self.work
        };
        let mut sleep = Command::new("sleep");
        sleep.arg(format!("{:.3}", seconds.as_secs_f64()));
        let ran = run_logged(sleep, &job.label(), log, false, None, &options.control);
        self.running.fetch_sub(1, Ordering::SeqCst);
        self.jobs_in_use.fetch_sub(options.jobs, Ordering::SeqCst);
        ran?;
        anyhow::ensure!(!name.starts_with("fail"), "make: *** [vmlinux] Error 2");
        Ok(Built {
            outputs: BuildOutputs {
                vmlinux: std::env::current_exe()?,
                zimage: None,
            },
            cflags: Cflags {
                os: "-Os".into(),
                o2: "-O2".into(),
                effective: "os".into(),
                compile_command: "gcc -Os".into(),
            },
            patches: Vec::new(),
            config_sha256: "1".repeat(64),
            ccache: None,
            incremental_from: None,
            openwrt: None,
            extra_artifacts: Default::default(),
        })
    }
}

/// Runs a real make (through [`BuildOptions::parallel`]) whose targets
/// append their start and end times to one log: variant `short` has 2
/// targets, the others 16, each sleeping 0.6 s.
struct MakeBackend {
    dir: std::path::PathBuf,
}

impl MakeBackend {
    fn new(dir: &Path) -> MakeBackend {
        std::fs::write(
            dir.join("Makefile"),
            "all: $(addprefix t,$(shell seq 1 $(N)))\n\
             t%:\n\
             \t@echo \"$(JOB) start $$(date +%s.%N)\" >> $(LOG); sleep 0.6; echo \"$(JOB) end $$(date +%s.%N)\" >> $(LOG)\n",
        )
        .unwrap();
        MakeBackend {
            dir: dir.to_path_buf(),
        }
    }

    /// The most targets running at once, of `job` or (None) of all.
    fn most_at_once(&self, job: Option<&str>) -> usize {
        let text = std::fs::read_to_string(self.dir.join("times.log")).unwrap();
        let mut events: Vec<(f64, i32)> = text
            .lines()
            .filter_map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                let delta = if f[1] == "start" { 1 } else { -1 };
                (job.is_none() || job == Some(f[0])).then(|| (f[2].parse().unwrap(), delta))
            })
            .collect();
        // Ends before starts at the same instant.
        events.sort_by(|a, b| a.partial_cmp(b).unwrap());
        let (mut now, mut most) = (0, 0);
        for (_, d) in events {
            now += d;
            most = most.max(now);
        }
        most as usize
    }
}

impl BuildBackend for MakeBackend {
    fn name(&self) -> &'static str {
        "make"
    }
    fn preflight(&self, _: &Shell, _: &[Job]) -> anyhow::Result<()> {
        Ok(())
    }
    fn inputs(&self, sh: &Shell, job: &Job) -> anyhow::Result<JobInputs> {
        FakeBackend::new(Duration::ZERO, Duration::ZERO).inputs(sh, job)
    }
    fn build(
        &self,
        sh: &Shell,
        planned: &PlannedJob,
        options: BuildOptions,
        log: &Path,
    ) -> anyhow::Result<Built> {
        let (dir, name) = (&self.dir, &planned.job.variant.name);
        let n = if name == "short" { "2" } else { "16" };
        let times = dir.join("times.log");
        let make = xshell::cmd!(sh, "make -s -C {dir} JOB={name} N={n} LOG={times}");
        let make = options.parallel(make);
        run_logged(
            make,
            &planned.job.label(),
            log,
            false,
            None,
            &options.control,
        )?;
        Ok(Built {
            outputs: BuildOutputs {
                vmlinux: std::env::current_exe()?,
                zimage: None,
            },
            cflags: Cflags {
                os: "-Os".into(),
                o2: "-O2".into(),
                effective: "os".into(),
                compile_command: "gcc -Os".into(),
            },
            patches: Vec::new(),
            config_sha256: "1".repeat(64),
            ccache: None,
            incremental_from: None,
            openwrt: None,
            extra_artifacts: Default::default(),
        })
    }
}

#[test]
fn real_makes_share_one_jobserver_and_inherit_freed_slots() {
    let (dir, layout, jobs) = project(&["short", "long"]);
    let backend = MakeBackend::new(dir.path());
    let sh = Shell::new().unwrap();
    let plan = kernel_build::plan::plan(&sh, &layout, &backend, &jobs).unwrap();
    kernel_build::run(&sh, &layout, &backend, &plan, options(4)).unwrap();
    // Never more than the budget, all makes together.
    assert_eq!(backend.most_at_once(None), 4);
    // Alone after "short" ended, "long" used the whole budget: its own
    // share, and the slot "short"'s worker gave back.
    assert_eq!(backend.most_at_once(Some("long")), 4);
}

fn options(jobs: usize) -> BuildOptions {
    BuildOptions {
        jobs,
        verbose: false,
        rebuild: Rebuild::Always,
        wait: Wait::Yes,
        ccache: Ccache::Off,
        distcc: Default::default(),
        control: RunControl::default(),
    }
}

#[test]
fn jobs_run_side_by_side_within_the_j_budget() {
    let (_dir, layout, jobs) = project(&["a", "b", "c", "d", "e"]);
    let backend = FakeBackend::new(Duration::from_millis(700), Duration::ZERO);
    let sh = Shell::new().unwrap();
    let plan = kernel_build::plan::plan(&sh, &layout, &backend, &jobs).unwrap();
    let clock = Instant::now();
    let outcomes = kernel_build::run(&sh, &layout, &backend, &plan, options(3)).unwrap();
    let took = clock.elapsed();
    // Plan order, every job built.
    let names: Vec<_> = outcomes
        .iter()
        .map(|o| o.result().variant.name.clone())
        .collect();
    assert_eq!(names, ["a", "b", "c", "d", "e"]);
    assert_eq!(backend.most_running.load(Ordering::SeqCst), 3);
    assert!(backend.most_jobs_in_use.load(Ordering::SeqCst) <= 3);
    // Five jobs of 0.7 s on three workers: two rounds, not five.
    assert!(
        took < Duration::from_millis(5 * 700),
        "ran one by one: {took:?}"
    );
    for v in ["a", "e"] {
        assert!(layout
            .results_dir("t", v)
            .join(results::FILE_NAME)
            .is_file());
    }
}

#[test]
fn variants_that_differ_only_in_patches_run_one_after_the_other() {
    // "b" has "a"'s flags (a patch-only variant starts from "a"'s build
    // directory): one worker runs a then b, the other c.
    let (_dir, layout, mut jobs) = project(&["a", "b", "c"]);
    jobs[1].variant.os_flags = jobs[0].variant.os_flags.clone();
    let backend = FakeBackend::new(Duration::from_millis(300), Duration::ZERO);
    let sh = Shell::new().unwrap();
    let plan = kernel_build::plan::plan(&sh, &layout, &backend, &jobs).unwrap();
    assert_eq!(
        kernel_build::scheduler::chains(&plan),
        [vec![0, 1], vec![2]]
    );
    kernel_build::run(&sh, &layout, &backend, &plan, options(3)).unwrap();
    assert_eq!(backend.most_running.load(Ordering::SeqCst), 2);
}

#[test]
fn a_budget_of_one_runs_one_job_at_a_time() {
    let (_dir, layout, jobs) = project(&["a", "b", "c"]);
    let backend = FakeBackend::new(Duration::from_millis(200), Duration::ZERO);
    let sh = Shell::new().unwrap();
    let plan = kernel_build::plan::plan(&sh, &layout, &backend, &jobs).unwrap();
    kernel_build::run(&sh, &layout, &backend, &plan, options(1)).unwrap();
    assert_eq!(backend.most_running.load(Ordering::SeqCst), 1);
    assert_eq!(backend.most_jobs_in_use.load(Ordering::SeqCst), 1);
}

#[test]
fn a_failure_stops_the_others_names_the_job_and_keeps_finished_results() {
    // Workers: "ok" finishes first, then "fail" fails while "slow" runs;
    // "queued" never starts.
    let (_dir, layout, jobs) = project(&["ok", "slow", "fail", "queued"]);
    let backend = FakeBackend::new(Duration::from_millis(100), Duration::from_millis(800));
    let sh = Shell::new().unwrap();
    let plan = kernel_build::plan::plan(&sh, &layout, &backend, &jobs).unwrap();
    let clock = Instant::now();
    let err = format!(
        "{:#}",
        kernel_build::run(&sh, &layout, &backend, &plan, options(2)).unwrap_err()
    );
    assert!(
        clock.elapsed() < Duration::from_secs(15),
        "the slow job was not stopped"
    );
    assert!(err.starts_with("t/fail failed"), "{err}");
    assert!(err.contains("building t/fail"), "{err}");
    assert!(err.contains("Error 2"), "{err}");
    assert!(err.contains("stopped: "), "{err}");
    assert!(err.contains("t/slow"), "{err}");
    assert!(err.contains("t/queued (not started)"), "{err}");
    assert!(err.contains("results kept: t/ok"), "{err}");
    let has_result = |v: &str| {
        layout
            .results_dir("t", v)
            .join(results::FILE_NAME)
            .is_file()
    };
    assert!(has_result("ok"), "a finished job lost its result");
    for v in ["slow", "fail", "queued"] {
        assert!(!has_result(v), "{v} has a result");
    }
}
