//! `xtask::measure::symbols` on files that are not the cross fixtures: this test
//! executable itself (a 64-bit PIE with thousands of Rust symbols, TLS and
//! weak symbols) against the host `nm`, the report's unsorted reading of it
//! against the sorted one, and the errors for files that are not ELF or
//! are cut short.

use crate::common::elf_tools;
use crate::common::gate;

use std::path::Path;

use xtask::measure::symbols::{read_symbols, read_symbols_of, read_unsorted};

fn error_text(path: &Path) -> String {
    let err = read_symbols(path).expect_err("reading should fail");
    format!("{err:#}")
}

#[test]
fn own_executable_matches_host_nm() {
    if !gate::Needs::new().program("nm", "binutils").met() {
        return;
    }
    let exe = std::env::current_exe().expect("test executable path");
    let ours = read_symbols(&exe).expect("reading the test executable");
    assert!(!ours.symbols.is_empty());
    let ours = ours.to_nm_text();
    let theirs = elf_tools::run_nm_size_sort("", &exe);
    assert!(
        elf_tools::sorted_lines(&ours) == elf_tools::sorted_lines(&theirs),
        "{}",
        elf_tools::first_difference(&ours, &theirs).unwrap_or_default()
    );
}

/// `read_unsorted`, what `size-report --symbols` diffs, lists the symbols
/// `read_symbols` lists, in the symbol table's order: the same multiset,
/// and not sorted (a test that passed on a sorted copy would not tell).
#[test]
fn unsorted_reading_lists_the_same_symbols_in_table_order() {
    let exe = std::env::current_exe().expect("test executable path");
    let sorted = read_symbols(&exe)
        .expect("reading the test executable")
        .symbols;
    let unsorted = read_unsorted(&exe).expect("reading the test executable");
    let by_size_and_name = |a: &xtask::measure::symbols::NmSymbol,
                            b: &xtask::measure::symbols::NmSymbol| {
        a.size.cmp(&b.size).then_with(|| a.name.cmp(&b.name))
    };
    assert!(
        !unsorted.is_sorted_by(|a, b| by_size_and_name(a, b).is_le()),
        "the test executable's table happened to be in nm's order"
    );
    let mut resorted = unsorted.clone();
    resorted.sort_by(by_size_and_name);
    assert_eq!(resorted, sorted);
    assert_eq!(
        unsorted,
        read_unsorted(&exe).unwrap(),
        "two reads, two orders"
    );
    assert!(read_unsorted(Path::new("/nonexistent/vmlinux"))
        .unwrap_err()
        .to_string()
        .contains("/nonexistent/vmlinux"));
}

#[test]
fn truncated_elf_is_an_error_naming_the_file() {
    let exe = std::env::current_exe().expect("test executable path");
    let bytes = std::fs::read(&exe).unwrap();
    let dir = tempfile::tempdir().unwrap();
    for keep in [0, 3, 40, 64, 4096, bytes.len() / 2, bytes.len() - 1] {
        let path = dir.path().join(format!("cut-{keep}.elf"));
        std::fs::write(&path, &bytes[..keep]).unwrap();
        let message = error_text(&path);
        assert!(
            message.contains(&path.display().to_string()),
            "cut at {keep}: {message}"
        );
    }
    // The whole file reads fine, so the errors come from the truncation.
    read_symbols_of(&bytes).expect("the complete file is readable");
}

#[test]
fn non_elf_and_missing_files_are_errors_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("notes.txt");
    std::fs::write(&text, "00000010 T not_an_elf_file\n").unwrap();
    let archive = dir.path().join("lib.a");
    std::fs::write(&archive, "!<arch>\n").unwrap();
    let missing = dir.path().join("missing.o");
    for path in [&text, &archive, &missing] {
        let message = error_text(path);
        assert!(message.contains(&path.display().to_string()), "{message}");
    }
}
