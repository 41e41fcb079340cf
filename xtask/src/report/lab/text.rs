//! The lab's part of the text format (and the lines the mail shares).
//!
//! A heading naming the target, the QEMU machine and the lab kernels, a
//! line on how the lab ran, then per comparison (the A/A control first,
//! then each variant) and per family and GRO setting the seed's lines,
//! means of the runs in the family's unit:
//!
//! ```text
//! baseline → no-reorder-blocks:
//! Throughput, GRO on:
//! LAN to WAN: 170.6 Mbit/s → 180.5 Mbit/s (+5.78%)
//!   sd ±0.86% → ±0.49%, 95% Welch interval +4.80% … +6.70%, Welch p 0.0015, Mann–Whitney p 0.0286: significant
//! ```
//!
//! (the seed's `LAN to WAN: 824 Mb/s → 940 Mb/s (+14,08%)`, in the lab's
//! unit; `--decimal-comma` writes `170,6 Mbit/s` and `+5,78%`). The indented line gives each side's
//! standard deviation in percent of its mean, Welch's t interval of
//! the %change, both tests' p and the verdict (the control's line has no
//! verdict: it is the noise floor; it says instead how many runs per side
//! would see a change of its size). A lab that ran only its base lists the
//! base's means and spreads. Notes and what each metric can and cannot
//! show close the block. The mail format ([`super::mail`]) shares the
//! first and last lines ([`head`], [`tail`]) and puts a summary table in
//! place of the seed's lines; the Markdown format's "Every run" block has
//! every [`run_table`].

use std::fmt::Write as _;

use super::table::run_table;
use super::{
    family_title, interval_text, p_text, percent_text, runs_needed_text, verdict_text,
    LabComparison, LabReport, Role,
};
use crate::report::model::{Decimal, Family};
use crate::report::style::{display_path, Style};
use std::path::Path;

/// The run's lab.json as the report shows it: relative to `root` when
/// inside it, and one printable line (a newline in a directory's name is
/// escaped, so it cannot start a line of the report).
pub fn lab_file(root: &Path, lab: &LabReport) -> String {
    let path = display_path(root, &lab.dir.join(crate::results::lab::FILE_NAME));
    crate::util::text::printable(&path).into_owned()
}

/// `Runtime lab, brcm47xx on QEMU malta -cpu 74Kf (lab kernels
/// brcm47xx-lab)`; `Runtime lab, host kernel 6.12.57 (x86_64), runtime
/// settings in a private network namespace`.
///
/// One line: a newline or other control character in what lab.json says
/// (the QEMU machine, the CPU) is escaped, so it cannot start a line of
/// its own in the report.
pub fn heading(lab: &LabReport) -> String {
    let line = if lab.is_host() {
        format!(
            "Runtime lab, {}, runtime settings in a private network namespace",
            lab.machine()
        )
    } else {
        format!(
            "Runtime lab, {} on {} ({} {})",
            lab.target,
            lab.machine(),
            lab.kernels_word(),
            lab.lab_target
        )
    };
    crate::util::text::printable(&line).into_owned()
}

/// How the lab ran, in one sentence (without the file).
pub fn how_it_ran(lab: &LabReport) -> String {
    let s = &lab.settings;
    let control = lab
        .arms
        .iter()
        .find(|a| a.control)
        .map_or("no A/A control".to_string(), |a| {
            format!("A/A control {}", a.name)
        });
    let (per, session) = if s.benches.is_empty() {
        ("variant, direction and GRO setting", "boot")
    } else {
        ("variant and benchmark", "variant and round")
    };
    // iperf3's options when not its defaults: `(iperf3 -P8 -M 536)`.
    let iperf = match s.iperf3.describe() {
        d if d.is_empty() || !s.benches.is_empty() => String::new(),
        d => format!(" (iperf3 {d})"),
    };
    // The options recorded by name: `, mtu 1400`.
    let options: String = s
        .options
        .iter()
        .map(|(key, value)| format!(", {} {value}", crate::util::text::printable(key)))
        .collect();
    let iperf = iperf + &options;
    format!(
        "{}: {} run{} per {per} of {} s each{iperf}, variants interleaved, {} warm-up run{} per {session} discarded; {control}",
        lab.status,
        s.runs,
        if s.runs == 1 { "" } else { "s" },
        s.duration_seconds,
        s.warmup_runs_per_boot,
        if s.warmup_runs_per_boot == 1 { "" } else { "s" }
    )
}

/// A mean as the seed prints it: whole units from 1000 up (`82017`
/// ns/packet), one decimal below (`170.6` Mbit/s), so that QEMU's slower
/// speeds keep three digits.
pub fn seed_value(value: f64, decimal: Decimal) -> String {
    if value.abs() >= 1000.0 {
        format!("{value:.0}")
    } else {
        decimal.apply(format!("{value:.1}"))
    }
}

