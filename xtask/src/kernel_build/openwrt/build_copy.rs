//! The copy of the patched tree an OpenWrt-mode job builds in.
//!
//! OpenWrt builds in the source tree, and some of its patches rely on it
//! (530-jffs2_make_lzma_available.patch: `-Iinclude/linux`, relative to
//! the build directory): each job builds in its own full copy of the
//! patched tree (not hard links: an in-tree build may write to files of
//! the tree).

use std::path::Path;

use anyhow::{Context, Result};
use xshell::Shell;

use crate::util::fs::{copy_tree, CopyKind};

/// Makes `build` (in `build_dir`, the job's build directory) a full copy
/// of the patched tree `tree`, unless it already is one: a marker in
/// `build_dir` names the tree it was copied from, and a copy of another
/// tree is emptied first, with `build_dir`.
///
/// Errors: I/O emptying `build_dir`, copying the tree or writing the
/// marker.
pub(super) fn refresh(sh: &Shell, tree: &Path, build_dir: &Path, build: &Path) -> Result<()> {
    let marker = build_dir.join(".xtask-source");
    let want = tree.display().to_string();
    let have = crate::util::fs::read_limited(
        &marker,
        crate::util::fs::FileLimit::record("source marker"),
        "",
    )
    .unwrap_or_default();
    if have != want || !build.is_dir() {
        if build_dir.exists() {
            std::fs::remove_dir_all(build_dir)
                .with_context(|| format!("emptying {}", build_dir.display()))?;
        }
        copy_tree(sh, tree, build, CopyKind::Full)?;
        crate::kernel_build::estimate::mark_empty(build_dir)?;
        std::fs::write(&marker, &want).with_context(|| format!("writing {}", marker.display()))?;
    }
    Ok(())
}
