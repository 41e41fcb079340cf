//! `cargo xtask setup` on a machine that already has every package a
//! target needs says so and runs no apt-get (issue #20 §12: it ran
//! `apt-get update` and `apt-get install`, then printed `installed: …`
//! for packages that were all there before).

#[path = "common/gate.rs"]
mod gate;

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
