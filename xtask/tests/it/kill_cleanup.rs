//! What a `kill -9` leaves behind, with real kills: a killed `results
//! merge` leaves its staging directory, which the next merge removes; a
//! tree copy's `cp` and a source unpack's `tar` and `xz` die with the
//! process that started them, so they cannot keep writing into a staging
//! name that the next command must remove; the next run removes a killed
//! unpack's staging directory even when it has nothing to unpack.
//!
//! The killed process is this test binary run again for one helper
//! (`child_*`, `#[ignore]`d: a plain run does not count it as a passed
//! test; the parent runs it with `--ignored --exact`), which does the work
//! only when its environment variable is set.

use crate::common::report_fixture;

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use report_fixture::Fixture;
use xshell::Shell;
use xtask::inputs::kernel_source::{pristine_tree, SourceInput, UNPACK_PREFIX};
use xtask::results::{archive, BuildResult};
use xtask::util::fs::{copy_tree, CopyKind};
use xtask::util::layout::Layout;

const MERGE_ENV: &str = "XTASK_KILL_TEST_MERGE";
const COPY_ENV: &str = "XTASK_KILL_TEST_COPY";
const UNPACK_ENV: &str = "XTASK_KILL_TEST_UNPACK";

/// Runs this test binary's helper `name` with `env` set to `value`.
fn spawn_helper(name: &str, env: &str, value: &str) -> Child {
    let name = crate::common::helper_name(module_path!(), name);
    Command::new(std::env::current_exe().unwrap())
        .args(["--ignored", "--exact", name.as_str()])
        .args(["--nocapture", "--test-threads=1"])
        .env(env, value)
        .spawn()
        .unwrap()
}

/// Waits (1 ms steps, at most `limit`) until `found` returns something.
fn wait_for<T>(limit: Duration, mut found: impl FnMut() -> Option<T>) -> Option<T> {
    let start = Instant::now();
    while start.elapsed() < limit {
        if let Some(t) = found() {
            return Some(t);
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    None
}

/// Every path under `dir` whose name starts with `prefix`.
fn named(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(prefix))
        .map(|e| e.path().to_path_buf())
        .collect()
}

/// The pids of the processes whose parent is `parent` and whose command
/// name is `comm`.
fn children(parent: u32, comm: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        // `pid (comm) state ppid …`; comm may hold spaces, not ')'.
        let Some((name, rest)) = stat.split_once(" (").and_then(|(_, r)| r.rsplit_once(") "))
        else {
            continue;
        };
        let ppid = rest.split(' ').nth(1).and_then(|p| p.parse::<u32>().ok());
        if name == comm && ppid == Some(parent) {
            found.push(pid);
        }
    }
    found
}

fn alive(pid: u32) -> bool {
    // A zombie (killed, not yet reaped by init) counts as gone.
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rsplit_once(") ")
            .is_some_and(|(_, r)| !r.starts_with('Z'))
    })
}

/// Helper of `a_killed_merge_is_cleaned_by_the_next`: merges the archive
/// `$XTASK_KILL_TEST_MERGE` names into the workspace it names.
#[test]
#[ignore = "a helper: a_killed_merge_is_cleaned_by_the_next runs it in a process of its own"]
fn child_merge() {
    let Ok(args) = std::env::var(MERGE_ENV) else {
        return;
    };
    let (root, tar) = args.split_once('\n').unwrap();
    let layout = Layout::new(Path::new(root));
    archive::merge(&layout, &[PathBuf::from(tar)]).unwrap();
}

