//! The build pipeline around the backends, on small fixture trees: the
//! series order, the all-or-nothing patched tree, and a failed or killed
//! rebuild never touching the old result.

use std::path::Path;
use std::time::{Duration, Instant};

use xshell::Shell;
use xtask::inputs::kernel_source::PristineTree;
use xtask::inputs::targets::Target;
use xtask::inputs::variants::Variant;
use xtask::kernel_build::plan::{JobInputs, PlannedJob};
use xtask::kernel_build::{self, BuildBackend, BuildOptions, Built, Job, Rebuild};
use xtask::patches::{patched_source, series};
use xtask::results::{self, SourceRecord};
use xtask::util::fs::{remove_stale_staging, StagingDir};
use xtask::util::layout::Layout;
use xtask::util::lock::Wait;

const MAKEFILE: &str = "VERSION = 6\nPATCHLEVEL = 12\nSUBLEVEL = 0\nEXTRAVERSION =\n\nifdef CONFIG_CC_OPTIMIZE_FOR_PERFORMANCE\nKBUILD_CFLAGS += -O2\nelse ifdef CONFIG_CC_OPTIMIZE_FOR_SIZE\nKBUILD_CFLAGS += -Os\nendif\n";

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A project with targets/, patches/ and a fake kernel tree.
fn project() -> (tempfile::TempDir, Layout, Target, Variant) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    let root = root.as_path();
    write(
        &root.join("targets/t.toml"),
        "openwrt = \"ramips/mt7621\"\nsoc = \"S\"\ncpu = \"c\"\narch = \"mips\"\ncross_compile = \"mipsel-linux-gnu-\"\ncompiler_package = \"p\"\nkernel = \"6.12\"\nartifacts = [\"vmlinux\"]\n[kconfig]\nbase = \"allnoconfig\"\n",
    );
    write(&root.join("linux/Makefile"), MAKEFILE);
    write(
        &root.join("linux/a.c"),
        "one\ntwo\nthree\nfour\nfive\nsix\nseven\n",
    );
    let target = Target::load(&root.join("targets/t.toml")).unwrap();
    let variant = Variant {
        name: "v".into(),
        description: String::new(),
        os_flags: "-Os -fno-tree-ch".into(),
        o2_flags: "-O2".into(),
        patches: vec![],
        kconfig: vec![],
    };
    (dir, Layout::new(root), target, variant)
}

fn patch_a(from: &str, to: &str) -> String {
    format!("Subject: change a.c\n\n--- a/a.c\n+++ b/a.c\n@@ -2,3 +2,3 @@\n two\n-{from}\n+{to}\n four\n")
}

#[test]
fn series_is_in_openwrt_order_with_the_generated_flag_patch() {
    let (dir, layout, target, variant) = project();
    let p = layout.patches_dir();
    write(&p.join("ramips/patches-6.12/100-target.patch"), "x");
    write(&p.join("generic/hack-6.12/300-hack.patch"), "x");
    write(&p.join("generic/backport-6.12/050-backport.patch"), "x");
    write(&p.join("generic/pending-6.12/100-first.patch"), "x");
    write(&p.join("generic/pending-6.12/300-later.patch"), "x");
    write(&p.join("generic/pending-6.12/README"), "not a patch");
    write(&p.join("generic/pending-6.1/100-other-kernel.patch"), "x");
    let names: Vec<String> = series::collect(&p, &target, &variant, "6.12", MAKEFILE)
        .unwrap()
        .into_iter()
        .map(|s| s.name)
        .collect();
    assert_eq!(
        names,
        [
            "generic/backport-6.12/050-backport.patch",
            "generic/pending-6.12/100-first.patch",
            "generic/pending-6.12/201-extra_optimization.patch",
            "generic/pending-6.12/300-later.patch",
            "generic/hack-6.12/300-hack.patch",
            "ramips/patches-6.12/100-target.patch",
        ]
    );
    drop(dir);
}

fn pristine(layout: &Layout) -> PristineTree {
    PristineTree {
        dir: layout.root().join("linux"),
        version: "6.12.0".into(),
        tarball_sha256: Some("00".repeat(32)),
        origin: layout.root().join("linux.tar"),
    }
}

