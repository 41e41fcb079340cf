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
