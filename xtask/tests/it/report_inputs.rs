//! `size-report` reads what the builds recorded, never `targets/` or
//! `patches/variants.toml`: editing or deleting those after the build
//! changes no report.

use crate::common::report_fixture;

use report_fixture::{request, Fixture, BASE_SYMBOLS};
use xtask::measure::bloat::BloatMode;
use xtask::report::{self, Format, Style, SymbolOptions};

/// Both targets with baseline and no-reorder-blocks; bcm53xx also with
/// no-swap (its kconfig line changes the config) and deinline (its own
/// patch).
fn built() -> Fixture {
    let f = Fixture::new();
    f.standard("bcm53xx");
    f.standard("ath79");
    let mut no_swap = f.result(
        "bcm53xx",
        "no-swap",
        &[("zImage", 1_801_000), ("vmlinux.lzma", 1_490_000)],
        (29_000, 3_900, 1_990),
    );
    no_swap.config_sha256 = "d".repeat(64);
    f.write(no_swap, BASE_SYMBOLS);
    let deinline = f.result(
        "bcm53xx",
        "deinline",
        &[("zImage", 1_840_000), ("vmlinux.lzma", 1_520_000)],
        (29_990, 4_000, 2_000),
    );
    f.write(deinline, BASE_SYMBOLS);
    f
}

/// Every format of several requests (target names, OpenWrt targets,
/// aliases, `all`, chosen variants, symbol diffs), in order.
fn render_all(f: &Fixture) -> Vec<(String, String)> {
    let mut with_symbols = request(&["bcm53xx/generic"], &[]);
    with_symbols.symbols = Some(SymbolOptions {
        mode: BloatMode::Categorized,
        fold_clones: true,
    });
    let requests = [
        request(&[], &[]),
        request(&["all"], &["no-swap"]),
        request(&["ar71xx", "bcm53xx"], &[]),
        request(&["bcm53xx/generic"], &["deinline", "no-swap"]),
        with_symbols,
    ];
    let mut out = Vec::new();
    for req in &requests {
        let report = report::load(&f.layout(), req).expect("loading the report");
        for format in Format::ALL {
            if format == Format::Svg && req.symbols.is_some() {
                continue;
            }
            for style in [
                Style::default(),
                Style {
                    decimal_comma: true,
                },
            ] {
                let text = report::render(&report, format, &style).expect("rendering");
                out.push((format!("{req:?} {format} {style:?}"), text));
            }
        }
    }
    out
}

#[test]
fn report_ignores_inputs_edited_after_the_build() {
    let f = built();
    let before = render_all(&f);

    // Edit: ath79 loses its alias, reorders its artifacts and leaves `all`;
    // bcm53xx's file and variants.toml are deleted.
    let root = f.root();
    std::fs::write(
        root.join("targets/ath79.toml"),
        r#"openwrt = "ath79/nand"
soc = "QCA9563"
cpu = "MIPS 74Kc"
arch = "mips"
cross_compile = "mips-linux-gnu-"
compiler_package = "gcc-mips-linux-gnu"
kernel = "6.6"
in_all = false
artifacts = ["uImage", "vmlinux.lzma", "vmlinux"]
[uimage]
load_address = "0x80060000"
[kconfig]
base = "allnoconfig"
"#,
    )
    .unwrap();
    std::fs::remove_file(root.join("targets/bcm53xx.toml")).unwrap();
    std::fs::remove_file(root.join("patches/variants.toml")).unwrap();

    let after = render_all(&f);
    assert_eq!(before.len(), after.len());
    for ((what, b), (_, a)) in before.iter().zip(&after) {
        assert_eq!(
            b, a,
            "{what} changed after editing targets/ and variants.toml"
        );
    }

    // variants.toml rewritten with other variants: the same again.
    std::fs::write(
        root.join("patches/variants.toml"),
        "[variants.baseline]\ndescription = \"other\"\nos = \"-Os\"\no2 = \"-O2\"\n",
    )
    .unwrap();
    for ((what, b), (_, a)) in before.iter().zip(&render_all(&f)) {
        assert_eq!(b, a, "{what} changed after rewriting variants.toml");
    }
}
