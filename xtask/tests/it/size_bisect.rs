//! `patches size-bisect`: refusals before any build, and a real bisection
//! of three generated patches on the tiny ARM kernel, whose sizes are the
//! built images' own and whose largest step is the patch that adds 4 KiB
//! of incompressible data.

use std::os::unix::fs::symlink;
use std::path::Path;
use std::process::Command;

use xshell::{cmd, Shell};
use xtask::kernel_build::ccache::{self, Ccache};
use xtask::kernel_build::command::{BuildMode, BuildRequest};
use xtask::kernel_build::size_bisect::{self, BisectRequest};
use xtask::kernel_build::Rebuild;
use xtask::results::BuildResult;
use xtask::util::layout::Layout;
use xtask::util::lock::Wait;

use crate::common::{gate, pristine};

/// Runs the binary with `args`; returns its exit code and stderr.
fn xtask(args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(args)
        .output()
        .expect("running xtask");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn bad_requests_are_refused_naming_the_flag_before_any_build() {
    let tmp = tempfile::tempdir().unwrap();
    let series = tmp.path().join("series-dir");
    std::fs::create_dir(&series).unwrap();
    std::fs::write(series.join("010-a.patch"), "").unwrap();
    let dir = series.to_str().unwrap();
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let bisect = ["patches", "size-bisect"];
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec![
                "--target",
                "arm-tiny",
                "--series",
                dir,
                "--openwrt",
                "/nonexistent",
            ],
            "Leave out --openwrt",
        ),
        (
            vec!["--target", "arm-tiny", "--target", "ath79", "--series", dir],
            "exactly one target; --target gave 2",
        ),
        (
            vec!["--target", "arm-tiny"],
            "variant baseline has no patches of its own to bisect; give --series DIR",
        ),
        (
            vec!["--target", "arm-tiny", "--series", empty.to_str().unwrap()],
            "no patch (no `series` file and no *.patch)",
        ),
        (
            vec!["--target", "arm-tiny", "--series", "/nonexistent-dir"],
            "--series /nonexistent-dir: not a directory of patches",
        ),
        (
            vec!["--target", "arm-tiny", "--series", dir, "--image", "uImage"],
            "--image uImage: arm-tiny makes",
        ),
        (
            vec!["--target", "arm-tiny", "--series", dir, "--builds", "1"],
            "invalid value '1' for '--builds <N>'",
        ),
    ];
    for (args, want) in cases {
        let all: Vec<&str> = bisect.iter().copied().chain(args.iter().copied()).collect();
        let (code, stderr) = xtask(&all);
        assert!(code.is_some_and(|c| c != 0), "{args:?} succeeded: {stderr}");
        assert!(stderr.contains(want), "{args:?}: want {want:?} in {stderr}");
    }

    // A quilt series file naming a patch outside its directory, or with
    // patch options.
    std::fs::write(series.join("series"), "../../etc/passwd\n").unwrap();
    let err = format!("{:#}", size_bisect::series_patches(&series).unwrap_err());
    assert!(
        err.contains("series:1") && err.contains("not a patch file"),
        "{err}"
    );
    std::fs::write(series.join("series"), "# comment\n\n010-a.patch -p0\n").unwrap();
    let err = format!("{:#}", size_bisect::series_patches(&series).unwrap_err());
    assert!(err.contains("series:3") && err.contains("-p1"), "{err}");
    std::fs::write(series.join("series"), "010-a.patch # the one\n").unwrap();
    assert_eq!(
        size_bisect::series_patches(&series).unwrap(),
        vec![series.join("010-a.patch")]
    );
    // Any spelling of the directory gives the same paths (and so the same
    // states and build keys).
    let spelled = tmp
        .path()
        .join(".")
        .join("series-dir")
        .join("..")
        .join("series-dir");
    assert_eq!(
        size_bisect::series_patches(&spelled).unwrap(),
        vec![series.join("010-a.patch")]
    );
    // `#` inside a name is part of it (quilt: a comment starts the line or
    // follows a blank).
    std::fs::write(series.join("01#x.patch"), "").unwrap();
    std::fs::write(series.join("series"), "01#x.patch\n").unwrap();
    assert_eq!(
        size_bisect::series_patches(&series).unwrap(),
        vec![series.join("01#x.patch")]
    );
    // Entries that leave the directory through a link
    // (is_file() follows it) were read as patches.
    let outside = tmp.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("passwd"), "root:x:0:0\n").unwrap();
    std::os::unix::fs::symlink(&outside, series.join("sub")).unwrap();
    std::os::unix::fs::symlink(outside.join("passwd"), series.join("evil.patch")).unwrap();
    for entry in ["sub/passwd", "evil.patch"] {
        std::fs::write(series.join("series"), format!("{entry}\n")).unwrap();
        let err = format!("{:#}", size_bisect::series_patches(&series).unwrap_err());
        assert!(
            err.contains("series:1") && err.contains("leads out of it"),
            "{entry}: {err}"
        );
    }
    // The series file itself a link out (the hostile trial's F14: its
    // text leaked into the error).
    std::fs::write(outside.join("netrc"), "machine x login a password SECRET\n").unwrap();
    std::fs::remove_file(series.join("series")).unwrap();
    std::os::unix::fs::symlink(outside.join("netrc"), series.join("series")).unwrap();
    let err = format!("{:#}", size_bisect::series_patches(&series).unwrap_err());
    assert!(
        err.contains("series: a link that leads out of") && !err.contains("SECRET"),
        "{err}"
    );
    std::fs::remove_file(series.join("series")).unwrap();
    let err = format!("{:#}", size_bisect::series_patches(&series).unwrap_err());
    assert!(
        err.contains("evil.patch: a link that leads out of"),
        "{err}"
    );
    std::fs::remove_file(series.join("evil.patch")).unwrap();
    std::fs::write(series.join("series"), "a\u{1}\u{1b}b.patch\n").unwrap();
    let err = format!("{:#}", size_bisect::series_patches(&series).unwrap_err());
    assert!(err.contains("control character"), "{err}");
    std::fs::write(series.join("series"), "# only a comment\n\n").unwrap();
    let err = format!("{:#}", size_bisect::series_patches(&series).unwrap_err());
    assert!(err.contains("lists no patch"), "{err}");
    std::fs::remove_file(series.join("series")).unwrap();
    std::fs::create_dir(series.join("series")).unwrap();
    let err = format!("{:#}", size_bisect::series_patches(&series).unwrap_err());
    assert!(err.contains("not a regular file"), "{err}");
}

