//! Loading what a report compares: choosing targets and variants, reading
//! their `result.json` files and vmlinux, and building the [`Report`].
//!
//! Everything here reads what `cargo xtask build` wrote under
//! `target/xtask/results/<target>/<variant>/` ([`crate::util::layout::Layout`]):
//! `result.json` ([`BuildResult`]) for sizes and provenance, and `vmlinux`
//! itself, which is checked (recorded size, ELF, recorded sections) and, with
//! `--symbols`, read for its symbol table.
//!
//! A base and a variant that are not comparable ([`super::checks`]) are an
//! error naming both values and the `cargo xtask build` command that
//! rebuilds both; with `allow_mismatch` the report is made anyway and every
//! difference is printed in it as a warning.

use std::path::Path;

use anyhow::{bail, Context, Result};

use super::checks::mismatches;
use super::model::{ArtifactChange, Change, Comparison, Report, SectionsChange, TargetReport};
use crate::inputs::targets::{self, Target};
use crate::inputs::variants::{self, Variant};
use crate::measure::bloat;
use crate::measure::sections;
use crate::measure::symbols;
use crate::results::{self, BuildResult};
use crate::util::layout::Layout;

/// What `--symbols` asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SymbolOptions {
    /// bloat-o-meter's mode (`-c`, `-d`, `-t` or none).
    pub mode: bloat::Mode,
    /// Fold `.isra.0`/`.constprop.0`/`.part.0`… clones into their base name.
    pub fold_clones: bool,
}

/// Which results to compare.
#[derive(Debug, Clone)]
pub struct Request {
    /// `--target` spellings (name, OpenWrt `target/subtarget`, alias, or
    /// `all`); empty means `all`. `all` is every target in `targets/` that
    /// has results to compare (tiny profiles included: a report reads what
    /// was built rather than deciding what should have been).
    pub targets: Vec<String>,
    /// The base variant, normally `baseline`.
    pub base: String,
    /// Variants to compare against the base; empty means every variant with
    /// a `result.json` for the target, other than the base, by name.
    pub variants: Vec<String>,
    /// Compute symbol diffs of the vmlinux pairs.
    pub symbols: Option<SymbolOptions>,
    /// Compare builds that differ in more than the variant, with warnings.
    pub allow_mismatch: bool,
}

/// The command that builds `variants` of `target`.
pub fn build_command(target: &str, variants: &[&str]) -> String {
    let mut cmd = format!("cargo xtask build --target {target}");
    for v in variants {
        cmd.push_str(" --variant ");
        cmd.push_str(v);
    }
    cmd
}

/// Whether `dir` holds a finished build (`result.json`).
fn has_result(dir: &Path) -> bool {
    dir.join(results::FILE_NAME).is_file()
}

/// Variants with a `result.json` for `target`, by name.
fn built_variants(layout: &Layout, target: &str) -> Result<Vec<String>> {
    let dir = layout.results_root().join(target);
    let mut names = Vec::new();
    if !dir.is_dir() {
        return Ok(names);
    }
    for entry in std::fs::read_dir(&dir).with_context(|| format!("reading {}", dir.display()))? {
        let path = entry
            .with_context(|| format!("reading {}", dir.display()))?
            .path();
        if has_result(&path) {
            if let Some(name) = path.file_name().and_then(|n| n.to_str()) {
                names.push(name.to_string());
            }
        }
    }
    names.sort();
    Ok(names)
}

