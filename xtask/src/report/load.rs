//! Loading what a report compares: choosing targets and variants, reading
//! their `result.json` files and vmlinux, and building the [`super::document::Report`].
//!
//! Everything here reads what `cargo xtask build` wrote under
//! `target/xtask/results/<target>/<variant>/` ([`crate::util::layout::Layout`]):
//! `result.json` ([`BuildResult`]) for sizes and provenance, and `vmlinux`
//! itself, which is checked (recorded size, ELF, recorded sections) and, with
//! `--symbols`, read for its symbol table.
//!
//! Only results are read, never `targets/` or `patches/variants.toml`: a
//! report shows what was built, even after those files changed. A target is
//! known by its results directory; `--target` also accepts the OpenWrt
//! `target/subtarget` and the aliases its results record, artifacts are
//! listed in the recorded target's order, and the recorded `in_all` decides
//! whether `all` mentions a target that has none of the asked-for results.
//!
//! A base and a variant that are not comparable ([`super::checks`]) are an
//! error naming both values and the `cargo xtask build` command that
//! rebuilds both; with `allow_mismatch` the report is made anyway and every
//! difference is printed in it as a warning.

use super::device_fit::images::RootfsSummary;

use anyhow::{bail, Result};

use super::compare::{self, read_checked};
use super::document::{Report, TargetReport};
use super::known::lab_kernel_of;
use super::known::{
    build_command, has_result, known_targets, missing_message, resolve, unknown_target,
    variants_hint, Known,
};
use super::lab::find::{self, Found};
use super::lab::LabReport;
use super::request::ReportRequest;
use crate::util::layout::Layout;

/// How a target came to be in the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Asked {
    /// Named with `--target`: missing results are an error.
    ByName,
    /// Under `all`: missing results are a note in `skipped`.
    ByAll,
}

/// Loads and checks the results `request` names and computes every change.
///
/// Errors (each naming the files or values involved and the fix): an
/// unknown target (listing the targets that have results); missing results
/// (with the `cargo xtask build` command that makes them); a `result.json`
/// that is unreadable (not a regular file, too large, not a result) or lies
/// in another target's or variant's directory; an artifact that is
/// missing, empty or not of its recorded size (every artifact, so that no
/// size in the report is only a record's); a vmlinux that is not ELF or
/// whose sections are not the recorded ones; builds that are not comparable
/// ([`super::checks`]) unless `request.allow_mismatch`. Two results of one
/// build key with other bytes get a note (the build is not reproducible).
pub fn load(layout: &Layout, request: &ReportRequest) -> Result<Report> {
    for v in &request.variants {
        if *v == request.base {
            bail!(
                "--variant {v} is also the base (--base {}); compare it against another variant",
                request.base
            );
        }
    }
    if let (Some(r), None) = (&request.rootfs, &request.devices) {
        bail!(
            "--rootfs {} sizes whole images for device fit: give --devices PATTERN too",
            r.source
        );
    }
    let rootfs = request.rootfs.as_ref();
    let known = known_targets(layout, &request.base)?;
    let mut all_variants: Vec<&str> = known
        .iter()
        .flat_map(|k| k.built.iter().map(String::as_str))
        // size-bisect's states are not variants to suggest.
        .filter(|v| !v.contains(crate::results::BISECT_STATE_MARK))
        .collect();
    all_variants.sort();
    all_variants.dedup();
    let spellings: Vec<String> = if request.targets.is_empty() {
        vec!["all".to_string()]
    } else {
        request.targets.clone()
    };

    let mut skipped = Vec::new();
    let lab_targets = lab_targets(layout, &spellings, &known)?;
    let labs = find::select(layout, &request.lab, &lab_targets, &mut skipped)?;
    // A target a lab run measured is reported even without size results,
    // which are then a note rather than an error.
    let measured = |name: &str| {
        let router = lab_kernel_of(name).unwrap_or(name);
        labs.iter().any(|l| l.covers(name) || l.covers(router))
    };

    let mut chosen: Vec<(&Known, Asked)> = Vec::new();
    for spelling in &spellings {
        if spelling == "all" {
            for k in &known {
                if !chosen.iter().any(|(c, _)| c.name == k.name) {
                    chosen.push((k, Asked::ByAll));
                }
            }
        } else {
            let Some(k) = resolve(&known, spelling) else {
                if !measured(spelling) {
                    return Err(unknown_target(layout, request, spelling, &known));
                }
                // The host lab has no kernel of its own to build.
                if labs
                    .iter()
                    .any(|l| l.covers(spelling) && l.record.machine.host().is_some())
                {
                    continue;
                }
                skipped.push(format!(
                    "{spelling}: no size results, only the lab's (`{}`)",
                    build_command(layout, spelling, &[&request.base, "<VARIANT>"])
                ));
                continue;
            };
            let asked = if measured(&k.name) {
                Asked::ByAll
            } else {
                Asked::ByName
            };
            match chosen.iter_mut().find(|(c, _)| c.name == k.name) {
                Some(entry) => entry.1 = asked,
                None => chosen.push((k, asked)),
            }
        }
    }

    let mut report = Report {
        base: request.base.clone(),
        root: layout.root().to_path_buf(),
        targets: Vec::new(),
        skipped,
        symbols: request.symbols,
        by: request.by,
        labs: Vec::new(),
        agreement: None,
    };
    for (target, asked) in chosen {
        if let Some(t) = load_target(
            layout,
            request,
            rootfs,
            target,
            asked,
            &all_variants,
            &mut report,
        )? {
            report.targets.push(t);
        }
    }
    for found in labs {
        report.labs.push(lab_report(layout, request, found)?);
    }
    if request.agreement {
        report.agreement = Some(super::lab::agreement::agreement(&report.labs)?);
    }
    if report.targets.is_empty() && report.labs.is_empty() {
        let mut names = vec![request.base.as_str()];
        names.extend(request.variants.iter().map(String::as_str));
        if request.variants.is_empty() {
            names.push("<VARIANT>");
        }
        if !report.skipped.is_empty() {
            bail!(
                "no results to compare in {}:\n- {}",
                layout.results_root().display(),
                report.skipped.join("\n- ")
            );
        }
        bail!(
            "no results to compare in {}: build a base and a variant first, e.g. `{}`",
            layout.results_root().display(),
            build_command(layout, "all", &names)
        );
    }
    Ok(report)
}

