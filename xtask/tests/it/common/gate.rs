//! The one gate for tests that need something of the host: a program (a
//! cross binutils, python3, QEMU, iperf3), a file (Debian's kernel source
//! tarball, the OpenWrt fixture, the results `cargo xtask test` builds
//! first) or root.
//!
//! What is missing fails the test under CI (the `CI` environment variable
//! set; `.ci/run` installs everything first, so a missing tool there is a
//! broken set-up, not a reason to pass). Elsewhere the test is skipped:
//! [`Needs::met`] returns `false` and the test returns early, after
//!
//! * a line on the terminal naming the test and what it lacks, written
//!   past libtest's output capture, so a plain `cargo test` shows it:
//!   `skipped lab_ssh::a_namespace_router_over_ssh_without_flashing: no
//!   iperf3 (apt-get install iperf3) [skip 1 of this test process]`;
//! * a line in the file `$XTASK_SKIP_LEDGER` names, when set:
//!   `cargo xtask test` sets it and prints the count and the list at the
//!   end of the run ([`xtask::host::selftest::SKIP_LEDGER_ENV`]).
//!
//! Slow tests, those that build a kernel or boot QEMU, also ask for
//! [`Needs::slow`]: they run only when `XTASK_SLOW_TESTS=1`
//! ([`xtask::host::selftest::SLOW_TESTS_ENV`]), which `cargo xtask test`
//! (and so CI) sets. A plain `cargo test` skips them, with the same line
//! (`skipped lab_malta::…: slow: builds the Malta lab kernel and boots it
//! in QEMU (XTASK_SLOW_TESTS=1 runs it; `cargo xtask test` sets it)`),
//! under CI too: slowness is opted into, not a tool the machine lacks, and
//! what else the test lacks is then not checked. A slow test that runs is
//! named in the file `$XTASK_SLOW_LEDGER` names, when set, so that `cargo
//! xtask test` can say what share of the test time the slow tests took
//! ([`xtask::host::test_times`]).
//!
//! No test file checks `CI` itself (`tests/it/tidy.rs` checks that).
//!
//! The integration tests use it as `crate::common::gate` (the benches
//! include the file by path), then:
//!
//! ```ignore
//! if !gate::Needs::new().program("iperf3", "iperf3").met() {
//!     return;
//! }
//! ```
#![allow(dead_code)]

use std::fmt::Display;
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use xtask::host::selftest::{SKIP_LEDGER_ENV, SLOW_LEDGER_ENV, SLOW_TESTS_ENV};

/// Skips so far in this process (the one integration-test binary, or a
/// bench).
static SKIPPED: AtomicUsize = AtomicUsize::new(0);

/// Whether the tests run under CI (the `CI` environment variable is set),
/// where anything a test needs and misses is a failure.
pub fn in_ci() -> bool {
    std::env::var_os("CI").is_some()
}

