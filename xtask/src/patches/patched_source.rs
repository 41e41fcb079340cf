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
//! A tree is made under an exclusive lock ([`Layout::patched_src_lock`]);
//! builds hold it shared while they use the tree ([`lock_for_use`]), so a
//! tree made from a user's source tree, which is made anew for each build,
//! is never replaced under a running `make`.

use std::path::PathBuf;

use anyhow::{anyhow, Context, Result};
use sha2::{Digest, Sha256};
use xshell::Shell;

use crate::inputs::kernel_source::PristineTree;
use crate::patches::engine::{apply_patch_forced, parse_patch, ApplyOptions};
use crate::patches::series::SeriesPatch;
use crate::results::PatchRecord;
use crate::util::fs::{copy_tree, remove_stale_staging, CopyKind, StagingDir};
use crate::util::layout::Layout;
use crate::util::lock::{Lock, Wait};

/// A ready, patched source tree.
#[derive(Debug, Clone)]
pub struct PatchedTree {
    /// Its top directory.
    pub dir: PathBuf,
    /// The applied patches, in order, with their digests.
    pub patches: Vec<PatchRecord>,
}

/// Where [`prepare`] puts the tree of kernel `version` from the source
/// `identity` (the tarball's sha256, else the unpacked tree's path) with
/// `patches` applied: `target/xtask/src/<version>-<key>/`, the key the
/// first 16 hex digits of a sha256 over the identity and each patch's
/// name and sha256. A result names all three (`kernel_source`,
/// `patches`), so a report finds the tree a build used.
pub fn tree_dir(
    layout: &Layout,
    version: &str,
    identity: &str,
    patches: &[PatchRecord],
) -> PathBuf {
    let mut key = Sha256::new();
    key.update(identity.as_bytes());
    for p in patches {
        key.update(b"\0");
        key.update(p.name.as_bytes());
        key.update(p.sha256.as_bytes());
    }
    let key = hex::encode(key.finalize());
    layout
        .patched_src_dir()
        .join(format!("{version}-{}", &key[..16]))
}

/// Holds `tree` for use (shared with other builds): until the guard is
/// dropped, [`prepare`] in another run waits instead of replacing it.
///
/// Errors: with [`Wait::No`], a run is making the tree; I/O.
pub fn lock_for_use(layout: &Layout, tree: &PatchedTree, wait: Wait) -> Result<Lock> {
    let name = tree.dir.file_name().unwrap_or_default().to_string_lossy();
    Lock::acquire_shared(
        &layout.patched_src_lock(&name),
        &format!("the patched tree {}", tree.dir.display()),
        wait,
    )
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
    let patches: Vec<PatchRecord> = series.iter().map(SeriesPatch::record).collect();
    let identity = match &pristine.tarball_sha256 {
        Some(sum) => sum.clone(),
        None => pristine.dir.to_string_lossy().into_owned(),
    };
    let root = layout.patched_src_dir();
    let dir = tree_dir(layout, &pristine.version, &identity, &patches);
    let is_user_tree = pristine.tarball_sha256.is_none();
    if dir.is_dir() && !is_user_tree {
        return Ok(PatchedTree { dir, patches });
    }
    std::fs::create_dir_all(&root).with_context(|| format!("creating {}", root.display()))?;
    // One run makes a given tree at a time; the second finds it made.
    let name = dir.file_name().unwrap_or_default().to_string_lossy();
    let _lock = Lock::acquire(
        &layout.patched_src_lock(&name),
        &format!("the patched tree {}", dir.display()),
        Wait::Yes,
    )?;
    if dir.is_dir() && !is_user_tree {
        return Ok(PatchedTree { dir, patches });
    }
    remove_stale_staging(&root, ".staging-")?;
    let staging = StagingDir::new(&root, ".staging-")?;
    let tree = staging.path().join("linux");
    copy_tree(sh, &pristine.dir, &tree, CopyKind::HardLinks)?;
    let options = ApplyOptions { strip: 1, fuzz: 0 };
    for patch in series {
        let parsed =
            parse_patch(&patch.bytes).map_err(|e| anyhow!("{}: {e}", shown(&patch.name)))?;
        if patch.bytes.is_empty() {
            eprintln!("note: {} is empty; applied as nothing", shown(&patch.name));
        }
        let report = apply_patch_forced(&tree, &parsed, &options).map_err(|e| {
            anyhow!(
                "{}: {e}\nThe series stopped here; no patched tree was kept. \
                 Refresh the patch against Linux {} (or remove it from the series).",
                shown(&patch.name),
                pristine.version
            )
        })?;
        for w in report.warnings(&shown(&patch.name)) {
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

/// A series patch as messages name it: `patches/<name>` for one under
/// `patches/`, the path itself for one from elsewhere (an absolute name,
/// such as a `size-bisect --series` patch).
fn shown(name: &str) -> String {
    if name.starts_with('/') {
        name.to_string()
    } else {
        format!("patches/{name}")
    }
}
