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
use super::device_fit::DeviceFitDiff;
use std::path::Path;

use anyhow::{bail, Context, Result};

use super::checks::mismatches;
use super::document::{Comparison, Report, TargetReport};
use super::known::lab_kernel_of;
use super::known::{
    build_command, has_result, known_targets, missing_message, resolve, unknown_target,
    variants_hint, Known,
};
use super::lab::find::{self, Found};
use super::lab::LabReport;
use super::request::ReportRequest;
use super::sizes;
use crate::measure::bloat;
use crate::measure::linkmap::Grouping;
use crate::measure::sections;
use crate::measure::symbols::{self, NmSymbol};
use crate::results::{self, BuildResult};
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

/// `--devices`' comparison of `base` and `variant` (each with its results
/// directory), whole images sized with `rootfs` when given (its
/// architecture checked against both vmlinux files); `None` without
/// `--devices`.
fn device_fit_diff(
    request: &ReportRequest,
    rootfs: Option<&RootfsSummary>,
    (base_dir, base): (&Path, &BuildResult),
    (dir, variant): (&Path, &BuildResult),
) -> Result<Option<DeviceFitDiff>> {
    let Some(pattern) = &request.devices else {
        return Ok(None);
    };
    let old = super::device_fit::read(base_dir, base, "base")?;
    let new = super::device_fit::read(dir, variant, "variant")?;
    if let Some(r) = rootfs {
        for (d, res) in [(base_dir, base), (dir, variant)] {
            let what = format!("{}/{}", res.target.name, res.variant.name);
            r.check_against(&d.join("vmlinux"), &what)?;
        }
    }
    Ok(Some(DeviceFitDiff::new(&old, &new, Some(pattern), rootfs)))
}

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
    let built = &target.built;
    let missing_base = !has_result(&base_dir);
    let wanted: Vec<String> = if request.variants.is_empty() {
        // size-bisect's states are compared only when named.
        built
            .iter()
            .filter(|v| **v != request.base && !v.contains(crate::results::BISECT_STATE_MARK))
            .cloned()
            .collect()
    } else {
        request.variants.clone()
    };
    let (present, absent): (Vec<String>, Vec<String>) = wanted
        .into_iter()
        .partition(|v| has_result(&layout.results_dir(&target.name, v)));

    match asked {
        Asked::ByName => {
            if missing_base {
                bail!(
                    "{}",
                    missing_message(layout, &target.name, &request.base, all_variants)
                );
            }
            if let Some(v) = absent.first() {
                bail!("{}", missing_message(layout, &target.name, v, all_variants));
            }
            if present.is_empty() {
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
        }
        Asked::ByAll => {
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
                    needed.extend(present.iter().chain(&absent).map(String::as_str));
                    if present.is_empty() && absent.is_empty() {
                        needed.push("<VARIANT>");
                    }
                    report.skipped.push(format!(
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
                return Ok(None);
            }
            for v in &absent {
                report.skipped.push(format!(
                    "{}/{v}: not compared, no results yet (`{}`)",
                    target.name,
                    build_command(layout, &target.name, &[v])
                ));
            }
        }
    }

    let base = read_checked(layout, &base_dir, &target.name, &request.base)?;
    // With --symbols, every vmlinux's table is read on a thread of its own
    // (the two of a pair side by side: half the wall time of reading them
    // one after the other); each is taken only after its result.json
    // passed `read_checked`, whose refusals come first as before.
    let present = &present;
    let comparisons = std::thread::scope(|scope| -> Result<Vec<Comparison>> {
        let handles: Vec<_> = std::iter::once(&request.base)
            .chain(present.iter())
            .map(|v| {
                let dir = layout.results_dir(&target.name, v);
                let name = &target.name;
                request
                    .symbols
                    .map(|_| scope.spawn(move || read_vmlinux_symbols(layout, &dir, name, v)))
            })
            .collect();
        let joined = |handle: Option<std::thread::ScopedJoinHandle<'_, _>>| {
            handle
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err(anyhow::anyhow!("reading a symbol table panicked")))
                })
                .transpose()
        };
        let mut tables = handles.into_iter();
        let base_symbols: Option<Vec<NmSymbol>> = joined(tables.next().flatten())?;
        let mut comparisons: Vec<Comparison> = Vec::new();
        for (v, table) in present.iter().zip(tables) {
            let dir = layout.results_dir(&target.name, v);
            let variant = read_checked(layout, &dir, &target.name, v)?;
            let (problems, mut notes) = mismatches(&base, &variant);
            let earlier = std::iter::once(&base).chain(comparisons.iter().map(|c| &c.variant));
            for other in earlier {
                if let Some(note) = results::differing_bytes(other, &variant) {
                    notes.push(format!("{} and {v}: {note}", other.variant.name));
                }
            }
            if !problems.is_empty() && !request.allow_mismatch {
                bail!(
                    "{}: {} and {v} were not built from the same inputs, so their sizes are not comparable:\n{}\nrebuild both with `{}`, or pass --allow-mismatch to compare anyway (the report then carries these as warnings)",
                    target.name,
                    request.base,
                    problems
                        .iter()
                        .map(|p| format!("  - {p}"))
                        .collect::<Vec<_>>()
                        .join("\n"),
                    build_command(layout, &target.name, &[&request.base, v])
                );
            }
            let symbols = match (request.symbols, &base_symbols, joined(table)?) {
                (Some(opts), Some(old), Some(new)) => Some(bloat::diff_with(
                    old,
                    &new,
                    opts.mode,
                    bloat::Options {
                        fold_clones: opts.fold_clones,
                    },
                )),
                _ => None,
            };
            let attribution = match request.by {
                Some(g) => {
                    let old = super::attribution::read(layout, &base_dir, &base)?;
                    let new = super::attribution::read(layout, &dir, &variant)?;
                    let diff = match g {
                        Grouping::Kconfig => {
                            super::kconfig::diff(layout, (&base, &old), (&variant, &new))?
                        }
                        _ => super::attribution::AttributionDiff::new(&old, &new, g),
                    };
                    diff.check_totals(&base.vmlinux_sections, &variant.vmlinux_sections)?;
                    Some(diff)
                }
                None => None,
            };
            let device_fit =
                device_fit_diff(request, rootfs, (&base_dir, &base), (&dir, &variant))?;
            let (sizes, unpaired_artifacts) = sizes::family(&base, &variant);
            comparisons.push(Comparison {
                variant,
                dir,
                families: vec![sizes],
                unpaired_artifacts,
                warnings: problems,
                notes,
                symbols,
                attribution,
                device_fit,
            });
        }
        Ok(comparisons)
    })?;
    Ok(Some(TargetReport {
        name: target.name.clone(),
        base,
        base_dir,
        comparisons,
    }))
}