#[test]
fn patched_tree_has_every_patch_and_leaves_the_pristine_tree_alone() {
    let (_dir, layout, target, variant) = project();
    write(
        &layout
            .patches_dir()
            .join("generic/pending-6.12/100-a.patch"),
        &patch_a("three", "THREE"),
    );
    let sh = Shell::new().unwrap();
    let series =
        series::collect(&layout.patches_dir(), &target, &variant, "6.12", MAKEFILE).unwrap();
    let tree = patched_source::prepare(&sh, &layout, &pristine(&layout), &series).unwrap();
    let a = std::fs::read_to_string(tree.dir.join("a.c")).unwrap();
    assert!(a.contains("THREE\n"));
    let mk = std::fs::read_to_string(tree.dir.join("Makefile")).unwrap();
    assert!(mk.contains("KBUILD_CFLAGS += -Os -fno-tree-ch $(EXTRA_OPTIMIZATION)"));
    assert_eq!(
        std::fs::read_to_string(layout.root().join("linux/a.c")).unwrap(),
        "one\ntwo\nthree\nfour\nfive\nsix\nseven\n"
    );
    assert_eq!(
        std::fs::read_to_string(layout.root().join("linux/Makefile")).unwrap(),
        MAKEFILE
    );
    assert_eq!(tree.patches.len(), 2);
}

#[test]
fn a_failing_patch_names_itself_and_keeps_no_tree() {
    let (_dir, layout, target, variant) = project();
    let p = layout.patches_dir().join("generic/pending-6.12");
    write(&p.join("100-a.patch"), &patch_a("three", "THREE"));
    write(&p.join("110-b.patch"), &patch_a("nothing-like-this", "x"));
    let sh = Shell::new().unwrap();
    let series =
        series::collect(&layout.patches_dir(), &target, &variant, "6.12", MAKEFILE).unwrap();
    let err = format!(
        "{:#}",
        patched_source::prepare(&sh, &layout, &pristine(&layout), &series).unwrap_err()
    );
    assert!(err.contains("110-b.patch"), "{err}");
    assert!(err.contains("Hunk #1 FAILED at 2"), "{err}");
    let left: Vec<_> = std::fs::read_dir(layout.patched_src_dir())
        .unwrap()
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[test]
fn a_patch_escaping_the_tree_is_refused() {
    let (_dir, layout, target, variant) = project();
    write(
        &layout
            .patches_dir()
            .join("generic/pending-6.12/100-evil.patch"),
        "--- a/../outside\n+++ b/../outside\n@@ -0,0 +1 @@\n+x\n",
    );
    let sh = Shell::new().unwrap();
    let series =
        series::collect(&layout.patches_dir(), &target, &variant, "6.12", MAKEFILE).unwrap();
    let err = format!(
        "{:#}",
        patched_source::prepare(&sh, &layout, &pristine(&layout), &series).unwrap_err()
    );
    assert!(err.contains("100-evil.patch"), "{err}");
    assert!(!layout.patched_src_dir().join("outside").exists());
    assert!(!layout.root().join("outside").exists());
}

struct FailingBackend;

impl BuildBackend for FailingBackend {
    fn name(&self) -> &'static str {
        "failing"
    }
    fn preflight(&self, _: &Shell, _: &[Job]) -> anyhow::Result<()> {
        Ok(())
    }
    fn inputs(&self, _: &Shell, _: &Job) -> anyhow::Result<JobInputs> {
        Ok(JobInputs {
            source: SourceRecord {
                version: "6.12.0".to_string(),
                origin: "fixture".to_string(),
                sha256: Some("0".repeat(64)),
            },
            compiler: "gcc 12".to_string(),
            patches: Vec::new(),
        })
    }
    fn build(
        &self,
        _: &Shell,
        _: &PlannedJob,
        _: BuildOptions,
        log: &Path,
    ) -> anyhow::Result<Built> {
        std::fs::write(log, "make: *** [vmlinux] Error 2\n")?;
        anyhow::bail!("make failed")
    }
}

fn options() -> BuildOptions {
    BuildOptions {
        jobs: 1,
        verbose: false,
        rebuild: Rebuild::Always,
        wait: Wait::Yes,
        ccache: xtask::kernel_build::ccache::Ccache::Off,
        distcc: Default::default(),
        control: Default::default(),
    }
}