/// The targets whose newest lab run a report shows: under `all` every
/// target with a lab run, else the router target of each `--target` that
/// has one (`brcm47xx` for `brcm47xx`, `brcm47xx-lab` or an OpenWrt name
/// its results record).
fn lab_targets(layout: &Layout, spellings: &[String], known: &[Known]) -> Result<Vec<String>> {
    let with_runs = find::targets_with_runs(layout)?;
    if spellings.iter().any(|s| s == "all") {
        return Ok(with_runs);
    }
    let mut out: Vec<String> = Vec::new();
    for s in spellings {
        let name = resolve(known, s).map_or(s.as_str(), |k| k.name.as_str());
        let router = lab_kernel_of(name).unwrap_or(name);
        if with_runs.iter().any(|t| t == router) && !out.iter().any(|t| t == router) {
            out.push(router.to_string());
        }
    }
    Ok(out)
}

/// The report of one lab run, with notes on a `--base` it does not have
/// and on lab kernels rebuilt since it ran.
fn lab_report(layout: &Layout, request: &ReportRequest, found: Found) -> Result<LabReport> {
    let mut notes = find::rebuilt_since(layout, &found);
    notes.extend(super::openwrt_lab::run_notes(&found.record));
    let base = &found.record.settings.base;
    if *base != request.base {
        notes.push(format!(
            "this lab run compares against its own base {base}, not --base {}",
            request.base
        ));
    }
    let mut lab = LabReport::new(found.dir, found.record, &request.variants)?;
    lab.notes.extend(notes);
    Ok(lab)
}

/// The report of `target` (asked for as `asked`): its base compared with
/// each wanted variant that has results (every built one but the base and
/// size-bisect's states when `request` names none). A target under `all`
/// that lacks results gets a note in `report.skipped` and is `None`.
///
/// Errors: a target asked for by name without the base, a named variant
/// or any variant's results (each with the command that builds them), and
/// those of [`read_checked`] and [`compare::comparisons`].
#[allow(clippy::too_many_arguments)]
fn load_target(
    layout: &Layout,
    request: &ReportRequest,
    rootfs: Option<&RootfsSummary>,
    target: &Known,
    asked: Asked,
    all_variants: &[&str],
    report: &mut Report,
) -> Result<Option<TargetReport>> {
    let base_dir = layout.results_dir(&target.name, &request.base);
    let missing_base = !has_result(&base_dir);
    let (present, absent) = wanted_variants(layout, request, target);
    let wanted = Wanted {
        missing_base,
        present: &present,
        absent: &absent,
    };
    match asked {
        Asked::ByName => check_named(layout, request, target, all_variants, &wanted)?,
        Asked::ByAll => {
            if !note_missing(layout, request, target, &wanted, &mut report.skipped) {
                return Ok(None);
            }
        }
    }

    let base = read_checked(layout, &base_dir, &target.name, &request.base)?;
    let comparisons = compare::comparisons(
        layout,
        request,
        rootfs,
        target,
        (&base_dir, &base),
        &present,
    )?;
    Ok(Some(TargetReport {
        name: target.name.clone(),
        base,
        base_dir,
        comparisons,
    }))
}

