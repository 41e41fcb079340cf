//! `--format mail`: a body for a commit message or a mailing-list post
//! (openwrt-devel style): what was built with what, then one block per
//! target separated by blank lines.
//!
//! ```text
//! Size change of no-reorder-blocks against baseline:
//!
//! Linux 6.12.117, arm-linux-gnueabi-gcc (Debian 12.2.0-14) 12.2.0
//! baseline:          KBUILD_CFLAGS += -Os -fno-reorder-blocks -fno-tree-ch
//! no-reorder-blocks: KBUILD_CFLAGS += -Os -fno-tree-ch
//!
//! tinyconfig (bcm53xx/tiny):
//! zImage size: 415656 → 418744 (+0.74%)
//! …
//! ```
//!
//! The runtime lab's runs follow ([`super::lab::mail`]): per variant a
//! summary table of every metric with its A/A floor and verdict, then the
//! per-run tables of the batman-adv performance mails (`run | base |
//! variant`, then `avg`) of the headline families.
//!
//! The kernel version and compiler come from `result.json`; when targets
//! differ in them, each target's block carries its own line. The flags are
//! each variant's effective KBUILD_CFLAGS branch (`-Os` or `-O2`), as
//! recorded for the first target; a target whose build recorded other flags
//! for the same variant lists its own.

use std::fmt::Write as _;

use super::document::{Report, TargetReport};
use super::lab::mail as lab_mail;
use super::lab::Role;
use super::style::Style;
use super::text::{heading, target_body, BodyLayout};
use crate::results::BuildResult;

fn toolchain_line(r: &BuildResult) -> String {
    format!("Linux {}, {}", r.kernel_source.version, r.compiler)
}

/// (variant, flags) for the base and each variant of `t`.
fn flags_of(t: &TargetReport) -> Vec<(String, String)> {
    let mut v = vec![(
        t.base.variant.name.clone(),
        t.base.kbuild_cflags.in_effect().to_string(),
    )];
    for c in &t.comparisons {
        v.push((
            c.variant.variant.name.clone(),
            c.variant.kbuild_cflags.in_effect().to_string(),
        ));
    }
    v
}

fn flag_lines(flags: &[(String, String)]) -> String {
    let width = flags.iter().map(|(n, _)| n.len() + 1).max().unwrap_or(0);
    let mut out = String::new();
    for (name, f) in flags {
        let _ = writeln!(out, "{:<width$} KBUILD_CFLAGS += {f}", format!("{name}:"));
    }
    out
}

/// `Size change of a, b against base`, `Size and runtime change of …` or
/// `Runtime change of …`, by what the report holds; `Runtime lab of base`
/// when a lab ran its base alone.
pub fn title(report: &Report) -> String {
    let mut variants: Vec<&str> = Vec::new();
    let lab_variants = report.labs.iter().flat_map(|l| {
        l.comparisons
            .iter()
            .filter(|c| c.role == Role::Variant)
            .map(|c| c.arm.as_str())
    });
    for v in report
        .targets
        .iter()
        .flat_map(|t| {
            t.comparisons
                .iter()
                .map(|c| c.variant.variant.name.as_str())
        })
        .chain(lab_variants)
    {
        if !variants.contains(&v) {
            variants.push(v);
        }
    }
    let what = match (report.targets.is_empty(), report.labs.is_empty()) {
        (false, true) => "Size change",
        (false, false) => "Size and runtime change",
        (true, _) => "Runtime change",
    };
    let base = match report.labs.first() {
        Some(l) if report.targets.is_empty() => &l.base,
        _ => &report.base,
    };
    if variants.is_empty() {
        // Only a lab that ran its base alone.
        format!("Runtime lab of {base}")
    } else {
        format!("{what} of {} against {base}", variants.join(", "))
    }
}

/// Renders the report as a mail / commit-message body: the size targets,
/// then each lab run's block ([`super::lab::mail::block`]).
pub fn render(report: &Report, style: &Style) -> String {
    let mut out = format!("{}:\n", title(report));
    if !report.targets.is_empty() {
        out.push('\n');
        out.push_str(&sizes(report, style));
    }
    for lab in &report.labs {
        out.push('\n');
        out.push_str(&lab_mail::block(&report.root, lab, style));
    }
    if let Some(a) = &report.agreement {
        out.push('\n');
        out.push_str(&super::lab::agreement::text(
            &report.root,
            a,
            style.decimal(),
        ));
    }
    out
}

/// The size targets' part of the mail: toolchain, flags, one block per
/// target. `report.targets` must not be empty.
fn sizes(report: &Report, style: &Style) -> String {
    let mut out = String::new();
    let first = &report.targets[0];
    let shared_toolchain = report
        .targets
        .iter()
        .all(|t| toolchain_line(&t.base) == toolchain_line(&first.base));
    if shared_toolchain {
        let _ = writeln!(out, "{}", toolchain_line(&first.base));
    }
    // Flags: the first occurrence of each variant, in report order.
    let mut global: Vec<(String, String)> = Vec::new();
    for t in &report.targets {
        for (name, f) in flags_of(t) {
            if !global.iter().any(|(n, _)| *n == name) {
                global.push((name, f));
            }
        }
    }
    out.push_str(&flag_lines(&global));

    for t in &report.targets {
        out.push('\n');
        let _ = writeln!(out, "{}:", heading(t));
        if !shared_toolchain {
            let _ = writeln!(out, "{}", toolchain_line(&t.base));
        }
        let own = flags_of(t);
        if own.iter().any(|entry| !global.contains(entry)) {
            out.push_str(&flag_lines(&own));
        }
        out.push_str(&target_body(report, t, style, BodyLayout::Mail));
    }
    out
}
