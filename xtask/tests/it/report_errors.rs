//! `size-report` on bad input: each error names what is wrong and how to
//! fix it; `--allow-mismatch` turns comparability errors into warnings
//! printed in the report.

use crate::common::report_fixture;

use report_fixture::{render, request, Fixture, BASE_SYMBOLS};
use xtask::report::{self, Format, ReportRequest, Style, SymbolOptions};
use xtask::results::BuildResult;

fn error(f: &Fixture, req: &ReportRequest) -> String {
    match report::load(&f.layout(), req) {
        Ok(_) => panic!("expected an error for {req:?}"),
        Err(e) => format!("{e:#}"),
    }
}

fn assert_has(message: &str, parts: &[&str]) {
    for p in parts {
        assert!(message.contains(p), "{p:?} missing from:\n{message}");
    }
}

/// bcm53xx baseline + no-reorder-blocks, the variant changed by `edit`.
fn pair_with(edit: impl FnOnce(&mut BuildResult)) -> Fixture {
    let f = Fixture::new();
    f.standard("bcm53xx");
    let dir = f.results_dir("bcm53xx", "no-reorder-blocks");
    let mut r = BuildResult::read(&dir).unwrap();
    edit(&mut r);
    r.write(&dir).unwrap();
    f
}

#[test]
fn nothing_built_says_how_to_build() {
    let f = Fixture::new();
    let e = error(&f, &request(&[], &[]));
    assert_has(
        &e,
        &[
            "no results to compare",
            "cargo xtask build --target all --variant baseline --variant <VARIANT>",
        ],
    );
}

#[test]
fn missing_base_names_the_file_and_the_command() {
    let f = Fixture::new();
    f.standard("bcm53xx");
    let e = error(&f, &request(&["ath79"], &[]));
    assert_has(
        &e,
        &[
            "no results for ath79/baseline",
            "target/xtask/results/ath79/baseline/result.json does not exist",
            "`cargo xtask build --target ath79 --variant baseline`",
        ],
    );
}

#[test]
fn missing_variant_names_the_command_and_known_variants() {
    let f = Fixture::new();
    f.standard("bcm53xx");
    let e = error(&f, &request(&["bcm53xx"], &["no-swap"]));
    assert_has(
        &e,
        &[
            "no results for bcm53xx/no-swap",
            "`cargo xtask build --target bcm53xx --variant no-swap`",
        ],
    );
    // Reports read results only, so the hint lists the variants that have
    // results rather than those variants.toml defines.
    let e = error(&f, &request(&["bcm53xx"], &["typo"]));
    assert_has(
        &e,
        &[
            "no target has results for \"typo\"",
            "variants with results: baseline, no-reorder-blocks",
        ],
    );
}

#[test]
fn unfinished_build_is_called_that() {
    let f = Fixture::new();
    f.standard("bcm53xx");
    let dir = f.results_dir("bcm53xx", "no-swap");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("build.log"), "make: *** [vmlinux] Error 2\n").unwrap();
    let e = error(&f, &request(&["bcm53xx"], &["no-swap"]));
    assert_has(
        &e,
        &[
            "has a build.log but no result.json",
            "failed, was interrupted, or is still running",
        ],
    );
}

#[test]
fn only_the_base_built() {
    let f = Fixture::new();
    let base = f.result("bcm53xx", "baseline", &[("zImage", 1000)], (100, 10, 1));
    f.write(base, &[]);
    let e = error(&f, &request(&["bcm53xx"], &[]));
    assert_has(
        &e,
        &[
            "only baseline has results",
            "cargo xtask build --target bcm53xx --variant <VARIANT>",
        ],
    );
}

#[test]
fn unknown_target_and_variant_equal_to_base() {
    let f = Fixture::new();
    f.standard("bcm53xx");
    // The targets with results are listed (ath79 and its alias ar71xx have
    // none here, and targets/ is not read).
    assert_has(
        &error(&f, &request(&["bcm63xx"], &[])),
        &[
            "unknown target \"bcm63xx\"",
            "targets with results: bcm53xx (bcm53xx/generic)",
        ],
    );
    assert_has(
        &error(&f, &request(&["bcm53xx"], &["baseline"])),
        &["--variant baseline is also the base"],
    );
}

