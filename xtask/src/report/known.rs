//! Which targets have results, by their results directories, and the
//! hints errors and notes give: the command that builds what is missing,
//! the targets and variants that have results.
//!
//! A lab kernel's results (`<target>-lab`, [`LAB_TARGET_SUFFIX`]) are a
//! target of their own, known by their directory name only, built by
//! `cargo xtask lab --build-only`.

use std::path::Path;

use anyhow::{anyhow, Result};
use serde::Deserialize;

use super::request::ReportRequest;
use crate::results::lab::LAB_TARGET_SUFFIX;
use crate::results::{self, TargetRecord};
use crate::util::layout::Layout;

/// The router target whose lab kernel `target` is (`brcm47xx` for
/// `brcm47xx-lab`), when it is a lab kernel's results directory.
pub fn lab_kernel_of(target: &str) -> Option<&str> {
    target
        .strip_suffix(LAB_TARGET_SUFFIX)
        .filter(|router| !router.is_empty())
}

/// The command that builds `variants` of `target`: `cargo xtask build`, or
/// for a lab kernel (`<target>-lab`, which `build` does not know) `cargo
/// xtask lab --build-only` of its router target.
///
/// For OpenWrt mode's layout ([`Layout::openwrt_mode`]: `size-report
/// --openwrt`), `cargo xtask build --openwrt <OPENWRT> …`.
pub fn build_command(layout: &Layout, target: &str, variants: &[&str]) -> String {
    let mut cmd = match lab_kernel_of(target) {
        Some(router) => format!("cargo xtask lab --build-only --target {router}"),
        None if layout.is_openwrt_mode() => {
            format!("cargo xtask build --openwrt <OPENWRT> --target {target}")
        }
        None => format!("cargo xtask build --target {target}"),
    };
    for v in variants {
        cmd.push_str(" --variant ");
        cmd.push_str(v);
    }
    cmd
}

/// Whether `dir` holds a finished build (`result.json`).
pub(super) fn has_result(dir: &Path) -> bool {
    // Present in any form: a result.json that is not a readable regular
    // file (a symlink to /dev/zero, a FIFO) is reported as what it is
    // when read, not as a build that never finished.
    std::fs::symlink_metadata(dir.join(results::FILE_NAME)).is_ok()
}

/// Names of the subdirectories of `dir` (none when it does not exist), by
/// name; hidden ones are left out.
pub(super) fn subdirectories(dir: &Path) -> Result<Vec<String>> {
    let mut names = Vec::new();
    if !dir.is_dir() {
        return Ok(names);
    }
    let read = |e: std::io::Error| anyhow!(e).context(format!("reading {}", dir.display()));
    for entry in std::fs::read_dir(dir).map_err(read)? {
        let path = entry.map_err(read)?.path();
        if let Some(name) = path.file_name().and_then(|n| n.to_str()) {
            if path.is_dir() && !name.starts_with('.') {
                names.push(name.to_string());
            }
        }
    }
    names.sort();
    Ok(names)
}

/// Just the recorded target of a `result.json`.
#[derive(Deserialize)]
struct TargetOnly {
    target: TargetRecord,
}

/// The target recorded in `dir/result.json`, when it is readable; a broken
/// file is reported when (and only if) the build is compared.
pub(super) fn recorded_target(dir: &Path) -> Option<TargetRecord> {
    let text =
        crate::util::fs::read_limited(&dir.join(results::FILE_NAME), results::LIMIT, "").ok()?;
    serde_json::from_str::<TargetOnly>(&text)
        .ok()
        .map(|t| t.target)
}

/// A target known from its results directory.
#[derive(Debug, Clone)]
pub(super) struct Known {
    /// The directory's name, which is the target's name.
    pub(super) name: String,
    /// Variants with a `result.json`, by name.
    pub(super) built: Vec<String>,
    /// The target as its results recorded it (the base's record when the
    /// base is built); `None` when no `result.json` is readable.
    pub(super) record: Option<TargetRecord>,
}

