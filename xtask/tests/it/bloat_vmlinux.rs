//! Real kernels: the vmlinux pair a build leaves in `target/xtask/results`
//! (`arm-tiny`, `baseline` and `no-reorder-blocks`; CI builds them before
//! the tests, so there a missing file fails) compared with the cross
//! `nm --size-sort` and with `python3 scripts/bloat-o-meter -p <prefix>` in
//! every mode and both directions. Elsewhere missing files are skipped by the
//! gate (`common/gate.rs`);
//! `XTASK_TEST_VMLINUX_OLD`/`_NEW` (and `_PREFIX`) pick another pair.

use crate::common::elf_tools;
use crate::common::gate;

use xtask::measure::bloat::{self, BloatMode};
use xtask::measure::symbols::read_symbols;

#[test]
fn vmlinux_symbols_match_cross_nm() {
    for pair in elf_tools::vmlinux_pairs() {
        if !elf_tools::cross_tools(gate::Needs::new(), &pair.prefix, &["nm"]).met() {
            continue;
        }
        for file in [&pair.old, &pair.new] {
            let ours = read_symbols(file).expect("reading vmlinux symbols");
            assert!(!ours.symbols.is_empty(), "{file:?} has no symbols");
            let ours = ours.to_nm_text();
            let theirs = elf_tools::run_nm_size_sort(&pair.prefix, file);
            assert!(
                elf_tools::sorted_lines(&ours) == elf_tools::sorted_lines(&theirs),
                "{} {file:?}: {}",
                pair.label,
                elf_tools::first_difference(&ours, &theirs).unwrap_or_default()
            );
        }
    }
}

#[test]
fn vmlinux_diff_matches_bloat_o_meter() {
    let pairs = elf_tools::vmlinux_pairs();
    if pairs.is_empty() || !elf_tools::with_bloat_o_meter(gate::Needs::new()).met() {
        return;
    }
    let script = elf_tools::bloat_o_meter();
    let mut failures = Vec::new();
    for pair in &pairs {
        let old = read_symbols(&pair.old)
            .expect("reading old vmlinux")
            .symbols;
        let new = read_symbols(&pair.new)
            .expect("reading new vmlinux")
            .symbols;
        for (a, b, a_path, b_path) in [
            (&old, &new, &pair.old, &pair.new),
            (&new, &old, &pair.new, &pair.old),
        ] {
            for mode in BloatMode::ALL {
                let ours = bloat::diff(a, b, mode).render();
                let theirs =
                    elf_tools::run_bloat_o_meter(&script, &pair.prefix, mode, a_path, b_path);
                assert!(
                    theirs.starts_with("add/remove: "),
                    "bloat-o-meter printed {theirs:?}"
                );
                if let Some(report) = elf_tools::first_difference(&ours, &theirs) {
                    failures.push(format!(
                        "{} {:?} {a_path:?} → {b_path:?}: {report}",
                        pair.label,
                        mode.flag()
                    ));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
