//! The test build shares `cargo build`'s xtask library (compiling it twice
//! costs CI time): no dev-dependency turns on a feature the normal build lacks.

use std::collections::BTreeSet;
use std::process::Command;

use super::crate_dir;

/// `cargo tree`'s crates of xtask with their features, one `name version
/// [features]` line each, over the dependency kinds `edges`.
fn features(edges: &str) -> BTreeSet<String> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = Command::new(cargo)
        .current_dir(crate_dir())
        .args([
            "tree",
            "--offline",
            "--locked",
            "-p",
            "xtask",
            "--prefix",
            "none",
        ])
        .args(["-e", edges, "-f", "{p} [{f}]"])
        .output()
        .expect("running cargo tree");
    assert!(
        out.status.success(),
        "cargo tree -e {edges}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with("xtask "))
        .map(|l| l.trim_end_matches(" (*)").to_string())
        .collect()
}

/// Cargo's resolver 2 unifies a dev-dependency's features only in test
/// builds: one the normal build lacks makes `cargo test` (after
/// `cargo xtask`'s `cargo build`) compile that crate, everything above it
/// and xtask's library a second time, about a minute of a clean clone's
/// test command on 2 cores. `xtask/Cargo.toml` lists those features in
/// `[dependencies]`.
#[test]
fn dev_dependencies_turn_on_no_feature_the_build_lacks() {
    let normal = features("normal,build");
    let with_dev = features("normal,build,dev");
    let normal_crates: BTreeSet<&str> =
        normal.iter().filter_map(|l| l.split(" [").next()).collect();
    let differ: Vec<&String> = with_dev
        .iter()
        .filter(|l| {
            l.split(" [")
                .next()
                .is_some_and(|c| normal_crates.contains(c))
        })
        .filter(|l| !normal.contains(*l))
        .collect();
    assert!(
        differ.is_empty(),
        "the test build turns on features the normal build lacks, so it compiles these \
         crates and xtask a second time; add the features to [dependencies] in \
         xtask/Cargo.toml: {differ:#?}"
    );
}
