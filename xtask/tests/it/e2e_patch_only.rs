//! A patch-only variant (baseline's flags plus one patch that changes
//! `panic_timeout`'s initial value in `kernel/panic.c`) starts from baseline's finished build
//! directory and recompiles only what the patch changed, with the bytes
//! of a build from scratch; and ccache and the workspace's path change how
//! long a build takes, never its bytes (else a build key would not
//! name the bytes it stands for; `e2e_reproducible.rs` does the same in OpenWrt mode).
//!
//! Two scratch workspaces under `target/xtask/` share `targets/` and the
//! unpacked kernel source with this one and have their own `patches/` (the
//! project's flag patches and a `variants.toml` with the test variant).
//! The first also shares this one's patched trees and ccache: baseline
//! (ccache hits after `cargo xtask test`'s build), then the patch-only
//! variant from it. The second, at another path with its own patched tree
//! and without ccache (`--no-ccache`), builds the patch-only variant from
//! an empty directory: every artifact must have the incremental build's
//! sha256, and the result the same build key. Two tiny builds' work: 2–6
//! minutes on 2 cores.

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use xshell::{cmd, Shell};
use xtask::kernel_build::ccache::{self, Ccache};
use xtask::kernel_build::command::{self, BuildMode, BuildRequest};
use xtask::kernel_build::Rebuild;
use xtask::results::BuildResult;
use xtask::util::layout::Layout;
use xtask::util::lock::Wait;

use crate::common::{gate, pristine};

const TARGET: &str = "arm-tiny";
const VARIANT: &str = "panic-timeout";
const PATCH: &str = "experiments/990-panic-timeout.patch";

/// Linux 6.12's `kernel/panic.c` in the unpacked Debian source.
fn pristine_panic_c(layout: &Layout) -> PathBuf {
    pristine::linux_6_12(layout).join("kernel/panic.c")
}

/// The test patch, made with `diff -u` against the pristine file: a
/// variable's initial value changed, so vmlinux changes (tinyconfig has no
/// printk: a changed message would be compiled out).
fn panic_patch(sh: &Shell, layout: &Layout, scratch: &Path) -> Vec<u8> {
    let original = pristine_panic_c(layout);
    let text = std::fs::read_to_string(&original).unwrap();
    let needle = "int panic_timeout = CONFIG_PANIC_TIMEOUT;";
    assert!(text.contains(needle), "{} changed", original.display());
    let changed = scratch.join("panic.c");
    std::fs::write(
        &changed,
        text.replacen(needle, "int panic_timeout = 42;", 1),
    )
    .unwrap();
    let out = cmd!(
        sh,
        "diff -u --label a/kernel/panic.c --label b/kernel/panic.c {original} {changed}"
    )
    .ignore_status()
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(1), "diff found no change");
    out.stdout
}

/// What a scratch workspace shares with this one besides `targets/`.
#[derive(Clone, Copy)]
enum Shares {
    /// The unpacked source, the patched trees and the ccache.
    TreesAndCcache,
    /// Only the unpacked source: its patched tree is its own, at another
    /// path.
    Source,
}

/// A workspace with its own `patches/` and results, sharing `shares`.
fn scratch_workspace(
    sh: &Shell,
    layout: &Layout,
    prefix: &str,
    shares: Shares,
) -> tempfile::TempDir {
    let dir = tempfile::Builder::new()
        .prefix(prefix)
        .tempdir_in(layout.work_dir())
        .unwrap();
    let work = dir.path().join("target/xtask");
    std::fs::create_dir_all(&work).unwrap();
    symlink(layout.targets_dir(), dir.path().join("targets")).unwrap();
    let shared: &[&str] = match shares {
        Shares::TreesAndCcache => &["pristine", "src", "ccache"],
        Shares::Source => &["pristine"],
    };
    for shared in shared {
        let from = layout.work_dir().join(shared);
        std::fs::create_dir_all(&from).unwrap();
        symlink(from, work.join(shared)).unwrap();
    }
    let patches = dir.path().join("patches");
    std::fs::create_dir_all(patches.join("experiments")).unwrap();
    for shared in ["generic", "kernel-sources.toml"] {
        symlink(layout.patches_dir().join(shared), patches.join(shared)).unwrap();
    }
    std::fs::write(patches.join(PATCH), panic_patch(sh, layout, dir.path())).unwrap();
    let variants = std::fs::read_to_string(layout.variants_file()).unwrap();
    let baseline = variants
        .split("\n[")
        .find(|s| s.starts_with("variants.baseline]"))
        .expect("variants.toml has baseline");
    let mut own = format!("[{baseline}\n");
    let flags: Vec<&str> = baseline
        .lines()
        .filter(|l| l.starts_with("os =") || l.starts_with("o2 ="))
        .collect();
    own.push_str(&format!(
        "[variants.{VARIANT}]\ndescription = \"baseline + panic_timeout = 42\"\n{}\npatches = [\"{PATCH}\"]\n",
        flags.join("\n")
    ));
    std::fs::write(patches.join("variants.toml"), own).unwrap();
    dir
}