#[test]
fn a_killed_merge_is_cleaned_by_the_next() {
    let (built, merged) = (Fixture::new(), Fixture::new());
    // A 64 MiB zImage, so that the merge takes long enough to be killed
    // while it writes.
    let mut base = built.result(
        "bcm53xx",
        "baseline",
        &[("zImage", 64 << 20)],
        (30_000, 4_000, 2_000),
    );
    base.artifacts.remove("vmlinux.lzma");
    built.write(base, &[]);
    let sh = Shell::new().unwrap();
    let tar = built.root().join("a.tar");
    archive::export(
        &sh,
        &built.layout(),
        &["bcm53xx".to_string()],
        &["baseline".to_string()],
        &tar,
    )
    .unwrap();
    let work = merged.layout().work_dir();
    std::fs::create_dir_all(&work).unwrap();
    let mut killed = None;
    for _attempt in 0..5 {
        let mut child = spawn_helper(
            "child_merge",
            MERGE_ENV,
            &format!("{}\n{}", merged.root().display(), tar.display()),
        );
        let staging = wait_for(Duration::from_secs(60), || {
            named(&work, ".staging-merge-").into_iter().next()
        });
        child.kill().unwrap();
        child.wait().unwrap();
        if staging.is_some_and(|s| s.exists()) {
            killed = Some(named(&work, ".staging-merge-"));
            break;
        }
    }
    let left = killed.expect("the merge was never killed while staging");
    eprintln!("left by the killed merge: {left:?}");
    archive::merge(&merged.layout(), &[tar]).unwrap();
    BuildResult::read(&merged.results_dir("bcm53xx", "baseline")).unwrap();
    let after = named(&work, ".staging-merge-");
    assert!(after.is_empty(), "the next merge left {after:?}");
}

/// Helper of `a_killed_copy_takes_its_cp_with_it`: copies the tree
/// `$XTASK_KILL_TEST_COPY` names.
#[test]
#[ignore = "a helper: a_killed_copy_takes_its_cp_with_it runs it in a process of its own"]
fn child_copy() {
    let Ok(args) = std::env::var(COPY_ENV) else {
        return;
    };
    let (from, to) = args.split_once('\n').unwrap();
    let sh = Shell::new().unwrap();
    copy_tree(&sh, Path::new(from), Path::new(to), CopyKind::Full).unwrap();
}

#[test]
fn a_killed_copy_takes_its_cp_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let from = dir.path().join("tree");
    // 40,000 files: `cp -a` needs seconds for them.
    for d in 0..200 {
        let sub = from.join(format!("d{d:03}"));
        std::fs::create_dir_all(&sub).unwrap();
        for f in 0..200 {
            std::fs::write(sub.join(format!("f{f:03}.c")), "int x;\n").unwrap();
        }
    }
    let dest = dir.path().join("copy");
    let mut child = spawn_helper(
        "child_copy",
        COPY_ENV,
        &format!("{}\n{}", from.display(), dest.display()),
    );
    // Killed once cp has begun writing: under load, a cp just started may
    // not have made its staging directory yet.
    let staging = dir.path().join("copy.copying");
    let cp = wait_for(Duration::from_secs(60), || {
        let cp = children(child.id(), "cp").into_iter().next()?;
        staging.is_dir().then_some(cp)
    })
    .expect("the copy never started cp writing into its staging directory");
    child.kill().unwrap();
    child.wait().unwrap();
    let gone = wait_for(Duration::from_secs(1), || (!alive(cp)).then_some(()));
    assert!(
        gone.is_some(),
        "cp (pid {cp}) outlived the process that started it"
    );
    // The next copy to the same place removes the killed one's staging
    // name first: nothing writes there any more ("Directory not empty"
    // before).
    assert!(
        staging.is_dir(),
        "the killed copy left no {}",
        staging.display()
    );
    std::fs::remove_dir_all(&staging).unwrap();
    assert!(!dest.exists());
}

/// Helper of `a_killed_unpack_takes_tar_and_xz_with_it`: unpacks the
/// tarball `$XTASK_KILL_TEST_UNPACK` names into the workspace it names.
#[test]
#[ignore = "a helper: a_killed_unpack_takes_tar_and_xz_with_it runs it in a process of its own"]
fn child_unpack() {
    let Ok(args) = std::env::var(UNPACK_ENV) else {
        return;
    };
    let (root, tarball) = args.split_once('\n').unwrap();
    let sh = Shell::new().unwrap();
    let layout = Layout::new(Path::new(root));
    pristine_tree(&sh, &layout, &SourceInput::Tarball(PathBuf::from(tarball))).unwrap();
}

