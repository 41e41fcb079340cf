//! `cargo xtask test`: the project's whole test suite, as CI runs it.
//!
//! First the real end-to-end build: the tiny ARM profile (`arm-tiny`) for
//! `baseline` and `no-reorder-blocks` from the real kernel source (about a
//! minute or two per variant on 2 cores; incremental afterwards). Then
//! `cargo test --workspace`, whose end-to-end tests read those results and
//! compare them with the reference tools.

use anyhow::{Context, Result};
use xshell::{cmd, Shell};

/// The target of the end-to-end build.
pub const E2E_TARGET: &str = "arm-tiny";

/// The variants of the end-to-end build.
pub const E2E_VARIANTS: [&str; 2] = ["baseline", "no-reorder-blocks"];

/// Debian packages the tests need beyond `cargo xtask setup`'s: the
/// reference tools (GNU patch, diff, quilt, python3 for bloat-o-meter,
/// python3-scipy for the statistics), distcc (its daemon for the
/// `--distcc` end-to-end test, on 127.0.0.1), the 6.1 source the flag
/// patch is checked against, the host lab's tools (dbench's tbench,
/// iperf3, ethtool) for its end-to-end test, and OpenSSH's server and
/// client for the SSH lab's namespace router (`tests/lab_ssh.rs`; Debian's
/// package does not start a server by itself where services are not
/// started), and glib's headers with pkg-config for QEMU's own cache
/// plugin, the cache model's reference (`tests/lab_cache_model.rs`).
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
    // xtask/tests/openwrt_image.rs: dtc, fdtget; mkimage -l, dumpimage; xz -d.
    "device-tree-compiler",
    "u-boot-tools",
    "xz-utils",
    // xtask/tests/lab_cache_model.rs: QEMU's contrib/plugins/cache.c, the
    // cache model's reference, needs glib's headers through pkg-config.
    "libglib2.0-dev",
    "pkg-config",
    // xtask/tests/lab_static_guest.rs: `file` on the static guest's
    // binaries (readelf comes with ath79's cross compiler).
    "file",
];

/// Runs the end-to-end build through `cargo xtask build`, then `cargo test`.
pub fn run(sh: &Shell, jobs: Option<usize>) -> Result<()> {
    let [a, b] = E2E_VARIANTS;
    let jobs = jobs.map(|j| format!("--jobs={j}"));
    cmd!(
        sh,
        "cargo run --quiet --package xtask -- build --target {E2E_TARGET} --variant {a} --variant {b} {jobs...}"
    )
    .run()
    .context("the end-to-end build of the tiny profile")?;
    cmd!(sh, "cargo test --workspace")
        .run()
        .context("cargo test --workspace")?;
    Ok(())
}

/// The results directory of the end-to-end build for `variant`, when its
/// `result.json` exists. Missing results are an error under CI (the env
/// var `CI` is set, and `cargo xtask test` built them first) and `None`
/// otherwise, so a plain `cargo test` skips the end-to-end checks.
pub fn e2e_results_dir(variant: &str) -> Result<Option<std::path::PathBuf>> {
    let dir = crate::util::layout::Layout::from_manifest_dir().results_dir(E2E_TARGET, variant);
    if dir.join(crate::results::FILE_NAME).is_file() {
        return Ok(Some(dir));
    }
    if std::env::var_os("CI").is_some() {
        anyhow::bail!(
            "{} is missing under CI; run `cargo xtask test`, which builds it first",
            dir.join(crate::results::FILE_NAME).display()
        );
    }
    eprintln!(
        "note: skipping: no {}; `cargo xtask test` builds it",
        dir.display()
    );
    Ok(None)
}
