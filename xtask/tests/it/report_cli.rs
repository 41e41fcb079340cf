//! `cargo xtask size-report` through the real binary: argument checks, a
//! clear error, and a JSON report of the real arm-tiny results written with
//! `--output` (skipped by the gate, `common/gate.rs`, when those results
//! are missing, a failure under CI), and a lab run named with `--lab-run`.

use crate::common::gate;

use std::process::Command;

use xtask::results::BuildResult;
use xtask::util::layout::Layout;

fn xtask(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(args)
        .output()
        .expect("running xtask")
}

#[test]
fn fold_clones_and_bloat_mode_need_symbols() {
    for args in [
        &["size-report", "--fold-clones"][..],
        &["size-report", "--bloat-mode", "c"][..],
    ] {
        let out = xtask(args);
        assert!(!out.status.success(), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("--symbols"), "{stderr}");
    }
    let out = xtask(&["size-report", "--format", "pdf"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("markdown"));
}

#[test]
fn unknown_target_is_a_clear_error() {
    let out = xtask(&["size-report", "--target", "bcm63xx"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    // Reports read results only: the message lists the targets that have
    // results (or says none has), not targets/.
    assert!(
        stderr.contains("error: unknown target \"bcm63xx\"")
            && (stderr.contains("targets with results: ")
                || stderr.contains("no target has results yet")),
        "{stderr}"
    );
}

#[test]
fn json_of_real_arm_tiny_results() {
    let layout = Layout::from_manifest_dir();
    let dirs = ["baseline", "no-reorder-blocks"].map(|v| layout.results_dir("arm-tiny", v));
    let how =
        "`cargo xtask build --target arm-tiny --variant baseline --variant no-reorder-blocks`";
    let needs = dirs.iter().fold(gate::Needs::new(), |n, d| {
        n.file(&d.join("result.json"), how)
    });
    if !needs.met() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("report.json");
    let out = xtask(&[
        "size-report",
        "--target",
        "bcm53xx/tiny",
        "--variant",
        "no-reorder-blocks",
        "--format",
        "json",
        "--output",
        file.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.stdout.is_empty(), "--output writes nothing to stdout");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let [base, variant] = dirs.map(|d| BuildResult::read(&d).unwrap());
    let c = &json["targets"][0]["comparisons"][0];
    for a in c["artifacts"].as_array().unwrap() {
        let name = a["name"].as_str().unwrap();
        assert_eq!(a["before"], base.artifacts[name].size, "{name}");
        assert_eq!(a["after"], variant.artifacts[name].size, "{name}");
    }
    assert_eq!(
        c["artifacts"].as_array().unwrap().len(),
        base.artifacts.len()
    );
    assert_eq!(c["sections"]["text"]["before"], base.vmlinux_sections.text);
    assert_eq!(
        c["sections"]["dec"]["after"],
        variant.vmlinux_sections.dec()
    );
}

#[test]
fn a_lab_run_by_its_directory() {
    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/lab_fixture");
    let out = xtask(&[
        "size-report",
        "--target",
        "brcm47xx",
        "--lab-run",
        fixture,
        "--decimal-comma",
    ]);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stderr}");
    assert!(
        stdout.contains("\nxtask/tests/lab_fixture/lab.json (complete: 3 runs")
            && stdout.contains("\nLAN to WAN: 170,6 Mbit/s → 180,5 Mbit/s (+5,78%)\n"),
        "{stdout}"
    );
    let out = xtask(&["size-report", "--lab-run", fixture, "--no-lab"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot be used with"));
    let out = xtask(&["size-report", "--lab-run", "/nonexistent/lab"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--lab-run /nonexistent/lab")
            && stderr.contains("/nonexistent/lab/lab.json"),
        "{stderr}"
    );
}