#[test]
fn all_skips_targets_without_results_and_says_so() {
    let f = Fixture::new();
    f.standard("bcm53xx");
    // ath79 has a variant built but no base.
    let variant = f.result(
        "ath79",
        "no-reorder-blocks",
        &[("uImage", 1000)],
        (100, 10, 1),
    );
    f.write(variant, &[]);
    let report = report::load(&f.layout(), &request(&["all"], &[])).unwrap();
    assert_eq!(report.targets.len(), 1);
    assert_eq!(report.skipped.len(), 1, "{:?}", report.skipped);
    assert_has(
        &report.skipped[0],
        &[
            "ath79",
            "cargo xtask build --target ath79 --variant baseline --variant no-reorder-blocks",
        ],
    );
}

/// `all` knows targets by their results: one without any is not mentioned,
/// and one with only other variants' results is mentioned only when its
/// results record `in_all` (a tiny profile built for something else is not
/// news).
#[test]
fn all_mentions_targets_without_asked_results_when_in_all() {
    let f = Fixture::new();
    f.standard("bcm53xx");
    let report = report::load(&f.layout(), &request(&["all"], &[])).unwrap();
    assert!(report.skipped.is_empty(), "{:?}", report.skipped);

    let mut other = f.result("ath79", "no-swap", &[("uImage", 1000)], (100, 10, 1));
    other.target.in_all = false;
    f.write(other.clone(), &[]);
    let req = request(&["all"], &["no-reorder-blocks"]);
    let report = report::load(&f.layout(), &req).unwrap();
    assert!(report.skipped.is_empty(), "{:?}", report.skipped);

    other.target.in_all = true;
    f.write(other, &[]);
    let report = report::load(&f.layout(), &req).unwrap();
    assert_eq!(report.skipped.len(), 1, "{:?}", report.skipped);
    assert_has(
        &report.skipped[0],
        &["ath79: not compared, no baseline results yet (`cargo xtask build --target ath79 --variant baseline --variant no-reorder-blocks`)"],
    );
}

/// `--target` accepts the OpenWrt target and the aliases the results
/// record.
#[test]
fn targets_resolve_through_recorded_names() {
    let f = Fixture::new();
    f.standard("ath79");
    for spelling in ["ath79", "ath79/generic", "ar71xx"] {
        let report = report::load(&f.layout(), &request(&[spelling], &[])).unwrap();
        assert_eq!(report.targets[0].name, "ath79", "{spelling}");
    }
}

#[test]
fn kernel_version_mismatch() {
    let f = pair_with(|r| r.kernel_source.version = "6.12.110".to_string());
    assert_has(
        &error(&f, &request(&["bcm53xx"], &[])),
        &[
            "baseline and no-reorder-blocks were not built from the same inputs",
            "kernel version: baseline has 6.12.117, no-reorder-blocks has 6.12.110",
            "`cargo xtask build --target bcm53xx --variant baseline --variant no-reorder-blocks`",
            "--allow-mismatch",
        ],
    );
}

#[test]
fn kernel_source_mismatch() {
    let f = pair_with(|r| r.kernel_source.sha256 = Some("e".repeat(64)));
    assert_has(
        &error(&f, &request(&["bcm53xx"], &[])),
        &[
            "kernel source sha256: baseline has 585a4a07",
            "no-reorder-blocks has eeee",
        ],
    );
    let f = pair_with(|r| {
        r.kernel_source.origin = "/home/me/linux".to_string();
        r.kernel_source.sha256 = None;
    });
    assert_has(
        &error(&f, &request(&["bcm53xx"], &[])),
        &[
            "kernel source: baseline has /usr/src/linux-source-6.12.tar.xz (sha256 585a4a074597)",
            "/home/me/linux (a tree)",
        ],
    );
}

#[test]
fn target_compiler_patch_mismatch() {
    let f = pair_with(|r| {
        r.target.openwrt = "bcm53xx/other".to_string();
        r.compiler = "arm-linux-gnueabi-gcc (Debian 13.3.0-1) 13.3.0".to_string();
        r.patches.push(xtask::results::PatchRecord {
            name: "generic/backport-6.12/001-fix.patch".to_string(),
            sha256: "f".repeat(64),
        });
    });
    assert_has(
        &error(&f, &request(&["bcm53xx"], &[])),
        &[
            "OpenWrt target: baseline has bcm53xx/generic, no-reorder-blocks has bcm53xx/other",
            "compiler: baseline has arm-linux-gnueabi-gcc (Debian 12.2.0-14) 12.2.0",
            "patch generic/backport-6.12/001-fix.patch: applied to no-reorder-blocks only",
        ],
    );
}