/// Loads and checks the results `request` names and computes every change.
///
/// Errors (each naming the files or values involved and the fix): an
/// unknown target; missing results (with the `cargo xtask build` command
/// that makes them); a `result.json` that is unreadable or lies in another
/// target's or variant's directory; a vmlinux that is missing, truncated
/// (not the recorded size), not ELF, or whose sections are not the recorded
/// ones; builds that are not comparable ([`super::checks`]) unless
/// `request.allow_mismatch`.
pub fn load(layout: &Layout, request: &Request) -> Result<Report> {
    let all_targets = targets::load_all(&layout.targets_dir())?;
    let variants = if layout.variants_file().is_file() {
        variants::load(&layout.variants_file(), &layout.patches_dir())?
    } else {
        Vec::new()
    };
    for v in &request.variants {
        if *v == request.base {
            bail!(
                "--variant {v} is also the base (--base {}); compare it against another variant",
                request.base
            );
        }
    }
    let spellings: Vec<String> = if request.targets.is_empty() {
        vec!["all".to_string()]
    } else {
        request.targets.clone()
    };

    // (target, whether it was asked for by name)
    let mut chosen: Vec<(Target, bool)> = Vec::new();
    for spelling in &spellings {
        if spelling == "all" {
            for t in &all_targets {
                if !chosen.iter().any(|(c, _)| c.name == t.name) {
                    chosen.push((t.clone(), false));
                }
            }
        } else {
            let t = targets::select(&all_targets, std::slice::from_ref(spelling))?.remove(0);
            match chosen.iter_mut().find(|(c, _)| c.name == t.name) {
                Some(entry) => entry.1 = true,
                None => chosen.push((t, true)),
            }
        }
    }

    let mut report = Report {
        base: request.base.clone(),
        root: layout.root().to_path_buf(),
        targets: Vec::new(),
        skipped: Vec::new(),
        symbols: request.symbols,
    };
    for (target, named) in &chosen {
        if let Some(t) = load_target(layout, request, target, *named, &variants, &mut report)? {
            report.targets.push(t);
        }
    }
    if report.targets.is_empty() {
        let mut names = vec![request.base.as_str()];
        names.extend(request.variants.iter().map(String::as_str));
        if request.variants.is_empty() {
            names.push("<VARIANT>");
        }
        bail!(
            "no results to compare in {}: build a base and a variant first, e.g. `{}`",
            layout.results_root().display(),
            build_command("all", &names)
        );
    }
    Ok(report)
}

fn load_target(
    layout: &Layout,
    request: &Request,
    target: &Target,
    named: bool,
    variants: &[Variant],
    report: &mut Report,
) -> Result<Option<TargetReport>> {
    let base_dir = layout.results_dir(&target.name, &request.base);
    let built = built_variants(layout, &target.name)?;
    let missing_base = !has_result(&base_dir);
    let wanted: Vec<String> = if request.variants.is_empty() {
        built
            .iter()
            .filter(|v| **v != request.base)
            .cloned()
            .collect()
    } else {
        request.variants.clone()
    };
    let (present, absent): (Vec<String>, Vec<String>) = wanted
        .into_iter()
        .partition(|v| has_result(&layout.results_dir(&target.name, v)));

    if named {
        if missing_base {
            bail!(
                "{}",
                missing_message(layout, target, &request.base, variants)
            );
        }
        if let Some(v) = absent.first() {
            bail!("{}", missing_message(layout, target, v, variants));
        }
        if present.is_empty() {
            bail!(
                "{}: only {} has results, nothing to compare it with; build a variant with `{}`{}",
                target.name,
                request.base,
                build_command(&target.name, &["<VARIANT>"]),
                known_variants(variants)
            );
        }
    } else {
        if missing_base || present.is_empty() {
            if !built.is_empty() || target.in_all {
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
                    build_command(&target.name, &needed)
                ));
            }
            return Ok(None);
        }
        for v in &absent {
            report.skipped.push(format!(
                "{}/{v}: not compared, no results yet (`{}`)",
                target.name,
                build_command(&target.name, &[v])
            ));
        }
    }

    let base = read_checked(&base_dir, &target.name, &request.base)?;
    let base_symbols = match request.symbols {
        Some(_) => Some(read_vmlinux_symbols(
            &base_dir,
            &target.name,
            &request.base,
        )?),
        None => None,
    };
    let mut comparisons = Vec::new();
    for v in &present {
        let dir = layout.results_dir(&target.name, v);
        let variant = read_checked(&dir, &target.name, v)?;
        let (problems, notes) = mismatches(&base, &variant);
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
                build_command(&target.name, &[&request.base, v])
            );
        }
        let symbols = match (request.symbols, &base_symbols) {
            (Some(opts), Some(old)) => {
                let new = read_vmlinux_symbols(&dir, &target.name, v)?;
                Some(bloat::diff_with(
                    &old.symbols,
                    &new.symbols,
                    opts.mode,
                    bloat::Options {
                        fold_clones: opts.fold_clones,
                    },
                ))
            }
            _ => None,
        };
        let (artifacts, unpaired_artifacts) = artifact_changes(target, &base, &variant);
        let sections = SectionsChange {
            text: Change {
                before: base.vmlinux_sections.text,
                after: variant.vmlinux_sections.text,
            },
            data: Change {
                before: base.vmlinux_sections.data,
                after: variant.vmlinux_sections.data,
            },
            bss: Change {
                before: base.vmlinux_sections.bss,
                after: variant.vmlinux_sections.bss,
            },
            dec: Change {
                before: base.vmlinux_sections.dec(),
                after: variant.vmlinux_sections.dec(),
            },
        };
        comparisons.push(Comparison {
            variant,
            dir,
            artifacts,
            unpaired_artifacts,
            sections,
            warnings: problems,
            notes,
            symbols,
        });
    }
    Ok(Some(TargetReport {
        name: target.name.clone(),
        base,
        base_dir,
        comparisons,
    }))
}

