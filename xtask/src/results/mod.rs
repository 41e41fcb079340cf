//! `result.json`: what one (target, variant) build produced, measured.
//!
//! Written last, atomically (temporary file + rename), after every artifact
//! is in place: a results directory without `result.json` is an
//! interrupted or failed build, never a complete one.
//!
//! [`lab`] holds the runtime lab's record, `lab.json`.

pub mod archive;
pub mod attribution;
pub mod device_fit;
pub mod lab;
pub mod openwrt;

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::measure::sections::SectionSizes;
use crate::util::fs::{is_not_found, read_limited, FileLimit};

/// The version of the `result.json` layout; bumped on incompatible changes.
/// Schema 2 made results self-describing (the resolved target and variant,
/// the source identity and the build key are recorded, so reports never
/// re-read `targets/` or `variants.toml`).
pub const SCHEMA: u32 = 2;

/// File name of the record in each results directory.
pub const FILE_NAME: &str = "result.json";

/// What a `patches size-bisect` state's variant name has after the base
/// variant's (`baseline~bisect-<key>-<k>`): `size-report` leaves such
/// results out of its default comparisons, which would otherwise list
/// every state of every bisection.
pub const BISECT_STATE_MARK: &str = "~bisect-";

/// One artifact's size and digest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArtifactRecord {
    /// Size in bytes.
    pub size: u64,
    /// sha256 of the file, lowercase hex.
    pub sha256: String,
}

/// The LZMA parameters an LZMA artifact (`vmlinux.lzma`, the uImage's
/// payload) was made with, as in the `.lzma` header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct LzmaRecord {
    /// Literal context bits (`lzma e -lc`).
    pub lc: u32,
    /// Literal position bits (`-lp`).
    pub lp: u32,
    /// Position bits (`-pb`).
    pub pb: u32,
    /// Dictionary size in bytes (`-d` is its log2).
    pub dict_size: u32,
}

/// A named file and its digest: an applied patch (in application order), a
/// variant's own patch, or a kconfig fragment.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct PatchRecord {
    /// Path relative to `patches/` or `targets/` (or the generated patch's name).
    pub name: String,
    /// sha256 of the bytes, lowercase hex.
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

impl Cflags {
    /// The optimization level the compiler was given: the last `-O…` of
    /// the compile command kbuild recorded (GCC takes the last; OpenWrt's
    /// KCFLAGS come after the branch's flags there), else of the flags in
    /// effect ([`Cflags::in_effect`]), else the branch's own (`-O2` for
    /// `effective = "o2"`, the `.config`'s
    /// `CONFIG_CC_OPTIMIZE_FOR_PERFORMANCE`; `-Os` for `"os"`). A variant
    /// whose `os` flags say `-O2` (`o2-align-64`) is `-O2`.
    pub fn level(&self) -> &str {
        fn last_o(flags: &str) -> Option<&str> {
            flags
                .split_whitespace()
                .rev()
                .find(|f| f.starts_with("-O") && f.len() <= 6)
        }
        match (
            last_o(&self.compile_command).or_else(|| last_o(self.in_effect())),
            self.effective.as_str(),
        ) {
            (Some(f), _) => f,
            (None, "o2") => "-O2",
            (None, _) => "-Os",
        }
    }

    /// The KBUILD_CFLAGS of the branch in effect ([`Cflags::level`]).
    pub fn in_effect(&self) -> &str {
        if self.effective == "o2" {
            &self.o2
        } else {
            &self.os
        }
    }
}

/// The target as it was resolved when the build ran: every field of
/// `targets/<name>.toml`, with each kconfig fragment's sha256.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TargetRecord {
    /// Target name (`targets/<name>.toml`), used in results paths.
    pub name: String,
    /// OpenWrt's `target/subtarget`, e.g. `ramips/mt7621`.
    pub openwrt: String,
    /// Other names `--target` accepted (`ar71xx`).
    pub aliases: Vec<String>,
    /// SoC or board for report headings.
    pub soc: String,
    /// One line describing the CPU.
    pub cpu: String,
    /// Kernel `ARCH=`.
    pub arch: String,
    /// `CROSS_COMPILE=` prefix.
    pub cross_compile: String,
    /// Debian package of the cross compiler.
    pub compiler_package: String,
    /// Kernel series the target asked for (`6.12`).
    pub kernel: String,
    /// Whether `--target all` included it.
    pub in_all: bool,
    /// The `make` config target the `.config` started from (`allnoconfig`).
    pub kconfig_base: String,
    /// Fragments merged on top, in order, relative to `targets/`.
    pub kconfig_fragments: Vec<PatchRecord>,
    /// `make` goals besides `vmlinux`.
    pub make_targets: Vec<String>,
    /// Artifact file names measured, in the target file's order.
    pub artifacts: Vec<String>,
    /// `mkimage` parameters when a uImage is made: load address, entry
    /// symbol and image name.
    pub uimage: Option<UImageRecord>,
}

