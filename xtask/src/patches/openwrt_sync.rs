//! Moving kernel patches between an OpenWrt checkout and `patches/`.
//!
//! OpenWrt keeps them in `target/linux/generic/{backport,pending,hack}-<kver>/`
//! and `target/linux/<target>/patches-<kver>/`; here they live in
//! `patches/generic/…` and `patches/<target>/patches-<kver>/` (see
//! [`crate::patches::series`]). Import and export mirror the `*.patch` files of each
//! directory: files are added or replaced (temporary file + rename), and
//! `*.patch` files missing from the source are removed; other files are
//! left alone.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::inputs::targets::Target;
use crate::patches::{extra_optimization, series};
use crate::util::fs::write_atomic;

/// Which way to copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// OpenWrt → `patches/`.
    Import,
    /// `patches/` → OpenWrt.
    Export,
}

/// What mirroring one directory did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DirSync {
    /// Destination directory.
    pub dir: PathBuf,
    /// Files added, replaced, removed, unchanged.
    pub added: usize,
    /// Files whose bytes changed.
    pub changed: usize,
    /// `*.patch` files removed (not in the source).
    pub removed: usize,
    /// Files already identical.
    pub unchanged: usize,
}

/// (OpenWrt directory, project directory) pairs for kernel series `kver`:
/// the three generic ones, then each target's `patches-<kver>` (OpenWrt's
/// target name: the part of `openwrt` before `/`; duplicates once).
pub fn directory_pairs(
    openwrt: &Path,
    patches_dir: &Path,
    targets: &[Target],
    kver: &str,
) -> Vec<(PathBuf, PathBuf)> {
    let linux = openwrt.join("target").join("linux");
    let mut pairs: Vec<(PathBuf, PathBuf)> = ["backport", "pending", "hack"]
        .iter()
        .map(|k| {
            let d = format!("{k}-{kver}");
            (
                linux.join("generic").join(&d),
                patches_dir.join("generic").join(&d),
            )
        })
        .collect();
    for t in targets {
        let name = t.openwrt.split('/').next().unwrap_or(&t.name);
        let d = format!("patches-{kver}");
        let pair = (linux.join(name).join(&d), patches_dir.join(name).join(&d));
        if !pairs.contains(&pair) {
            pairs.push(pair);
        }
    }
    pairs
}

/// Mirrors every pair in `direction`; source directories that do not exist
/// are skipped (nothing to copy, nothing removed).
///
/// Errors: `openwrt` is not an OpenWrt checkout (no `target/linux/generic`),
/// I/O errors naming the file.
pub fn sync(
    openwrt: &Path,
    patches_dir: &Path,
    targets: &[Target],
    kver: &str,
    direction: Direction,
) -> Result<Vec<DirSync>> {
    if !openwrt.join("target/linux/generic").is_dir() {
        bail!(
            "{}: not an OpenWrt checkout (no target/linux/generic)",
            openwrt.display()
        );
    }
    let pairs = directory_pairs(openwrt, patches_dir, targets, kver);
    // Flags that make or the shell would interpret never cross, either way.
    for flags_patch in pairs.iter().map(|(ow, ours)| match direction {
        Direction::Import => ow.join(extra_optimization::PATCH_NAME),
        Direction::Export => ours.join(extra_optimization::PATCH_NAME),
    }) {
        if let Ok(text) = std::fs::read_to_string(&flags_patch) {
            extra_optimization::check_patch_flags(&flags_patch, &text)?;
        }
    }
    let mut out = Vec::new();
    for (ow, ours) in pairs {
        let (from, to) = match direction {
            Direction::Import => (ow, ours),
            Direction::Export => (ours, ow),
        };
        if !from.is_dir() {
            continue;
        }
        out.push(mirror(&from, &to)?);
    }
    Ok(out)
}

/// Makes the `*.patch` files of `to` those of `from`.
pub fn mirror(from: &Path, to: &Path) -> Result<DirSync> {
    let mut s = DirSync {
        dir: to.to_path_buf(),
        ..DirSync::default()
    };
    let sources = series::patch_files(from)?;
    let mut names = Vec::new();
    for src in &sources {
        let name = src.file_name().context("patch without a name")?;
        names.push(name.to_os_string());
        let dest = to.join(name);
        let bytes = std::fs::read(src).with_context(|| format!("reading {}", src.display()))?;
        match std::fs::read(&dest) {
            Ok(have) if have == bytes => s.unchanged += 1,
            Ok(_) => {
                write_atomic(&dest, &bytes)?;
                s.changed += 1;
            }
            Err(_) => {
                write_atomic(&dest, &bytes)?;
                s.added += 1;
            }
        }
    }
    for old in series::patch_files(to)? {
        if !names.iter().any(|n| Some(n.as_os_str()) == old.file_name()) {
            std::fs::remove_file(&old).with_context(|| format!("removing {}", old.display()))?;
            s.removed += 1;
        }
    }
    Ok(s)
}
