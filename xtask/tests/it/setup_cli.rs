//! `cargo xtask setup` on a machine that already has every package a
//! target needs says so and runs no apt-get (it once ran
//! `apt-get update` and `apt-get install`, then printed `installed: …`
//! for packages that were all there before).

use crate::common::gate;

use std::process::Command;

use xshell::{cmd, Shell};
use xtask::inputs::targets;
use xtask::util::layout::Layout;

#[test]
fn setup_with_everything_installed_says_so_and_installs_nothing() {
    let layout = Layout::from_manifest_dir();
    let all = targets::load_all(&layout.targets_dir()).unwrap();
    let chosen = targets::select(&all, &["arm-tiny".to_string()]).unwrap();
    let packages = xtask::host::setup::packages(&chosen);
    // What dpkg says is installed: the precondition, from the reference
    // tool itself (`cargo xtask setup --tests` installs them all).
    if !gate::Needs::new().program("dpkg-query", "dpkg").met() {
        return;
    }
    let sh = Shell::new().unwrap();
    let format = "${Package} ${db:Status-Abbrev}\n";
    let names = &packages;
    let status = cmd!(sh, "dpkg-query -W -f {format} {names...}")
        .ignore_status()
        .read()
        .unwrap();
    let missing: Vec<&String> = packages
        .iter()
        .filter(|p| !status.lines().any(|l| l.starts_with(&format!("{p} ii"))))
        .collect();
    let mut needs = gate::Needs::new();
    if !missing.is_empty() {
        needs = needs.missing(format!(
            "{missing:?} installed (`cargo xtask setup --tests`)"
        ));
    }
    if !needs.met() {
        return;
    }

    let out = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(["setup", "--target", "arm-tiny"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert_eq!(
        stdout,
        format!(
            "already installed: {} ({})\n",
            packages.len(),
            packages.join(" ")
        ),
        "{stderr}"
    );
}

/// `setup --print-only` asks apt-get for the kernel sources at the
/// versions the pin file pins (setup once kept whatever Debian
/// served, 6.12.118, whose tarball `build` then refused).
#[test]
fn setup_installs_the_pinned_kernel_source_versions() {
    let layout = Layout::from_manifest_dir();
    let pins = xtask::inputs::kernel_source::pinned_debian_versions(&layout).unwrap();
    assert!(pins.contains_key("linux-source-6.12"), "{pins:?}");
    let out = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(["setup", "--tests", "--print-only"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(stdout.contains("--allow-downgrades"), "{stdout}");
    for (package, version) in &pins {
        assert!(
            stdout
                .split_whitespace()
                .any(|w| w == format!("{package}={version}")),
            "{package}={version} not in {stdout}"
        );
    }
}