/// `mkimage -a LOAD -e ENTRY -n NAME` as the target declared it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct UImageRecord {
    /// Load address, e.g. `0x80001000`.
    pub load_address: String,
    /// ELF symbol whose address is the entry point.
    pub entry_symbol: String,
    /// Image name in the header.
    pub name: String,
}

/// The variant as it was when the build ran (`patches/variants.toml`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct VariantRecord {
    /// Variant name, used in results paths.
    pub name: String,
    /// One line for reports.
    pub description: String,
    /// KBUILD_CFLAGS of the `-Os` branch.
    pub os_flags: String,
    /// KBUILD_CFLAGS of the `-O2` branch.
    pub o2_flags: String,
    /// The variant's own patches (relative to `patches/`), in order, with sha256.
    pub patches: Vec<PatchRecord>,
    /// The variant's own kconfig lines.
    pub kconfig: Vec<String>,
}

/// What ccache did for one build: compiler calls answered from the cache
/// and calls that compiled (from the build's own `CCACHE_STATSLOG`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CcacheStats {
    /// Objects taken from the cache (direct and preprocessed hits).
    pub hits: u64,
    /// Objects compiled and stored.
    pub misses: u64,
}

/// Where the kernel source came from.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SourceRecord {
    /// Full kernel version from the top Makefile, e.g. `6.12.117`.
    pub version: String,
    /// The tarball or tree the source came from.
    pub origin: String,
    /// sha256 of the tarball; `None` for an unpacked tree.
    pub sha256: Option<String>,
}

/// Everything recorded about one build (`result.json`, schema 2). Sizes are
/// in bytes, times RFC 3339 UTC, durations in seconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BuildResult {
    /// [`SCHEMA`].
    pub schema: u32,
    /// sha256 over every input that can change the output bytes
    /// (listed in the docs of `build::plan`), lowercase hex.
    pub build_key: String,
    /// The resolved target.
    pub target: TargetRecord,
    /// The variant.
    pub variant: VariantRecord,
    /// Which build backend produced this (`kernel-tree`).
    pub backend: String,
    /// The kernel source.
    pub kernel_source: SourceRecord,
    /// First line of `<cross>gcc --version`.
    pub compiler: String,
    /// The flags.
    pub kbuild_cflags: Cflags,
    /// Every applied patch, in order, with sha256 (the series, the generated
    /// 201 patch, the variant's patches).
    pub patches: Vec<PatchRecord>,
    /// sha256 of the final `.config`.
    pub config_sha256: String,
    /// Artifact file name → size and digest.
    pub artifacts: BTreeMap<String, ArtifactRecord>,
    /// The LZMA parameters of `vmlinux.lzma` and the uImage's payload;
    /// `None` when the target makes neither, and in results written before
    /// the parameters were recorded (those used a 1 MiB dictionary).
    #[serde(default)]
    pub lzma: Option<LzmaRecord>,
    /// vmlinux's text/data/bss as binutils `size` reports them.
    pub vmlinux_sections: SectionSizes,
    /// When the build started.
    pub started: String,
    /// When the build finished.
    pub finished: String,
    /// Wall time of the build in seconds.
    pub duration_seconds: f64,
    /// ccache's hits and misses during the build; `None` when built with
    /// `--no-ccache` (and in results written before ccache was used).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ccache: Option<CcacheStats>,
    /// The variant of the same target whose finished build directory this
    /// build started from (a patch-only variant: same flags and kconfig,
    /// other patches; make recompiled only what the patches changed);
    /// `None` for a build from an empty directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub incremental_from: Option<String>,
    /// OpenWrt mode (`build --openwrt`): the OpenWrt target, the patches
    /// left out and what olddefconfig changed; `None` for a default build.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub openwrt: Option<openwrt::OpenwrtRecord>,
}

/// Just the schema number, read before the rest so an old file gets a
/// message saying how to rebuild rather than a serde error.
#[derive(Deserialize)]
struct SchemaOnly {
    schema: Option<u32>,
}

