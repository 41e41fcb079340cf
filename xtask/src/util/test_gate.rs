//! The unit tests' gate: a unit test that runs a host tool (iperf3,
//! python3, xz, GNU diff, gcc) asks [`programs`] first, as the integration
//! tests ask `xtask/tests/it/common/gate.rs`, with the same rule. A missing
//! tool fails the test under CI (the `CI` environment variable set: there
//! `cargo xtask setup --tests` installed everything, so a missing tool is a
//! broken set-up); elsewhere the test is skipped after a line on the
//! terminal (past libtest's capture) and one in the skip ledger that
//! `cargo xtask test` prints at the end (`$XTASK_SKIP_LEDGER`).
//!
//! ```ignore
//! if !crate::util::test_gate::programs(&[("xz", "xz-utils")]) {
//!     return;
//! }
//! ```

use std::io::Write;
use std::path::Path;

/// The skip ledger's environment variable, the same as
/// `SKIP_LEDGER_ENV` of `host::selftest` (`util` imports no stage; a
/// test of `host::selftest` checks that the two agree).
pub const SKIP_LEDGER_ENV: &str = "XTASK_SKIP_LEDGER";

/// Whether every `(program, Debian package)` of `programs` is on `PATH`
/// (or in `/usr/sbin`, `/sbin`). When one is not: a panic naming the test
/// and the missing programs under CI; elsewhere a reported skip, and the
/// caller returns.
pub fn programs(programs: &[(&str, &str)]) -> bool {
    let missing: Vec<String> = programs
        .iter()
        .filter(|(program, _)| !on_path(program))
        .map(|(program, package)| format!("no {program} (apt-get install {package})"))
        .collect();
    if missing.is_empty() {
        return true;
    }
    let thread = std::thread::current();
    let test = thread.name().unwrap_or("(unnamed thread)");
    let lacks = missing.join("; ");
    if std::env::var_os("CI").is_some() {
        panic!("{test}: {lacks}; CI is set, so this is a failure, not a skip");
    }
    let line = format!("skipped {test}: {lacks} [a unit test]\n");
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
    if let Some(ledger) = std::env::var_os(SKIP_LEDGER_ENV) {
        // One `write` of a file opened for appending: lines of test
        // processes running side by side do not interleave.
        let appended = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&ledger)
            .and_then(|mut f| f.write_all(format!("{test}: {lacks}\n").as_bytes()));
        if let Err(e) = appended {
            panic!("recording a skip in {}: {e}", Path::new(&ledger).display());
        }
    }
    false
}

/// Whether the executable `program` is on `PATH` or in `/usr/sbin`, `/sbin`.
fn on_path(program: &str) -> bool {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin".into(), "/sbin".into()])
        .any(|dir| dir.join(program).is_file())
}
