//! Variant flags never reach a Makefile or kbuild's shell unchecked:
//! `flags set` refuses hostile flags before writing anything, and so does
//! every function that writes flags into 201-extra_optimization.patch;
//! flags that make the compiler probe run or load a program are refused
//! before the probe.

use crate::common::gate;
use crate::common::mount_ns;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use xshell::Shell;
use xtask::inputs::variants::Variant;
use xtask::kernel_build::ccache::Ccache;
use xtask::kernel_build::command::{self, BuildMode, BuildRequest};
use xtask::patches::extra_optimization;
use xtask::patches::openwrt_sync::{self, SyncDirection};
use xtask::util::layout::Layout;
use xtask::util::lock::Wait;

const MAKEFILE: &str = "VERSION = 6\nPATCHLEVEL = 12\nSUBLEVEL = 3\nEXTRAVERSION =\n\nifdef CONFIG_CC_OPTIMIZE_FOR_PERFORMANCE\nKBUILD_CFLAGS += -O2\nelse ifdef CONFIG_CC_OPTIMIZE_FOR_SIZE\nKBUILD_CFLAGS += -Os\nendif\n";

const OLD_PATCH: &str = "Subject: committed\n---\n--- a/Makefile\n+++ b/Makefile\n@@ -7 +7 @@\n-KBUILD_CFLAGS += -O2\n+KBUILD_CFLAGS += -O2 -fno-tree-ch $(EXTRA_OPTIMIZATION)\n";

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// Every file under `dir` with its bytes.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().is_file())
        .map(|e| (e.path().to_path_buf(), std::fs::read(e.path()).unwrap()))
        .collect()
}

/// A project whose variants.toml has `evil_line` as variant "evil"'s
/// line 6, a committed 201 patch for 6.12, and a 6.12 kernel tree.
fn project(evil_line: &str) -> (tempfile::TempDir, Layout, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let layout = Layout::new(dir.path());
    write(
        &layout.variants_file(),
        &format!(
            "# variants\n[variants.baseline]\nos = \"-Os -fno-tree-ch\"\no2 = \"-O2 -fno-tree-ch\"\n[variants.evil]\n{evil_line}\n"
        ),
    );
    write(
        &layout
            .patches_dir()
            .join("generic/pending-6.12")
            .join(extra_optimization::PATCH_NAME),
        OLD_PATCH,
    );
    let tree = dir.path().join("linux-6.12.3");
    write(&tree.join("Makefile"), MAKEFILE);
    (dir, layout, tree)
}

