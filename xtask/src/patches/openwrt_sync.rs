//! Moving kernel patches between an OpenWrt checkout and `patches/`.
//!
//! OpenWrt keeps them in `target/linux/generic/{backport,pending,hack}-<kver>/`
//! and `target/linux/<target>/patches-<kver>/`; here they live in
//! `patches/generic/…` and `patches/<target>/patches-<kver>/` (see
//! [`crate::patches::series`]). Import and export copy the `*.patch` files of each
//! directory: files are added or replaced (temporary file + rename). A
//! `*.patch` file only in the destination (OpenWrt's own patches, on
//! export) is kept and listed, and removed only with [`Prune::Remove`]
//! (`--prune`); [`Write::DryRun`] (`--dry-run`) makes the plan (add /
//! change / remove / keep per file) and writes nothing. Other files are
//! left alone.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::inputs::targets::Target;
use crate::patches::{extra_optimization, series};
use crate::util::fs::write_atomic;

/// Which way to copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncDirection {
    /// OpenWrt → `patches/`.
    Import,
    /// `patches/` → OpenWrt.
    Export,
}

/// What to do with `*.patch` files only in the destination.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Prune {
    /// Keep them (and list them).
    #[default]
    Keep,
    /// Remove them (`--prune`).
    Remove,
}

/// Whether the plan is carried out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Write {
    /// Write the destination.
    #[default]
    Apply,
    /// Only make the plan (`--dry-run`).
    DryRun,
}

/// How to sync.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SyncOptions {
    /// Files only in the destination.
    pub prune: Prune,
    /// Write, or only plan.
    pub write: Write,
}

/// What happens to one file of the destination.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileAction {
    /// New in the destination.
    Add,
    /// Its bytes are replaced.
    Change,
    /// Removed (only in the destination, with [`Prune::Remove`]).
    Remove,
    /// Only in the destination and kept ([`Prune::Keep`]).
    Keep,
}

impl FileAction {
    /// The word in the plan.
    pub fn as_str(self) -> &'static str {
        match self {
            FileAction::Add => "add",
            FileAction::Change => "change",
            FileAction::Remove => "remove",
            FileAction::Keep => "keep",
        }
    }
}

/// What syncing one directory did (or, with [`Write::DryRun`], would do).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DirSync {
    /// Destination directory.
    pub dir: PathBuf,
    /// Files added.
    pub added: usize,
    /// Files whose bytes changed.
    pub changed: usize,
    /// `*.patch` files removed (not in the source; [`Prune::Remove`]).
    pub removed: usize,
    /// `*.patch` files not in the source, kept ([`Prune::Keep`]).
    pub kept: usize,
    /// Files already identical.
    pub unchanged: usize,
    /// Every file that is (or would be) added, changed, removed or kept,
    /// in that order of the source's then the destination's listing.
    pub plan: Vec<(FileAction, PathBuf)>,
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

/// Copies every pair in `direction` as `options` say; source directories
/// that do not exist are skipped (nothing to copy, nothing removed).
///
/// Errors: `openwrt` is not an OpenWrt checkout (no `target/linux/generic`),
/// I/O errors naming the file.
pub fn sync(
    openwrt: &Path,
    patches_dir: &Path,
    targets: &[Target],
    kver: &str,
    direction: SyncDirection,
    options: SyncOptions,
) -> Result<Vec<DirSync>> {
    crate::inputs::kernel_source::check_series(kver, "--kernel")?;
    if !openwrt.join("target/linux/generic").is_dir() {
        bail!(
            "{}: not an OpenWrt checkout (no target/linux/generic)",
            openwrt.display()
        );
    }
    let pairs = directory_pairs(openwrt, patches_dir, targets, kver);
    // Flags that make or the shell would interpret never cross, either way.
    for flags_patch in pairs.iter().map(|(ow, ours)| match direction {
        SyncDirection::Import => ow.join(extra_optimization::PATCH_NAME),
        SyncDirection::Export => ours.join(extra_optimization::PATCH_NAME),
    }) {
        if let Ok(text) = std::fs::read_to_string(&flags_patch) {
            extra_optimization::check_patch_flags(&flags_patch, &text)?;
        }
    }
    let mut out = Vec::new();
    for (ow, ours) in pairs {
        let (from, to) = match direction {
            SyncDirection::Import => (ow, ours),
            SyncDirection::Export => (ours, ow),
        };
        if !from.is_dir() {
            continue;
        }
        out.push(mirror(&from, &to, options)?);
    }
    Ok(out)
}

/// Gives `to` the `*.patch` files of `from` (added or replaced); those
/// only in `to` are kept, or removed with [`Prune::Remove`]. With
/// [`Write::DryRun`] nothing is written.
///
/// Errors: I/O errors naming the file.
pub fn mirror(from: &Path, to: &Path, options: SyncOptions) -> Result<DirSync> {
    let mut s = DirSync {
        dir: to.to_path_buf(),
        ..DirSync::default()
    };
    let write = options.write == Write::Apply;
    let sources = series::patch_files(from)?;
    let mut names = Vec::new();
    for src in &sources {
        let name = src.file_name().context("patch without a name")?;
        names.push(name.to_os_string());
        let dest = to.join(name);
        let bytes = std::fs::read(src).with_context(|| format!("reading {}", src.display()))?;
        let action = match std::fs::read(&dest) {
            Ok(have) if have == bytes => {
                s.unchanged += 1;
                continue;
            }
            Ok(_) => {
                s.changed += 1;
                FileAction::Change
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                s.added += 1;
                FileAction::Add
            }
            Err(e) => return Err(e).with_context(|| format!("reading {}", dest.display())),
        };
        if write {
            write_atomic(&dest, &bytes)?;
        }
        s.plan.push((action, dest));
    }
    for old in series::patch_files(to)? {
        if names.iter().any(|n| Some(n.as_os_str()) == old.file_name()) {
            continue;
        }
        match options.prune {
            Prune::Keep => {
                s.kept += 1;
                s.plan.push((FileAction::Keep, old));
            }
            Prune::Remove => {
                if write {
                    std::fs::remove_file(&old)
                        .with_context(|| format!("removing {}", old.display()))?;
                }
                s.removed += 1;
                s.plan.push((FileAction::Remove, old));
            }
        }
    }
    Ok(s)
}

/// What a sync prints: with [`Write::DryRun`] the plan, one line per file
/// (`add`, `change`, `remove`, `keep`), then for every directory the
/// counts, and a hint at `--prune` for the patches only in the destination.
pub fn render(done: &[DirSync], options: SyncOptions) -> String {
    let dry = options.write == Write::DryRun;
    let (added, changed, removed) = if dry {
        ("to add", "to change", "to remove")
    } else {
        ("added", "changed", "removed")
    };
    let mut out = String::new();
    for d in done {
        if dry {
            for (action, file) in &d.plan {
                out.push_str(&format!("{:<6} {}\n", action.as_str(), file.display()));
            }
        }
        out.push_str(&format!(
            "{}: {} {added}, {} {changed}, {} {removed}, {} unchanged",
            d.dir.display(),
            d.added,
            d.changed,
            d.removed,
            d.unchanged
        ));
        if d.kept > 0 {
            out.push_str(&format!(
                ", {} kept (not in the source; --prune removes them)",
                d.kept
            ));
            if !dry {
                out.push_str(":\n");
                for (_, file) in d.plan.iter().filter(|(a, _)| *a == FileAction::Keep) {
                    out.push_str(&format!("  {}\n", file.display()));
                }
                continue;
            }
        }
        out.push('\n');
    }
    if dry {
        out.push_str("dry run: nothing was written\n");
    }
    out
}