fn build(layout: &Layout, variant: &str, rebuild: Rebuild, ccache: Ccache) -> BuildResult {
    let request = BuildRequest {
        targets: vec![TARGET.to_string()],
        variants: vec![variant.to_string()],
        jobs: std::thread::available_parallelism().map_or(1, |n| n.get()),
        kernel_src: None,
        verbose: false,
        rebuild,
        wait: Wait::Yes,
        mode: BuildMode::Build,
        ccache,
        distcc: Default::default(),
        openwrt: None,
    };
    command::run(&Shell::new().unwrap(), layout, &request).unwrap();
    BuildResult::read(&layout.results_dir(TARGET, variant)).unwrap()
}

/// The objects one build compiled, from its `build.log`.
fn objects_compiled(layout: &Layout, variant: &str) -> usize {
    let log = layout.results_dir(TARGET, variant).join("build.log");
    std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .filter(|l| l.starts_with("  CC ") || l.starts_with("  AS "))
        .count()
}

#[test]
fn a_patch_only_variant_starts_from_baseline_with_the_same_bytes() {
    if !gate::Needs::new()
        .slow("builds the tiny ARM kernel three times, once without ccache")
        .met()
    {
        return;
    }
    let sh = Shell::new().unwrap();
    let layout = Layout::from_manifest_dir();
    let cached = Ccache::On {
        max_bytes: ccache::parse_size(ccache::DEFAULT_SIZE).unwrap(),
    };
    let first_dir = scratch_workspace(&sh, &layout, "scratch-patch-only-", Shares::TreesAndCcache);
    let first = Layout::new(first_dir.path());
    let baseline = build(&first, "baseline", Rebuild::Always, cached);
    assert_eq!(baseline.incremental_from, None);

    let incremental = build(&first, VARIANT, Rebuild::IfChanged, cached);
    assert_eq!(
        incremental.incremental_from.as_deref(),
        Some("baseline"),
        "the patch-only variant did not start from baseline's build"
    );
    // kbuild's "  CC"/"  AS" lines: objects compiled. (ccache's counts
    // also include the compiler probes every make runs, cc-option and the
    // like.)
    let compiled = objects_compiled(&first, VARIANT);
    let full = objects_compiled(&first, "baseline");
    eprintln!("objects compiled: baseline {full}, patch-only {compiled}");
    assert!(full > 300, "baseline compiled only {full} objects");
    assert!(
        (1..=3).contains(&compiled),
        "the patch-only build compiled {compiled} objects (baseline: {full}); want kernel/panic.o and little else"
    );
    assert_ne!(
        incremental.artifacts["vmlinux"].sha256, baseline.artifacts["vmlinux"].sha256,
        "the patch did not change vmlinux"
    );

    let second_dir = scratch_workspace(&sh, &layout, "scratch-patch-only-full-", Shares::Source);
    let second = Layout::new(second_dir.path());
    let scratch = build(&second, VARIANT, Rebuild::Always, Ccache::Off);
    assert_eq!(scratch.incremental_from, None);
    assert!(
        incremental.ccache.is_some(),
        "the first workspace builds through ccache"
    );
    assert_eq!(scratch.ccache, None, "--no-ccache recorded ccache stats");
    assert_eq!(
        scratch.build_key, incremental.build_key,
        "ccache or the path changed the key"
    );
    assert_eq!(
        scratch.artifacts.keys().collect::<Vec<_>>(),
        incremental.artifacts.keys().collect::<Vec<_>>()
    );
    let results = |l: &Layout| l.results_dir(TARGET, VARIANT);
    for (name, record) in &scratch.artifacts {
        let digest = |l: &Layout| xtask::util::hash::sha256_file(&results(l).join(name)).unwrap();
        assert_eq!(
            digest(&second),
            record.sha256,
            "{name}: the file and its record"
        );
        assert_eq!(
            digest(&first),
            incremental.artifacts[name].sha256,
            "{name}: the file and its record"
        );
        assert_eq!(
            incremental.artifacts[name].sha256, record.sha256,
            "{name}: the incremental build through ccache and the build from scratch without it, at another path, differ"
        );
    }
}