/// A failed rebuild (`--force`) leaves the old result as it was, and its
/// own log in `.v.building/`; before, the old result was removed first
/// and a failed, stopped or killed rebuild left only its `build.log`
/// (`size-report`: "no results").
#[test]
fn a_failed_rebuild_keeps_the_old_result() {
    let (_dir, layout, target, variant) = project();
    let results_dir = layout.results_dir(&target.name, &variant.name);
    write(&results_dir.join(results::FILE_NAME), "{\"old\": true}");
    write(&results_dir.join("vmlinux"), "the old build's vmlinux");
    write(&results_dir.join("build.log"), "the old build's log");
    let sh = Shell::new().unwrap();
    let jobs = [Job { target, variant }];
    let plan = kernel_build::plan::plan(&sh, &layout, &FailingBackend, &jobs).unwrap();
    let err = kernel_build::run(&sh, &layout, &FailingBackend, &plan, options()).unwrap_err();
    assert!(format!("{err:#}").contains("building t/v"), "{err:#}");
    let read = |f: &str| std::fs::read_to_string(results_dir.join(f)).unwrap();
    assert_eq!(read(results::FILE_NAME), "{\"old\": true}");
    assert_eq!(read("vmlinux"), "the old build's vmlinux");
    assert_eq!(read("build.log"), "the old build's log");
    let building = kernel_build::building_dir(&layout, "t", "v");
    assert_eq!(
        std::fs::read_to_string(building.join("build.log")).unwrap(),
        "make: *** [vmlinux] Error 2\n"
    );
    assert!(!building.join(results::FILE_NAME).exists());
}

/// A backend that writes its log and then waits a minute (to be killed).
struct HangingBackend;

impl BuildBackend for HangingBackend {
    fn name(&self) -> &'static str {
        "hanging"
    }
    fn preflight(&self, _: &Shell, _: &[Job]) -> anyhow::Result<()> {
        Ok(())
    }
    fn inputs(&self, sh: &Shell, job: &Job) -> anyhow::Result<JobInputs> {
        FailingBackend.inputs(sh, job)
    }
    fn build(
        &self,
        _: &Shell,
        _: &PlannedJob,
        _: BuildOptions,
        log: &Path,
    ) -> anyhow::Result<Built> {
        std::fs::write(log, "make: compiling\n")?;
        std::thread::sleep(Duration::from_secs(60));
        anyhow::bail!("not killed")
    }
}

const HANG_ENV: &str = "XTASK_BUILD_PIPELINE_HANG";

/// Helper of `a_killed_rebuild_keeps_the_old_result`: rebuilds t/v of the
/// project `$XTASK_BUILD_PIPELINE_HANG` names with [`HangingBackend`].
#[test]
#[ignore = "a helper: a_killed_rebuild_keeps_the_old_result runs it in a process of its own"]
fn child_hanging_build() {
    let Ok(root) = std::env::var(HANG_ENV) else {
        return;
    };
    let layout = Layout::new(Path::new(&root));
    let target = Target::load(&layout.root().join("targets/t.toml")).unwrap();
    let (_dir, _, _, variant) = project();
    let sh = Shell::new().unwrap();
    let jobs = [Job { target, variant }];
    let plan = kernel_build::plan::plan(&sh, &layout, &HangingBackend, &jobs).unwrap();
    kernel_build::run(&sh, &layout, &HangingBackend, &plan, options()).unwrap_err();
}

/// `build --force` killed with SIGKILL (which nothing can catch) while
/// make runs leaves the old result whole; the next build of the job
/// removes the killed one's `.v.building/`.
#[test]
fn a_killed_rebuild_keeps_the_old_result() {
    let (_dir, layout, target, variant) = project();
    let results_dir = layout.results_dir(&target.name, &variant.name);
    write(&results_dir.join(results::FILE_NAME), "{\"old\": true}");
    write(&results_dir.join("vmlinux"), "the old build's vmlinux");
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            crate::common::helper_name(module_path!(), "child_hanging_build").as_str(),
            "--ignored",
            "--nocapture",
        ])
        .env(HANG_ENV, layout.root())
        .spawn()
        .unwrap();
    let log = kernel_build::building_dir(&layout, "t", "v").join("build.log");
    let clock = Instant::now();
    while !log.is_file() && clock.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(log.is_file(), "the build never started");
    child.kill().unwrap();
    child.wait().unwrap();
    let read = |f: &str| std::fs::read_to_string(results_dir.join(f)).unwrap();
    assert_eq!(read(results::FILE_NAME), "{\"old\": true}");
    assert_eq!(read("vmlinux"), "the old build's vmlinux");
    let sh = Shell::new().unwrap();
    let jobs = [Job { target, variant }];
    let plan = kernel_build::plan::plan(&sh, &layout, &FailingBackend, &jobs).unwrap();
    kernel_build::run(&sh, &layout, &FailingBackend, &plan, options()).unwrap_err();
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        "make: *** [vmlinux] Error 2\n",
        "the killed build's leftovers were not replaced"
    );
    assert_eq!(read(results::FILE_NAME), "{\"old\": true}");
}

