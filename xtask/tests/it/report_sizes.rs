//! Differential tests of the report's sections block against binutils
//! `size` (the cross `arm-linux-gnueabi-size`): on fixture vmlinux files,
//! and on the real arm-tiny baseline / no-reorder-blocks pair that
//! `cargo xtask build --target arm-tiny --variant baseline --variant
//! no-reorder-blocks` leaves in `target/xtask/results/`.
//!
//! When the tool or the real results are missing the gate (`common/gate.rs`)
//! skips the tests, except under CI (the `CI` environment variable set),
//! where that is a failure.

use crate::common::gate;
use crate::common::report_fixture;

use std::path::Path;

use xshell::{cmd, Shell};
use xtask::measure::bloat::BloatMode;
use xtask::report::{self, text, Format, ReportRequest, Style, SymbolOptions};
use xtask::util::layout::Layout;

const SIZE: &str = "arm-linux-gnueabi-size";

fn needs_size() -> gate::Needs {
    gate::Needs::new().program(SIZE, "binutils-arm-linux-gnueabi")
}

fn request(target: &str) -> ReportRequest {
    ReportRequest {
        targets: vec![target.to_string()],
        base: "baseline".to_string(),
        variants: vec!["no-reorder-blocks".to_string()],
        symbols: None,
        by: None,
        devices: None,
        rootfs: None,
        allow_mismatch: false,
        agreement: false,
        lab: xtask::report::LabRuns::Newest,
    }
}

/// `size` run in `root` on the vmlinux files of `target`'s base and variant,
/// with the same relative paths the report prints.
fn binutils_size(root: &Path, target: &str) -> String {
    let sh = Shell::new().unwrap();
    sh.change_dir(root);
    let base = format!("target/xtask/results/{target}/baseline/vmlinux");
    let variant = format!("target/xtask/results/{target}/no-reorder-blocks/vmlinux");
    let mut out = cmd!(sh, "{SIZE} {base} {variant}")
        .env("LC_ALL", "C")
        .read()
        .expect("running size");
    out.push('\n');
    out
}

#[test]
fn sections_block_equals_size_on_fixtures() {
    if !needs_size().met() {
        return;
    }
    let f = report_fixture::Fixture::new();
    f.standard("bcm53xx");
    let report = report::load(&f.layout(), &request("bcm53xx")).unwrap();
    let ours = text::size_block(&report, &report.targets[0]);
    assert_eq!(ours, binutils_size(f.root(), "bcm53xx"));
    // The text format carries the block verbatim.
    let out = report::render(&report, Format::Text, &Style::default()).unwrap();
    assert!(out.contains(&ours), "{out}");
}

#[test]
fn sections_block_equals_size_on_real_arm_tiny() {
    let layout = Layout::from_manifest_dir();
    let how =
        "`cargo xtask build --target arm-tiny --variant baseline --variant no-reorder-blocks`";
    let needs = ["baseline", "no-reorder-blocks"]
        .iter()
        .fold(needs_size(), |n, v| {
            n.file(&layout.results_dir("arm-tiny", v).join("result.json"), how)
        });
    if !needs.met() {
        return;
    }
    let report = report::load(&layout, &request("arm-tiny")).unwrap();
    let t = &report.targets[0];
    let ours = text::size_block(&report, t);
    assert_eq!(ours, binutils_size(layout.root(), "arm-tiny"));
    for format in Format::ALL {
        let out = report::render(&report, format, &Style::default()).unwrap();
        assert!(!out.is_empty(), "{format}");
    }
    // The symbol diff of the real pair renders (bloat-o-meter -t).
    let mut req = request("arm-tiny");
    req.symbols = Some(SymbolOptions {
        mode: BloatMode::Text,
        fold_clones: false,
    });
    let report = report::load(&layout, &req).unwrap();
    let c = &report.targets[0].comparisons[0];
    let diff = c.symbols.as_ref().expect("symbol diff");
    assert_eq!(diff.tables.len(), 1);
    let out = report::render(&report, Format::Text, &Style::default()).unwrap();
    assert!(out.contains("Symbols, bloat-o-meter -t "), "{out}");
    assert!(out.contains("Total: Before="), "{out}");
}

/// Every other target whose baseline and no-reorder-blocks results exist
/// (the router targets, when built): the block equals that target's cross
/// `size`. Targets without both results are left out with a note (the CI
/// build makes only arm-tiny); a built target without its binutils is a
/// skip of the gate.
#[test]
fn sections_block_equals_size_on_every_real_target() {
    let layout = Layout::from_manifest_dir();
    let targets = xtask::inputs::targets::load_all(&layout.targets_dir()).unwrap();
    for t in targets.iter().filter(|t| t.name != "arm-tiny") {
        let built = ["baseline", "no-reorder-blocks"]
            .iter()
            .all(|v| layout.results_dir(&t.name, v).join("result.json").is_file());
        if !built {
            // Optional: CI builds only arm-tiny, so no gate here.
            eprintln!("note: skipping {}: no results", t.name);
            continue;
        }
        // Built, so its cross binutils should be here (`cargo xtask setup`).
        let size = format!("{}size", t.cross_compile);
        let package = format!("binutils-{}", t.cross_compile.trim_end_matches('-'));
        if !gate::Needs::new().program(&size, &package).met() {
            continue;
        }
        let report = report::load(&layout, &request(&t.name)).unwrap();
        let ours = text::size_block(&report, &report.targets[0]);
        let sh = Shell::new().unwrap();
        sh.change_dir(layout.root());
        let base = format!("target/xtask/results/{}/baseline/vmlinux", t.name);
        let variant = format!("target/xtask/results/{}/no-reorder-blocks/vmlinux", t.name);
        let mut theirs = cmd!(sh, "{size} {base} {variant}")
            .env("LC_ALL", "C")
            .read()
            .unwrap();
        theirs.push('\n');
        assert_eq!(ours, theirs, "{}", t.name);
    }
}
