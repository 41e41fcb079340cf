//! `--format text`: the plain-text form developers post in pull requests
//! and forum threads.
//!
//! Per target: a heading `SOC (openwrt/target):`, then per variant a line
//! `base (-O2) → variant (-O2):` ([`pair_line`]: each side's optimization
//! level) followed by one line per metric of every family
//! ([`super::model::Family`]) in the form `phrase: before → after (percent)`:
//! for sizes `zImage size: 1840424 → 1871328 (+1.68%)` per artifact and
//! `vmlinux text: … → … (…)` per section (bytes; percent from
//! [`format_percent`](super::model::format_percent)); a family whose unit is
//! shown prints it after the values, and means of several samples say so
//! (`tcp throughput: 941.33 → 950.00 Mbit/s (+0.92%, mean of 3 samples)`).
//! Then binutils `size`'s own Berkeley table for the base and every variant
//! vmlinux, and with `--symbols` the bloat-o-meter text of each pair.
//! Warnings from `--allow-mismatch` come right under the heading. The
//! runtime lab's runs follow the targets ([`super::lab::text`]: the seed's
//! `LAN to WAN: 824 Mbit/s → 940 Mbit/s (+14.08%)` lines per GRO setting,
//! with their statistics).

use std::fmt::Write as _;

use super::document::{Comparison, Report, TargetReport};
use super::known::lab_kernel_of;
use super::model::{Family, Metric, UnitLabel};
use super::style::Style;

/// The heading of a target: `SOC (openwrt/target)`, from `result.json`'s
/// `soc` and `openwrt_target`; for a lab kernel (`brcm47xx-lab`), whose
/// SoC is the QEMU machine, `QEMU malta (74Kf) (lab kernel of
/// brcm47xx/mips74k)`, so it is not taken for the router's.
pub fn heading(target: &TargetReport) -> String {
    let t = &target.base.target;
    match lab_kernel_of(&target.name) {
        Some(_) => format!("{} (lab kernel of {})", t.soc, t.openwrt),
        None => format!("{} ({})", t.soc, t.openwrt),
    }
}

/// For a base built in OpenWrt mode (`build --openwrt`), one line on what
/// OpenWrt's series and config became on this source, from `result.json`'s
/// `openwrt` record: `OpenWrt ramips/mt7621 (Linux 6.12 series on
/// 6.12.117, KCFLAGS -fno-caller-saves): 350 patches applied, 11 dropped
/// (upstream), 29 left out (conflict); olddefconfig: 8 symbols the source
/// does not know (1 set), 3 with unmet dependencies, 0 values changed`,
/// newline-terminated; empty for a default-mode base.
/// A lab kernel built in OpenWrt mode (`lab --openwrt`) gets a line naming
/// the router, then [`super::openwrt_lab::lines`].
pub fn openwrt_line(target: &TargetReport) -> String {
    let Some(o) = &target.base.openwrt else {
        return String::new();
    };
    if let Some(lab) = &o.lab {
        let mut out = format!(
            "OpenWrt-mode lab kernel of {} (Linux {} series on {}):\n",
            lab.router_target, o.kernel, target.base.kernel_source.version
        );
        for line in super::openwrt_lab::lines(o) {
            out.push_str(&line);
            out.push('\n');
        }
        return out;
    }
    let count = |class: &str| o.patch_counts.get(class).copied().unwrap_or(0);
    let applied = count("clean") + count("offset") + count("fuzz");
    format!(
        "OpenWrt {} (Linux {} series on {}, KCFLAGS {}): {applied} patches applied, {} dropped (upstream), {} left out (conflict); olddefconfig: {} symbols the source does not know, {} set symbols with unmet dependencies, {} values changed\n",
        o.target,
        o.kernel,
        target.base.kernel_source.version,
        o.kcflags.join(" "),
        count("upstream"),
        count("conflict"),
        o.kconfig.unknown.len(),
        o.kconfig.unmet.len(),
        o.kconfig.changed.len()
    )
}

