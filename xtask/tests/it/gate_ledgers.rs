//! The gate's ledgers, as `cargo xtask test` reads them: a slow test that
//! runs is named in `$XTASK_SLOW_LEDGER` (its share of the test time is
//! summed from it); one that slow tests are not wanted for is skipped and
//! named in `$XTASK_SKIP_LEDGER` instead.

use std::process::Command;

use xtask::host::selftest::{SKIP_LEDGER_ENV, SLOW_LEDGER_ENV, SLOW_TESTS_ENV};

use crate::common::gate;

#[test]
#[ignore = "a helper of slow_tests_are_named_in_the_ledger_they_ran_in"]
fn a_slow_helper() {
    if !gate::Needs::new()
        .slow("stands in for a kernel build")
        .met()
    {
        return;
    }
    eprintln!("the slow helper ran");
}

#[test]
fn slow_tests_are_named_in_the_ledger_they_ran_in() {
    let dir = tempfile::tempdir().unwrap();
    let (slow, skip) = (dir.path().join("slow.txt"), dir.path().join("skip.txt"));
    let helper = crate::common::helper_name(module_path!(), "a_slow_helper");
    let run = |wanted: &str| {
        let out = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", helper.as_str(), "--ignored", "--nocapture"])
            .env(SLOW_LEDGER_ENV, &slow)
            .env(SKIP_LEDGER_ENV, &skip)
            .env(SLOW_TESTS_ENV, wanted)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let read = |p: &std::path::Path| std::fs::read_to_string(p).unwrap_or_default();

    let stderr = run("1");
    assert!(stderr.contains("the slow helper ran"), "{stderr}");
    assert_eq!(
        read(&slow),
        format!("{helper}: stands in for a kernel build\n")
    );
    assert_eq!(read(&skip), "");

    let stderr = run("0");
    assert!(!stderr.contains("the slow helper ran"), "{stderr}");
    assert_eq!(
        read(&slow).lines().count(),
        1,
        "a skipped test is not slow time"
    );
    assert!(
        read(&skip).starts_with(&format!("{helper}: slow: stands in for a kernel build")),
        "{}",
        read(&skip)
    );
}
