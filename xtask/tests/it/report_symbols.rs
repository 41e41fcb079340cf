//! Snapshot tests of `size-report --symbols` (bloat-o-meter's symbol diff
//! in the report) on fixture results. Update with `UPDATE_EXPECT=1 cargo test`.

use crate::common::report_fixture;

use expect_test::expect;
use report_fixture::{render, request, two_targets};
use xtask::measure::bloat::BloatMode;
use xtask::report::{Format, Style, SymbolOptions};

#[test]
fn symbols_in_text_markdown_and_csv() {
    let f = two_targets();
    let mut req = request(&["bcm53xx"], &[]);
    req.symbols = Some(SymbolOptions {
        mode: BloatMode::Categorized,
        fold_clones: false,
    });
    expect![[r#"
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

        Symbols, bloat-o-meter -c target/xtask/results/bcm53xx/baseline/vmlinux target/xtask/results/bcm53xx/no-reorder-blocks/vmlinux:
        add/remove: 2/2 grow/shrink: 1/1 up/down: 356/-452 (-96)
        Function                                     old     new   delta
        napi_poll                                      -     296    +296
        new_helper.constprop                           -      40     +40
        start_kernel                                 400     420     +20
        old_helper                                    64       -     -64
        schedule                                     900     812     -88
        napi_poll.isra                               300       -    -300
        Total: Before=1664, After=1568, chg -5.77%
        add/remove: 0/0 grow/shrink: 1/0 up/down: 4/0 (4)
        Data                                         old     new   delta
        init_buf                                     256     260      +4
        Total: Before=264, After=268, chg +1.52%
        add/remove: 0/0 grow/shrink: 0/0 up/down: 0/0 (0)
        RO Data                                      old     new   delta
        Total: Before=0, After=0, chg +0.00%
    "#]].assert_eq(&render(&f, &req, Format::Text, Style::default()));
    expect![[r#"
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

        <details><summary>Symbols baseline → no-reorder-blocks (bloat-o-meter -c)</summary>

        ```
        add/remove: 2/2 grow/shrink: 1/1 up/down: 356/-452 (-96)
        Function                                     old     new   delta
        napi_poll                                      -     296    +296
        new_helper.constprop                           -      40     +40
        start_kernel                                 400     420     +20
        old_helper                                    64       -     -64
        schedule                                     900     812     -88
        napi_poll.isra                               300       -    -300
        Total: Before=1664, After=1568, chg -5.77%
        add/remove: 0/0 grow/shrink: 1/0 up/down: 4/0 (4)
        Data                                         old     new   delta
        init_buf                                     256     260      +4
        Total: Before=264, After=268, chg +1.52%
        add/remove: 0/0 grow/shrink: 0/0 up/down: 0/0 (0)
        RO Data                                      old     new   delta
        Total: Before=0, After=0, chg +0.00%
        ```

        </details>
    "#]]
    .assert_eq(&render(&f, &req, Format::Markdown, Style::default()));
    expect![[r#"
        target,openwrt_target,soc,base,variant,kind,item,before,after,delta,percent,family,unit,base_n,variant_n,base_sd_percent,variant_sd_percent,interval_low,interval_high,welch_p,mann_whitney_p,noise_floor,verdict
        bcm53xx,bcm53xx/generic,BCM47094,baseline,no-reorder-blocks,artifact,zImage,1840424,1871328,30904,1.6791782763102416,size,bytes,,,,,,,,,,
        bcm53xx,bcm53xx/generic,BCM47094,baseline,no-reorder-blocks,artifact,vmlinux,34556,34280,-276,-0.798703553652043,size,bytes,,,,,,,,,,
        bcm53xx,bcm53xx/generic,BCM47094,baseline,no-reorder-blocks,artifact,vmlinux.lzma,1520111,1519000,-1111,-0.07308676800575747,size,bytes,,,,,,,,,,
        bcm53xx,bcm53xx/generic,BCM47094,baseline,no-reorder-blocks,section,text,30000,29712,-288,-0.96,size,bytes,,,,,,,,,,
        bcm53xx,bcm53xx/generic,BCM47094,baseline,no-reorder-blocks,section,data,4000,4004,4,0.1,size,bytes,,,,,,,,,,
        bcm53xx,bcm53xx/generic,BCM47094,baseline,no-reorder-blocks,section,bss,2000,2000,0,0,size,bytes,,,,,,,,,,
        bcm53xx,bcm53xx/generic,BCM47094,baseline,no-reorder-blocks,section,dec,36000,35716,-284,-0.7888888888888889,size,bytes,,,,,,,,,,
        bcm53xx,bcm53xx/generic,BCM47094,baseline,no-reorder-blocks,section,hex,8ca0,8b84,,,,,,,,,,,,,,
        bcm53xx,bcm53xx/generic,BCM47094,baseline,no-reorder-blocks,symbols,Function:napi_poll,,296,296,,,,,,,,,,,,,
        bcm53xx,bcm53xx/generic,BCM47094,baseline,no-reorder-blocks,symbols,Function:new_helper.constprop,,40,40,,,,,,,,,,,,,
        bcm53xx,bcm53xx/generic,BCM47094,baseline,no-reorder-blocks,symbols,Function:start_kernel,400,420,20,,,,,,,,,,,,,
        bcm53xx,bcm53xx/generic,BCM47094,baseline,no-reorder-blocks,symbols,Function:old_helper,64,,-64,,,,,,,,,,,,,
        bcm53xx,bcm53xx/generic,BCM47094,baseline,no-reorder-blocks,symbols,Function:schedule,900,812,-88,,,,,,,,,,,,,
        bcm53xx,bcm53xx/generic,BCM47094,baseline,no-reorder-blocks,symbols,Function:napi_poll.isra,300,,-300,,,,,,,,,,,,,
        bcm53xx,bcm53xx/generic,BCM47094,baseline,no-reorder-blocks,symbols-total,Function,1664,1568,-96,-5.769230769230769,,,,,,,,,,,,
        bcm53xx,bcm53xx/generic,BCM47094,baseline,no-reorder-blocks,symbols,Data:init_buf,256,260,4,,,,,,,,,,,,,
        bcm53xx,bcm53xx/generic,BCM47094,baseline,no-reorder-blocks,symbols-total,Data,264,268,4,1.5151515151515151,,,,,,,,,,,,
        bcm53xx,bcm53xx/generic,BCM47094,baseline,no-reorder-blocks,symbols-total,RO Data,0,0,0,0,,,,,,,,,,,,
    "#]].assert_eq(&render(&f, &req, Format::Csv, Style::default()));
}

#[test]
fn symbols_with_folded_clones() {
    let f = two_targets();
    let mut req = request(&["bcm53xx"], &[]);
    req.symbols = Some(SymbolOptions {
        mode: BloatMode::All,
        fold_clones: true,
    });
    let out = render(&f, &req, Format::Text, Style::default());
    expect![[r#"
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

        Symbols, bloat-o-meter target/xtask/results/bcm53xx/baseline/vmlinux target/xtask/results/bcm53xx/no-reorder-blocks/vmlinux (compiler clones folded):
        Note: compiler clones (.isra, .constprop, .part, .cold, ...) folded into their base names; not bloat-o-meter output
        add/remove: 1/1 grow/shrink: 2/2 up/down: 64/-156 (-92)
        Function                                     old     new   delta
        new_helper                                     -      40     +40
        start_kernel                                 400     420     +20
        init_buf                                     256     260      +4
        napi_poll                                    300     296      -4
        old_helper                                    64       -     -64
        schedule                                     900     812     -88
        Total: Before=1928, After=1836, chg -4.77%
    "#]].assert_eq(&out);
    // napi_poll.isra.0 → napi_poll is one symbol when folded.
    assert!(!out.contains("napi_poll.isra"), "{out}");
}

/// The second hostile trial: a vmlinux symbol named with a newline
/// started lines of its own in the symbol table (a forged heading in
/// markdown, past the code fence). Names are escaped in every row.
#[test]
fn a_symbol_name_with_a_newline_stays_in_its_row() {
    let f = report_fixture::Fixture::new();
    f.standard("bcm53xx");
    let base = f.result(
        "bcm53xx",
        "baseline",
        &[("zImage", 1_840_424), ("vmlinux.lzma", 1_520_111)],
        (30_000, 4_000, 2_000),
    );
    let forged: &[report_fixture::Sym] = &[
        ("schedule", 900, 'T'),
        ("x\n```\n\n## FORGED - all devices fit", 64, 'T'),
    ];
    f.write(base, forged);
    let mut req = request(&["bcm53xx"], &[]);
    req.symbols = Some(SymbolOptions {
        mode: BloatMode::Categorized,
        fold_clones: false,
    });
    for format in [Format::Text, Format::Mail, Format::Markdown] {
        let out = render(&f, &req, format, Style::default());
        assert!(
            !out.lines().any(|l| l.starts_with("## FORGED")),
            "{format:?}: {out}"
        );
        assert!(out.contains("x\\n```\\n\\n## FORGED"), "{format:?}: {out}");
    }
}
