//! `cargo xtask test`: the project's whole test suite, as CI runs it.
//!
//! First the real end-to-end build: the tiny ARM profile (`arm-tiny`) for
//! `baseline`, `no-reorder-blocks` and `epoll` (the `--by kconfig` known
//! answer's base) from the real kernel source (about a minute or two per
//! variant on 2 idle cores, 4–24 under load; incremental afterwards). Then
//! the whole suite under cargo-nextest ([`NEXTEST_INSTALL`]) with the slow
//! tests ([`SLOW_TESTS_ENV`]), whose end-to-end tests read those results
//! and compare them with the reference tools. nextest runs each test in a
//! process of its own and the lab tests two at a time, first
//! (`.config/nextest.toml`): under `cargo test` the one integration binary
//! runs every test in one process, where CI saw spawns fail.

use std::time::Instant;

use anyhow::{Context, Result};
use xshell::{cmd, Shell};

use super::test_times;

/// The target of the end-to-end build.
pub const E2E_TARGET: &str = "arm-tiny";

/// The variants of the end-to-end build.
pub const E2E_VARIANTS: [&str; 2] = ["baseline", "no-reorder-blocks"];

/// The base of `size-report --by kconfig`'s known answer
/// (`tests/it/size_kconfig.rs`): baseline with `CONFIG_EPOLL=y`, compared
/// with `baseline`, which turns the symbol off. Built with
/// [`E2E_VARIANTS`].
pub const E2E_KCONFIG_BASE: &str = "epoll";

/// Debian packages the tests need beyond `cargo xtask setup`'s: the
/// reference tools (GNU patch, diff, quilt, python3 for bloat-o-meter,
/// python3-scipy for the statistics), distcc (its daemon for the
/// `--distcc` end-to-end test, on 127.0.0.1), the 6.1 source the flag
/// patch is checked against, the host lab's tools (dbench's tbench,
/// iperf3, ethtool) for its end-to-end test, and OpenSSH's server and
/// client for the SSH lab's namespace router (`tests/it/lab_ssh.rs`; Debian's
/// package does not start a server by itself where services are not
/// started), and glib's headers with pkg-config for QEMU's own cache
/// plugin, the cache model's reference (`tests/it/lab_cache_model.rs`).
pub const TEST_PACKAGES: &[&str] = &[
    "patch",
    "diffutils",
    "quilt",
    "git",
    "python3",
    "python3-scipy",
    "distcc",
    "linux-source-6.1",
    "dbench",
    "iperf3",
    "ethtool",
    "openssh-server",
    "openssh-client",
    // xtask/tests/it/openwrt_image.rs: dtc, fdtget; mkimage -l, dumpimage; xz -d.
    "device-tree-compiler",
    "u-boot-tools",
    "xz-utils",
    // xtask/tests/it/report_whole_image.rs: mksquashfs makes the rootfs,
    // unsquashfs lists it (and --rootfs reads its programs with it).
    "squashfs-tools",
    // xtask/tests/it/openwrt_device_fit.rs: the LZMA SDK encoder's margin.
    "lzma-alone",
    // xtask/tests/it/lab_cache_model.rs: QEMU's contrib/plugins/cache.c, the
    // cache model's reference, needs glib's headers through pkg-config.
    "libglib2.0-dev",
    "pkg-config",
    // xtask/tests/it/lab_static_guest.rs: `file` on the static guest's
    // binaries (readelf comes with ath79's cross compiler).
    "file",
];

/// The environment variable naming the file where the tests' gate
/// (`xtask/tests/it/common/gate.rs`) records each test it skipped for a
/// missing host tool or file, one line each: `<test file>::<test>: no
/// <what> (<how to get it>)`. [`run`] sets it and prints the count.
pub const SKIP_LEDGER_ENV: &str = "XTASK_SKIP_LEDGER";

/// The environment variable naming the file where the tests' gate records
/// each slow test ([`SLOW_TESTS_ENV`]) that ran, one line each: `<test
/// file>::<test>: <why it is slow>`. [`run`] sets it and sums the slow
/// tests' share of the test time ([`super::test_times`]).
pub const SLOW_LEDGER_ENV: &str = "XTASK_SLOW_LEDGER";

/// The environment variable that lets the slow tests run, those that build
/// a kernel or boot QEMU (`XTASK_SLOW_TESTS=1`; the tests' gate,
/// `xtask/tests/it/common/gate.rs`, skips them otherwise, under CI too).
/// [`run`] sets it, so CI runs them.
pub const SLOW_TESTS_ENV: &str = "XTASK_SLOW_TESTS";

/// How `cargo xtask setup --tests` installs cargo-nextest, the runner of
/// [`run`], when `cargo nextest` is missing (from crates.io, a few minutes
/// of compiling on 2 cores): `cargo` with these arguments.
pub const NEXTEST_INSTALL: [&str; 3] = ["install", "cargo-nextest", "--locked"];

/// [`NEXTEST_INSTALL`] as a command line, for messages.
pub fn nextest_install_line() -> String {
    format!("cargo {}", NEXTEST_INSTALL.join(" "))
}

/// Whether `cargo nextest --version` runs.
pub fn has_nextest(sh: &Shell) -> bool {
    cmd!(sh, "cargo nextest --version")
        .quiet()
        .ignore_stdout()
        .ignore_stderr()
        .run()
        .is_ok()
}

