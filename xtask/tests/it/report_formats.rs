//! Snapshot tests of every `size-report` format on fixture results (see
//! `common/report_fixture.rs`: result.json files and small ELF vmlinux
//! files written by the test). Update with `UPDATE_EXPECT=1 cargo test`.

use crate::common::report_fixture;

use expect_test::{expect, expect_file, Expect};
use report_fixture::{render, request, two_targets, Fixture};
use xtask::report::{self, Format, Style};

fn check(format: Format, style: Style, expected: Expect) {
    let f = two_targets();
    expected.assert_eq(&render(&f, &request(&[], &[]), format, style));
}

#[test]
fn text() {
    check(
        Format::Text,
        Style::default(),
        expect![[r#"
            QCA9558 (ath79/generic):
            baseline (-O2) → no-reorder-blocks (-O2):
            vmlinux size: 34556 → 34280 (-0.80%)
            vmlinux.lzma size: 1520111 → 1519000 (-0.07%)
            uImage size: 1840424 → 1871328 (+1.68%)
            vmlinux text: 30000 → 29712 (-0.96%)
            vmlinux data: 4000 → 4004 (+0.10%)
            vmlinux bss: 2000 → 2000 (+0.00%)
            vmlinux dec: 36000 → 35716 (-0.79%)

               text	   data	    bss	    dec	    hex	filename
              30000	   4000	   2000	  36000	   8ca0	target/xtask/results/ath79/baseline/vmlinux
              29712	   4004	   2000	  35716	   8b84	target/xtask/results/ath79/no-reorder-blocks/vmlinux

            BCM47094 (bcm53xx/generic):
            baseline (-O2) → no-reorder-blocks (-O2):
            zImage size: 1840424 → 1871328 (+1.68%)
            vmlinux size: 34556 → 34280 (-0.80%)
            vmlinux.lzma size: 1520111 → 1519000 (-0.07%)
            vmlinux text: 30000 → 29712 (-0.96%)
            vmlinux data: 4000 → 4004 (+0.10%)
            vmlinux bss: 2000 → 2000 (+0.00%)
            vmlinux dec: 36000 → 35716 (-0.79%)

               text	   data	    bss	    dec	    hex	filename
              30000	   4000	   2000	  36000	   8ca0	target/xtask/results/bcm53xx/baseline/vmlinux
              29712	   4004	   2000	  35716	   8b84	target/xtask/results/bcm53xx/no-reorder-blocks/vmlinux
        "#]],
    );
}

#[test]
fn text_decimal_comma() {
    let f = two_targets();
    let out = render(
        &f,
        &request(&["bcm53xx"], &[]),
        Format::Text,
        Style {
            decimal_comma: true,
        },
    );
    expect![[r#"
        BCM47094 (bcm53xx/generic):
        baseline (-O2) → no-reorder-blocks (-O2):
        zImage size: 1840424 → 1871328 (+1,68%)
        vmlinux size: 34556 → 34280 (-0,80%)
        vmlinux.lzma size: 1520111 → 1519000 (-0,07%)
        vmlinux text: 30000 → 29712 (-0,96%)
        vmlinux data: 4000 → 4004 (+0,10%)
        vmlinux bss: 2000 → 2000 (+0,00%)
        vmlinux dec: 36000 → 35716 (-0,79%)

           text	   data	    bss	    dec	    hex	filename
          30000	   4000	   2000	  36000	   8ca0	target/xtask/results/bcm53xx/baseline/vmlinux
          29712	   4004	   2000	  35716	   8b84	target/xtask/results/bcm53xx/no-reorder-blocks/vmlinux
    "#]]
    .assert_eq(&out);
}

#[test]
fn mail() {
    check(
        Format::Mail,
        Style::default(),
        expect![[r#"
            Size change of no-reorder-blocks against baseline:

            baseline:          KBUILD_CFLAGS += -O2 -fno-reorder-blocks -fno-tree-ch
            no-reorder-blocks: KBUILD_CFLAGS += -O2 -fno-tree-ch

            QCA9558 (ath79/generic):
            Linux 6.12.117, mips-linux-gnu-gcc (Debian 12.2.0-14) 12.2.0
            vmlinux size: 34556 → 34280 (-0.80%)
            vmlinux.lzma size: 1520111 → 1519000 (-0.07%)
            uImage size: 1840424 → 1871328 (+1.68%)
            vmlinux text: 30000 → 29712 (-0.96%)
            vmlinux data: 4000 → 4004 (+0.10%)
            vmlinux bss: 2000 → 2000 (+0.00%)
            vmlinux dec: 36000 → 35716 (-0.79%)

               text	   data	    bss	    dec	    hex	filename
              30000	   4000	   2000	  36000	   8ca0	target/xtask/results/ath79/baseline/vmlinux
              29712	   4004	   2000	  35716	   8b84	target/xtask/results/ath79/no-reorder-blocks/vmlinux

            BCM47094 (bcm53xx/generic):
            Linux 6.12.117, arm-linux-gnueabi-gcc (Debian 12.2.0-14) 12.2.0
            zImage size: 1840424 → 1871328 (+1.68%)
            vmlinux size: 34556 → 34280 (-0.80%)
            vmlinux.lzma size: 1520111 → 1519000 (-0.07%)
            vmlinux text: 30000 → 29712 (-0.96%)
            vmlinux data: 4000 → 4004 (+0.10%)
            vmlinux bss: 2000 → 2000 (+0.00%)
            vmlinux dec: 36000 → 35716 (-0.79%)

               text	   data	    bss	    dec	    hex	filename
              30000	   4000	   2000	  36000	   8ca0	target/xtask/results/bcm53xx/baseline/vmlinux
              29712	   4004	   2000	  35716	   8b84	target/xtask/results/bcm53xx/no-reorder-blocks/vmlinux
        "#]],
    );
}

#[test]
fn markdown() {
    check(
        Format::Markdown,
        Style::default(),
        expect![[r#"
            ### QCA9558 (ath79/generic)

            Linux 6.12.117, mips-linux-gnu-gcc (Debian 12.2.0-14) 12.2.0

            | | baseline (-O2) | no-reorder-blocks (-O2) | change |
            |:--|--:|--:|--:|
            | vmlinux | 34556 | 34280 | -276 (-0.80%) |
            | vmlinux.lzma | 1520111 | 1519000 | -1111 (-0.07%) |
            | uImage | 1840424 | 1871328 | +30904 (+1.68%) |
            | vmlinux text | 30000 | 29712 | -288 (-0.96%) |
            | vmlinux data | 4000 | 4004 | +4 (+0.10%) |
            | vmlinux bss | 2000 | 2000 | +0 (+0.00%) |
            | vmlinux dec | 36000 | 35716 | -284 (-0.79%) |
            | vmlinux hex | 8ca0 | 8b84 | |

            ### BCM47094 (bcm53xx/generic)

            Linux 6.12.117, arm-linux-gnueabi-gcc (Debian 12.2.0-14) 12.2.0

            | | baseline (-O2) | no-reorder-blocks (-O2) | change |
            |:--|--:|--:|--:|
            | zImage | 1840424 | 1871328 | +30904 (+1.68%) |
            | vmlinux | 34556 | 34280 | -276 (-0.80%) |
            | vmlinux.lzma | 1520111 | 1519000 | -1111 (-0.07%) |
            | vmlinux text | 30000 | 29712 | -288 (-0.96%) |
            | vmlinux data | 4000 | 4004 | +4 (+0.10%) |
            | vmlinux bss | 2000 | 2000 | +0 (+0.00%) |
            | vmlinux dec | 36000 | 35716 | -284 (-0.79%) |
            | vmlinux hex | 8ca0 | 8b84 | |
        "#]],
    );
}

#[test]
fn json() {
    let f = two_targets();
    let out = render(
        &f,
        &request(&["ar71xx"], &[]),
        Format::Json,
        Style::default(),
    );
    expect![[r#"
        {
          "schema": 1,
          "base": "baseline",
          "symbols": null,
          "targets": [
            {
              "target": "ath79",
              "openwrt_target": "ath79/generic",
              "soc": "QCA9558",
              "arch": "mips",
              "base": {
                "variant": "baseline",
                "results_dir": "target/xtask/results/ath79/baseline",
                "kernel_version": "6.12.117",
                "kernel_source": "/usr/src/linux-source-6.12.tar.xz",
                "kernel_source_sha256": "585a4a074597aefa2b1a68ada83a3184ba351c127544dea80618bbcceaa3961f",
                "compiler": "mips-linux-gnu-gcc (Debian 12.2.0-14) 12.2.0",
                "kbuild_cflags": {
                  "os": "-Os -fno-reorder-blocks -fno-tree-ch",
                  "o2": "-O2 -fno-reorder-blocks -fno-tree-ch",
                  "effective": "o2"
                },
                "config_sha256": "64ed102bb790966c88c0bfc76b03f7efae13fcd952147b30a205fb7d4cb2d596",
                "patches": [
                  {
                    "name": "generic/pending-6.12/201-extra_optimization.patch",
                    "sha256": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
                  }
                ],
                "duration_seconds": 212.1
              },
              "comparisons": [
                {
                  "variant": {
                    "variant": "no-reorder-blocks",
                    "results_dir": "target/xtask/results/ath79/no-reorder-blocks",
                    "kernel_version": "6.12.117",
                    "kernel_source": "/usr/src/linux-source-6.12.tar.xz",
                    "kernel_source_sha256": "585a4a074597aefa2b1a68ada83a3184ba351c127544dea80618bbcceaa3961f",
                    "compiler": "mips-linux-gnu-gcc (Debian 12.2.0-14) 12.2.0",
                    "kbuild_cflags": {
                      "os": "-Os -fno-tree-ch",
                      "o2": "-O2 -fno-tree-ch",
                      "effective": "o2"
                    },
                    "config_sha256": "64ed102bb790966c88c0bfc76b03f7efae13fcd952147b30a205fb7d4cb2d596",
                    "patches": [
                      {
                        "name": "generic/pending-6.12/201-extra_optimization.patch",
                        "sha256": "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
                      }
                    ],
                    "duration_seconds": 212.1
                  },
                  "warnings": [],
                  "notes": [],
                  "artifacts": [
                    {
                      "name": "vmlinux",
                      "before": 34556,
                      "after": 34280,
                      "delta": -276,
                      "percent": -0.798703553652043,
                      "percent_text": "-0.80%"
                    },
                    {
                      "name": "vmlinux.lzma",
                      "before": 1520111,
                      "after": 1519000,
                      "delta": -1111,
                      "percent": -0.07308676800575747,
                      "percent_text": "-0.07%"
                    },
                    {
                      "name": "uImage",
                      "before": 1840424,
                      "after": 1871328,
                      "delta": 30904,
                      "percent": 1.6791782763102416,
                      "percent_text": "+1.68%"
                    }
                  ],
                  "unpaired_artifacts": [],
                  "sections": {
                    "text": {
                      "before": 30000,
                      "after": 29712,
                      "delta": -288,
                      "percent": -0.96,
                      "percent_text": "-0.96%"
                    },
                    "data": {
                      "before": 4000,
                      "after": 4004,
                      "delta": 4,
                      "percent": 0.1,
                      "percent_text": "+0.10%"
                    },
                    "bss": {
                      "before": 2000,
                      "after": 2000,
                      "delta": 0,
                      "percent": 0.0,
                      "percent_text": "+0.00%"
                    },
                    "dec": {
                      "before": 36000,
                      "after": 35716,
                      "delta": -284,
                      "percent": -0.7888888888888889,
                      "percent_text": "-0.79%"
                    },
                    "hex": {
                      "before": "8ca0",
                      "after": "8b84"
                    }
                  },
                  "symbols": null,
                  "device_fit": null
                }
              ]
            }
          ],
          "skipped": []
        }
    "#]].assert_eq(&out);
    // Every number is there and parses back.
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let c = &v["targets"][0]["comparisons"][0];
    assert_eq!(c["sections"]["text"]["delta"], -288);
    assert_eq!(c["sections"]["hex"]["before"], "8ca0");
}

#[test]
fn csv() {
    check(
        Format::Csv,
        Style::default(),
        expect![[r#"
            target,openwrt_target,soc,base,variant,kind,item,before,after,delta,percent,family,unit,base_n,variant_n,base_sd_percent,variant_sd_percent,interval_low,interval_high,welch_p,mann_whitney_p,noise_floor,verdict
            ath79,ath79/generic,QCA9558,baseline,no-reorder-blocks,artifact,vmlinux,34556,34280,-276,-0.798703553652043,size,bytes,,,,,,,,,,
            ath79,ath79/generic,QCA9558,baseline,no-reorder-blocks,artifact,vmlinux.lzma,1520111,1519000,-1111,-0.07308676800575747,size,bytes,,,,,,,,,,
            ath79,ath79/generic,QCA9558,baseline,no-reorder-blocks,artifact,uImage,1840424,1871328,30904,1.6791782763102416,size,bytes,,,,,,,,,,
            ath79,ath79/generic,QCA9558,baseline,no-reorder-blocks,section,text,30000,29712,-288,-0.96,size,bytes,,,,,,,,,,
            ath79,ath79/generic,QCA9558,baseline,no-reorder-blocks,section,data,4000,4004,4,0.1,size,bytes,,,,,,,,,,
            ath79,ath79/generic,QCA9558,baseline,no-reorder-blocks,section,bss,2000,2000,0,0,size,bytes,,,,,,,,,,
            ath79,ath79/generic,QCA9558,baseline,no-reorder-blocks,section,dec,36000,35716,-284,-0.7888888888888889,size,bytes,,,,,,,,,,
            ath79,ath79/generic,QCA9558,baseline,no-reorder-blocks,section,hex,8ca0,8b84,,,,,,,,,,,,,,
            bcm53xx,bcm53xx/generic,BCM47094,baseline,no-reorder-blocks,artifact,zImage,1840424,1871328,30904,1.6791782763102416,size,bytes,,,,,,,,,,
            bcm53xx,bcm53xx/generic,BCM47094,baseline,no-reorder-blocks,artifact,vmlinux,34556,34280,-276,-0.798703553652043,size,bytes,,,,,,,,,,
            bcm53xx,bcm53xx/generic,BCM47094,baseline,no-reorder-blocks,artifact,vmlinux.lzma,1520111,1519000,-1111,-0.07308676800575747,size,bytes,,,,,,,,,,
            bcm53xx,bcm53xx/generic,BCM47094,baseline,no-reorder-blocks,section,text,30000,29712,-288,-0.96,size,bytes,,,,,,,,,,
            bcm53xx,bcm53xx/generic,BCM47094,baseline,no-reorder-blocks,section,data,4000,4004,4,0.1,size,bytes,,,,,,,,,,
            bcm53xx,bcm53xx/generic,BCM47094,baseline,no-reorder-blocks,section,bss,2000,2000,0,0,size,bytes,,,,,,,,,,
            bcm53xx,bcm53xx/generic,BCM47094,baseline,no-reorder-blocks,section,dec,36000,35716,-284,-0.7888888888888889,size,bytes,,,,,,,,,,
            bcm53xx,bcm53xx/generic,BCM47094,baseline,no-reorder-blocks,section,hex,8ca0,8b84,,,,,,,,,,,,,,
        "#]],
    );
}

#[test]
fn csv_decimal_comma_uses_semicolons() {
    let f = two_targets();
    let out = render(
        &f,
        &request(&["bcm53xx"], &[]),
        Format::Csv,
        Style {
            decimal_comma: true,
        },
    );
    expect![[r#"
        target;openwrt_target;soc;base;variant;kind;item;before;after;delta;percent;family;unit;base_n;variant_n;base_sd_percent;variant_sd_percent;interval_low;interval_high;welch_p;mann_whitney_p;noise_floor;verdict
        bcm53xx;bcm53xx/generic;BCM47094;baseline;no-reorder-blocks;artifact;zImage;1840424;1871328;30904;1,6791782763102416;size;bytes;;;;;;;;;;
        bcm53xx;bcm53xx/generic;BCM47094;baseline;no-reorder-blocks;artifact;vmlinux;34556;34280;-276;-0,798703553652043;size;bytes;;;;;;;;;;
        bcm53xx;bcm53xx/generic;BCM47094;baseline;no-reorder-blocks;artifact;vmlinux.lzma;1520111;1519000;-1111;-0,07308676800575747;size;bytes;;;;;;;;;;
        bcm53xx;bcm53xx/generic;BCM47094;baseline;no-reorder-blocks;section;text;30000;29712;-288;-0,96;size;bytes;;;;;;;;;;
        bcm53xx;bcm53xx/generic;BCM47094;baseline;no-reorder-blocks;section;data;4000;4004;4;0,1;size;bytes;;;;;;;;;;
        bcm53xx;bcm53xx/generic;BCM47094;baseline;no-reorder-blocks;section;bss;2000;2000;0;0;size;bytes;;;;;;;;;;
        bcm53xx;bcm53xx/generic;BCM47094;baseline;no-reorder-blocks;section;dec;36000;35716;-284;-0,7888888888888889;size;bytes;;;;;;;;;;
        bcm53xx;bcm53xx/generic;BCM47094;baseline;no-reorder-blocks;section;hex;8ca0;8b84;;;;;;;;;;;;;;
    "#]].assert_eq(&out);
}

#[test]
fn svg() {
    let f = two_targets();
    let out = render(&f, &request(&[], &[]), Format::Svg, Style::default());
    assert!(out.starts_with("<svg "), "{}", &out[..100]);
    assert!(!out.contains("font-face") && !out.contains("@import"));
    expect_file!["../snapshots/report_two_targets.svg"].assert_eq(&out);
}

/// Several variants (one adds kconfig lines, one a patch) and an
/// `--allow-mismatch` warning, in text, markdown and SVG.
fn three_variants() -> Fixture {
    let f = Fixture::new();
    f.standard("bcm53xx");
    let mut no_swap = f.result(
        "bcm53xx",
        "no-swap",
        &[("zImage", 1_801_000), ("vmlinux.lzma", 1_490_000)],
        (29_000, 3_900, 1_990),
    );
    no_swap.config_sha256 = "d".repeat(64);
    f.write(no_swap, report_fixture::BASE_SYMBOLS);
    let mut deinline = f.result(
        "bcm53xx",
        "deinline",
        &[("zImage", 1_840_424), ("vmlinux.lzma", 1_520_111)],
        (30_000, 4_000, 2_000),
    );
    deinline.compiler = "arm-linux-gnueabi-gcc (Debian 13.3.0-1) 13.3.0".to_string();
    f.write(deinline, report_fixture::BASE_SYMBOLS);
    f
}

#[test]
fn several_variants_with_allowed_mismatch() {
    let f = three_variants();
    let mut req = request(&["bcm53xx/generic"], &[]);
    req.allow_mismatch = true;
    let text = render(&f, &req, Format::Text, Style::default());
    expect![[r#"
        BCM47094 (bcm53xx/generic):
        WARNING: compared anyway (--allow-mismatch), baseline → deinline: compiler: baseline has arm-linux-gnueabi-gcc (Debian 12.2.0-14) 12.2.0, deinline has arm-linux-gnueabi-gcc (Debian 13.3.0-1) 13.3.0
        note: .config differs as intended: no-swap sets # CONFIG_SWAP is not set
        baseline (-O2) → deinline (-O2):
        zImage size: 1840424 → 1840424 (+0.00%)
        vmlinux size: 34556 → 34556 (+0.00%)
        vmlinux.lzma size: 1520111 → 1520111 (+0.00%)
        vmlinux text: 30000 → 30000 (+0.00%)
        vmlinux data: 4000 → 4000 (+0.00%)
        vmlinux bss: 2000 → 2000 (+0.00%)
        vmlinux dec: 36000 → 36000 (+0.00%)
        baseline (-O2) → no-reorder-blocks (-O2):
        zImage size: 1840424 → 1871328 (+1.68%)
        vmlinux size: 34556 → 34280 (-0.80%)
        vmlinux.lzma size: 1520111 → 1519000 (-0.07%)
        vmlinux text: 30000 → 29712 (-0.96%)
        vmlinux data: 4000 → 4004 (+0.10%)
        vmlinux bss: 2000 → 2000 (+0.00%)
        vmlinux dec: 36000 → 35716 (-0.79%)
        baseline (-O2) → no-swap (-O2):
        zImage size: 1840424 → 1801000 (-2.14%)
        vmlinux size: 34556 → 33456 (-3.18%)
        vmlinux.lzma size: 1520111 → 1490000 (-1.98%)
        vmlinux text: 30000 → 29000 (-3.33%)
        vmlinux data: 4000 → 3900 (-2.50%)
        vmlinux bss: 2000 → 1990 (-0.50%)
        vmlinux dec: 36000 → 34890 (-3.08%)

           text	   data	    bss	    dec	    hex	filename
          30000	   4000	   2000	  36000	   8ca0	target/xtask/results/bcm53xx/baseline/vmlinux
          30000	   4000	   2000	  36000	   8ca0	target/xtask/results/bcm53xx/deinline/vmlinux
          29712	   4004	   2000	  35716	   8b84	target/xtask/results/bcm53xx/no-reorder-blocks/vmlinux
          29000	   3900	   1990	  34890	   884a	target/xtask/results/bcm53xx/no-swap/vmlinux
    "#]].assert_eq(&text);
    let markdown = render(&f, &req, Format::Markdown, Style::default());
    expect![[r#"
        ### BCM47094 (bcm53xx/generic)

        Linux 6.12.117, arm-linux-gnueabi-gcc (Debian 12.2.0-14) 12.2.0

        > **Warning:** compared anyway (`--allow-mismatch`), baseline → deinline: compiler: baseline has arm-linux-gnueabi-gcc (Debian 12.2.0-14) 12.2.0, deinline has arm-linux-gnueabi-gcc (Debian 13.3.0-1) 13.3.0

        > Note: .config differs as intended: no-swap sets # CONFIG_SWAP is not set

        | | baseline (-O2) | deinline (-O2) | change | no-reorder-blocks (-O2) | change | no-swap (-O2) | change |
        |:--|--:|--:|--:|--:|--:|--:|--:|
        | zImage | 1840424 | 1840424 | +0 (+0.00%) | 1871328 | +30904 (+1.68%) | 1801000 | -39424 (-2.14%) |
        | vmlinux | 34556 | 34556 | +0 (+0.00%) | 34280 | -276 (-0.80%) | 33456 | -1100 (-3.18%) |
        | vmlinux.lzma | 1520111 | 1520111 | +0 (+0.00%) | 1519000 | -1111 (-0.07%) | 1490000 | -30111 (-1.98%) |
        | vmlinux text | 30000 | 30000 | +0 (+0.00%) | 29712 | -288 (-0.96%) | 29000 | -1000 (-3.33%) |
        | vmlinux data | 4000 | 4000 | +0 (+0.00%) | 4004 | +4 (+0.10%) | 3900 | -100 (-2.50%) |
        | vmlinux bss | 2000 | 2000 | +0 (+0.00%) | 2000 | +0 (+0.00%) | 1990 | -10 (-0.50%) |
        | vmlinux dec | 36000 | 36000 | +0 (+0.00%) | 35716 | -284 (-0.79%) | 34890 | -1110 (-3.08%) |
        | vmlinux hex | 8ca0 | 8ca0 | | 8b84 | | 884a | |
    "#]].assert_eq(&markdown);
    let svg = render(&f, &req, Format::Svg, Style::default());
    expect_file!["../snapshots/report_three_variants.svg"].assert_eq(&svg);
}

#[test]
fn output_file_is_written_atomically() {
    let f = two_targets();
    let out = f.root().join("reports/size.md");
    // A missing directory is an error (tests/it/cli_refusals.rs); make it.
    std::fs::create_dir_all(out.parent().unwrap()).unwrap();
    report::run(
        &f.layout(),
        &request(&["bcm53xx"], &[]),
        Format::Markdown,
        &Style::default(),
        Some(&out),
    )
    .unwrap();
    let written = std::fs::read_to_string(&out).unwrap();
    assert!(
        written.starts_with("### BCM47094 (bcm53xx/generic)"),
        "{written}"
    );
    assert_eq!(std::fs::read_dir(out.parent().unwrap()).unwrap().count(), 1);
}

/// `patches size-bisect`'s states (`<variant>~bisect-<key>-<k>`) are
/// variants with results like any other, but the default comparison
/// (every built variant against the base) leaves them out: a bisection
/// of 8 states would otherwise add 8 comparisons to every report. Named
/// with `--variant`, one is compared.
#[test]
fn size_bisect_states_are_compared_only_when_named() {
    let f = two_targets();
    let mut state = f.result(
        "bcm53xx",
        "baseline",
        &[("zImage", 1_844_520), ("vmlinux.lzma", 1_524_207)],
        (30_000, 8_096, 2_000),
    );
    state.variant.name = format!("baseline{}0a1b2c3d-002", xtask::results::BISECT_STATE_MARK);
    f.write(state, report_fixture::BASE_SYMBOLS);
    let default = render(
        &f,
        &request(&["bcm53xx"], &[]),
        Format::Text,
        Style::default(),
    );
    assert!(
        default.contains("baseline (-O2) → no-reorder-blocks (-O2):"),
        "{default}"
    );
    assert!(!default.contains("bisect"), "{default}");
    let named = render(
        &f,
        &request(&["bcm53xx"], &["baseline~bisect-0a1b2c3d-002"]),
        Format::Text,
        Style::default(),
    );
    assert!(
        named.contains("baseline (-O2) → baseline~bisect-0a1b2c3d-002 (-O2):")
            && named.contains("zImage size: 1840424 → 1844520"),
        "{named}"
    );
}
