//! `size-report --by kconfig`: each side's attributed objects
//! (`attribution.json`) put in the row of the kconfig symbol that builds
//! them, from the kbuild files of the kernel tree the build compiled
//! ([`crate::measure::kconfig_map`]: the innermost symbol, `(always)`,
//! `(unknown)`; pseudo-objects such as `(fill)` keep their rows), so the
//! rows still add up to `size`'s text, data and bss.
//!
//! The tree is the patched source tree the result names (its kernel
//! source and applied patches give the tree's directory under
//! `target/xtask/src/`, [`crate::patches::patched_source::tree_dir`]),
//! else the one its build directory's `source` link points to; the
//! kbuild files are read as text through the capped reader, never run.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Result};

use super::attribution::AttributionDiff;
use super::known::build_command;
use crate::measure::kconfig_map::{srcarch, KconfigMap, Resolution};
use crate::measure::linkmap::{ClassBytes, Grouping};
use crate::patches::patched_source::tree_dir;
use crate::results::attribution::AttributionRecord;
use crate::results::BuildResult;
use crate::util::fs::{is_not_found, read_bytes_limited, FileLimit};
use crate::util::layout::Layout;

/// The largest kbuild file read: the biggest of Linux 6.12 is about 40 KiB.
const KBUILD_LIMIT: FileLimit = FileLimit {
    what: "kbuild file",
    max_bytes: 1 << 20,
};

/// The kernel tree `result` was built from (see the module docs).
///
/// Errors: neither is there (naming both and the command that makes the
/// tree again).
pub fn source_tree(layout: &Layout, result: &BuildResult) -> Result<PathBuf> {
    let src = &result.kernel_source;
    let identity = src.sha256.clone().unwrap_or_else(|| src.origin.clone());
    let patched = tree_dir(layout, &src.version, &identity, &result.patches);
    if patched.join("Makefile").is_file() {
        return Ok(patched);
    }
    let (t, v) = (&result.target.name, &result.variant.name);
    let linked = layout.build_dir(t, v).join("source");
    if linked.join("Makefile").is_file() {
        return Ok(linked);
    }
    bail!(
        "--by kconfig reads the kbuild files of the tree {t}/{v} was built from, but neither {} \
         nor {} is there; `{} --force` makes it again",
        patched.display(),
        linked.display(),
        build_command(layout, t, &[v])
    )
}

/// `record`'s bytes by kconfig symbol, for a build of kernel `ARCH` `arch`
/// from `tree`, and the objects of the `(unknown)` row (`path: why`).
///
/// Errors: a kbuild file that cannot be read (not a regular file, over
/// 1 MiB), naming it.
pub fn rows(
    tree: &Path,
    arch: &str,
    record: &AttributionRecord,
) -> Result<(BTreeMap<String, ClassBytes>, Vec<String>)> {
    let fix = "the kernel tree's kbuild files are read for --by kconfig; rebuild the job";
    let read = move |rel: &str| -> Result<Option<String>> {
        match read_bytes_limited(&tree.join(rel), KBUILD_LIMIT, fix) {
            Ok(bytes) => Ok(Some(String::from_utf8_lossy(&bytes).into_owned())),
            Err(e) if is_not_found(&e) => Ok(None),
            Err(e) => Err(e),
        }
    };
    let mut map = KconfigMap::new(Box::new(read), srcarch(arch));
    let attribution = record.attribution();
    let mut row_of: BTreeMap<String, String> = BTreeMap::new();
    for s in &attribution.sections {
        for object in s.objects.keys() {
            if !row_of.contains_key(object) {
                let r = map.object(object)?;
                row_of.insert(object.clone(), r.row().to_string());
            }
        }
    }
    let rows = attribution.rollup_by(|o| row_of.get(o).cloned().unwrap_or_default());
    let unknown = map
        .resolved()
        .values()
        .filter_map(|r| match r {
            Resolution::Unknown(why) => Some(why.clone()),
            Resolution::Row(_) => None,
        })
        .collect();
    Ok((rows, unknown))
}

/// `--by kconfig`'s diff of `base` → `variant` (each with its
/// attribution), rows from each side's own tree.
///
/// Errors: as [`source_tree`] and [`rows`].
pub fn diff(
    layout: &Layout,
    base: (&BuildResult, &AttributionRecord),
    variant: (&BuildResult, &AttributionRecord),
) -> Result<AttributionDiff> {
    let mut sides = Vec::new();
    for (result, record) in [base, variant] {
        let tree = source_tree(layout, result)?;
        sides.push(rows(&tree, &result.target.arch, record)?);
    }
    let (b_rows, b_unknown) = sides.pop().unwrap_or_default();
    let (a_rows, a_unknown) = sides.pop().unwrap_or_default();
    let mut diff =
        AttributionDiff::from_rollups(base.1, variant.1, Grouping::Kconfig, [a_rows, b_rows]);
    diff.unresolved = [a_unknown, b_unknown];
    Ok(diff)
}