/// A patch made with `diff -u` that replaces `old` by `new` in `file` of
/// the pristine tree.
fn patch(sh: &Shell, pristine: &Path, scratch: &Path, file: &str, old: &str, new: &str) -> String {
    let original = pristine.join(file);
    let text = std::fs::read_to_string(&original).unwrap();
    assert!(text.contains(old), "{} changed", original.display());
    let changed = scratch.join("changed.c");
    std::fs::write(&changed, text.replacen(old, new, 1)).unwrap();
    let (a, b) = (format!("a/{file}"), format!("b/{file}"));
    let out = cmd!(sh, "diff -u --label {a} --label {b} {original} {changed}")
        .ignore_status()
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "diff found no change");
    String::from_utf8(out.stdout).unwrap()
}

/// 4,096 bytes of a fixed pseudo-random sequence (a 32-bit LCG), as a C
/// initialiser: data XZ and LZMA cannot shrink much.
fn incompressible_initialiser() -> String {
    let mut x: u32 = 1;
    (0..4096)
        .map(|_| {
            x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (x >> 24).to_string()
        })
        .collect::<Vec<_>>()
        .join(",")
}

fn request(builds: usize, series: &Path) -> BisectRequest {
    BisectRequest {
        build: BuildRequest {
            targets: vec!["arm-tiny".to_string()],
            variants: Vec::new(),
            jobs: std::thread::available_parallelism().map_or(1, |n| n.get()),
            kernel_src: None,
            verbose: false,
            rebuild: Rebuild::IfChanged,
            wait: Wait::Yes,
            mode: BuildMode::Build,
            ccache: Ccache::On {
                max_bytes: ccache::parse_size(ccache::DEFAULT_SIZE).unwrap(),
            },
            distcc: Default::default(),
            openwrt: None,
        },
        series: Some(series.to_path_buf()),
        builds,
        image: None,
    }
}

/// The run's `size-bisect.json`.
fn record(layout: &Layout) -> serde_json::Value {
    let dir = layout.work_dir().join("size-bisect/arm-tiny");
    let file = std::fs::read_dir(&dir)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    serde_json::from_slice(&std::fs::read(file).unwrap()).unwrap()
}

