//! A dry run builds and runs nothing, not even code of the
//! OpenWrt checkout it names. `$(shell touch …)` planted in
//! `target/linux/ramips/image/Makefile` and `mt7621.mk` ran during
//! `experiment --dry-run` (make evaluated the device's image recipe for the
//! build key). Now `build --dry-run` and `experiment --dry-run` leave the
//! image Makefiles alone and say so in the plan; a build still evaluates
//! them (the control below shows the planted line runs when they are).
//!
//! Run as a user runs it (the `xtask` binary) on an unpacked OpenWrt
//! fixture and Debian's 6.12 source, as `tests/it/openwrt_selection.rs`
//! does: the plan prepares OpenWrt's ramips/mt7621 tree (cached).

use crate::common::openwrt_fixture;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use openwrt_fixture::Fixture;
use xtask::inputs::openwrt::image::{evaluate, MakeEnv};
use xtask::inputs::openwrt::{Checkout, OpenwrtTarget};

fn xtask(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(args)
        .output()
        .expect("running xtask")
}

/// Puts `$(shell touch MARKER)` first in `file`; returns the marker.
fn plant(file: &Path, marker: PathBuf) -> PathBuf {
    let text = std::fs::read_to_string(file).unwrap();
    std::fs::write(file, format!("$(shell touch {})\n{text}", marker.display())).unwrap();
    marker
}

#[test]
fn a_dry_run_never_evaluates_the_checkout_s_image_makefiles() {
    if openwrt_fixture::debian_tarball("6.12").is_none() {
        return;
    }
    let Some(fx) = Fixture::unpack() else { return };
    let image = fx.root.join("target/linux/ramips/image");
    let markers = [
        plant(&image.join("Makefile"), fx.dir().join("ran-Makefile")),
        plant(&image.join("mt7621.mk"), fx.dir().join("ran-mt7621.mk")),
    ];
    let root = fx.root.to_str().unwrap();
    let experiment = fx.dir().join("dry.toml");
    std::fs::write(
        &experiment,
        format!(
            "targets = [\"ramips-mt7621\"]\nvariants = [\"baseline\", \"no-reorder-blocks\"]\n\
             openwrt = {root:?}\n"
        ),
    )
    .unwrap();
    let runs: [Vec<&str>; 2] = [
        vec![
            "build",
            "--openwrt",
            root,
            "--target",
            "ramips-mt7621",
            "--dry-run",
        ],
        vec!["experiment", experiment.to_str().unwrap(), "--dry-run"],
    ];
    for args in runs {
        let out = xtask(&args);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{args:?}: {stderr}");
        for m in &markers {
            assert!(
                !m.exists(),
                "{args:?} ran the checkout's code ({} exists)",
                m.display()
            );
        }
        assert!(
            stdout.contains("a dry run does not evaluate the OpenWrt checkout's image Makefiles")
                && stdout.contains("(device tplink_archer-c6-v3, target/linux/ramips/image)"),
            "{args:?}: {stdout}"
        );
        assert!(
            stdout.contains("ramips-mt7621/baseline")
                && stdout.contains("(not known: see the note below)"),
            "{args:?}: {stdout}"
        );
    }

    // The control: evaluating the recipe, as a build does, runs the line.
    let checkout = Checkout::open(&fx.root).unwrap();
    let target = OpenwrtTarget::resolve(&checkout, "ramips/mt7621").unwrap();
    let linux = fx.dir().join("linux");
    std::fs::create_dir_all(linux.join("arch/mips/boot/dts")).unwrap();
    let env = MakeEnv {
        linux_dir: &linux,
        karch: "mips",
        linux_version: "6.12.1",
    };
    evaluate(&checkout, &target, "tplink_archer-c6-v3", &env).unwrap();
    for m in &markers {
        assert!(
            m.exists(),
            "{} was not made: the plant is wrong",
            m.display()
        );
    }
}

/// OpenWrt's KCFLAGS from the checkout's `.config` with
/// an option hidden in another option's value (`-fcompare-debug=-B<dir>/`,
/// which makes GCC's second compilation run `<dir>/cc1`): `build --dry-run`
/// and `experiment --dry-run` refuse it naming the `.config` line, and the
/// planted cc1 never runs.
#[test]
fn a_dry_run_never_starts_a_program_hidden_in_openwrt_s_kcflags() {
    if openwrt_fixture::debian_tarball("6.12").is_none() {
        return;
    }
    let Some(fx) = Fixture::unpack() else { return };
    let marker = fx.dir().join("ran-cc1");
    let (bin, so) = crate::common::planted::cc1_and_plugin(&fx.dir(), &marker);
    let root = fx.root.to_str().unwrap();
    let experiment = fx.dir().join("dry.toml");
    std::fs::write(
        &experiment,
        format!(
            "targets = [\"ramips-mt7621\"]\nvariants = [\"baseline\", \"no-reorder-blocks\"]\nopenwrt = {root:?}\n"
        ),
    )
    .unwrap();
    for hidden in [
        format!("-fcompare-debug=-B{}/", bin.display()),
        format!("-fcompare-debug=-fplugin={}", so.display()),
    ] {
        std::fs::write(
            fx.root.join(".config"),
            format!("CONFIG_TARGET_ramips=y\nCONFIG_KERNEL_CFLAGS=\"-O2 {hidden}\"\n"),
        )
        .unwrap();
        let runs: [Vec<&str>; 2] = [
            vec![
                "build",
                "--openwrt",
                root,
                "--target",
                "ramips-mt7621",
                "--dry-run",
            ],
            vec!["experiment", experiment.to_str().unwrap(), "--dry-run"],
        ];
        for args in runs {
            let out = xtask(&args);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(!out.status.success(), "{args:?} accepted {hidden}");
            assert!(
                !marker.exists(),
                "{args:?}: {hidden} ran the planted program"
            );
            assert!(
                stderr.contains(".config:2") && stderr.contains("as an option"),
                "{args:?}: {stderr}"
            );
        }
    }
}
