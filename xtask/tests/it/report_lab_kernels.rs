//! The lab's kernels (`cargo xtask lab` builds them as target
//! `<target>-lab`) in the size report: a target of their own, headed as the
//! QEMU machine's lab kernel, known only by their directory name (not by
//! the router's OpenWrt name or aliases, which their results also record),
//! and built by `cargo xtask lab --build-only`, not `cargo xtask build`.

use crate::common::report_fixture;

use expect_test::expect;
use report_fixture::{render, request, Fixture};
use xtask::report::{self, Format, Style};
use xtask::results::BuildResult;

/// bcm53xx's lab kernel for `variant`, as `lab` records it: the router's
/// target record renamed, the QEMU machine as its SoC, not in `all`.
fn lab_kernel(f: &Fixture, variant: &str, text: u64) -> BuildResult {
    let mut r = f.result("bcm53xx", variant, &[], (text, 4_000, 2_000));
    r.target.name = "bcm53xx-lab".to_string();
    r.target.soc = "QEMU vexpress-a9 (cortex-a9)".to_string();
    r.target.in_all = false;
    r
}

fn error(f: &Fixture, targets: &[&str]) -> String {
    format!(
        "{:#}",
        report::load(&f.layout(), &request(targets, &[])).unwrap_err()
    )
}

#[test]
fn a_lab_kernel_pair_is_its_own_target() {
    let f = Fixture::new();
    f.write(lab_kernel(&f, "baseline", 30_000), &[]);
    f.write(lab_kernel(&f, "no-reorder-blocks", 29_000), &[]);
    let out = render(&f, &request(&[], &[]), Format::Text, Style::default());
    expect![[r#"
        QEMU vexpress-a9 (cortex-a9) (lab kernel of bcm53xx/generic):
        baseline (-O2) → no-reorder-blocks (-O2):
        vmlinux size: 34396 → 33396 (-2.91%)
        vmlinux text: 30000 → 29000 (-3.33%)
        vmlinux data: 4000 → 4000 (+0.00%)
        vmlinux bss: 2000 → 2000 (+0.00%)
        vmlinux dec: 36000 → 35000 (-2.78%)

           text	   data	    bss	    dec	    hex	filename
          30000	   4000	   2000	  36000	   8ca0	target/xtask/results/bcm53xx-lab/baseline/vmlinux
          29000	   4000	   2000	  35000	   88b8	target/xtask/results/bcm53xx-lab/no-reorder-blocks/vmlinux
    "#]]
    .assert_eq(&out);
    // By name, yes; by the router's OpenWrt name, no: that is the router.
    let by_name = render(
        &f,
        &request(&["bcm53xx-lab"], &[]),
        Format::Text,
        Style::default(),
    );
    assert_eq!(by_name, out);
    expect![[r#"unknown target "bcm53xx/generic": no results record it as their target, OpenWrt target or alias (targets with results: bcm53xx-lab (lab kernel of bcm53xx)); if targets/ defines it, build it first with `cargo xtask build --target bcm53xx/generic --variant baseline`"#]]
    .assert_eq(&error(&f, &["bcm53xx/generic"]));
}

#[test]
fn a_lab_kernel_without_a_variant_names_the_lab_command() {
    let f = Fixture::new();
    f.standard("ath79");
    f.write(lab_kernel(&f, "baseline", 30_000), &[]);
    let report = report::load(&f.layout(), &request(&[], &[])).unwrap();
    expect![[r#"
        [
            "bcm53xx-lab: not compared, no variant results yet (`cargo xtask lab --build-only --target bcm53xx --variant <VARIANT>`)",
        ]
    "#]]
    .assert_debug_eq(&report.skipped);
    expect![[r#"bcm53xx-lab: only baseline has results, nothing to compare it with; build a variant with `cargo xtask lab --build-only --target bcm53xx --variant <VARIANT>` (variants with results: no-reorder-blocks)"#]]
    .assert_eq(&error(&f, &["bcm53xx-lab"]));
}