/// The text binutils `size` (Berkeley format, decimal radix) prints for
/// `size BASE VARIANT…` run in the workspace root: a header line, then per
/// file `%7lu\t%7lu\t%7lu\t%7lu\t%7lx\t<file>` (text, data, bss, dec, hex),
/// with the paths relative to the workspace root. Newline-terminated.
pub fn size_block(report: &Report, target: &TargetReport) -> String {
    let mut out = String::from("   text\t   data\t    bss\t    dec\t    hex\tfilename\n");
    let mut line = |s: &crate::measure::sections::SectionSizes, dir: &std::path::Path| {
        let _ = writeln!(
            out,
            "{:>7}\t{:>7}\t{:>7}\t{:>7}\t{:>7x}\t{}",
            s.text,
            s.data,
            s.bss,
            s.dec(),
            s.dec(),
            report.display_path(&dir.join("vmlinux"))
        );
    };
    line(&target.base.vmlinux_sections, &target.base_dir);
    for c in &target.comparisons {
        line(&c.variant.vmlinux_sections, &c.dir);
    }
    out
}

/// ` widgets` after a value of `family` when its unit is shown, else nothing.
pub fn unit_suffix(family: &Family) -> String {
    match family.unit_label {
        UnitLabel::Implied => String::new(),
        UnitLabel::Shown => format!(" {}", family.unit),
    }
}

/// `phrase: before → after[ unit] (percent[, mean of N samples])`, one
/// metric in a sentence, newline-terminated.
pub fn metric_line(family: &Family, m: &Metric, style: &Style) -> String {
    let d = style.decimal();
    let note = m.sample_note().map_or(String::new(), |n| format!(", {n}"));
    format!(
        "{}: {} → {}{} ({}{note})\n",
        m.phrase,
        m.before().text(d),
        m.after().text(d),
        unit_suffix(family),
        m.percent_text(d)
    )
}

/// The metric lines of one comparison, family by family (sizes: artifacts
/// as `zImage size: …`, then vmlinux sections as `vmlinux text: …`), then
/// the artifacts only one side has.
pub fn change_lines(c: &Comparison, style: &Style) -> String {
    let mut out = String::new();
    for family in &c.families {
        for m in &family.metrics {
            out.push_str(&metric_line(family, m, style));
        }
    }
    for (name, only) in &c.unpaired_artifacts {
        let _ = writeln!(out, "{name}: only {only} has it");
    }
    out
}

/// The `WARNING:`/`note:` lines of one comparison.
pub fn warning_lines(report: &Report, c: &Comparison) -> String {
    let mut out = String::new();
    for w in &c.warnings {
        let _ = writeln!(
            out,
            "WARNING: compared anyway (--allow-mismatch), {} → {}: {w}",
            report.base, c.variant.variant.name
        );
    }
    for n in &c.notes {
        let _ = writeln!(out, "note: {n}");
    }
    out
}

/// `base (-O2) → variant (-O2):`, the line above a comparison's metrics:
/// each side's variant and the optimization level its compiler was given
/// ([`crate::results::Cflags::level`]), newline-terminated.
pub fn pair_line(target: &TargetReport, c: &Comparison) -> String {
    format!(
        "{} ({}) → {} ({}):\n",
        target.base.variant.name,
        target.base.kbuild_cflags.level(),
        c.variant.variant.name,
        c.variant.kbuild_cflags.level()
    )
}

/// How many rows of each bloat-o-meter table a report prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SymbolRows {
    /// Every row, as `scripts/bloat-o-meter` prints them (text).
    All,
    /// The largest growths and shrinks, this many in all, and how many
    /// were left out (mail: dropping -fno-reorder-blocks in OpenWrt mode
    /// moves about 12,500 functions).
    Top(usize),
}

/// The rows a mail keeps of each symbol table: the 15 largest growths
/// and the 15 largest shrinks.
pub const MAIL_SYMBOL_ROWS: usize = 30;