#[test]
fn a_bisection_names_the_patch_that_grows_the_tiny_kernel() {
    if !gate::Needs::new()
        .slow("builds the tiny ARM kernel once and three patch-only states")
        .met()
    {
        return;
    }
    let sh = Shell::new().unwrap();
    let layout = Layout::from_manifest_dir();
    let pristine = pristine::linux_6_12(&layout);
    // A workspace with its own results and builds, sharing the project's
    // targets/, patches/ and the source caches and ccache.
    let scratch = tempfile::Builder::new()
        .prefix("scratch-size-bisect-")
        .tempdir_in(layout.work_dir())
        .unwrap();
    let work = scratch.path().join("target/xtask");
    std::fs::create_dir_all(&work).unwrap();
    symlink(layout.targets_dir(), scratch.path().join("targets")).unwrap();
    symlink(layout.patches_dir(), scratch.path().join("patches")).unwrap();
    for shared in ["pristine", "src", "ccache"] {
        let from = layout.work_dir().join(shared);
        std::fs::create_dir_all(&from).unwrap();
        symlink(from, work.join(shared)).unwrap();
    }
    let series = scratch.path().join("bisect-series");
    std::fs::create_dir(&series).unwrap();
    let patches = [
        (
            "010-panic-timeout.patch",
            "kernel/panic.c",
            "int panic_timeout = CONFIG_PANIC_TIMEOUT;",
            "int panic_timeout = 42;".to_string(),
        ),
        (
            "020-pad-4k.patch",
            "init/main.c",
            "static int kernel_init(void *);",
            format!(
                "static int kernel_init(void *);\nconst unsigned char xtask_bisect_pad[4096] __used = {{{}}};",
                incompressible_initialiser()
            ),
        ),
        (
            "030-probe.patch",
            "lib/string.c",
            "#include <linux/types.h>",
            "#include <linux/types.h>\nint xtask_bisect_probe;".to_string(),
        ),
    ];
    for (name, file, old, new) in &patches {
        let text = patch(&sh, &pristine, scratch.path(), file, old, new);
        std::fs::write(series.join(name), text).unwrap();
    }
    let scratch_layout = Layout::new(scratch.path());

    // Every state measured: four builds, the first from scratch.
    size_bisect::run(&sh, &scratch_layout, &request(4, &series)).unwrap();
    let all = record(&scratch_layout);
    let states = all["states"].as_array().unwrap();
    assert_eq!(states.len(), 4, "{all:#}");
    for (k, state) in states.iter().enumerate() {
        assert_eq!(state["state"], k);
        let variant = state["variant"].as_str().unwrap();
        // The size the bisection used is the built image's own.
        let image = scratch_layout
            .results_dir("arm-tiny", variant)
            .join("zImage");
        let on_disk = std::fs::metadata(&image).unwrap().len();
        assert_eq!(state["bytes"], on_disk, "state {k}: {}", image.display());
        let result = BuildResult::read(&scratch_layout.results_dir("arm-tiny", variant)).unwrap();
        assert_eq!(result.artifacts["zImage"].size, on_disk);
        let how = state["how"].as_str().unwrap();
        if k == 0 {
            assert_eq!(variant, "baseline");
            assert_eq!(how, "built from scratch");
        } else {
            // Patch-only: from another state's finished build.
            assert!(how.starts_with("built from baseline"), "state {k}: {how}");
        }
    }
    let steps = all["steps"].as_array().unwrap();
    let deltas: Vec<i64> = steps.iter().map(|s| s["delta"].as_i64().unwrap()).collect();
    let first = states[0]["bytes"].as_i64().unwrap();
    let last = states[3]["bytes"].as_i64().unwrap();
    assert_eq!(deltas.iter().sum::<i64>(), last - first);
    assert_eq!(steps[1]["patches"][0], "020-pad-4k.patch");
    // 4,096 incompressible bytes: the compressed image grows by about that.
    assert!((3_500..6_000).contains(&deltas[1]), "{deltas:?}");
    // A few bytes of code move the compressed image by a few hundred
    // (tinyconfig's zImage is XZ): 248 and −120 bytes here on Linux 6.12.117.
    assert!(
        deltas[0].abs() < 1024 && deltas[2].abs() < 1024,
        "{deltas:?}"
    );

    // The same range with a budget of 3: every state it needs is built
    // already, and the two patches it cannot split stay one step.
    let records = scratch_layout.work_dir().join("size-bisect");
    std::fs::remove_dir_all(&records).unwrap();
    size_bisect::run(&sh, &scratch_layout, &request(3, &series)).unwrap();
    let three = record(&scratch_layout);
    let states = three["states"].as_array().unwrap();
    let measured: Vec<u64> = states
        .iter()
        .map(|s| s["state"].as_u64().unwrap())
        .collect();
    assert_eq!(measured, vec![0, 1, 3], "{three:#}");
    assert!(states.iter().all(|s| s["how"] == "up to date"), "{three:#}");
    let steps = three["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 2);
    assert_eq!(steps[1]["patches"].as_array().unwrap().len(), 2);
    assert_eq!(steps[1]["delta"], deltas[1] + deltas[2]);
}
