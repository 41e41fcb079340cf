//! The patch series for one target and kernel version, in OpenWrt's order.
//!
//! OpenWrt (include/kernel-build.mk, `Kernel/Patch/Default`) applies
//! `target/linux/generic/backport-<kver>/`, then `pending-<kver>/`, then
//! `hack-<kver>/`, then the target's `patches-<kver>/`, each directory in
//! name order. Here the same directories live under `patches/`:
//! `patches/generic/{backport,pending,hack}-<kver>/` and
//! `patches/<openwrt-target>/patches-<kver>/` (e.g. `patches/ramips/patches-6.12/`),
//! followed by the variant's own patches.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::inputs::targets::Target;
use crate::inputs::variants::Variant;
use crate::patches::extra_optimization;
use crate::results::PatchRecord;
use crate::util::hash::sha256_bytes;

/// One patch of the series, with the bytes that will be applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeriesPatch {
    /// Path relative to `patches/`, e.g. `generic/pending-6.12/201-extra_optimization.patch`.
    pub name: String,
    /// The patch text.
    pub bytes: Vec<u8>,
}

impl SeriesPatch {
    /// Its name and sha256, as `result.json` records applied patches.
    pub fn record(&self) -> PatchRecord {
        PatchRecord {
            name: self.name.clone(),
            sha256: sha256_bytes(&self.bytes),
        }
    }
}

/// The directories of the series for `target` and kernel series `kver`, in order.
pub fn directories(patches_dir: &Path, target: &Target, kver: &str) -> Vec<PathBuf> {
    let generic = patches_dir.join("generic");
    let openwrt_target = target.openwrt.split('/').next().unwrap_or(&target.name);
    vec![
        generic.join(format!("backport-{kver}")),
        generic.join(format!("pending-{kver}")),
        generic.join(format!("hack-{kver}")),
        patches_dir
            .join(openwrt_target)
            .join(format!("patches-{kver}")),
    ]
}

/// `*.patch` files of one directory sorted by name; none when it does not
/// exist. A name with a control character (a newline would split the
/// stack's line-based state) is an error naming the file.
pub fn patch_files(dir: &Path) -> Result<Vec<PathBuf>> {
    if !dir.is_dir() {
        return Ok(Vec::new());
    }
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let path = entry?.path();
        if path.is_file() && path.extension().is_some_and(|e| e == "patch") {
            // The name is a line of the stack's state files and of reports.
            let name = path.file_name().unwrap_or_default().to_string_lossy();
            if name.chars().any(char::is_control) {
                anyhow::bail!(
                    "{}: a patch file name with a control character (newline, tab…) \
                     cannot be in a series; rename it",
                    path.display()
                );
            }
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

/// The series to apply for (`target`, `variant`) on kernel series `kver`.
///
/// `makefile` is the pristine top-level Makefile: the series'
/// `201-extra_optimization.patch` is regenerated from it with the variant's
/// flags (keeping the header of the committed one), and added to
/// `pending-<kver>` when that directory has none. The variant's own patches
/// come last.
pub fn collect(
    patches_dir: &Path,
    target: &Target,
    variant: &Variant,
    kver: &str,
    makefile: &str,
) -> Result<Vec<SeriesPatch>> {
    let mut series = Vec::new();
    let pending = patches_dir.join("generic").join(format!("pending-{kver}"));
    let generated_name = relative(patches_dir, &pending.join(extra_optimization::PATCH_NAME));
    let mut have_flags_patch = false;
    for dir in directories(patches_dir, target, kver) {
        for file in patch_files(&dir)? {
            let name = relative(patches_dir, &file);
            let text =
                std::fs::read(&file).with_context(|| format!("reading {}", file.display()))?;
            if name == generated_name {
                have_flags_patch = true;
                let text = String::from_utf8_lossy(&text);
                let generated = extra_optimization::patch_text(
                    extra_optimization::patch_header(&text),
                    makefile,
                    variant,
                )
                .with_context(|| format!("generating {name} for variant {}", variant.name))?;
                series.push(SeriesPatch {
                    name,
                    bytes: generated.into_bytes(),
                });
            } else {
                series.push(SeriesPatch { name, bytes: text });
            }
        }
        if dir == pending && !have_flags_patch {
            let generated = extra_optimization::patch_text(
                extra_optimization::DEFAULT_HEADER,
                makefile,
                variant,
            )
            .with_context(|| format!("generating {generated_name}"))?;
            // Keep name order inside pending-<kver>.
            let at = series
                .iter()
                .position(|p| {
                    p.name.starts_with(&relative(patches_dir, &pending)) && p.name > generated_name
                })
                .unwrap_or(series.len());
            series.insert(
                at,
                SeriesPatch {
                    name: generated_name.clone(),
                    bytes: generated.into_bytes(),
                },
            );
            have_flags_patch = true;
        }
    }
    for file in &variant.patches {
        let text = std::fs::read(file).with_context(|| format!("reading {}", file.display()))?;
        series.push(SeriesPatch {
            name: relative(patches_dir, file),
            bytes: text,
        });
    }
    Ok(series)
}

fn relative(base: &Path, path: &Path) -> String {
    path.strip_prefix(base)
        .unwrap_or(path)
        .to_string_lossy()
        .into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_patch_name_with_a_newline_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("010-ok.patch"), "").unwrap();
        std::fs::write(dir.path().join("020-bad\nname.patch"), "").unwrap();
        let err = format!("{:#}", patch_files(dir.path()).unwrap_err());
        assert!(err.contains("control character"), "{err}");
    }
}
