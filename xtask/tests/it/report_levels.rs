//! The optimization level each side of a size comparison was built at:
//! named in the pair line and the Markdown columns, and a comparison of
//! two levels says so before any figure (sizes at two levels differ by
//! the level, not the change); a forged level is
//! refused when the result is read.

use crate::common::report_fixture;

use report_fixture::{render, request, Fixture};
use xtask::report::{self, Format, Style};

/// An `-Os` build against an `-O2` one (a variant whose kconfig lines
/// switch the level, as `baseline-os` does) says so in the report's first
/// lines, and the pair line and the Markdown columns name each side's
/// level. Without kconfig lines to explain it, the report refuses the pair
/// and names both levels.
#[test]
fn an_os_build_against_an_o2_build_says_so_first() {
    let f = Fixture::new();
    f.standard("bcm53xx");
    let mut os = f.result(
        "bcm53xx",
        "no-swap",
        &[("zImage", 1_801_000), ("vmlinux.lzma", 1_490_000)],
        (29_000, 3_900, 1_990),
    );
    os.kbuild_cflags.effective = "os".to_string();
    os.config_sha256 = "d".repeat(64);
    f.write(os.clone(), report_fixture::BASE_SYMBOLS);
    let req = request(&["bcm53xx"], &["no-swap"]);
    let text = render(&f, &req, Format::Text, Style::default());
    let first: Vec<&str> = text.lines().take(4).collect();
    assert_eq!(
        first,
        [
            "BCM47094 (bcm53xx/generic):",
            "note: baseline is built -O2 and no-swap -Os (the -O each compiler was given): the change is the two optimization levels', not only the variants' flags",
            "note: .config differs as intended: no-swap sets # CONFIG_SWAP is not set",
            "baseline (-O2) → no-swap (-Os):",
        ],
        "{text}"
    );
    let markdown = render(&f, &req, Format::Markdown, Style::default());
    assert!(
        markdown.contains("> Note: baseline is built -O2 and no-swap -Os")
            && markdown.contains("| | baseline (-O2) | no-swap (-Os) | change |"),
        "{markdown}"
    );
    os.variant.kconfig.clear();
    f.write(os, report_fixture::BASE_SYMBOLS);
    let err = format!("{:#}", report::load(&f.layout(), &req).unwrap_err());
    assert!(
        err.contains("neither variant adds kconfig lines")
            && err.contains("baseline is built -O2 and no-swap -Os"),
        "{err}"
    );
}

/// The hostile trial's F17 and F9: the level is the one the compiler was
/// given (an `os` branch whose flags say `-O2`, as `o2-align-64`'s do, is
/// `-O2`, with the note even though the `.config`s are equal), and a
/// `kbuild_cflags.effective` that is not `os` or `o2` (a newline in it
/// forged report lines) is refused when the result is read.
#[test]
fn the_level_is_the_flags_and_a_forged_one_is_refused() {
    let f = Fixture::new();
    let mut base = f.result(
        "bcm53xx",
        "baseline",
        &[("zImage", 1_840_424), ("vmlinux.lzma", 1_520_111)],
        (30_000, 4_000, 2_000),
    );
    base.kbuild_cflags.effective = "os".to_string();
    f.write(base, report_fixture::BASE_SYMBOLS);
    let mut aligned = f.result(
        "bcm53xx",
        "no-reorder-blocks",
        &[("zImage", 1_900_000), ("vmlinux.lzma", 1_560_000)],
        (31_000, 4_000, 2_000),
    );
    aligned.kbuild_cflags.effective = "os".to_string();
    aligned.kbuild_cflags.os = "-O2 -falign-functions=64".to_string();
    f.write(aligned.clone(), report_fixture::VARIANT_SYMBOLS);
    let req = request(&["bcm53xx"], &["no-reorder-blocks"]);
    let text = render(&f, &req, Format::Text, Style::default());
    let first: Vec<&str> = text.lines().take(3).collect();
    assert_eq!(
        first,
        [
            "BCM47094 (bcm53xx/generic):",
            "note: baseline is built -Os and no-reorder-blocks -O2 (the -O each compiler was given): the change is the two optimization levels', not only the variants' flags",
            "baseline (-Os) → no-reorder-blocks (-O2):",
        ],
        "{text}"
    );
    // OpenWrt's KCFLAGS come last on the compile command: they win.
    aligned.kbuild_cflags.compile_command =
        "gcc -O2 -falign-functions=64 -fno-caller-saves -O3 -c -o init/main.o init/main.c"
            .to_string();
    f.write(aligned.clone(), report_fixture::VARIANT_SYMBOLS);
    let text = render(&f, &req, Format::Text, Style::default());
    assert!(
        text.contains("baseline (-Os) → no-reorder-blocks (-O3):"),
        "{text}"
    );
    aligned.kbuild_cflags.effective = "o2) → x (-O2):\nzImage size: 1 → 2 (+100.00%)".to_string();
    f.write(aligned, report_fixture::VARIANT_SYMBOLS);
    let err = format!("{:#}", report::load(&f.layout(), &req).unwrap_err());
    assert!(
        err.contains("kbuild_cflags.effective is") && err.contains("not \"os\" or \"o2\""),
        "{err}"
    );
}
