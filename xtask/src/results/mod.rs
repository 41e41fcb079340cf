//! `result.json`: what one (target, variant) build produced, measured.
//!
//! Written last, atomically (temporary file + rename), after every artifact
//! is in place: a results directory without `result.json` is an
//! interrupted or failed build, never a complete one.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::measure::sections::SectionSizes;

/// The version of the `result.json` layout; bumped on incompatible changes.
pub const SCHEMA: u32 = 1;

/// File name of the record in each results directory.
pub const FILE_NAME: &str = "result.json";

/// One artifact's size and digest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArtifactRecord {
    /// Size in bytes.
    pub size: u64,
    /// sha256 of the file, lowercase hex.
    pub sha256: String,
}

/// One applied patch, in application order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PatchRecord {
    /// Path relative to `patches/` (or the generated patch's name).
    pub name: String,
    /// sha256 of the bytes applied, lowercase hex.
    pub sha256: String,
}

/// The compiler flags the build used.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cflags {
    /// KBUILD_CFLAGS of the `-Os` branch, as written by 201-extra_optimization.patch.
    pub os: String,
    /// KBUILD_CFLAGS of the `-O2` branch.
    pub o2: String,
    /// The branch the configuration selected (`os` or `o2`) and so the flags in effect.
    pub effective: String,
    /// The complete compiler command kbuild recorded for `init/main.o`
    /// (from `init/.main.o.cmd`), which shows every flag actually passed.
    pub compile_command: String,
}

/// Everything recorded about one build. Sizes are in bytes, times are
/// RFC 3339 UTC, durations in seconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BuildResult {
    /// [`SCHEMA`].
    pub schema: u32,
    /// Target name (`targets/<name>.toml`).
    pub target: String,
    /// OpenWrt `target/subtarget`.
    pub openwrt_target: String,
    /// SoC or board for report headings.
    pub soc: String,
    /// Kernel ARCH.
    pub arch: String,
    /// Variant name.
    pub variant: String,
    /// Variant description.
    pub variant_description: String,
    /// Which build backend produced this (`kernel-tree`).
    pub backend: String,
    /// Full kernel version, e.g. `6.12.117`.
    pub kernel_version: String,
    /// The tarball or tree the source came from.
    pub kernel_source: String,
    /// sha256 of the source tarball; `None` for a tree.
    pub kernel_source_sha256: Option<String>,
    /// First line of `<cross>gcc --version`.
    pub compiler: String,
    /// The flags.
    pub kbuild_cflags: Cflags,
    /// Artifact file name → size and digest.
    pub artifacts: BTreeMap<String, ArtifactRecord>,
    /// vmlinux's text/data/bss as binutils `size` reports them.
    pub vmlinux_sections: SectionSizes,
    /// The applied patches, in order.
    pub patches: Vec<PatchRecord>,
    /// sha256 of the final `.config`.
    pub config_sha256: String,
    /// When the build started.
    pub started: String,
    /// When the build finished.
    pub finished: String,
    /// Wall time of the build in seconds.
    pub duration_seconds: f64,
}

impl BuildResult {
    /// Reads `dir/result.json`, naming the file in errors.
    pub fn read(dir: &Path) -> Result<BuildResult> {
        let file = dir.join(FILE_NAME);
        let text = std::fs::read_to_string(&file).with_context(|| {
            format!(
                "reading {}; build it first with `cargo xtask build`",
                file.display()
            )
        })?;
        let result: BuildResult = serde_json::from_str(&text).with_context(|| {
            format!(
                "{}: not a result.json this version can read",
                file.display()
            )
        })?;
        anyhow::ensure!(
            result.schema == SCHEMA,
            "{}: schema {} (this xtask reads {SCHEMA}); rebuild it",
            file.display(),
            result.schema
        );
        Ok(result)
    }

    /// Writes `dir/result.json` atomically.
    pub fn write(&self, dir: &Path) -> Result<()> {
        let mut json = serde_json::to_string_pretty(self)?;
        json.push('\n');
        write_atomically(&dir.join(FILE_NAME), json.as_bytes())
    }
}

/// Writes `bytes` to `path` through a temporary file in the same directory,
/// synced and renamed over `path`: readers see the old file or the new one,
/// never a truncated one.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path
        .parent()
        .with_context(|| format!("{} has no parent directory", path.display()))?;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)
        .with_context(|| format!("creating a temporary file in {}", dir.display()))?;
    // tempfile creates 0600; results are ordinary files others may read.
    use std::os::unix::fs::PermissionsExt;
    tmp.as_file()
        .set_permissions(std::fs::Permissions::from_mode(0o644))
        .with_context(|| format!("setting the mode of {}", path.display()))?;
    tmp.write_all(bytes)
        .and_then(|_| tmp.as_file().sync_all())
        .with_context(|| format!("writing {}", path.display()))?;
    tmp.persist(path)
        .with_context(|| format!("renaming into {}", path.display()))?;
    Ok(())
}

/// Now, as RFC 3339 UTC with second precision.
pub fn now_rfc3339() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_replaces_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("result.json");
        write_atomically(&file, b"one").unwrap();
        write_atomically(&file, b"two").unwrap();
        assert_eq!(std::fs::read(&file).unwrap(), b"two");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o644);
    }
}
