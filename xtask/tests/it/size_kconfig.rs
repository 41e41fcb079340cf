//! `size-report --by kconfig`'s known answer: arm-tiny built
//! with `CONFIG_EPOLL=y` (variant `epoll`) and without (`baseline`, which
//! turns the symbol off). The base's attribution predicts the change, the
//! `CONFIG_EPOLL` row's bytes (fs/eventpoll.o); binutils `size` of the two
//! vmlinux files measures it. They must agree within 5 %: what else
//! changes is the few inline hooks (`eventpoll_release()` in `__fput()`),
//! the `f_ep` member of `struct file` and the linker's padding.
//!
//! Also: each side's rows add up to `size`'s text, data and bss, the
//! symbol's row is the object's bytes of `--by file`, and the objects of
//! the `(unknown)` row are listed, not dropped.
//!
//! `cargo xtask test` builds the three arm-tiny variants first; by hand:
//! `cargo xtask build --target arm-tiny --variant epoll --variant baseline`.

use crate::common::gate;

use std::path::Path;
use std::process::Command;

use xtask::host::selftest::{e2e_results_dir, E2E_KCONFIG_BASE, E2E_TARGET};
use xtask::measure::kconfig_map::{ALWAYS, UNKNOWN};
use xtask::measure::linkmap::Grouping;
use xtask::report::attribution::AttributionDiff;
use xtask::report::{self, ReportRequest};
use xtask::util::layout::Layout;

const PREFIX: &str = "arm-linux-gnueabi-";
const SYMBOL: &str = "CONFIG_EPOLL";
const OBJECT: &str = "fs/eventpoll.o";

/// `size FILE` (Berkeley): text, data, bss.
fn size_berkeley(file: &Path) -> [u64; 3] {
    let out = Command::new(format!("{PREFIX}size"))
        .arg(file)
        .output()
        .expect("running size");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().nth(1).expect("size's second line");
    let n: Vec<u64> = line
        .split_whitespace()
        .take(3)
        .map(|x| x.parse().expect("a number"))
        .collect();
    [n[0], n[1], n[2]]
}

fn diff_by(g: Grouping) -> AttributionDiff {
    let request = ReportRequest {
        targets: vec![E2E_TARGET.to_string()],
        base: E2E_KCONFIG_BASE.to_string(),
        variants: vec!["baseline".to_string()],
        symbols: None,
        by: Some(g),
        devices: None,
        rootfs: None,
        allow_mismatch: false,
        agreement: false,
        lab: report::LabRuns::Off,
    };
    let r = report::load(&Layout::from_manifest_dir(), &request).expect("the report");
    r.targets[0].comparisons[0]
        .attribution
        .clone()
        .expect("an attribution")
}

#[test]
fn turning_one_symbol_off_costs_what_its_row_predicts() {
    let dirs = [
        e2e_results_dir(E2E_KCONFIG_BASE),
        e2e_results_dir("baseline"),
    ];
    let how = "`cargo xtask build --target arm-tiny --variant epoll --variant baseline`; \
               `cargo xtask test` builds them first";
    let mut needs =
        gate::Needs::new().program(&format!("{PREFIX}size"), "binutils-arm-linux-gnueabi");
    for d in &dirs {
        needs = needs.file(&d.join("attribution.json"), how);
    }
    if !needs.met() {
        return;
    }
    let sizes = dirs.each_ref().map(|d| size_berkeley(&d.join("vmlinux")));
    let diff = diff_by(Grouping::Kconfig);

    // Each side's rows add up to size's figures.
    for (side, want) in sizes.iter().enumerate() {
        let sum = diff.rows.iter().fold([0u64; 3], |[t, d, b], r| {
            let c = if side == 0 { r.before } else { r.after };
            [t + c.text, d + c.data, b + c.bss]
        });
        assert_eq!(&sum, want, "side {side}: the rows against size");
    }
    // Every (unknown) byte has its objects listed.
    for (side, listed) in diff.unresolved.iter().enumerate() {
        let unknown = diff.rows.iter().find(|r| r.name == UNKNOWN);
        let bytes = unknown.map_or(0, |r| {
            if side == 0 {
                r.before.dec()
            } else {
                r.after.dec()
            }
        });
        assert_eq!(bytes > 0, !listed.is_empty(), "side {side}: {listed:?}");
        assert!(
            listed.len() <= 5,
            "side {side}: too many unknown objects: {listed:?}"
        );
    }
    assert!(diff.rows.iter().any(|r| r.name == ALWAYS));

    let row = diff
        .rows
        .iter()
        .find(|r| r.name == SYMBOL)
        .expect("a CONFIG_EPOLL row");
    assert_eq!(row.after.dec(), 0, "{SYMBOL} is off in baseline");
    // The symbol's row is its object's bytes (it builds one object).
    let by_file = diff_by(Grouping::File);
    let object = by_file
        .rows
        .iter()
        .find(|r| r.name == OBJECT)
        .expect("fs/eventpoll.o");
    assert_eq!(object.before, row.before, "{SYMBOL} is {OBJECT}");

    let dec = |s: [u64; 3]| s.iter().sum::<u64>() as i64;
    let predicted = -(row.before.dec() as i64);
    let measured = dec(sizes[1]) - dec(sizes[0]);
    let off = (measured - predicted).abs() as f64 / measured.abs() as f64 * 100.0;
    eprintln!(
        "{SYMBOL} off: predicted {predicted} bytes (the base's {SYMBOL} row), measured {measured} \
         bytes (size's dec), {off:.2} % apart"
    );
    assert!(
        measured < 0,
        "turning {SYMBOL} off shrinks vmlinux: {measured}"
    );
    assert!(
        off <= 5.0,
        "predicted {predicted}, measured {measured}: {off:.2} % apart"
    );
}