#[test]
fn config_mismatch_unless_the_variant_sets_kconfig() {
    let f = pair_with(|r| r.config_sha256 = "d".repeat(64));
    assert_has(
        &error(&f, &request(&["bcm53xx"], &[])),
        &[".config: baseline has sha256 64ed102bb790, no-reorder-blocks has dddddddddddd, and neither variant adds kconfig lines"],
    );
    // no-swap adds a kconfig line: a different config is what it is for.
    let f = Fixture::new();
    f.standard("bcm53xx");
    let mut r = f.result("bcm53xx", "no-swap", &[("zImage", 1)], (1, 1, 1));
    r.config_sha256 = "d".repeat(64);
    f.write(r, BASE_SYMBOLS);
    let report = report::load(&f.layout(), &request(&["bcm53xx"], &["no-swap"])).unwrap();
    let c = &report.targets[0].comparisons[0];
    assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    assert_eq!(
        c.notes,
        [".config differs as intended: no-swap sets # CONFIG_SWAP is not set"]
    );
}

#[test]
fn allow_mismatch_puts_the_warning_in_every_format() {
    let f = pair_with(|r| r.kernel_source.version = "6.12.110".to_string());
    let mut req = request(&["bcm53xx"], &[]);
    req.allow_mismatch = true;
    let report = report::load(&f.layout(), &req).unwrap();
    for format in Format::ALL {
        let out = report::render(&report, format, &Style::default()).unwrap();
        // The SVG wraps long warnings over several <text> elements, so
        // compare the text without tags and with whitespace collapsed.
        let mut text = String::new();
        let mut in_tag = false;
        for ch in out.chars() {
            match ch {
                '<' => in_tag = true,
                '>' => in_tag = false,
                _ if !in_tag => text.push(ch),
                _ => {}
            }
        }
        let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            flat.contains("kernel version: baseline has 6.12.117, no-reorder-blocks has 6.12.110"),
            "{format}:\n{out}"
        );
    }
}

#[test]
fn result_in_the_wrong_directory() {
    let f = Fixture::new();
    f.standard("bcm53xx");
    let from = f.results_dir("bcm53xx", "no-reorder-blocks");
    let to = f.results_dir("bcm53xx", "copy");
    std::fs::create_dir_all(&to).unwrap();
    for file in ["result.json", "vmlinux"] {
        std::fs::copy(from.join(file), to.join(file)).unwrap();
    }
    assert_has(
        &error(&f, &request(&["bcm53xx"], &["copy"])),
        &["records target \"bcm53xx\" variant \"no-reorder-blocks\" but lies in the directory for bcm53xx/copy"],
    );
}

#[test]
fn truncated_vmlinux() {
    let f = Fixture::new();
    f.standard("bcm53xx");
    let vmlinux = f
        .results_dir("bcm53xx", "no-reorder-blocks")
        .join("vmlinux");
    let bytes = std::fs::read(&vmlinux).unwrap();
    std::fs::write(&vmlinux, &bytes[..bytes.len() / 2]).unwrap();
    assert_has(
        &error(&f, &request(&["bcm53xx"], &[])),
        &[
            "no-reorder-blocks/vmlinux is 17140 bytes but",
            "records 34280 bytes: the file is truncated",
            "`cargo xtask build --target bcm53xx --variant no-reorder-blocks`",
        ],
    );
}

#[test]
fn non_elf_vmlinux() {
    let f = Fixture::new();
    f.standard("bcm53xx");
    let vmlinux = f.results_dir("bcm53xx", "baseline").join("vmlinux");
    let len = std::fs::metadata(&vmlinux).unwrap().len() as usize;
    std::fs::write(&vmlinux, vec![b'x'; len]).unwrap();
    assert_has(
        &error(&f, &request(&["bcm53xx"], &[])),
        &[
            "baseline/vmlinux: not a readable ELF file",
            "`cargo xtask build --target bcm53xx --variant baseline`",
        ],
    );
}

#[test]
fn missing_vmlinux() {
    let f = Fixture::new();
    f.standard("bcm53xx");
    std::fs::remove_file(f.results_dir("bcm53xx", "baseline").join("vmlinux")).unwrap();
    assert_has(
        &error(&f, &request(&["bcm53xx"], &[])),
        &["baseline/vmlinux is listed in", "cannot be read"],
    );
}

#[test]
fn symbols_have_no_svg_form() {
    let f = Fixture::new();
    f.standard("bcm53xx");
    let mut req = request(&["bcm53xx"], &[]);
    req.symbols = Some(SymbolOptions::default());
    let e = report::run(&f.layout(), &req, Format::Svg, &Style::default(), None).unwrap_err();
    assert_has(&format!("{e:#}"), &["--symbols has no SVG form"]);
}