/// The executable `program` on `PATH` (or in `/usr/sbin`, `/sbin`, where
/// Debian puts `sshd`'s and nftables' programs that a non-root `PATH`
/// lacks), or a path to one when `program` has a `/`.
pub fn find_program(program: &str) -> Option<std::path::PathBuf> {
    if program.contains('/') {
        let path = Path::new(program);
        return path.is_file().then(|| path.to_path_buf());
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin".into(), "/sbin".into()])
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
}

/// What one test needs of the host, gathered before the test decides to
/// run: each method adds a requirement and, when it is not met, what is
/// missing and how to get it.
#[must_use = "call .met() to gate the test"]
#[derive(Debug, Default)]
pub struct Needs {
    missing: Vec<String>,
    /// Why the test is slow, when it is and slow tests are not wanted.
    slow: Option<String>,
    /// Why the test is slow, when it is and slow tests are wanted.
    runs_slow: Option<String>,
}

impl Needs {
    /// Nothing needed yet.
    pub fn new() -> Needs {
        Needs::default()
    }

    /// The program `program` (see [`find_program`]), from Debian's `package`.
    pub fn program(mut self, program: &str, package: &str) -> Needs {
        if find_program(program).is_none() {
            self.missing
                .push(format!("no {program} (apt-get install {package})"));
        }
        self
    }

    /// That slow tests run: `XTASK_SLOW_TESTS=1`, for a test that builds a
    /// kernel or boots QEMU; `why` says which (e.g. "builds the Malta lab
    /// kernel and boots it in QEMU"). Unmet, the test is skipped even
    /// under CI (see the module docs).
    pub fn slow(mut self, why: &str) -> Needs {
        if slow_tests_wanted() {
            self.runs_slow = Some(why.to_string());
        } else {
            self.slow = Some(why.to_string());
        }
        self
    }

    /// The file or directory `path`; `how` says how to make it, e.g.
    /// "`cargo xtask test` builds it".
    pub fn file(mut self, path: &Path, how: &str) -> Needs {
        if !path.exists() {
            self.missing.push(format!("no {} ({how})", path.display()));
        }
        self
    }

    /// Root (an effective user id of 0), for `why` (e.g. "network
    /// namespaces").
    pub fn root(mut self, why: &str) -> Needs {
        if !rustix::process::geteuid().is_root() {
            self.missing.push(format!("not root ({why})"));
        }
        self
    }

    /// What the lab with the cache model's TCG plugin needs for `spec`:
    /// the lab's host tools (its QEMU among them), the plugin's build
    /// tools and pkg-config.
    pub fn cache_model_lab(self, spec: &xtask::lab::LabSpec) -> Needs {
        self.check(xtask::lab::check_host_tools(spec))
            .check(xtask::lab::require_tools(
                "the cache model",
                xtask::lab::cache_model::HOST_TOOLS,
            ))
            .program("pkg-config", "pkg-config")
    }

    /// What a check of the project's own found missing (e.g.
    /// `xtask::lab::check_host_tools`, whose error names the packages).
    pub fn check<E: Display>(mut self, outcome: Result<(), E>) -> Needs {
        if let Err(e) = outcome {
            // `{:#}` prints an anyhow error's whole chain on one line.
            self.missing.push(format!("{e:#}"));
        }
        self
    }

    /// `what`, which the caller found missing by other means, said as a
    /// phrase (e.g. "no unpacked Linux 6.12 under DIR").
    pub fn missing(mut self, what: impl Into<String>) -> Needs {
        self.missing.push(what.into());
        self
    }

    /// Whether everything is there. When not: a panic naming the test and
    /// what it lacks under CI; elsewhere, and for a slow test that slow
    /// tests are not wanted for, the skip is reported (see the module docs)
    /// and counted, and the caller returns.
    pub fn met(self) -> bool {
        let test = test_name();
        if let Some(why) = self.slow {
            skip(
                &test,
                &format!("slow: {why} ({SLOW_TESTS_ENV}=1 runs it; `cargo xtask test` sets it)"),
            );
            return false;
        }
        if self.missing.is_empty() {
            if let (Some(why), Some(ledger)) = (&self.runs_slow, std::env::var_os(SLOW_LEDGER_ENV))
            {
                record(
                    Path::new(&ledger),
                    "a slow test",
                    &format!("{test}: {why}\n"),
                );
            }
            return true;
        }
        let lacks = self.missing.join("; ");
        if in_ci() {
            panic!("{test}: {lacks}; CI is set, so this is a failure, not a skip");
        }
        skip(&test, &lacks);
        false
    }
}

/// Whether slow tests are wanted: `XTASK_SLOW_TESTS=1`.
pub fn slow_tests_wanted() -> bool {
    std::env::var_os(SLOW_TESTS_ENV).is_some_and(|v| v == "1")
}

/// Reports and counts the skip of `test`, which lacks `lacks`: a line past
/// libtest's capture and one in the ledger (see the module docs).
fn skip(test: &str, lacks: &str) {
    let n = SKIPPED.fetch_add(1, Ordering::SeqCst) + 1;
    let line = format!("skipped {test}: {lacks} [skip {n} of this test process]\n");
    // Past libtest's capture, which only catches print!/eprint!.
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
    if let Some(ledger) = std::env::var_os(SKIP_LEDGER_ENV) {
        record(Path::new(&ledger), "a skip", &format!("{test}: {lacks}\n"));
    }
}

/// `target/xtask/results/arm-tiny/<variant>/`, the end-to-end build that
/// `cargo xtask test` makes before the tests, when its `result.json` is
/// there; through the gate otherwise.
pub fn e2e_results_dir(variant: &str) -> Option<std::path::PathBuf> {
    let dir = xtask::host::selftest::e2e_results_dir(variant);
    let result = dir.join(xtask::results::FILE_NAME);
    Needs::new()
        .file(&result, "`cargo xtask test` builds it before the tests")
        .met()
        .then_some(dir)
}

/// How many tests this process has skipped so far.
pub fn skipped_so_far() -> usize {
    SKIPPED.load(Ordering::SeqCst)
}

/// `<test file>::<test>`: libtest names each test's thread after the
/// test's path in the binary, whose modules are the former test files. A
/// bench (no libtest) runs on `main`: its crate's name then.
fn test_name() -> String {
    let thread = std::thread::current();
    match thread.name() {
        Some("main") | None => env!("CARGO_CRATE_NAME").to_string(),
        Some(test) => test.to_string(),
    }
}

/// Appends `line` to the ledger: one `write` of a file opened for
/// appending, so the lines of test binaries running side by side do not
/// interleave.
fn record(ledger: &Path, what: &str, line: &str) {
    // A ledger `cargo xtask test` names: it is there to be written.
    let appended = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(ledger)
        .and_then(|mut f| f.write_all(line.as_bytes()));
    if let Err(e) = appended {
        panic!("recording {what} in {}: {e}", ledger.display());
    }
}