/// The largest `result.json` read: an OpenWrt-mode result listing every
/// patch of a 400-patch series is about 100 KiB.
pub const LIMIT: FileLimit = FileLimit {
    what: FILE_NAME,
    max_bytes: 16 << 20,
};

impl BuildResult {
    /// Reads `dir/result.json`, naming the file in errors: missing (the
    /// error is [`crate::util::fs::is_not_found`]), not a regular file of
    /// at most [`LIMIT`] (a FIFO or `/dev/zero` would hang or fill memory),
    /// or not a result this version reads ([`BuildResult::from_json`]).
    pub fn read(dir: &Path) -> Result<BuildResult> {
        let file = dir.join(FILE_NAME);
        let rebuild = rebuild_command(dir);
        let text = match read_limited(
            &file,
            LIMIT,
            &format!("remove it and rebuild with `{rebuild}`"),
        ) {
            Ok(text) => text,
            Err(e) if is_not_found(&e) => {
                return Err(e.context(format!(
                    "{} does not exist; build it with `{rebuild}`",
                    file.display()
                )))
            }
            Err(e) => return Err(e),
        };
        BuildResult::from_json(&text, &file)
    }

    /// Parses the text of a `result.json`; `file` names it in errors (and
    /// its directories the target and variant of the rebuild command): not
    /// JSON, another schema, or not a result this version can read.
    pub fn from_json(text: &str, file: &Path) -> Result<BuildResult> {
        let rebuild = rebuild_command(file.parent().unwrap_or(Path::new("")));
        let schema = serde_json::from_str::<SchemaOnly>(text)
            .with_context(|| format!("{}: not a result.json (invalid JSON)", file.display()))?
            .schema;
        if schema != Some(SCHEMA) {
            let found = schema.map_or("no schema".to_string(), |s| format!("schema {s}"));
            anyhow::bail!(
                "{}: {found}, but this xtask reads schema {SCHEMA} (results that record \
                 their own target, variant and build key); rebuild it with `{rebuild}`",
                file.display(),
            );
        }
        let result: BuildResult = serde_json::from_str(text).with_context(|| {
            format!(
                "{}: not a result.json this version can read; rebuild it with `{rebuild}`",
                file.display()
            )
        })?;
        result.check().map_err(|why| {
            anyhow::anyhow!(
                "{}: {why}: not what a build writes; rebuild it with `{rebuild}`",
                file.display()
            )
        })?;
        Ok(result)
    }

    /// What [`BuildResult::from_json`] checks beyond the layout: the
    /// branch in effect is `os` or `o2`, and no string holds a control
    /// character (a newline in `kbuild_cflags.effective` forged lines of
    /// the report, which keeps newlines where it escapes the rest). The
    /// problem names the field.
    fn check(&self) -> std::result::Result<(), String> {
        let effective = &self.kbuild_cflags.effective;
        if effective != "os" && effective != "o2" {
            return Err(format!(
                "kbuild_cflags.effective is {:?}, not \"os\" or \"o2\"",
                crate::util::text::printable(effective)
            ));
        }
        let value = serde_json::to_value(self).map_err(|e| e.to_string())?;
        match control_string(&value, "") {
            Some(at) => Err(format!("{at} holds a control character")),
            None => Ok(()),
        }
    }

    /// Writes `dir/result.json` atomically.
    pub fn write(&self, dir: &Path) -> Result<()> {
        let mut json = serde_json::to_string_pretty(self)?;
        json.push('\n');
        crate::util::fs::write_atomic(&dir.join(FILE_NAME), json.as_bytes())
    }
}

/// The path (`kbuild_cflags.os`, `patches[3].name`) of the first string
/// (or map key) in `value` holding a control or invisible format
/// character ([`crate::util::text::is_hidden`]), if any.
fn control_string(value: &serde_json::Value, at: &str) -> Option<String> {
    let bad = |s: &str| s.chars().any(crate::util::text::is_hidden);
    match value {
        serde_json::Value::String(s) if bad(s) => Some(at.to_string()),
        serde_json::Value::Array(items) => items
            .iter()
            .enumerate()
            .find_map(|(i, v)| control_string(v, &format!("{at}[{i}]"))),
        serde_json::Value::Object(map) => map.iter().find_map(|(k, v)| {
            let here = if at.is_empty() {
                k.clone()
            } else {
                format!("{at}.{k}")
            };
            if bad(k) {
                return Some(format!("a key of {at}"));
            }
            control_string(v, &here)
        }),
        _ => None,
    }
}

