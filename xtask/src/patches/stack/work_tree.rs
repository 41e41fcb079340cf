//! Which series and which working tree the `patches` commands act on.
//!
//! The series is OpenWrt's order (include/kernel-build.mk): generic
//! `backport-<kver>`, `pending-<kver>`, `hack-<kver>`, then the target's
//! `patches-<kver>`, each directory sorted by name ([`crate::patches::series`]).
//! Without a target only the generic directories are used.
//!
//! The default working tree is `target/xtask/work/<target|generic>-<kver>/linux`,
//! a full copy (`cp -a`) of the pristine tree made on first use. It is where
//! a developer edits files before `refresh`, and editors may write in place,
//! so it must not share inodes with the pristine tree (a hard-linked copy,
//! as the build's read-only patched trees are, would let such an edit change
//! the pristine tree). The pristine tree and a user's `--kernel-src` tree are
//! never written.

use std::path::{Path, PathBuf};

use anyhow::Result;
use xshell::Shell;

use crate::inputs::kernel_source::{self, pristine_tree};
use crate::inputs::targets::Target;
use crate::patches::series;
use crate::util::fs::{copy_tree, CopyKind};
use crate::util::layout::Layout;
use crate::util::lock::{Lock, Wait};

/// The series directories for `target` (or generic only) and `kver`.
pub fn directories(patches_dir: &Path, target: Option<&Target>, kver: &str) -> Vec<PathBuf> {
    match target {
        Some(t) => series::directories(patches_dir, t, kver),
        None => ["backport", "pending", "hack"]
            .iter()
            .map(|k| patches_dir.join("generic").join(format!("{k}-{kver}")))
            .collect(),
    }
}

/// The series: patch names relative to `patches_dir`, in OpenWrt's order.
///
/// Errors: unreadable directories.
pub fn series_names(patches_dir: &Path, dirs: &[PathBuf]) -> Result<Vec<String>> {
    let mut names = Vec::new();
    for dir in dirs {
        for file in series::patch_files(dir)? {
            names.push(
                file.strip_prefix(patches_dir)
                    .unwrap_or(&file)
                    .to_string_lossy()
                    .into_owned(),
            );
        }
    }
    Ok(names)
}

/// `<target|generic>-<kver>`: the label of a working tree or rebase.
pub fn label(target: Option<&Target>, kver: &str) -> String {
    format!("{}-{kver}", target.map_or("generic", |t| t.name.as_str()))
}

/// The default working tree for `label`.
pub fn work_tree(layout: &Layout, label: &str) -> PathBuf {
    layout.work_dir().join("work").join(label).join("linux")
}

/// Makes `dest` a full copy of the kernel source for series `kver`
/// (`kernel_src`: a tarball or tree; default Debian's tarball, unpacked once
/// into the pristine cache), unless `dest` exists already. The copy is made
/// under the lock `<dest>.lock`, so two commands never copy at once (the
/// second waits, then finds the copy made).
///
/// Errors: no kernel source (with the `apt-get install` fix), copy failures.
pub fn ensure_copy(
    sh: &Shell,
    layout: &Layout,
    kernel_src: Option<&Path>,
    kver: &str,
    dest: &Path,
) -> Result<()> {
    if dest.is_dir() {
        return Ok(());
    }
    let mut lock_name = dest.file_name().unwrap_or_default().to_os_string();
    lock_name.push(".lock");
    let _lock = Lock::acquire(
        &dest.with_file_name(lock_name),
        &format!("the copy {}", dest.display()),
        Wait::Yes,
    )?;
    if dest.is_dir() {
        return Ok(());
    }
    let input = kernel_source::resolve_input(kernel_src, kver)?;
    let pristine = pristine_tree(sh, layout, &input)?;
    eprintln!("copying {} to {}", pristine.dir.display(), dest.display());
    copy_tree(sh, &pristine.dir, dest, CopyKind::Full)
}
