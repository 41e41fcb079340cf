//! Every `size-report` format on the hand-made lab run (see
//! `common/lab_fixture.rs`), alone and next to size results. Update the
//! snapshots with `UPDATE_EXPECT=1 cargo test -p xtask --test it report_lab::`.

use crate::common::lab_fixture;
use crate::common::report_fixture;

use expect_test::{expect, expect_file};
use lab_fixture::lab_only;
use report_fixture::{render, request};
use xtask::report::{Format, Style};

fn lab(format: Format, style: Style) -> String {
    render(&lab_only(), &request(&[], &[]), format, style)
}

#[test]
fn text() {
    expect![[r#"
        Runtime lab, brcm47xx on QEMU malta -cpu 74Kf (lab kernels brcm47xx-lab):
        target/xtask/lab/brcm47xx/20261201T101500Z-4242/lab.json (complete: 3 runs per variant, direction and GRO setting of 10 s each, variants interleaved, 1 warm-up run per boot discarded; A/A control baseline~control)
        A/A control baseline → baseline~control (the noise floor):
        Throughput, GRO on:
        LAN to WAN: 170.6 Mbit/s → 171.1 Mbit/s (+0.25%)
          sd ±0.86% → ±0.53%, 95% Welch interval -1.51% … +2.02%, Welch p 0.6908, Mann–Whitney p 0.7000; seeing a change this size takes 126 runs per side (80 % power)
        WAN to LAN: 175.3 Mbit/s → 177.6 Mbit/s (+1.27%)
          sd ±0.43% → ±0.23%, 95% Welch interval +0.38% … +2.16%, Welch p 0.0196, Mann–Whitney p 0.1000; seeing a change this size takes 4 runs per side (80 % power)
        Throughput, GRO off:
        LAN to WAN: 150.1 Mbit/s → 150.4 Mbit/s (+0.20%)
          sd ±0.64% → ±0.37%, 95% Welch interval -1.10% … +1.50%, Welch p 0.6681, Mann–Whitney p 1.0000; seeing a change this size takes 108 runs per side (80 % power)
        WAN to LAN: 155.1 Mbit/s → 155.3 Mbit/s (+0.11%)
          sd ±0.62% → ±0.37%, 95% Welch interval -1.15% … +1.37%, Welch p 0.8105, Mann–Whitney p 1.0000; seeing a change this size takes 350 runs per side (80 % power)
        Guest CPU per packet, GRO on:
        LAN to WAN: 82017 ns/packet → 82047 ns/packet (+0.04%)
          sd ±0.09% → ±0.04%, 95% Welch interval -0.16% … +0.23%, Welch p 0.5830, Mann–Whitney p 0.7000; seeing a change this size takes 63 runs per side (80 % power)
        WAN to LAN: 83510 ns/packet → 83523 ns/packet (+0.02%)
          sd ±0.04% → ±0.04%, 95% Welch interval -0.08% … +0.11%, Welch p 0.6702, Mann–Whitney p 0.7000; seeing a change this size takes 113 runs per side (80 % power)
        Guest CPU per packet, GRO off:
        LAN to WAN: 91017 ns/packet → 91040 ns/packet (+0.03%)
          sd ±0.08% → ±0.05%, 95% Welch interval -0.15% … +0.20%, Welch p 0.6784, Mann–Whitney p 1.0000; seeing a change this size takes 116 runs per side (80 % power)
        WAN to LAN: 92010 ns/packet → 92310 ns/packet (+0.33%)
          sd ±0.04% → ±0.04%, 95% Welch interval +0.24% … +0.41%, Welch p 0.0005, Mann–Whitney p 0.1000; seeing a change this size takes 4 runs per side (80 % power)
        baseline → no-reorder-blocks:
        Throughput, GRO on:
        LAN to WAN: 170.6 Mbit/s → 180.5 Mbit/s (+5.78%)
          sd ±0.86% → ±0.49%, 95% Welch interval +4.02% … +7.55%, Welch p 0.0015, Mann–Whitney p 0.1000: too few runs for Mann–Whitney (4 per side)
        WAN to LAN: 175.3 Mbit/s → 176.6 Mbit/s (+0.72%)
          sd ±0.43% → ±0.20%, 95% Welch interval -0.18% … +1.63%, Welch p 0.0832, Mann–Whitney p 0.1000: interval contains 0
        Throughput, GRO off:
        LAN to WAN: 150.1 Mbit/s → 150.5 Mbit/s (+0.29%)
          sd ±0.64% → ±0.87%, 95% Welch interval -1.50% … +2.08%, Welch p 0.6687, Mann–Whitney p 1.0000: interval contains 0
        WAN to LAN: 155.1 Mbit/s → 159.5 Mbit/s (+2.84%)
          sd ±0.62% → ±0.38%, 95% Welch interval +1.58% … +4.09%, Welch p 0.0045, Mann–Whitney p 0.1000: too few runs for Mann–Whitney (4 per side)
        Guest CPU per packet, GRO on:
        LAN to WAN: 82017 ns/packet → 80100 ns/packet (-2.34%)
          sd ±0.09% → ±0.06%, 95% Welch interval -2.53% … -2.15%, Welch p <0.0001, Mann–Whitney p 0.1000: too few runs for Mann–Whitney (4 per side)
        WAN to LAN: 83510 ns/packet → 83310 ns/packet (-0.24%)
          sd ±0.04% → ±0.04%, 95% Welch interval -0.34% … -0.14%, Welch p 0.0025, Mann–Whitney p 0.1000: too few runs for Mann–Whitney (4 per side)
        Guest CPU per packet, GRO off:
        LAN to WAN: 91017 ns/packet → 91030 ns/packet (+0.01%)
          sd ±0.08% → ±0.05%, 95% Welch interval -0.16% … +0.19%, Welch p 0.8109, Mann–Whitney p 1.0000: interval contains 0
        WAN to LAN: 92010 ns/packet → 92157 ns/packet (+0.16%)
          sd ±0.04% → ±0.04%, 95% Welch interval +0.06% … +0.25%, Welch p 0.0097, Mann–Whitney p 0.1000: too few runs for Mann–Whitney (4 per side)
        note: Mann–Whitney U cannot reach p < 0.05 with 3 runs per side: its smallest p is then 0.100, and a change is called significant only when Welch and Mann–Whitney agree, so none can be; it needs 4 runs per side (cargo xtask lab --runs N, default 5)
        What the numbers can show: Mbit/s is the emulator's forwarding speed: it follows host load (other processes, CPU frequency), so only runs interleaved on one quiet host compare; ns/packet is the guest's CPU time per forwarded packet: under -icount shift=3,align=off,sleep=on guest time counts instructions, so it is a path-length proxy that host load does not move; neither shows cache, TLB or branch-layout effects (what block reordering changes): those need real hardware.
    "#]].assert_eq(&lab(Format::Text, Style::default()));
}

#[test]
fn the_seed_lines_honour_the_decimal_comma() {
    let out = lab(
        Format::Text,
        Style {
            decimal_comma: true,
        },
    );
    let seed: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.starts_with("baseline → no-reorder-blocks"))
        .take(5)
        .collect();
    expect![[r#"
        [
            "baseline → no-reorder-blocks:",
            "Throughput, GRO on:",
            "LAN to WAN: 170,6 Mbit/s → 180,5 Mbit/s (+5,78%)",
            "  sd ±0,86% → ±0,49%, 95% Welch interval +4,02% … +7,55%, Welch p 0,0015, Mann–Whitney p 0,1000: too few runs for Mann–Whitney (4 per side)",
            "WAN to LAN: 175,3 Mbit/s → 176,6 Mbit/s (+0,72%)",
        ]
    "#]].assert_debug_eq(&seed);
}

#[test]
fn mail_has_a_summary_table_and_the_headline_runs() {
    let mail = lab(Format::Mail, Style::default());
    let text = lab(Format::Text, Style::default());
    // The text's first two lines and its notes are the mail's too.
    let first_two: Vec<&str> = text.lines().take(2).collect();
    let mail_two: Vec<&str> = mail.lines().skip(2).take(2).collect();
    assert_eq!(first_two, mail_two, "{mail}");
    let caveats = text.lines().last().unwrap();
    assert!(mail.contains(&format!("\n{caveats}\n")), "{mail}");
    // The summary (its A/A column is the control's |%change| that the
    // text's control lines give: +0.25%, +1.27%, …), then the runs of
    // the headline family only.
    let summary: String = mail
        .lines()
        .skip_while(|l| !l.starts_with("baseline → no-reorder-blocks"))
        .take_while(|l| !l.starts_with("note:") && !l.starts_with("What the numbers"))
        .map(|l| format!("{l}\n"))
        .collect();
    expect![[r#"
        baseline → no-reorder-blocks:
        metric                | runs | baseline | no-reorder-blocks | change |    95% interval |    A/A | verdict
        ----------------------+------+----------+-------------------+--------+-----------------+--------+-------------------------------------------
        Throughput (Mbit/s):
          LAN to WAN, GRO on  |  3/3 |    170.6 |             180.5 | +5.78% | +4.02% … +7.55% | ±0.25% | too few runs for Mann–Whitney (4 per side)
          WAN to LAN, GRO on  |  3/3 |    175.3 |             176.6 | +0.72% | -0.18% … +1.63% | ±1.27% | interval contains 0
          LAN to WAN, GRO off |  3/3 |    150.1 |             150.5 | +0.29% | -1.50% … +2.08% | ±0.20% | interval contains 0
          WAN to LAN, GRO off |  3/3 |    155.1 |             159.5 | +2.84% | +1.58% … +4.09% | ±0.11% | too few runs for Mann–Whitney (4 per side)
        Guest CPU per packet (ns/packet):
          LAN to WAN, GRO on  |  3/3 |    82017 |             80100 | -2.34% | -2.53% … -2.15% | ±0.04% | too few runs for Mann–Whitney (4 per side)
          WAN to LAN, GRO on  |  3/3 |    83510 |             83310 | -0.24% | -0.34% … -0.14% | ±0.02% | too few runs for Mann–Whitney (4 per side)
          LAN to WAN, GRO off |  3/3 |    91017 |             91030 | +0.01% | -0.16% … +0.19% | ±0.03% | interval contains 0
          WAN to LAN, GRO off |  3/3 |    92010 |             92157 | +0.16% | +0.06% … +0.25% | ±0.33% | too few runs for Mann–Whitney (4 per side)
    "#]]
    .assert_eq(&summary);
    assert!(
        !mail.contains("A/A control baseline → baseline~control"),
        "{mail}"
    );
    let tables = mail
        .split_once("\n\nThroughput, LAN to WAN, GRO on (Mbit/s):\n")
        .map(|(_, t)| t)
        .unwrap_or_else(|| panic!("{mail}"));
    expect![[r#"
        run | baseline | baseline~control | no-reorder-blocks
        ----+----------+------------------+------------------
        1   |    170.1 |            171.0 |             180.2
        2   |    172.3 |            170.2 |             181.5
        3   |    169.5 |            172.0 |             179.8
        avg |    170.6 |            171.1 |             180.5

        Throughput, WAN to LAN, GRO on (Mbit/s):
        run | baseline | baseline~control | no-reorder-blocks
        ----+----------+------------------+------------------
        1   |    175.0 |            177.5 |             176.5
        2   |    176.2 |            178.0 |             177.0
        3   |    174.8 |            177.2 |             176.3
        avg |    175.3 |            177.6 |             176.6

        Throughput, LAN to WAN, GRO off (Mbit/s):
        run | baseline | baseline~control | no-reorder-blocks
        ----+----------+------------------+------------------
        1   |    150.2 |            150.5 |             149.5
        2   |    149.1 |            149.8 |             152.0
        3   |    151.0 |            150.9 |             150.1
        avg |    150.1 |            150.4 |             150.5

        Throughput, WAN to LAN, GRO off (Mbit/s):
        run | baseline | baseline~control | no-reorder-blocks
        ----+----------+------------------+------------------
        1   |    155.0 |            154.8 |             158.9
        2   |    154.2 |            155.9 |             160.1
        3   |    156.1 |            155.1 |             159.5
        avg |    155.1 |            155.3 |             159.5

        Every run of Guest CPU per packet: `--format markdown` (its "Every run" block) or lab.json
    "#]]
    .assert_eq(tables);
}

#[test]
fn markdown() {
    expect![[r#"
        ### Runtime lab, brcm47xx on QEMU malta -cpu 74Kf (lab kernels brcm47xx-lab)

        `target/xtask/lab/brcm47xx/20261201T101500Z-4242/lab.json` (complete: 3 runs per variant, direction and GRO setting of 10 s each, variants interleaved, 1 warm-up run per boot discarded; A/A control baseline~control)

        **A/A control** baseline → baseline~control (the noise floor):

        | baseline mean ± %sd | %change | baseline~control mean ± %sd | 95% Welch interval | Welch p | Mann–Whitney p | verdict | metric |
        |--:|--:|--:|--:|--:|--:|:--|:--|
        | 170.63 ± 0.86% | +0.25% | 171.07 ± 0.53% | -1.51% … +2.02% | 0.6908 | 0.7000 | A/A noise floor; seeing a change this size takes 126 runs per side (80 % power) | throughput.lan-to-wan.gro-on (Mbit/s) |
        | 175.33 ± 0.43% | +1.27% | 177.57 ± 0.23% | +0.38% … +2.16% | 0.0196 | 0.1000 | A/A noise floor; seeing a change this size takes 4 runs per side (80 % power) | throughput.wan-to-lan.gro-on (Mbit/s) |
        | 150.10 ± 0.64% | +0.20% | 150.40 ± 0.37% | -1.10% … +1.50% | 0.6681 | 1.0000 | A/A noise floor; seeing a change this size takes 108 runs per side (80 % power) | throughput.lan-to-wan.gro-off (Mbit/s) |
        | 155.10 ± 0.62% | +0.11% | 155.27 ± 0.37% | -1.15% … +1.37% | 0.8105 | 1.0000 | A/A noise floor; seeing a change this size takes 350 runs per side (80 % power) | throughput.wan-to-lan.gro-off (Mbit/s) |
        | 82016.67 ± 0.09% | +0.04% | 82046.67 ± 0.04% | -0.16% … +0.23% | 0.5830 | 0.7000 | A/A noise floor; seeing a change this size takes 63 runs per side (80 % power) | guest_cpu_per_packet.lan-to-wan.gro-on (ns/packet) |
        | 83510.00 ± 0.04% | +0.02% | 83523.33 ± 0.04% | -0.08% … +0.11% | 0.6702 | 0.7000 | A/A noise floor; seeing a change this size takes 113 runs per side (80 % power) | guest_cpu_per_packet.wan-to-lan.gro-on (ns/packet) |
        | 91016.67 ± 0.08% | +0.03% | 91040.00 ± 0.05% | -0.15% … +0.20% | 0.6784 | 1.0000 | A/A noise floor; seeing a change this size takes 116 runs per side (80 % power) | guest_cpu_per_packet.lan-to-wan.gro-off (ns/packet) |
        | 92010.00 ± 0.04% | +0.33% | 92310.00 ± 0.04% | +0.24% … +0.41% | 0.0005 | 0.1000 | A/A noise floor; seeing a change this size takes 4 runs per side (80 % power) | guest_cpu_per_packet.wan-to-lan.gro-off (ns/packet) |

        **baseline → no-reorder-blocks:**

        | baseline mean ± %sd | %change | no-reorder-blocks mean ± %sd | 95% Welch interval | Welch p | Mann–Whitney p | verdict | metric |
        |--:|--:|--:|--:|--:|--:|:--|:--|
        | 170.63 ± 0.86% | +5.78% | 180.50 ± 0.49% | +4.02% … +7.55% | 0.0015 | 0.1000 | too few runs for Mann–Whitney (4 per side) | throughput.lan-to-wan.gro-on (Mbit/s) |
        | 175.33 ± 0.43% | +0.72% | 176.60 ± 0.20% | -0.18% … +1.63% | 0.0832 | 0.1000 | interval contains 0 | throughput.wan-to-lan.gro-on (Mbit/s) |
        | 150.10 ± 0.64% | +0.29% | 150.53 ± 0.87% | -1.50% … +2.08% | 0.6687 | 1.0000 | interval contains 0 | throughput.lan-to-wan.gro-off (Mbit/s) |
        | 155.10 ± 0.62% | +2.84% | 159.50 ± 0.38% | +1.58% … +4.09% | 0.0045 | 0.1000 | too few runs for Mann–Whitney (4 per side) | throughput.wan-to-lan.gro-off (Mbit/s) |
        | 82016.67 ± 0.09% | -2.34% | 80100.00 ± 0.06% | -2.53% … -2.15% | <0.0001 | 0.1000 | too few runs for Mann–Whitney (4 per side) | guest_cpu_per_packet.lan-to-wan.gro-on (ns/packet) |
        | 83510.00 ± 0.04% | -0.24% | 83310.00 ± 0.04% | -0.34% … -0.14% | 0.0025 | 0.1000 | too few runs for Mann–Whitney (4 per side) | guest_cpu_per_packet.wan-to-lan.gro-on (ns/packet) |
        | 91016.67 ± 0.08% | +0.01% | 91030.00 ± 0.05% | -0.16% … +0.19% | 0.8109 | 1.0000 | interval contains 0 | guest_cpu_per_packet.lan-to-wan.gro-off (ns/packet) |
        | 92010.00 ± 0.04% | +0.16% | 92156.67 ± 0.04% | +0.06% … +0.25% | 0.0097 | 0.1000 | too few runs for Mann–Whitney (4 per side) | guest_cpu_per_packet.wan-to-lan.gro-off (ns/packet) |

        > Note: Mann–Whitney U cannot reach p < 0.05 with 3 runs per side: its smallest p is then 0.100, and a change is called significant only when Welch and Mann–Whitney agree, so none can be; it needs 4 runs per side (cargo xtask lab --runs N, default 5)

        What the numbers can show:

        - Mbit/s is the emulator's forwarding speed: it follows host load (other processes, CPU frequency), so only runs interleaved on one quiet host compare
        - ns/packet is the guest's CPU time per forwarded packet: under -icount shift=3,align=off,sleep=on guest time counts instructions, so it is a path-length proxy that host load does not move
        - neither shows cache, TLB or branch-layout effects (what block reordering changes): those need real hardware

        <details><summary>Every run</summary>

        ```
        Throughput, LAN to WAN, GRO on (Mbit/s):
        run | baseline | baseline~control | no-reorder-blocks
        ----+----------+------------------+------------------
        1   |    170.1 |            171.0 |             180.2
        2   |    172.3 |            170.2 |             181.5
        3   |    169.5 |            172.0 |             179.8
        avg |    170.6 |            171.1 |             180.5

        Throughput, WAN to LAN, GRO on (Mbit/s):
        run | baseline | baseline~control | no-reorder-blocks
        ----+----------+------------------+------------------
        1   |    175.0 |            177.5 |             176.5
        2   |    176.2 |            178.0 |             177.0
        3   |    174.8 |            177.2 |             176.3
        avg |    175.3 |            177.6 |             176.6

        Throughput, LAN to WAN, GRO off (Mbit/s):
        run | baseline | baseline~control | no-reorder-blocks
        ----+----------+------------------+------------------
        1   |    150.2 |            150.5 |             149.5
        2   |    149.1 |            149.8 |             152.0
        3   |    151.0 |            150.9 |             150.1
        avg |    150.1 |            150.4 |             150.5

        Throughput, WAN to LAN, GRO off (Mbit/s):
        run | baseline | baseline~control | no-reorder-blocks
        ----+----------+------------------+------------------
        1   |    155.0 |            154.8 |             158.9
        2   |    154.2 |            155.9 |             160.1
        3   |    156.1 |            155.1 |             159.5
        avg |    155.1 |            155.3 |             159.5

        Guest CPU per packet, LAN to WAN, GRO on (ns/packet):
        run | baseline | baseline~control | no-reorder-blocks
        ----+----------+------------------+------------------
        1   |  82000.0 |          82050.0 |           80100.0
        2   |  82100.0 |          82010.0 |           80150.0
        3   |  81950.0 |          82080.0 |           80050.0
        avg |  82016.7 |          82046.7 |           80100.0

        Guest CPU per packet, WAN to LAN, GRO on (ns/packet):
        run | baseline | baseline~control | no-reorder-blocks
        ----+----------+------------------+------------------
        1   |  83500.0 |          83520.0 |           83300.0
        2   |  83550.0 |          83560.0 |           83350.0
        3   |  83480.0 |          83490.0 |           83280.0
        avg |  83510.0 |          83523.3 |           83310.0

        Guest CPU per packet, LAN to WAN, GRO off (ns/packet):
        run | baseline | baseline~control | no-reorder-blocks
        ----+----------+------------------+------------------
        1   |  91000.0 |          91050.0 |           91020.0
        2   |  91100.0 |          90990.0 |           91080.0
        3   |  90950.0 |          91080.0 |           90990.0
        avg |  91016.7 |          91040.0 |           91030.0

        Guest CPU per packet, WAN to LAN, GRO off (ns/packet):
        run | baseline | baseline~control | no-reorder-blocks
        ----+----------+------------------+------------------
        1   |  92000.0 |          92300.0 |           92150.0
        2   |  92050.0 |          92350.0 |           92200.0
        3   |  91980.0 |          92280.0 |           92120.0
        avg |  92010.0 |          92310.0 |           92156.7
        ```

        </details>
    "#]].assert_eq(&lab(Format::Markdown, Style::default()));
}

#[test]
fn json() {
    expect_file!["../snapshots/report_lab.json"].assert_eq(&lab(Format::Json, Style::default()));
}

#[test]
fn csv() {
    expect_file!["../snapshots/report_lab.csv"].assert_eq(&lab(Format::Csv, Style::default()));
}

#[test]
fn svg() {
    expect_file!["../snapshots/report_lab.svg"].assert_eq(&lab(Format::Svg, Style::default()));
}