/// When `a` and `b` have the same build key (the same inputs) but an
/// artifact both have has other bytes (sha256): a sentence naming the
/// key and the artifacts, saying the build is not reproducible. `None`
/// otherwise (other keys, or the same bytes).
pub fn differing_bytes(a: &BuildResult, b: &BuildResult) -> Option<String> {
    if a.build_key != b.build_key {
        return None;
    }
    let differ: Vec<&str> = a
        .artifacts
        .iter()
        .filter(|(name, r)| b.artifacts.get(*name).is_some_and(|o| o.sha256 != r.sha256))
        .map(|(name, _)| name.as_str())
        .collect();
    if differ.is_empty() {
        return None;
    }
    Some(format!(
        "the same build key ({}) but other bytes in {}: two builds of the same inputs \
         gave different files, so this build is not reproducible",
        a.build_key.get(..16).unwrap_or(&a.build_key),
        differ.join(", ")
    ))
}

/// `cargo xtask build --target T --variant V` for the results directory
/// `dir` (`…/<T>/<V>`).
fn rebuild_command(dir: &Path) -> String {
    let name = |p: Option<&Path>| {
        p.and_then(Path::file_name)
            .map_or("?".to_string(), |n| n.to_string_lossy().into_owned())
    };
    format!(
        "cargo xtask build --target {} --variant {}",
        name(dir.parent()),
        name(Some(dir))
    )
}

/// Now, as RFC 3339 UTC with second precision.
pub fn now_rfc3339() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

/// Errors unless `sha256` (a record's `vmlinux_sha256`, in `file`) is the
/// sha256 `result` records for its vmlinux: the record describes another
/// build's kernel. Names the file, the result and `fix`.
pub(crate) fn check_vmlinux(
    file: &Path,
    result: &BuildResult,
    sha256: &str,
    fix: &str,
) -> Result<()> {
    let own = result.artifacts.get("vmlinux").map(|a| a.sha256.as_str());
    if own != Some(sha256) {
        anyhow::bail!(
            "{} describes another vmlinux than {}/{}'s (sha256 {}); {fix}",
            file.display(),
            result.target.name,
            result.variant.name,
            crate::util::text::printable(crate::util::text::prefix(sha256, 12))
        );
    }
    Ok(())
}

/// Reads the JSON record `file_name` of a result directory `dir`, `None`
/// when there is none; shared by the records built beside `result.json`
/// (`attribution.json`, `device-fit.json`).
///
/// Errors, each naming the file and `fix`: not a regular file of at most
/// `limit`, not JSON of `T`'s layout (`what` names the record: "an
/// attribution"), or a `schema` (read by `schema_of`) other than `schema`.
pub(crate) fn read_json_record<T: serde::de::DeserializeOwned>(
    dir: &Path,
    (file_name, what, limit): (&str, &str, crate::util::fs::FileLimit),
    (schema, schema_of): (u32, fn(&T) -> u32),
    fix: &str,
) -> Result<Option<T>> {
    let file = dir.join(file_name);
    let text = match crate::util::fs::read_limited(&file, limit, fix) {
        Ok(t) => t,
        Err(e) if crate::util::fs::is_not_found(&e) => return Ok(None),
        Err(e) => return Err(e),
    };
    let record: T = serde_json::from_str(&text).map_err(|e| {
        anyhow::anyhow!(
            "{}: not {what} this xtask reads ({e}); {fix}",
            file.display()
        )
    })?;
    let found = schema_of(&record);
    if found != schema {
        anyhow::bail!(
            "{}: schema {found}, but this xtask reads schema {schema}; {fix}",
            file.display()
        );
    }
    Ok(Some(record))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_schema_1_result_says_how_to_rebuild() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("bcm53xx/baseline");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join(FILE_NAME),
            r#"{"schema": 1, "target": "bcm53xx", "variant": "baseline"}"#,
        )
        .unwrap();
        let err = format!("{:#}", BuildResult::read(&dir).unwrap_err());
        assert!(err.contains("schema 1"), "{err}");
        assert!(
            err.contains("cargo xtask build --target bcm53xx --variant baseline"),
            "{err}"
        );
        assert!(
            err.contains(&dir.join(FILE_NAME).display().to_string()),
            "{err}"
        );
    }

    #[test]
    fn a_result_without_schema_is_named_too() {
        let root = tempfile::tempdir().unwrap();
        std::fs::write(root.path().join(FILE_NAME), "{}").unwrap();
        let err = format!("{:#}", BuildResult::read(root.path()).unwrap_err());
        assert!(err.contains("no schema"), "{err}");
    }
}