/// Installs cargo-nextest ([`NEXTEST_INSTALL`]) unless `cargo nextest`
/// already runs; says which.
pub fn ensure_nextest(sh: &Shell) -> Result<()> {
    if has_nextest(sh) {
        return Ok(());
    }
    println!(
        "cargo-nextest is missing (`cargo xtask test` runs the tests with it): {}",
        nextest_install_line()
    );
    cmd!(sh, "cargo {NEXTEST_INSTALL...}")
        .run()
        .context("installing cargo-nextest from crates.io")
}

/// Runs the end-to-end build through `cargo xtask build`, then the whole
/// suite with the slow tests (`cargo nextest run --workspace`),
/// then says how many tests the gate skipped and why (under CI none: there
/// a missing tool fails its test).
///
/// Errors: cargo-nextest missing (naming `cargo xtask setup --tests`), the
/// build failed, or a test failed.
pub fn run(sh: &Shell, jobs: Option<usize>) -> Result<()> {
    anyhow::ensure!(
        has_nextest(sh),
        "`cargo nextest` does not run: `cargo xtask setup --tests` installs cargo-nextest ({})",
        nextest_install_line()
    );
    let [a, b] = E2E_VARIANTS;
    let jobs = jobs.map(|j| format!("--jobs={j}"));
    let started = Instant::now();
    cmd!(
        sh,
        "cargo run --quiet --package xtask -- build --target {E2E_TARGET} --variant {a} --variant {b} --variant {E2E_KCONFIG_BASE} {jobs...}"
    )
    .run()
    .context("the end-to-end build of the tiny profile")?;
    let build = started.elapsed();
    let work = crate::util::layout::Layout::from_manifest_dir().work_dir();
    let ledger = work.join("test-skips.txt");
    let slow_ledger = work.join("test-slow.txt");
    let junit = test_times::junit_path();
    for file in [&ledger, &slow_ledger, &junit] {
        match std::fs::remove_file(file) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(e).with_context(|| format!("removing {}", file.display()));
            }
            _ => {}
        }
    }
    let started = Instant::now();
    let tests = cmd!(sh, "cargo nextest run --workspace --no-fail-fast")
        .env(SKIP_LEDGER_ENV, &ledger)
        .env(SLOW_LEDGER_ENV, &slow_ledger)
        .env(SLOW_TESTS_ENV, "1")
        .run()
        .context("cargo nextest run --workspace");
    let walls = test_times::Walls {
        build,
        tests: started.elapsed(),
    };
    // What follows only reports: the tests' own verdict stands whatever
    // it fails to read.
    match read_ledger(&ledger, "skip ledger") {
        Ok(skipped) => eprintln!("{}", skip_summary(&skipped)),
        Err(e) => eprintln!("no list of skipped tests: {e:#}"),
    }
    let times = read_ledger(&slow_ledger, "slow-test ledger").and_then(|slow| {
        let xml = crate::util::fs::read_limited(
            &junit,
            crate::util::fs::FileLimit::record("nextest's JUnit report"),
            "",
        )
        .with_context(|| format!("no JUnit report of nextest's at {}", junit.display()))?;
        test_times::summary(&xml, &slow, walls)
    });
    match times {
        Ok(summary) => eprintln!("{summary}"),
        Err(e) => eprintln!("no test times: {e:#}"),
    }
    tests
}

/// The ledger at `path`, empty when no test wrote it.
fn read_ledger(path: &std::path::Path, what: &'static str) -> Result<String> {
    match crate::util::fs::read_limited(path, crate::util::fs::FileLimit::record(what), "") {
        Ok(text) => Ok(text),
        Err(e) if crate::util::fs::is_not_found(&e) => Ok(String::new()),
        Err(e) => Err(e),
    }
}

/// The closing lines of a test run from the gate's ledger (see
/// [`SKIP_LEDGER_ENV`]): how many tests were skipped, then each, sorted.
pub fn skip_summary(ledger: &str) -> String {
    let mut lines: Vec<&str> = ledger.lines().filter(|l| !l.is_empty()).collect();
    if lines.is_empty() {
        return "tests skipped for a missing host tool or file: none".to_string();
    }
    lines.sort_unstable();
    let mut out = format!(
        "tests skipped for a missing host tool or file: {} (under CI each is a failure; \
         `cargo xtask setup --tests` installs the tools)",
        lines.len()
    );
    for line in lines {
        out.push_str("\n  ");
        out.push_str(line);
    }
    out
}

/// The results directory of the end-to-end build for `variant`
/// (`target/xtask/results/arm-tiny/<variant>/`), whether or not it has
/// been built: `cargo xtask test` builds it before the tests, which gate
/// on its `result.json`.
pub fn e2e_results_dir(variant: &str) -> std::path::PathBuf {
    crate::util::layout::Layout::from_manifest_dir().results_dir(E2E_TARGET, variant)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The unit tests' gate (in `util`, which imports no stage) writes to
    /// the same ledger.
    #[test]
    fn the_unit_tests_gate_names_the_same_ledger() {
        assert_eq!(SKIP_LEDGER_ENV, crate::util::test_gate::SKIP_LEDGER_ENV);
    }

    #[test]
    fn the_summary_counts_and_sorts_the_skips() {
        assert_eq!(
            skip_summary(""),
            "tests skipped for a missing host tool or file: none"
        );
        let summary = skip_summary("lab_ssh::a: no iperf3 (apt-get install iperf3)\nlab_host::b: not root (network namespaces)\n");
        let lines: Vec<&str> = summary.lines().collect();
        assert_eq!(lines.len(), 3, "{summary}");
        assert!(lines[0].contains(": 2 (under CI"), "{summary}");
        assert_eq!(lines[1], "  lab_host::b: not root (network namespaces)");
        assert_eq!(lines[2], "  lab_ssh::a: no iperf3 (apt-get install iperf3)");
    }
}