#[test]
fn another_lzma_dictionary_is_a_mismatch() {
    let f = pair_with(|r| {
        r.lzma = Some(xtask::results::LzmaRecord {
            lc: 1,
            lp: 2,
            pb: 2,
            dict_size: 1 << 20,
        })
    });
    assert_has(
        &error(&f, &request(&["bcm53xx"], &[])),
        &[
            "LZMA parameters: baseline has not recorded (a 1 MiB dictionary), no-reorder-blocks has lc1 lp2 pb2, 1048576-byte dictionary",
            "--allow-mismatch",
        ],
    );
}

#[test]
fn an_interrupted_base_is_named_when_nothing_else_can_be_compared() {
    let f = Fixture::new();
    f.standard("bcm53xx");
    let base = f.results_dir("bcm53xx", "baseline");
    std::fs::remove_file(base.join("result.json")).unwrap();
    std::fs::write(base.join("build.log"), "make: interrupted\n").unwrap();
    let err = error(&f, &request(&[], &[]));
    assert_has(
        &err,
        &[
            "bcm53xx: not compared, no baseline results yet",
            "cargo xtask build --target bcm53xx --variant baseline --variant no-reorder-blocks",
        ],
    );
}

/// A result.json that is a symlink to /dev/zero is named as what it is;
/// before, size-report said the build had failed or was interrupted.
#[test]
fn a_result_json_that_is_a_device_is_named_not_missing() {
    let f = Fixture::new();
    f.standard("bcm53xx");
    let record = f.results_dir("bcm53xx", "baseline").join("result.json");
    std::fs::remove_file(&record).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &record).unwrap();
    for req in [request(&["bcm53xx"], &[]), request(&[], &[])] {
        let e = error(&f, &req);
        assert_has(
            &e,
            &[
                "baseline/result.json: not a result.json",
                "it is a symlink to /dev/zero, a character device, not a regular file",
                "`cargo xtask build --target bcm53xx --variant baseline`",
            ],
        );
        assert!(!e.contains("failed, was interrupted"), "{e}");
    }
}

/// Every artifact's recorded size is checked against its file, not only
/// vmlinux's: a recorded u64::MAX printed `18446744073709551615 → 1871328
/// (-100.00%)`, a recorded 0 printed `n/a`.
#[test]
fn every_artifact_is_checked_against_its_file() {
    for recorded in [u64::MAX, 0] {
        let f = pair_with(|r| r.artifacts.get_mut("zImage").unwrap().size = recorded);
        assert_has(
            &error(&f, &request(&["bcm53xx"], &[])),
            &[
                "no-reorder-blocks/zImage is 1871328 bytes but",
                &format!("records {recorded} bytes: the file is truncated or was replaced"),
                "`cargo xtask build --target bcm53xx --variant no-reorder-blocks`",
            ],
        );
    }
    // An empty artifact, recorded as such, is no image.
    let f = pair_with(|r| r.artifacts.get_mut("vmlinux.lzma").unwrap().size = 0);
    let lzma = f
        .results_dir("bcm53xx", "no-reorder-blocks")
        .join("vmlinux.lzma");
    std::fs::write(&lzma, "").unwrap();
    assert_has(
        &error(&f, &request(&["bcm53xx"], &[])),
        &["no-reorder-blocks/vmlinux.lzma is empty", "rebuild"],
    );
    // A missing artifact.
    let f = pair_with(|_| {});
    std::fs::remove_file(f.results_dir("bcm53xx", "baseline").join("zImage")).unwrap();
    assert_has(
        &error(&f, &request(&["bcm53xx"], &[])),
        &["baseline/zImage is listed in", "cannot be read"],
    );
}

/// Two results with one build key (the same inputs) but different bytes
/// are reported: the build is not reproducible.
#[test]
fn one_build_key_with_different_bytes_is_reported() {
    let f = Fixture::new();
    f.standard("bcm53xx");
    let key = BuildResult::read(&f.results_dir("bcm53xx", "baseline"))
        .unwrap()
        .build_key;
    let dir = f.results_dir("bcm53xx", "no-reorder-blocks");
    let mut r = BuildResult::read(&dir).unwrap();
    r.build_key = key;
    r.write(&dir).unwrap();
    let text = render(
        &f,
        &request(&["bcm53xx"], &[]),
        Format::Text,
        Style::default(),
    );
    assert!(
        text.contains("the same build key")
            && text.contains("zImage")
            && text.contains("not reproducible"),
        "{text}"
    );
}