#[test]
fn staging_left_by_an_interrupted_run_is_removed() {
    let (_dir, layout, target, variant) = project();
    let stale = layout.patched_src_dir().join(".staging-interrupted/linux");
    write(&stale.join("a.c"), "half-patched");
    let sh = Shell::new().unwrap();
    let series =
        series::collect(&layout.patches_dir(), &target, &variant, "6.12", MAKEFILE).unwrap();
    patched_source::prepare(&sh, &layout, &pristine(&layout), &series).unwrap();
    assert!(!layout
        .patched_src_dir()
        .join(".staging-interrupted")
        .exists());
}

#[test]
fn staging_of_a_live_run_is_kept() {
    let (_dir, layout, target, variant) = project();
    // Being created by a live process (its pid in the name, no owner file yet).
    let mut owner = std::process::Command::new("sleep")
        .arg("60")
        .spawn()
        .unwrap();
    let live = layout
        .patched_src_dir()
        .join(format!(".staging-{}-abcdef", owner.id()));
    write(&live.join("linux/a.c"), "being patched");
    // Held by its owner's lock (this process).
    let held = StagingDir::new(&layout.patched_src_dir(), ".staging-").unwrap();
    let sh = Shell::new().unwrap();
    let series =
        series::collect(&layout.patches_dir(), &target, &variant, "6.12", MAKEFILE).unwrap();
    patched_source::prepare(&sh, &layout, &pristine(&layout), &series).unwrap();
    assert!(
        live.join("linux/a.c").is_file(),
        "a live run's staging was removed"
    );
    assert!(held.path().is_dir());
    owner.kill().unwrap();
    owner.wait().unwrap();
    remove_stale_staging(&layout.patched_src_dir(), ".staging-").unwrap();
    assert!(!live.exists(), "the staging of a dead run was kept");
    assert!(held.path().is_dir());
}

/// A backend whose "make" takes a while and checks, at the end, that its
/// results directory still has its own log (another run of the same job
/// used to delete it).
struct SlowBackend {
    runs: std::sync::Mutex<Vec<(Instant, Instant, bool)>>,
    /// Runs that have started their "make" (and so hold the job's lock).
    started: std::sync::atomic::AtomicUsize,
}

impl BuildBackend for SlowBackend {
    fn name(&self) -> &'static str {
        "slow"
    }
    fn preflight(&self, _: &Shell, _: &[Job]) -> anyhow::Result<()> {
        Ok(())
    }
    fn inputs(&self, sh: &Shell, job: &Job) -> anyhow::Result<JobInputs> {
        FailingBackend.inputs(sh, job)
    }
    fn build(
        &self,
        _: &Shell,
        _: &PlannedJob,
        _: BuildOptions,
        log: &Path,
    ) -> anyhow::Result<Built> {
        let start = Instant::now();
        let mine = format!("run started at {start:?}\n");
        std::fs::write(log, &mine)?;
        self.started
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        std::thread::sleep(Duration::from_millis(600));
        let intact = std::fs::read_to_string(log).ok() == Some(mine);
        self.runs
            .lock()
            .unwrap()
            .push((start, Instant::now(), intact));
        anyhow::bail!("make failed")
    }
}

fn run_slow(layout: &Layout, backend: &SlowBackend, job: &Job, wait: Wait) -> String {
    let sh = Shell::new().unwrap();
    let options = BuildOptions { wait, ..options() };
    let plan = kernel_build::plan::plan(&sh, layout, backend, std::slice::from_ref(job)).unwrap();
    format!(
        "{:#}",
        kernel_build::run(&sh, layout, backend, &plan, options).unwrap_err()
    )
}

