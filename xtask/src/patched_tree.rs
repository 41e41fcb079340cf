//! A patched kernel source tree for one patch series.
//!
//! The tree is a hard-linked copy (`cp -al`) of the pristine tree; the patch
//! engine replaces every file it changes with a new one (temporary file +
//! rename), so the pristine tree, and a user's own tree, are never modified.
//! The series is applied into a staging directory renamed into place only
//! when every patch applied: a failed patch leaves no half-patched tree.
//!
//! Trees are cached under `target/xtask/src/<version>-<key>/`, where the key
//! is the sha256 of the source's identity and every patch's name and bytes.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, Context, Result};
use sha2::{Digest, Sha256};
use xshell::{cmd, Shell};

use crate::kernel_src::{sha256_bytes, PristineTree};
use crate::patch::{apply_patch_forced, parse_patch, ApplyOptions};
use crate::paths::Layout;
use crate::results::PatchRecord;
use crate::series::SeriesPatch;

/// A ready, patched source tree.
#[derive(Debug, Clone)]
pub struct PatchedTree {
    /// Its top directory.
    pub dir: PathBuf,
    /// The applied patches, in order, with their digests.
    pub patches: Vec<PatchRecord>,
}

/// Returns the patched tree for `series` on `pristine`, creating it if needed.
///
/// Each patch is applied as OpenWrt's `scripts/patch-kernel.sh` and quilt
/// run GNU patch, with `-f` (never skipped as "Reversed (or previously
/// applied)"; see [`apply_patch_forced`]), `-p1` and no fuzz. Warnings
/// (a patch that also applies in reverse, parse warnings such as hunk lines
/// past the header's counts) go to stderr naming the patch; an empty
/// (0-byte) patch applies as nothing, as quilt pushes it.
///
/// Errors name the patch, file, hunk and line that failed (from the patch
/// engine) and say the tree was left untouched.
pub fn prepare(
    sh: &Shell,
    layout: &Layout,
    pristine: &PristineTree,
    series: &[SeriesPatch],
) -> Result<PatchedTree> {
    let patches: Vec<PatchRecord> = series
        .iter()
        .map(|p| PatchRecord {
            name: p.name.clone(),
            sha256: sha256_bytes(&p.bytes),
        })
        .collect();
    let mut key = Sha256::new();
    match &pristine.tarball_sha256 {
        Some(sum) => key.update(sum.as_bytes()),
        None => key.update(pristine.dir.to_string_lossy().as_bytes()),
    }
    for p in &patches {
        key.update(b"\0");
        key.update(p.name.as_bytes());
        key.update(p.sha256.as_bytes());
    }
    let key = hex::encode(key.finalize());
    let root = layout.patched_src_dir();
    let dir = root.join(format!("{}-{}", pristine.version, &key[..16]));
    let is_user_tree = pristine.tarball_sha256.is_none();
    if dir.is_dir() && !is_user_tree {
        return Ok(PatchedTree { dir, patches });
    }
    std::fs::create_dir_all(&root).with_context(|| format!("creating {}", root.display()))?;
    remove_stale_staging(&root, ".staging-")?;
    let staging = tempfile::Builder::new()
        .prefix(".staging-")
        .tempdir_in(&root)
        .with_context(|| format!("creating a staging directory in {}", root.display()))?;
    let tree = staging.path().join("linux");
    link_copy(sh, &pristine.dir, &tree)?;
    let options = ApplyOptions { strip: 1, fuzz: 0 };
    for patch in series {
        let parsed =
            parse_patch(&patch.bytes).map_err(|e| anyhow!("patches/{}: {e}", patch.name))?;
        if patch.bytes.is_empty() {
            eprintln!("note: patches/{} is empty; applied as nothing", patch.name);
        }
        let report = apply_patch_forced(&tree, &parsed, &options).map_err(|e| {
            anyhow!(
                "patches/{}: {e}\nThe series stopped here; no patched tree was kept. \
                 Refresh the patch against Linux {} (or remove it from the series).",
                patch.name,
                pristine.version
            )
        })?;
        for w in report.warnings(&format!("patches/{}", patch.name)) {
            eprintln!("{w}");
        }
    }
    if dir.exists() {
        std::fs::remove_dir_all(&dir).with_context(|| format!("removing old {}", dir.display()))?;
    }
    std::fs::rename(&tree, &dir)
        .with_context(|| format!("moving {} to {}", tree.display(), dir.display()))?;
    Ok(PatchedTree { dir, patches })
}

/// Removes `<dir>/<prefix>*` directories an interrupted run left behind
/// (Ctrl-C during patching or unpacking). One build runs at a time per
/// project, so any such directory is stale.
pub fn remove_stale_staging(dir: &Path, prefix: &str) -> Result<()> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(());
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        if name.to_string_lossy().starts_with(prefix) && entry.path().is_dir() {
            std::fs::remove_dir_all(entry.path()).with_context(|| {
                format!(
                    "removing {}, left by an interrupted run",
                    entry.path().display()
                )
            })?;
        }
    }
    Ok(())
}

/// `cp -al` (hard links), falling back to a full `cp -a` across file systems.
fn link_copy(sh: &Shell, from: &Path, to: &Path) -> Result<()> {
    if cmd!(sh, "cp -al {from} {to}")
        .quiet()
        .ignore_stderr()
        .run()
        .is_ok()
    {
        return Ok(());
    }
    if to.exists() {
        std::fs::remove_dir_all(to).with_context(|| format!("removing {}", to.display()))?;
    }
    cmd!(sh, "cp -a {from} {to}")
        .run()
        .with_context(|| format!("copying {} to {}", from.display(), to.display()))
}