/// Which of a target's wanted results are there.
struct Wanted<'a> {
    /// Whether the base has no results.
    missing_base: bool,
    /// The wanted variants with results, in order.
    present: &'a [String],
    /// The wanted variants without results, in order.
    absent: &'a [String],
}

/// The variants of `target` that `request` wants compared (those it
/// names, else every built one but the base and size-bisect's states),
/// split into those with results and those without, each in order.
fn wanted_variants(
    layout: &Layout,
    request: &ReportRequest,
    target: &Known,
) -> (Vec<String>, Vec<String>) {
    let wanted: Vec<String> = if request.variants.is_empty() {
        // size-bisect's states are compared only when named.
        target
            .built
            .iter()
            .filter(|v| **v != request.base && !v.contains(crate::results::BISECT_STATE_MARK))
            .cloned()
            .collect()
    } else {
        request.variants.clone()
    };
    wanted
        .into_iter()
        .partition(|v| has_result(&layout.results_dir(&target.name, v)))
}

/// Checks that `target`, named with `--target`, has every `wanted`
/// result: its base, each named variant, and at least one variant.
///
/// Errors: the first missing result, with the `cargo xtask build` command
/// that makes it (`all_variants` are the variants to suggest).
fn check_named(
    layout: &Layout,
    request: &ReportRequest,
    target: &Known,
    all_variants: &[&str],
    wanted: &Wanted<'_>,
) -> Result<()> {
    if wanted.missing_base {
        bail!(
            "{}",
            missing_message(layout, &target.name, &request.base, all_variants)
        );
    }
    if let Some(v) = wanted.absent.first() {
        bail!("{}", missing_message(layout, &target.name, v, all_variants));
    }
    if wanted.present.is_empty() {
        let others: Vec<&str> = all_variants
            .iter()
            .copied()
            .filter(|v| *v != request.base)
            .collect();
        bail!(
            "{}: only {} has results, nothing to compare it with; build a variant with `{}`{}",
            target.name,
            request.base,
            build_command(layout, &target.name, &["<VARIANT>"]),
            variants_hint(&others)
        );
    }
    Ok(())
}

/// Notes in `skipped` what `target`, chosen under `all`, lacks of its
/// `wanted` results, each with the command that builds it; whether the
/// target is compared at all (it has its base and a variant).
fn note_missing(
    layout: &Layout,
    request: &ReportRequest,
    target: &Known,
    wanted: &Wanted<'_>,
    skipped: &mut Vec<String>,
) -> bool {
    let Wanted {
        missing_base,
        present,
        absent,
    } = *wanted;
    if missing_base || present.is_empty() {
        // A target none of whose results were asked for is news
        // only when `all` builds it (tiny profiles are not).
        let in_all = target.record.as_ref().is_none_or(|r| r.in_all);
        if in_all || !missing_base || !present.is_empty() {
            // Only what is missing: the base if absent, and the variants.
            let mut needed: Vec<&str> = Vec::new();
            if missing_base {
                needed.push(&request.base);
            }
            needed.extend(present.iter().chain(absent).map(String::as_str));
            if present.is_empty() && absent.is_empty() {
                needed.push("<VARIANT>");
            }
            skipped.push(format!(
                "{}: not compared, no {} results yet (`{}`)",
                target.name,
                if missing_base {
                    request.base.as_str()
                } else {
                    "variant"
                },
                build_command(layout, &target.name, &needed)
            ));
        }
        return false;
    }
    for v in absent {
        skipped.push(format!(
            "{}/{v}: not compared, no results yet (`{}`)",
            target.name,
            build_command(layout, &target.name, &[v])
        ));
    }
    true
}
