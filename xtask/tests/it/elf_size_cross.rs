//! `xtask::measure::sections::berkeley_sizes` against the cross binutils `size`
//! (Berkeley format): on the compiled fixtures (objects and linked, ARM,
//! MIPS BE/LE, x86-64) and on real vmlinux files from `target/xtask/results`.

use crate::common::elf_fixtures;
use crate::common::elf_tools;
use crate::common::gate;

use std::path::{Path, PathBuf};

use xtask::measure::sections::berkeley_sizes;

fn compare(prefix: &str, file: &Path, failures: &mut Vec<String>) {
    let ours = berkeley_sizes(file).expect("reading section sizes");
    let theirs = elf_tools::run_size(prefix, file);
    let ours = (ours.text, ours.data, ours.bss, ours.dec());
    if ours != theirs {
        failures.push(format!(
            "{file:?}: ours (text, data, bss, dec) = {ours:?}, {prefix}size = {theirs:?}"
        ));
    }
}

#[test]
fn fixtures_match_cross_size() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let fixtures = elf_fixtures::build_fixtures(dir.path());
    let mut failures = Vec::new();
    for fixture in &fixtures {
        for file in [&fixture.old, &fixture.new] {
            compare(fixture.prefix, file, &mut failures);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn vmlinux_files_match_cross_size() {
    let mut files: Vec<(String, PathBuf)> = Vec::new();
    for pair in elf_tools::vmlinux_pairs() {
        files.push((pair.prefix.clone(), pair.old));
        files.push((pair.prefix, pair.new));
    }
    files.extend(elf_tools::results_vmlinux_files());
    files.sort();
    files.dedup();
    let mut failures = Vec::new();
    for (prefix, file) in &files {
        if elf_tools::cross_tools(gate::Needs::new(), prefix, &["size"]).met() {
            compare(prefix, file, &mut failures);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