impl Known {
    /// Whether `spelling` is this target's OpenWrt `target/subtarget` or
    /// one of its aliases. A lab kernel's results record its router's, but
    /// it is not that target: it is known by its directory name only.
    fn is_called(&self, spelling: &str) -> bool {
        lab_kernel_of(&self.name).is_none()
            && self
                .record
                .as_ref()
                .is_some_and(|r| r.openwrt == spelling || r.aliases.iter().any(|a| a == spelling))
    }

    /// `ath79 (ath79/generic, ar71xx)`: the name and what else `--target`
    /// accepts for it; `brcm47xx-lab (lab kernel of brcm47xx)`.
    fn describe(&self) -> String {
        if let Some(router) = lab_kernel_of(&self.name) {
            return format!("{} (lab kernel of {router})", self.name);
        }
        match &self.record {
            Some(r) => {
                let mut other = vec![r.openwrt.as_str()];
                other.extend(r.aliases.iter().map(String::as_str));
                format!("{} ({})", self.name, other.join(", "))
            }
            None => self.name.clone(),
        }
    }
}

/// Every target with a results directory, by name.
pub(super) fn known_targets(layout: &Layout, base: &str) -> Result<Vec<Known>> {
    let root = layout.results_root();
    let mut known = Vec::new();
    for name in subdirectories(&root)? {
        let built: Vec<String> = subdirectories(&root.join(&name))?
            .into_iter()
            .filter(|v| has_result(&layout.results_dir(&name, v)))
            .collect();
        let base_first = built
            .iter()
            .filter(|v| *v == base)
            .chain(built.iter().filter(|v| *v != base));
        let record = base_first
            .filter_map(|v| recorded_target(&layout.results_dir(&name, v)))
            .find(|r| r.name == name);
        known.push(Known {
            name,
            built,
            record,
        });
    }
    Ok(known)
}

/// The target `spelling` names: a results directory's name first, else
/// the OpenWrt target or an alias a target's results record.
pub(super) fn resolve<'a>(known: &'a [Known], spelling: &str) -> Option<&'a Known> {
    known
        .iter()
        .find(|k| k.name == spelling)
        .or_else(|| known.iter().find(|k| k.is_called(spelling)))
}

/// ` (variants with results: a, b)`, or nothing when there are none.
pub(super) fn variants_hint(variants: &[&str]) -> String {
    if variants.is_empty() {
        String::new()
    } else {
        format!(" (variants with results: {})", variants.join(", "))
    }
}

pub(super) fn unknown_target(
    layout: &Layout,
    request: &ReportRequest,
    spelling: &str,
    known: &[Known],
) -> anyhow::Error {
    let mut needed = vec![request.base.as_str()];
    needed.extend(request.variants.iter().map(String::as_str));
    let missing = if spelling.contains('/') {
        String::new()
    } else {
        format!(
            "no results for {spelling}/{}: {} does not exist, and ",
            request.base,
            layout
                .results_dir(spelling, &request.base)
                .join(results::FILE_NAME)
                .display()
        )
    };
    let listing = if known.is_empty() {
        format!(
            "no target has results yet in {}",
            layout.results_root().display()
        )
    } else {
        let names: Vec<String> = known.iter().map(Known::describe).collect();
        format!("targets with results: {}", names.join(", "))
    };
    anyhow!(
        "unknown target {spelling:?}: {missing}no results record it as their target, OpenWrt target or alias ({listing}); if targets/ defines it, build it first with `{}`",
        build_command(layout, spelling, &needed)
    )
}

pub(super) fn missing_message(
    layout: &Layout,
    target: &str,
    variant: &str,
    all_variants: &[&str],
) -> String {
    let dir = layout.results_dir(target, variant);
    let state = if dir.join("build.log").is_file() {
        format!(
            "{} has a build.log but no {}: the build failed, was interrupted, or is still running",
            dir.display(),
            results::FILE_NAME
        )
    } else {
        format!("{} does not exist", dir.join(results::FILE_NAME).display())
    };
    let unknown = if all_variants.contains(&variant) {
        String::new()
    } else {
        format!(
            "; no target has results for {variant:?}{}",
            variants_hint(all_variants)
        )
    };
    format!(
        "no results for {target}/{variant}: {state}; build them with `{}`{unknown}",
        build_command(layout, target, &[variant])
    )
}