/// A tree of 40,000 small files under `dir/linux`, with a kernel's
/// top-level Makefile, as `dir/linux.tar.xz`.
fn tarball(dir: &Path) -> PathBuf {
    let tree = dir.join("linux");
    for d in 0..200 {
        let sub = tree.join(format!("d{d:03}"));
        std::fs::create_dir_all(&sub).unwrap();
        for f in 0..200 {
            std::fs::write(sub.join(format!("f{f:03}.c")), format!("int x{d}_{f};\n")).unwrap();
        }
    }
    std::fs::write(
        tree.join("Makefile"),
        "VERSION = 6\nPATCHLEVEL = 12\nSUBLEVEL = 0\n",
    )
    .unwrap();
    let out = dir.join("linux.tar.xz");
    let sh = Shell::new().unwrap();
    xshell::cmd!(sh, "tar -cJf {out} -C {dir} linux")
        .quiet()
        .run()
        .unwrap();
    out
}

/// Killed while `tar` (and its `xz`) unpack, the workbench takes both
/// with it (before, they went on unpacking into a directory nobody would
/// rename, and the next run unpacked a second copy beside it); the
/// staging directory it leaves is removed by the next run, though that
/// run finds the source unpacked and unpacks nothing (before, only a run
/// that unpacked removed it: 215 MB for Linux 6.12, kept for ever).
#[test]
fn a_killed_unpack_takes_tar_and_xz_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let tarball = tarball(dir.path());
    let root = dir.path().join("workspace");
    let layout = Layout::new(&root);
    let pristine = layout.pristine_dir();
    let mut child = spawn_helper(
        "child_unpack",
        UNPACK_ENV,
        &format!("{}\n{}", root.display(), tarball.display()),
    );
    // Killed once tar has begun writing into its staging directory, with
    // xz running under it.
    let (tar, xz) = wait_for(Duration::from_secs(60), || {
        let tar = children(child.id(), "tar").into_iter().next()?;
        let xz = children(tar, "xz").into_iter().next()?;
        let staging = named(&pristine, UNPACK_PREFIX).into_iter().next()?;
        walkdir::WalkDir::new(&staging)
            .into_iter()
            .flatten()
            .any(|e| e.file_name().to_string_lossy().ends_with(".c"))
            .then_some((tar, xz))
    })
    .expect("the unpack never started tar and xz writing into its staging directory");
    child.kill().unwrap();
    child.wait().unwrap();
    for (name, pid) in [("tar", tar), ("xz", xz)] {
        let gone = wait_for(Duration::from_secs(1), || (!alive(pid)).then_some(()));
        assert!(
            gone.is_some(),
            "{name} (pid {pid}) outlived the process that started it"
        );
    }
    let left = named(&pristine, UNPACK_PREFIX);
    assert_eq!(left.len(), 1, "the killed unpack left {left:?}");
    // The next run finds the source unpacked (here: put in place by hand)
    // and still removes the killed one's staging directory.
    let sum = xtask::util::hash::sha256_file(&tarball).unwrap();
    let cache = pristine.join(&sum[..16]).join("linux");
    std::fs::create_dir_all(&cache).unwrap();
    std::fs::copy(dir.path().join("linux/Makefile"), cache.join("Makefile")).unwrap();
    let sh = Shell::new().unwrap();
    let tree = pristine_tree(&sh, &layout, &SourceInput::Tarball(tarball)).unwrap();
    assert_eq!(tree.dir, cache);
    let left = named(&pristine, UNPACK_PREFIX);
    assert!(left.is_empty(), "the next run left {left:?}");
}
