//! What OpenWrt mode says when the checkout or the source
//! does not fit the target, run as a user runs it (the `xtask` binary on
//! an unpacked OpenWrt fixture).
//!
//! * A checkout without `target/linux/generic/config-6.12`: OpenWrt's
//!   target.mk skips the missing file, so `config show` prints the board's
//!   files alone; it and the build plan now warn, naming the file.
//! * Each target-selection error names its own fix: a target the checkout
//!   does not have (its targets), a subtarget it does not have (its
//!   subtargets), a version the board does not build (`--kernel` with one
//!   it builds, or the bump for a newer one).
//! * A build whose source is newer than every version the board builds
//!   (bcm53xx builds 6.6 in the fixture) is told to bump the board with
//!   `patches rebase --openwrt`, not to pass `--kernel-src`; one whose
//!   source is older is told to pass `--kernel-src` with the board's.

use crate::common::openwrt_fixture;

use std::path::Path;
use std::process::{Command, Output};

use openwrt_fixture::Fixture;

fn xtask(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(args)
        .output()
        .expect("running xtask")
}

fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn config_show(fx: &Fixture, target: &str, kernel: Option<&str>) -> Output {
    let root = fx.root.to_str().unwrap();
    let mut args = vec!["config", "show", "--openwrt", root, "--target", target];
    if let Some(k) = kernel {
        args.extend(["--kernel", k]);
    }
    xtask(&args)
}

/// A directory that passes for a kernel tree of `version` (its top-level
/// Makefile and Kbuild): enough for the selection, which fails first.
fn fake_tree(dir: &Path, version: (u32, u32, u32)) -> String {
    std::fs::create_dir_all(dir).unwrap();
    let (v, p, s) = version;
    std::fs::write(
        dir.join("Makefile"),
        format!("VERSION = {v}\nPATCHLEVEL = {p}\nSUBLEVEL = {s}\nEXTRAVERSION =\n"),
    )
    .unwrap();
    std::fs::write(dir.join("Kbuild"), "obj-y += init/\n").unwrap();
    dir.to_str().unwrap().to_string()
}

#[test]
fn a_missing_generic_config_is_named_by_config_show() {
    let Some(fx) = Fixture::unpack() else { return };
    let (full, quiet) = text(&config_show(&fx, "ramips-mt7621", None));
    assert!(!quiet.contains("warning:"), "{quiet}");
    let generic = fx.root.join("target/linux/generic/config-6.12");
    std::fs::remove_file(&generic).unwrap();
    let out = config_show(&fx, "ramips-mt7621", None);
    let (config, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    // What OpenWrt's kconfig.pl would merge: the board's files alone.
    assert!(
        config.lines().count() * 5 < full.lines().count(),
        "{} of {} lines",
        config.lines().count(),
        full.lines().count()
    );
    assert!(
        stderr.contains(&format!("warning: {} is missing", generic.display())),
        "{stderr}"
    );
}

#[test]
fn each_target_selection_error_names_its_own_fix() {
    let Some(fx) = Fixture::unpack() else { return };
    let cases: [(&str, Option<&str>, &[&str]); 5] = [
        (
            "nosuch",
            None,
            &["is not a target of", "pass one of this checkout's targets: armsr, ath79"],
        ),
        (
            "ramips/nosub",
            None,
            &["pass one of its subtargets: ramips/mt7620, ramips/mt7621"],
        ),
        (
            "bcm53xx",
            Some("6.12"),
            &[
                "builds Linux 6.6",
                "KERNEL_PATCHVER:=6.6",
                "not 6.12: pass --kernel 6.6, or bump the board to 6.12 first with `cargo xtask patches rebase --openwrt",
                "--target bcm53xx --from 6.6 --to 6.12`",
            ],
        ),
        (
            "ramips-mt7621",
            Some("6.1"),
            &["builds Linux 6.12", "not 6.1: pass --kernel 6.12"],
        ),
        (
            "ath79",
            Some("6.18"),
            &["builds Linux 6.6 and 6.12", "KERNEL_TESTING_PATCHVER:=6.12", "--from 6.12 --to 6.18"],
        ),
    ];
    for (target, kernel, words) in cases {
        let out = config_show(&fx, target, kernel);
        let (_, stderr) = text(&out);
        assert!(!out.status.success(), "{target}: {stderr}");
        assert!(
            !stderr.contains("pass --kernel with a version the OpenWrt target has"),
            "{target}: {stderr}"
        );
        for w in words {
            assert!(stderr.contains(w), "{target}: {w:?} not in {stderr}");
        }
    }
}

#[test]
fn a_build_is_told_the_real_fix_for_its_source() {
    let Some(fx) = Fixture::unpack() else { return };
    let root = fx.root.to_str().unwrap();
    let build = |target: &str, src: &str| {
        let out = xtask(&[
            "build",
            "--openwrt",
            root,
            "--target",
            target,
            "--kernel-src",
            src,
            "--dry-run",
        ]);
        let (_, stderr) = text(&out);
        assert!(!out.status.success(), "{target}: {stderr}");
        stderr
    };
    let newer = fake_tree(&fx.dir().join("linux-6.12"), (6, 12, 117));
    let err = build("bcm53xx", &newer);
    assert!(
        err.contains("OpenWrt's bcm53xx/generic builds Linux 6.6")
            && err.contains("the kernel source is Linux 6.12.117: bump the board to 6.12 first with `cargo xtask patches rebase --openwrt")
            && err.contains("--target bcm53xx --from 6.6 --to 6.12`"),
        "{err}"
    );
    assert!(!err.contains("pass --kernel-src"), "{err}");
    let older = fake_tree(&fx.dir().join("linux-6.1"), (6, 1, 158));
    let err = build("ramips-mt7621", &older);
    assert!(
        err.contains(
            "the kernel source is Linux 6.1.158: pass --kernel-src with a Linux 6.12 source"
        ),
        "{err}"
    );
    assert!(!err.contains("patches rebase"), "{err}");
}

/// The build plan (`build --openwrt … --dry-run`) of a checkout without
/// the generic config warns too, naming the file. It prepares OpenWrt's
/// ramips/mt7621 tree on Debian's 6.12 (cached, as
/// tests/it/openwrt_point_release.rs prepares it).
#[test]
fn a_missing_generic_config_is_named_by_the_build_plan() {
    if openwrt_fixture::debian_tarball("6.12").is_none() {
        return;
    }
    let Some(fx) = Fixture::unpack() else { return };
    let generic = fx.root.join("target/linux/generic/config-6.12");
    std::fs::remove_file(&generic).unwrap();
    let root = fx.root.to_str().unwrap();
    let out = xtask(&[
        "build",
        "--openwrt",
        root,
        "--target",
        "ramips-mt7621",
        "--dry-run",
    ]);
    let (plan, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(plan.contains("ramips-mt7621/baseline"), "{plan}");
    assert!(
        stderr.contains(&format!(
            "warning: ramips-mt7621/baseline: {} is missing",
            generic.display()
        )),
        "{stderr}"
    );
}