fn known_variants(variants: &[Variant]) -> String {
    if variants.is_empty() {
        String::new()
    } else {
        let names: Vec<&str> = variants.iter().map(|v| v.name.as_str()).collect();
        format!(" (variants.toml defines: {})", names.join(", "))
    }
}

fn missing_message(
    layout: &Layout,
    target: &Target,
    variant: &str,
    variants: &[Variant],
) -> String {
    let dir = layout.results_dir(&target.name, variant);
    let state = if dir.join("build.log").is_file() {
        format!(
            "{} has a build.log but no {}: the build failed, was interrupted, or is still running",
            dir.display(),
            results::FILE_NAME
        )
    } else {
        format!("{} does not exist", dir.join(results::FILE_NAME).display())
    };
    let unknown = if !variants.is_empty() && !variants.iter().any(|v| v.name == variant) {
        format!(
            "; {variant:?} is not in variants.toml{}",
            known_variants(variants)
        )
    } else {
        String::new()
    };
    format!(
        "no results for {}/{variant}: {state}; build them with `{}`{unknown}",
        target.name,
        build_command(&target.name, &[variant])
    )
}

/// Reads `dir/result.json` and checks that it belongs in `dir` and that
/// `dir/vmlinux` is the file it describes.
fn read_checked(dir: &Path, target: &str, variant: &str) -> Result<BuildResult> {
    let result = BuildResult::read(dir)?;
    let file = dir.join(results::FILE_NAME);
    if result.target.name != target || result.variant.name != variant {
        bail!(
            "{} records target {:?} variant {:?} but lies in the directory for {target}/{variant}; rebuild with `{}`",
            file.display(),
            result.target.name,
            result.variant.name,
            build_command(target, &[variant])
        );
    }
    if let Some(recorded) = result.artifacts.get("vmlinux") {
        let vmlinux = dir.join("vmlinux");
        let rebuild = build_command(target, &[variant]);
        let len = std::fs::metadata(&vmlinux)
            .with_context(|| {
                format!(
                    "{} is listed in {} but cannot be read; rebuild with `{rebuild}`",
                    vmlinux.display(),
                    file.display()
                )
            })?
            .len();
        if len != recorded.size {
            bail!(
                "{} is {len} bytes but {} records {} bytes: the file is truncated or was replaced; rebuild with `{rebuild}`",
                vmlinux.display(),
                file.display(),
                recorded.size
            );
        }
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

fn read_vmlinux_symbols(dir: &Path, target: &str, variant: &str) -> Result<symbols::SymbolTable> {
    let vmlinux = dir.join("vmlinux");
    if !vmlinux.is_file() {
        bail!(
            "--symbols needs {}, which does not exist; rebuild with `{}`",
            vmlinux.display(),
            build_command(target, &[variant])
        );
    }
    symbols::read_symbols(&vmlinux)
        .with_context(|| format!("rebuild it with `{}`", build_command(target, &[variant])))
}

fn artifact_changes(
    target: &Target,
    base: &BuildResult,
    variant: &BuildResult,
) -> (Vec<ArtifactChange>, Vec<(String, String)>) {
    let mut names: Vec<String> = target
        .artifacts
        .iter()
        .map(|a| a.file_name().to_string())
        .filter(|n| base.artifacts.contains_key(n) || variant.artifacts.contains_key(n))
        .collect();
    for n in base.artifacts.keys().chain(variant.artifacts.keys()) {
        if !names.contains(n) {
            names.push(n.clone());
        }
    }
    let mut changes = Vec::new();
    let mut unpaired = Vec::new();
    for name in names {
        match (base.artifacts.get(&name), variant.artifacts.get(&name)) {
            (Some(b), Some(v)) => changes.push(ArtifactChange {
                name,
                change: Change {
                    before: b.size,
                    after: v.size,
                },
            }),
            (Some(_), None) => unpaired.push((name, base.variant.name.clone())),
            (None, Some(_)) => unpaired.push((name, variant.variant.name.clone())),
            (None, None) => {}
        }
    }
    (changes, unpaired)
}