/// `sd ±1.20% → ±0.80%, 95% Welch interval …, Welch p …, Mann–Whitney p
/// …[: verdict]`; the control's ends with the runs a change of its size
/// needs.
fn stats_line(m: &crate::report::model::Metric, role: Role, d: Decimal) -> Option<String> {
    let s = m.stats()?;
    let c = &s.comparison;
    let sd =
        |x: &crate::measure::stats::Summary| d.apply(format!("±{:.2}%", x.relative_sd_percent()));
    let verdict = match role {
        Role::Control => runs_needed_text(c).map_or(String::new(), |r| format!("; {r}")),
        Role::Variant => format!(": {}", verdict_text(s, role, d)),
    };
    Some(format!(
        "sd {} → {}, 95% Welch interval {}, Welch p {}, Mann–Whitney p {}{verdict}",
        sd(&c.base),
        sd(&c.variant),
        interval_text(c.interval, d),
        p_text(c.welch_p, d),
        p_text(c.mann_whitney_p, d)
    ))
}

/// The seed's lines of one comparison's family, grouped by GRO setting
/// (or benchmark setting).
fn family_lines(out: &mut String, lab: &LabReport, family: &Family, role: Role, d: Decimal) {
    let mut kinds: Vec<&str> = Vec::new();
    for m in &family.metrics {
        if !kinds.contains(&m.kind.as_str()) {
            kinds.push(&m.kind);
        }
    }
    for kind in kinds {
        let _ = writeln!(
            out,
            "{}, {}:",
            family_title(&family.name),
            lab.kind_title(&family.name, kind)
        );
        for m in family.metrics.iter().filter(|m| m.kind == kind) {
            let percent = m
                .percent()
                .map_or("n/a".to_string(), |p| percent_text(p, d));
            let _ = writeln!(
                out,
                "{}: {} {unit} → {} {unit} ({percent})",
                m.phrase,
                seed_value(m.base().mean(), d),
                seed_value(m.variant().mean(), d),
                unit = family.unit
            );
            if let Some(line) = stats_line(m, role, d) {
                let _ = writeln!(out, "  {line}");
            }
        }
    }
}

fn comparison_lines(out: &mut String, lab: &LabReport, c: &LabComparison, d: Decimal) {
    match c.role {
        Role::Control => {
            let _ = writeln!(
                out,
                "A/A control {} → {} (the noise floor):",
                lab.base, c.arm
            );
        }
        Role::Variant => {
            let _ = writeln!(out, "{} → {}:", lab.base, c.arm);
        }
    }
    for f in &c.families {
        family_lines(out, lab, f, c.role, d);
    }
}

/// The base's means and spreads, when nothing was compared.
pub fn base_lines(out: &mut String, lab: &LabReport, d: Decimal) {
    let _ = writeln!(out, "{}:", lab.base);
    let mut last: Option<(&str, String)> = None;
    for s in &lab.series {
        let Some((_, values)) = s.arms.iter().find(|(a, _)| *a == lab.base) else {
            continue;
        };
        let Some(sum) = crate::measure::stats::summary(values) else {
            continue;
        };
        let group = (s.family.as_str(), s.kind());
        if last.as_ref() != Some(&group) {
            let _ = writeln!(
                out,
                "{}, {}:",
                family_title(&s.family),
                super::condition_kind_title(s.condition)
            );
            last = Some(group);
        }
        let _ = writeln!(
            out,
            "{}: {} {} {} ({} run{})",
            super::condition_item_title(s.condition),
            seed_value(sum.mean, d),
            s.unit,
            // One run has no spread to show.
            if sum.n == 1 {
                "(sd n/a)".to_string()
            } else {
                d.apply(format!("±{:.2}%", sum.relative_sd_percent()))
            },
            sum.n,
            if sum.n == 1 { "" } else { "s" }
        );
    }
}

/// One lab run's block for the text format, newline-terminated: [`head`],
/// the base's lines when nothing was compared, each comparison's seed
/// lines, then [`tail`].
pub fn block(root: &Path, lab: &LabReport, style: &Style) -> String {
    let d = style.decimal();
    let mut out = head(root, lab);
    if lab.comparisons.iter().all(|c| c.role == Role::Control) {
        base_lines(&mut out, lab, d);
    }
    for c in &lab.comparisons {
        comparison_lines(&mut out, lab, c, d);
    }
    out.push_str(&tail(lab, d));
    out
}

/// A lab block's first lines (text and mail): the [`heading`], the
/// lab.json path with [`how_it_ran`], and the runtime settings of a host
/// lab.
pub fn head(root: &Path, lab: &LabReport) -> String {
    let mut out = format!("{}:\n", heading(lab));
    let _ = writeln!(out, "{} ({})", lab_file(root, lab), how_it_ran(lab));
    if let Some(settings) = lab.runtime_settings() {
        let _ = writeln!(
            out,
            "Runtime settings (read back with ethtool -k after every run): {settings}"
        );
    }
    out
}

/// A lab block's last lines (text and mail): the mesh's table
/// ([`super::mesh::text`]), the notes and what the numbers can show.
pub fn tail(lab: &LabReport, d: Decimal) -> String {
    let mut out = super::mesh::text(lab, d);
    for n in &lab.notes {
        let _ = writeln!(out, "note: {n}");
    }
    let _ = writeln!(
        out,
        "What the numbers can show: {}.",
        lab.caveats().join("; ")
    );
    out
}

/// Every series' [`run_table`], separated by blank lines.
pub fn run_tables(lab: &LabReport, style: &Style) -> String {
    let tables: Vec<String> = lab
        .series
        .iter()
        .map(|s| run_table(s, style.decimal()))
        .collect();
    tables.join("\n")
}
