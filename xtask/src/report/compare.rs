//! Comparing one target's base with each of its variants for
//! [`super::load`]: reading and checking their results (`result.json`,
//! every artifact, vmlinux) and computing what changed — sizes, and with
//! the request's options symbols, attribution and device fit.

use std::path::Path;
use std::thread::ScopedJoinHandle;

use anyhow::{bail, Context, Result};

use super::checks::mismatches;
use super::device_fit::images::RootfsSummary;
use super::device_fit::DeviceFitDiff;
use super::document::Comparison;
use super::known::{build_command, Known};
use super::request::ReportRequest;
use super::sizes;
use crate::measure::bloat;
use crate::measure::linkmap::Grouping;
use crate::measure::sections;
use crate::measure::symbols::{self, NmSymbol};
use crate::results::{self, BuildResult};
use crate::util::layout::Layout;

/// A thread reading one vmlinux's symbol table.
type SymbolReader<'scope> = ScopedJoinHandle<'scope, Result<Vec<NmSymbol>>>;

/// `target`'s base (`base`, read from `base_dir`) compared with each
/// variant of `present` (variants with results), in order; whole images
/// sized with `rootfs` when given.
///
/// With `--symbols`, every vmlinux's table is read on a thread of its own
/// (the two of a pair side by side: half the wall time of reading them
/// one after the other); each is taken only after its result.json passed
/// [`read_checked`], whose refusals come first as before.
///
/// Errors: those of [`compare_variant`], and a thread reading a symbol
/// table that panicked.
pub(super) fn comparisons(
    layout: &Layout,
    request: &ReportRequest,
    rootfs: Option<&RootfsSummary>,
    target: &Known,
    (base_dir, base): (&Path, &BuildResult),
    present: &[String],
) -> Result<Vec<Comparison>> {
    std::thread::scope(|scope| -> Result<Vec<Comparison>> {
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
        let mut tables = handles.into_iter();
        let base_symbols: Option<Vec<NmSymbol>> = joined(tables.next().flatten())?;
        let mut comparisons: Vec<Comparison> = Vec::new();
        for (v, table) in present.iter().zip(tables) {
            let comparison = compare_variant(
                (layout, request, rootfs, target),
                (base_dir, base, base_symbols.as_deref()),
                &comparisons,
                v,
                table,
            )?;
            comparisons.push(comparison);
        }
        Ok(comparisons)
    })
}

/// The symbol table `handle` read, if it was asked for.
///
/// Errors: those of [`read_vmlinux_symbols`], and a reader that panicked.
fn joined(handle: Option<SymbolReader<'_>>) -> Result<Option<Vec<NmSymbol>>> {
    handle
        .map(|h| {
            h.join()
                .unwrap_or_else(|_| Err(anyhow::anyhow!("reading a symbol table panicked")))
        })
        .transpose()
}

/// `target`'s base (`base` from `base_dir`, with its symbols when read)
/// compared with its variant `v` (whose symbol table `table` reads), for
/// `request`: the variant's results read and checked, its differences
/// from the base as warnings, notes on `earlier` results of the same
/// build key with other bytes, and the sizes, symbols, attribution and
/// device fit `request` asks for.
///
/// Errors: those of [`read_checked`]; a variant not built from the base's
/// inputs (unless `request.allow_mismatch`), with the command that
/// rebuilds both; an unreadable symbol table, attribution or device fit.
fn compare_variant(
    (layout, request, rootfs, target): (&Layout, &ReportRequest, Option<&RootfsSummary>, &Known),
    (base_dir, base, base_symbols): (&Path, &BuildResult, Option<&[NmSymbol]>),
    earlier: &[Comparison],
    v: &str,
    table: Option<SymbolReader<'_>>,
) -> Result<Comparison> {
    let dir = layout.results_dir(&target.name, v);
    let variant = read_checked(layout, &dir, &target.name, v)?;
    let (problems, mut notes) = mismatches(base, &variant);
    let earlier = std::iter::once(base).chain(earlier.iter().map(|c| &c.variant));
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
    let symbols = match (request.symbols, base_symbols, joined(table)?) {
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
            let old = super::attribution::read(layout, base_dir, base)?;
            let new = super::attribution::read(layout, &dir, &variant)?;
            let diff = match g {
                Grouping::Kconfig => super::kconfig::diff(layout, (base, &old), (&variant, &new))?,
                _ => super::attribution::AttributionDiff::new(&old, &new, g),
            };
            diff.check_totals(&base.vmlinux_sections, &variant.vmlinux_sections)?;
            Some(diff)
        }
        None => None,
    };
    let device_fit = device_fit_diff(request, rootfs, (base_dir, base), (&dir, &variant))?;
    let (sizes, unpaired_artifacts) = sizes::family(base, &variant);
    Ok(Comparison {
        variant,
        dir,
        families: vec![sizes],
        unpaired_artifacts,
        warnings: problems,
        notes,
        symbols,
        attribution,
        device_fit,
    })
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

/// Reads `dir/result.json` and checks that it belongs in `dir` and that
/// `dir/vmlinux` is the file it describes.
pub(super) fn read_checked(
    layout: &Layout,
    dir: &Path,
    target: &str,
    variant: &str,
) -> Result<BuildResult> {
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

/// The symbol table of `dir/vmlinux`, the result of `target`/`variant`,
/// unsorted.
///
/// Errors: a missing or unreadable vmlinux, with the command that
/// rebuilds it.
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