#[test]
fn two_builds_of_one_job_take_turns_or_fail_with_no_wait() {
    let (_dir, layout, target, variant) = project();
    let job = Job { target, variant };
    let backend = SlowBackend {
        runs: std::sync::Mutex::new(Vec::new()),
        started: Default::default(),
    };
    let no_wait = std::thread::scope(|s| {
        let first = s.spawn(|| run_slow(&layout, &backend, &job, Wait::Yes));
        // Until the first run's make has started, holding the job's lock.
        let deadline = Instant::now() + Duration::from_secs(60);
        while backend.started.load(std::sync::atomic::Ordering::SeqCst) == 0 {
            assert!(Instant::now() < deadline, "the first build never started");
            assert!(
                !first.is_finished(),
                "the first build ended before its make"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        let clock = Instant::now();
        let refused = run_slow(&layout, &backend, &job, Wait::No);
        assert!(
            clock.elapsed() < Duration::from_millis(300),
            "--no-wait waited"
        );
        let second = s.spawn(|| run_slow(&layout, &backend, &job, Wait::Yes));
        assert!(first.join().unwrap().contains("make failed"));
        assert!(second.join().unwrap().contains("make failed"));
        refused
    });
    assert!(
        no_wait.contains(&format!("pid {}", std::process::id())),
        "{no_wait}"
    );
    assert!(no_wait.contains("results"), "{no_wait}");
    let runs = backend.runs.lock().unwrap();
    assert_eq!(runs.len(), 2, "the --no-wait run must not build");
    let (a, b) = (runs[0], runs[1]);
    assert!(a.2 && b.2, "a run lost its results directory: {runs:?}");
    assert!(a.1 <= b.0 || b.1 <= a.0, "the builds overlapped: {runs:?}");
}

#[test]
fn a_patched_tree_in_use_is_not_replaced() {
    let (_dir, layout, target, variant) = project();
    // A user's tree: its patched copy is made anew for every build.
    let user = PristineTree {
        tarball_sha256: None,
        ..pristine(&layout)
    };
    let series =
        series::collect(&layout.patches_dir(), &target, &variant, "6.12", MAKEFILE).unwrap();
    let tree = patched_source::prepare(&Shell::new().unwrap(), &layout, &user, &series).unwrap();
    let in_use = patched_source::lock_for_use(&layout, &tree, Wait::No).unwrap();
    // Stands for the state of a running make in the tree.
    let marker = tree.dir.join(".in-use");
    write(&marker, "make is running");
    std::thread::scope(|s| {
        let other = s.spawn(|| {
            let clock = Instant::now();
            patched_source::prepare(&Shell::new().unwrap(), &layout, &user, &series).unwrap();
            clock.elapsed()
        });
        std::thread::sleep(Duration::from_millis(500));
        assert!(marker.is_file(), "the tree was replaced while in use");
        drop(in_use);
        assert!(other.join().unwrap() >= Duration::from_millis(400));
    });
    assert!(!marker.exists(), "made anew once free");
}

/// The series is applied as OpenWrt's patch-kernel.sh applies it, `patch
/// -p1 -f` (here with no fuzz, as the build runs): a patch whose first
/// site already has the change goes to the next matching site instead of
/// stopping the build as "reversed", and an empty (0-byte) patch applies as
/// nothing. The patched tree must equal what GNU patch makes of the same
/// series on a copy of the pristine tree.
#[test]
fn series_applies_as_patch_f_does() {
    let (_dir, layout, target, variant) = project();
    let block = "\tone();\n\ttwo();\n\tthree();\n\tfour();\n\tfive();\n\tsix();\n";
    let upstream = block.replace("\tthree();\n", "\tthree();\n\tX();\n");
    write(
        &layout.root().join("linux/b.c"),
        &(upstream + "}\n" + block),
    );
    let p = layout.patches_dir().join("generic/pending-6.12");
    write(
        &p.join("100-x.patch"),
        "--- a/b.c\n+++ b/b.c\n@@ -1,6 +1,7 @@\n \tone();\n \ttwo();\n \tthree();\n+\tX();\n \tfour();\n \tfive();\n \tsix();\n",
    );
    write(&p.join("110-empty.patch"), "");
    write(&p.join("120-a.patch"), &patch_a("three", "THREE"));
    let sh = Shell::new().unwrap();
    let series =
        series::collect(&layout.patches_dir(), &target, &variant, "6.12", MAKEFILE).unwrap();
    let tree = patched_source::prepare(&sh, &layout, &pristine(&layout), &series).unwrap();
    let gnu = layout.root().join("gnu");
    let linux = layout.root().join("linux");
    xshell::cmd!(sh, "cp -a {linux} {gnu}").run().unwrap();
    for patch in &series {
        let file = layout.root().join("one.patch");
        std::fs::write(&file, &patch.bytes).unwrap();
        xshell::cmd!(sh, "patch -d {gnu} -p1 -f -F0 -s -i {file}")
            .run()
            .unwrap();
    }
    for name in ["a.c", "b.c", "Makefile"] {
        assert_eq!(
            std::fs::read_to_string(tree.dir.join(name)).unwrap(),
            std::fs::read_to_string(gnu.join(name)).unwrap(),
            "{name}"
        );
    }
    assert_eq!(tree.patches.len(), 4);
}
