//! Arguments that cannot work are refused by the binary at once, before
//! any build or report work, with a message naming what to change.

use std::process::{Command, Output};

fn xtask(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(args)
        .output()
        .expect("running xtask")
}

/// `-j 0` used to reach `make -j0`, which prints make's help after the
/// source was unpacked and patched; clap refuses it while parsing.
#[test]
fn zero_jobs_is_refused_while_parsing() {
    for args in [
        &["build", "--target", "arm-tiny", "-j", "0"][..],
        &["build", "--target", "arm-tiny", "--jobs=0"][..],
        &["test", "-j", "0"][..],
    ] {
        let out = xtask(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains("invalid value '0' for '--jobs <N>'") && stderr.contains("1.."),
            "{args:?}: {stderr}"
        );
        assert!(!stderr.contains("Usage: make"), "{args:?}: {stderr}");
    }
}

/// `size-report -o` into a missing directory used to create it silently
/// (a typo in the path went unnoticed); now it is an error naming the
/// directory, and nothing is created.
#[test]
fn report_output_into_a_missing_directory_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("no-such-dir");
    let file = missing.join("report.txt");
    let out = xtask(&["size-report", "-o", file.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!("directory {} does not exist", missing.display())),
        "{stderr}"
    );
    assert!(!missing.exists(), "the directory was created");
}