/// Reads `dir/result.json` and checks that it belongs in `dir` and that
/// `dir/vmlinux` is the file it describes.
fn read_checked(layout: &Layout, dir: &Path, target: &str, variant: &str) -> Result<BuildResult> {
    let result = BuildResult::read(dir)?;
    let file = dir.join(results::FILE_NAME);
    if result.target.name != target || result.variant.name != variant {
        bail!(
            "{} records target {:?} variant {:?} but lies in the directory for {target}/{variant}; rebuild with `{}`",
            file.display(),
            result.target.name,
            result.variant.name,
            build_command(layout, target, &[variant])
        );
    }
    let rebuild = build_command(layout, target, &[variant]);
    for (name, recorded) in &result.artifacts {
        check_artifact(dir, name, recorded.size, &file, &rebuild)?;
    }
    if result.artifacts.contains_key("vmlinux") {
        let vmlinux = dir.join("vmlinux");
        let sections = sections::berkeley_sizes(&vmlinux)
            .with_context(|| format!("rebuild it with `{rebuild}`"))?;
        if sections != result.vmlinux_sections {
            bail!(
                "{}: sections are text {} data {} bss {} but {} records text {} data {} bss {}: the file was replaced; rebuild with `{rebuild}`",
                vmlinux.display(),
                sections.text,
                sections.data,
                sections.bss,
                file.display(),
                result.vmlinux_sections.text,
                result.vmlinux_sections.data,
                result.vmlinux_sections.bss
            );
        }
    }
    Ok(result)
}

/// Checks that the artifact `name` of the result in `dir` (recorded in
/// `file` as `recorded` bytes) is a plain file name, exists, is not empty
/// and has the recorded size, so a size in the report is a file's size.
fn check_artifact(dir: &Path, name: &str, recorded: u64, file: &Path, rebuild: &str) -> Result<()> {
    let plain = !name.is_empty()
        && !name.starts_with('.')
        && std::path::Path::new(name).components().count() == 1
        && crate::util::path::unsafe_reason(std::path::Path::new(name)).is_none();
    if !plain {
        bail!(
            "{} lists the artifact {:?}, which is not a file name; rebuild with `{rebuild}`",
            file.display(),
            crate::util::text::printable(name)
        );
    }
    let artifact = dir.join(name);
    let len = std::fs::metadata(&artifact)
        .with_context(|| {
            format!(
                "{} is listed in {} but cannot be read; rebuild with `{rebuild}`",
                artifact.display(),
                file.display()
            )
        })?
        .len();
    if len != recorded {
        bail!(
            "{} is {len} bytes but {} records {recorded} bytes: the file is truncated or was replaced; rebuild with `{rebuild}`",
            artifact.display(),
            file.display(),
        );
    }
    if len == 0 {
        bail!(
            "{} is empty, which no kernel image is; rebuild with `{rebuild}`",
            artifact.display()
        );
    }
    Ok(())
}

fn read_vmlinux_symbols(
    layout: &Layout,
    dir: &Path,
    target: &str,
    variant: &str,
) -> Result<Vec<NmSymbol>> {
    let vmlinux = dir.join("vmlinux");
    if !vmlinux.is_file() {
        bail!(
            "--symbols needs {}, which does not exist; rebuild with `{}`",
            vmlinux.display(),
            build_command(layout, target, &[variant])
        );
    }
    symbols::read_unsorted(&vmlinux).with_context(|| {
        format!(
            "rebuild it with `{}`",
            build_command(layout, target, &[variant])
        )
    })
}