/// The symbol-diff section of one comparison: a title line naming the pair,
/// the bloat-o-meter mode and whether clones are folded, then
/// [`crate::measure::bloat::BloatDiff::render`] (or its top `rows`).
pub fn symbols_block(
    report: &Report,
    target: &TargetReport,
    c: &Comparison,
    rows: SymbolRows,
) -> Option<String> {
    let diff = c.symbols.as_ref()?;
    let mode = diff.mode.flag().map_or(String::new(), |f| format!(" {f}"));
    let mut out = format!(
        "Symbols, bloat-o-meter{mode} {} {}{}:\n",
        report.display_path(&target.base_dir.join("vmlinux")),
        report.display_path(&c.dir.join("vmlinux")),
        if diff.options.fold_clones {
            " (compiler clones folded)"
        } else {
            ""
        }
    );
    out.push_str(&match rows {
        SymbolRows::All => diff.render(),
        SymbolRows::Top(keep) => diff.render_top(keep),
    });
    Some(out)
}

/// How a format lays out a target's body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyLayout {
    /// The text format: a `base → variant:` heading before every
    /// variant's lines, every symbol row.
    Text,
    /// The mail format: headings only when the target compares several
    /// variants (the preamble names the one pair), the top symbol rows
    /// ([`MAIL_SYMBOL_ROWS`]).
    Mail,
}

/// One target's body, shared by the text and mail formats: warnings, each
/// variant's change lines, `size`'s table and the symbol diffs.
pub fn target_body(
    report: &Report,
    target: &TargetReport,
    style: &Style,
    layout: BodyLayout,
) -> String {
    let mut out = openwrt_line(target);
    for c in &target.comparisons {
        out.push_str(&warning_lines(report, c));
    }
    for c in &target.comparisons {
        if layout == BodyLayout::Text || target.comparisons.len() > 1 {
            out.push_str(&pair_line(target, c));
        }
        out.push_str(&change_lines(c, style));
    }
    out.push('\n');
    out.push_str(&size_block(report, target));
    for c in &target.comparisons {
        let rows = match layout {
            BodyLayout::Text => SymbolRows::All,
            BodyLayout::Mail => SymbolRows::Top(MAIL_SYMBOL_ROWS),
        };
        if let Some(block) = symbols_block(report, target, c, rows) {
            out.push('\n');
            out.push_str(&block);
        }
        let top = match layout {
            BodyLayout::Text => None,
            BodyLayout::Mail => Some(MAIL_SYMBOL_ROWS),
        };
        if let Some(block) = attribution_block(report, target, c, top) {
            out.push('\n');
            out.push_str(&block);
        }
        if let Some(diff) = &c.device_fit {
            out.push_str(&format!(
                "\nDevice fit {} → {} ({}):\n{}",
                report.base,
                c.variant.variant.name,
                diff.openwrt_target,
                diff.render(top)
            ));
        }
    }
    out
}

/// The `--by` section of one comparison: a title naming the pair and the
/// maps, then [`super::attribution::AttributionDiff::render`].
pub fn attribution_block(
    report: &Report,
    target: &TargetReport,
    c: &Comparison,
    top: Option<usize>,
) -> Option<String> {
    let diff = c.attribution.as_ref()?;
    let by = super::attribution::grouping_words(diff.grouping);
    let maps = diff.maps_description();
    Some(format!(
        "Bytes by {by}, {} → {} (link maps: {maps}):\n{}",
        report.display_path(&target.base_dir.join("vmlinux")),
        report.display_path(&c.dir.join("vmlinux")),
        diff.render(top)
    ))
}

/// Renders the whole report as text: the size targets, then the lab runs
/// ([`super::lab::text::block`]).
pub fn render(report: &Report, style: &Style) -> String {
    let mut blocks: Vec<String> = Vec::new();
    for t in &report.targets {
        let mut out = format!("{}:\n", heading(t));
        out.push_str(&target_body(report, t, style, BodyLayout::Text));
        blocks.push(out);
    }
    for lab in &report.labs {
        blocks.push(super::lab::text::block(&report.root, lab, style));
    }
    if let Some(a) = &report.agreement {
        blocks.push(super::lab::agreement::text(
            &report.root,
            a,
            style.decimal(),
        ));
    }
    blocks.join("\n")
}