#[test]
fn flags_set_refuses_hostile_flags_before_writing_anything() {
    let cases: &[(&str, &str, &str)] = &[
        (r#"os = "-Os -DX=`touch$${IFS}pwned`""#, ":6:15:", "'`'"),
        (r#"os = "-Os -DX=$(shell touch pwned)""#, ":6:15:", "'$'"),
        (r#"o2 = "-O2 -DX=$$HOME""#, ":6:15:", "'$'"),
        (r#"os = "-Os\n-fno-tree-ch""#, ":6:", "'\\n'"),
        (r#"os = "-Os; touch pwned""#, ":6:10:", "';'"),
        (r#"os = "-Os #-fno-tree-ch""#, ":6:11:", "'#'"),
    ];
    let sh = Shell::new().unwrap();
    for &(line, at, character) in cases {
        let (_dir, layout, tree) = project(line);
        let before = snapshot(layout.root());
        // Asking for a harmless variant is refused too: the file is loaded
        // (and checked) as a whole.
        for variant in ["evil", "baseline"] {
            let err =
                extra_optimization::set_flags(&sh, &layout, variant, std::slice::from_ref(&tree))
                    .unwrap_err();
            let err = format!("{err:#}");
            let file = layout.variants_file().display().to_string();
            assert!(err.contains(&format!("{file}{at}")), "{line}: {err}");
            assert!(err.contains(character), "{line}: {err}");
            assert!(err.contains("one compiler option"), "{line}: {err}");
            assert_eq!(
                snapshot(layout.root()),
                before,
                "{line}: something was written"
            );
        }
    }
}

#[test]
fn flags_set_writes_nothing_when_one_series_has_no_source() {
    let (_dir, layout, tree) = project("os = \"-Os\"");
    // No Debian tarball, no --kernel-src for this series.
    std::fs::create_dir_all(layout.patches_dir().join("generic/pending-9.99")).unwrap();
    let before = snapshot(layout.root());
    let sh = Shell::new().unwrap();
    let err = extra_optimization::set_flags(&sh, &layout, "baseline", std::slice::from_ref(&tree))
        .unwrap_err();
    assert!(
        format!("{err:#}").contains("apt-get install linux-source-9.99"),
        "{err:#}"
    );
    assert_eq!(
        snapshot(layout.root()),
        before,
        "pending-6.12 was rewritten"
    );

    std::fs::remove_dir(layout.patches_dir().join("generic/pending-9.99")).unwrap();
    let written = extra_optimization::set_flags(&sh, &layout, "baseline", &[tree]).unwrap();
    assert_eq!(written.len(), 1);
    assert!(written[0].1, "the committed patch had other flags");
}

/// A variant made in code (not from variants.toml) is checked by the
/// writer itself: the generated Makefile never gets a second line.
#[test]
fn writing_a_patch_refuses_hostile_flags() {
    let (_dir, layout, _tree) = project("os = \"-Os\"");
    let pending = layout.patches_dir().join("generic/pending-6.12");
    let before = snapshot(layout.root());
    for os in [
        "-Os\n-include /etc/passwd",
        "-Os -DX=`id`",
        "-Os $(shell id)",
        "-Os ; id",
    ] {
        let variant = Variant {
            name: "made-in-code".into(),
            description: String::new(),
            os_flags: os.into(),
            o2_flags: "-O2".into(),
            patches: vec![],
            kconfig: vec![],
        };
        let err = extra_optimization::write_patch(&pending, MAKEFILE, &variant).unwrap_err();
        let err = format!("{err:#}");
        assert!(err.contains("\"made-in-code\""), "{os:?}: {err}");
        assert!(err.contains("os flags"), "{os:?}: {err}");
        assert!(
            extra_optimization::patch_text("", MAKEFILE, &variant).is_err(),
            "{os:?}"
        );
        assert_eq!(snapshot(layout.root()), before, "{os:?}");
    }
}

/// A 201 patch edited by hand is not exported to OpenWrt (nor imported
/// from it) when the flags it adds are not plain compiler options.
#[test]
fn export_and_import_refuse_a_hand_edited_flags_patch() {
    let hostile = "Subject: x\n---\n--- a/Makefile\n+++ b/Makefile\n@@ -7 +7 @@\n-KBUILD_CFLAGS += -O2\n+KBUILD_CFLAGS += -O2; touch pwned $(EXTRA_OPTIMIZATION)\n";
    for direction in [SyncDirection::Export, SyncDirection::Import] {
        let (dir, layout, _tree) = project("os = \"-Os\"");
        let openwrt = dir.path().join("openwrt");
        let generic = openwrt.join("target/linux/generic");
        write(&generic.join("pending-6.12/100-other.patch"), "x");
        let ours = layout.patches_dir().join("generic/pending-6.12");
        let from = match direction {
            SyncDirection::Export => ours.clone(),
            SyncDirection::Import => generic.join("pending-6.12"),
        };
        write(&from.join(extra_optimization::PATCH_NAME), hostile);
        write(&ours.join("150-ours.patch"), "y");
        let before = snapshot(dir.path());
        let err = openwrt_sync::sync(
            &openwrt,
            &layout.patches_dir(),
            &[],
            "6.12",
            direction,
            Default::default(),
        )
        .unwrap_err();
        let err = format!("{err:#}");
        let file = from.join(extra_optimization::PATCH_NAME);
        assert!(err.contains(&format!("{}:7:", file.display())), "{err}");
        assert!(err.contains("';' (semicolon"), "{err}");
        assert_eq!(
            snapshot(dir.path()),
            before,
            "{direction:?} wrote something"
        );
    }
}

/// `flags set` writes every series' patch or none: with pending-6.12
/// read-only, pending-6.1's patch was rewritten and 6.12's was not, and
/// the error did not say so.
#[test]
fn flags_set_writes_every_patch_or_none() {
    let (dir, layout, tree_612) = project("os = \"-Os\"");
    let makefile_61 = MAKEFILE.replace("PATCHLEVEL = 12", "PATCHLEVEL = 1");
    let tree_61 = dir.path().join("linux-6.1.5");
    write(&tree_61.join("Makefile"), &makefile_61);
    let pending_61 = layout.patches_dir().join("generic/pending-6.1");
    write(&pending_61.join(extra_optimization::PATCH_NAME), OLD_PATCH);
    let pending_612 = layout.patches_dir().join("generic/pending-6.12");
    let before = snapshot(layout.root());
    let sh = Shell::new().unwrap();
    let trees = [tree_61, tree_612];
    let ran = mount_ns::in_private_mounts(|| {
        let sh = Shell::new().unwrap();
        mount_ns::read_only(&pending_612);
        let err = extra_optimization::set_flags(&sh, &layout, "baseline", &trees).unwrap_err();
        let err = format!("{err:#}");
        let after = snapshot(layout.root());
        let written: Vec<_> = after
            .keys()
            .filter(|f| before.get(*f) != after.get(*f))
            .collect();
        assert!(written.is_empty(), "{written:?} written: {err}");
        for file in [&pending_61, &pending_612] {
            let file = file.join(extra_optimization::PATCH_NAME);
            assert!(err.contains(&file.display().to_string()), "{err}");
        }
        assert!(err.contains("nothing was written"), "{err}");
    });
    if ran.is_some() {
        let written = extra_optimization::set_flags(&sh, &layout, "baseline", &trees).unwrap();
        assert_eq!(written.len(), 2);
        assert!(written.iter().all(|(_, changed)| *changed));
    }
}

/// A 5 MB flag is refused when variants.toml is loaded (`flags set`,
/// `flags list`, `build`), with the limit; before, it was accepted and a
/// build failed later with "argument list too long".
#[test]
fn a_huge_flag_is_refused_with_its_limit() {
    let huge = format!("os = \"-Os -DX={}\"", "1".repeat(5 << 20));
    let (_dir, layout, tree) = project(&huge);
    let before = snapshot(layout.root());
    let sh = Shell::new().unwrap();
    let err = extra_optimization::set_flags(&sh, &layout, "evil", &[tree]).unwrap_err();
    let err = format!("{err:#}");
    assert!(
        err.len() < 2000,
        "the error repeats the flag: {} bytes",
        err.len()
    );
    let file = layout.variants_file().display().to_string();
    assert!(err.contains(&format!("{file}:6")), "{err}");
    assert!(err.contains("4096 bytes"), "{err}");
    assert_eq!(snapshot(layout.root()), before);
}

/// `build --dry-run` with a variant whose flags name a program, also
/// hidden in another option's value: refused when variants.toml is read,
/// naming the line, before the compiler probe runs anything. Before, `-B<dir>/` was refused by the probe's failure
/// after it ran `<dir>/cc1`, and `-fplugin=<so>` passed the allow-list and
/// the probe loaded it.
#[test]
fn flags_that_run_a_program_are_refused_before_the_compiler_probe() {
    let workspace = Layout::from_manifest_dir();
    let cross = "arm-linux-gnueabi-gcc";
    let needs = gate::Needs::new()
        .program(cross, "apt-get install gcc-arm-linux-gnueabi")
        .program("gcc", "apt-get install gcc");
    if !needs.met() {
        return;
    }
    let scratch = tempfile::tempdir().unwrap();
    let marker = scratch.path().join("ran");
    let (bin, so) = crate::common::planted::cc1_and_plugin(scratch.path(), &marker);
    for (flag, says) in [
        (
            format!("-B{}/", bin.display()),
            "makes the compiler run cc1",
        ),
        (
            format!("-fplugin={}", so.display()),
            "loads a shared object into the compiler",
        ),
        // Hidden in another option's value, they passed
        // the check, and GCC's second compilation (-fcompare-debug) ran
        // <dir>/cc1 during the probe of a dry run.
        (
            format!("-fcompare-debug=-B{}/", bin.display()),
            "as an option, which (-B) makes the compiler run cc1",
        ),
        (
            format!("-fcompare-debug=-fplugin={}", so.display()),
            "passes on \"-fplugin\" as an option, which loads a shared object",
        ),
    ] {
        let (dir, layout, tree) = project(&format!("os = \"-Os {flag}\""));
        std::os::unix::fs::symlink(workspace.targets_dir(), dir.path().join("targets")).unwrap();
        let sh = Shell::new().unwrap();
        let request = BuildRequest {
            targets: vec!["arm-tiny".into()],
            variants: vec!["evil".into()],
            jobs: 1,
            kernel_src: Some(tree),
            verbose: false,
            rebuild: Default::default(),
            wait: Wait::Yes,
            mode: BuildMode::DryRun,
            ccache: Ccache::Off,
            distcc: Default::default(),
            openwrt: None,
        };
        let err = format!("{:#}", command::plan(&sh, &layout, &request).err().unwrap());
        assert!(!marker.exists(), "{flag}: the probe ran it: {err}");
        let file = layout.variants_file().display().to_string();
        assert!(err.contains(&format!("{file}:6:11:")), "{flag}: {err}");
        assert!(err.contains(says), "{flag}: {err}");
    }
    // The control: the cross compiler given the hidden flag itself runs
    // the planted cc1, so the refusals above are what kept it from running.
    let src = scratch.path().join("probe.c");
    std::fs::write(&src, "int x;\n").unwrap();
    let obj = scratch.path().join("probe.o");
    let hidden = format!("-fcompare-debug=-B{}/", bin.display());
    let sh = Shell::new().unwrap();
    let _ = xshell::cmd!(sh, "{cross} {hidden} -c {src} -o {obj}")
        .quiet()
        .ignore_status()
        .output();
    assert!(
        marker.exists(),
        "{cross} {hidden} did not run the planted cc1"
    );
}
