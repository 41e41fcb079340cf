//! Builds the cache-model plugin (`lab/plugin/xtask-cache.c`, compiled
//! into this binary) with the host's gcc against the installed QEMU's
//! `qemu-plugin.h` ([`super::source`]), and QEMU's own
//! `contrib/plugins/cache.c` (with glib from `pkg-config`) for the tests
//! that compare the two.
//!
//! Each `.so` is cached in `target/xtask/lab/cache-model/plugins/<key>/`,
//! where the key is the sha256 of everything that goes in: the C source,
//! the header, the compiler's version line and the flags. A build goes to
//! a staging directory first and is renamed into place.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use sha2::{Digest, Sha256};

use super::source::QemuSource;
use crate::lab::process::run_appending_to_log;
use crate::util::fs::{remove_stale_staging, StagingDir};
use crate::util::hash::{sha256_bytes, sha256_file};
use crate::util::layout::Layout;
use crate::util::lock::{Lock, Wait};

/// The plugin's C source, as the repository has it.
pub const PLUGIN_SOURCE: &str = include_str!("../../../../lab/plugin/xtask-cache.c");
/// Where [`PLUGIN_SOURCE`] lives, relative to the workspace root.
pub const PLUGIN_SOURCE_PATH: &str = "lab/plugin/xtask-cache.c";
/// The headers [`PLUGIN_SOURCE`] includes, next to it: (file name, text):
/// the LRU caches, the counters' socket, the core model's branches.
pub const PLUGIN_HEADERS: [(&str, &str); 3] = [
    (
        "xtask-lru.h",
        include_str!("../../../../lab/plugin/xtask-lru.h"),
    ),
    (
        "xtask-server.h",
        include_str!("../../../../lab/plugin/xtask-server.h"),
    ),
    (
        "xtask-branch.h",
        include_str!("../../../../lab/plugin/xtask-branch.h"),
    ),
];

/// gcc's flags for the plugin: warnings are errors, so a header that
/// changed its API fails here rather than at QEMU's start.
const PLUGIN_CFLAGS: &[&str] = &[
    "-O2", "-g", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC", "-pthread",
];
/// gcc's flags for QEMU's `cache.c`, as `contrib/plugins/Makefile` has them.
const REFERENCE_CFLAGS: &[&str] = &["-O2", "-g", "-shared", "-fPIC"];

/// A built plugin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuiltPlugin {
    /// The `.so`.
    pub path: PathBuf,
    /// Its sha256.
    pub sha256: String,
    /// `gcc --version`, first line.
    pub compiler: String,
}

/// The first line of `gcc --version`.
pub fn compiler_version() -> Result<String> {
    let out = Command::new("gcc").arg("--version").output().context(
        "running gcc --version (the cache model builds a QEMU plugin: apt-get install gcc)",
    )?;
    let text = String::from_utf8_lossy(&out.stdout);
    match text.lines().next() {
        Some(line) if out.status.success() => Ok(line.trim().to_string()),
        _ => bail!("gcc --version failed"),
    }
}

/// The lab's plugin built against `source`'s header.
pub fn plugin(layout: &Layout, source: &QemuSource) -> Result<BuiltPlugin> {
    let mut files = vec![("xtask-cache.c", PLUGIN_SOURCE.as_bytes())];
    files.extend(PLUGIN_HEADERS.iter().map(|(n, t)| (*n, t.as_bytes())));
    build(
        layout,
        "libxtask-cache.so",
        &files,
        source,
        PLUGIN_CFLAGS,
        &[],
    )
}

/// QEMU's own `contrib/plugins/cache.c` of `source`, the reference of the
/// tests (needs `libglib2.0-dev` and `pkg-config`).
pub fn reference(layout: &Layout, source: &QemuSource) -> Result<BuiltPlugin> {
    let text = crate::util::fs::read_bytes_limited(
        &source.reference(),
        crate::util::fs::FileLimit::input("QEMU source file"),
        "",
    )?;
    let glib = |what: &str| -> Result<Vec<String>> {
        let out = Command::new("pkg-config")
            .args([what, "glib-2.0"])
            .output()
            .context("running pkg-config (QEMU's cache.c needs pkg-config and libglib2.0-dev)")?;
        if !out.status.success() {
            bail!(
                "pkg-config {what} glib-2.0 failed (apt-get install libglib2.0-dev): {}",
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        Ok(String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .map(str::to_string)
            .collect())
    };
    let mut flags: Vec<String> = REFERENCE_CFLAGS.iter().map(|s| s.to_string()).collect();
    flags.extend(glib("--cflags")?);
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let libs = glib("--libs")?;
    let libs: Vec<&str> = libs.iter().map(String::as_str).collect();
    build(
        layout,
        "libcache.so",
        &[("cache.c", &text)],
        source,
        &flags,
        &libs,
    )
}

/// Compiles the first of `files` (`(name, text)`, the others headers it
/// includes) into `out_name` with `flags` (and `libs` after the source),
/// cached by the sha256 of every input.
fn build(
    layout: &Layout,
    out_name: &str,
    files: &[(&str, &[u8])],
    source: &QemuSource,
    flags: &[&str],
    libs: &[&str],
) -> Result<BuiltPlugin> {
    let compiler = compiler_version()?;
    let mut h = Sha256::new();
    let (name, _) = files[0];
    let mut parts: Vec<&[u8]> = vec!["xtask-cache-model-plugin-2".as_bytes(), out_name.as_bytes()];
    for (file, text) in files {
        parts.push(file.as_bytes());
        parts.push(text);
    }
    for part in parts.into_iter().chain([
        source.header_sha256.as_bytes(),
        compiler.as_bytes(),
        flags.join(" ").as_bytes(),
        libs.join(" ").as_bytes(),
    ]) {
        h.update(part);
        h.update([0]);
    }
    let key = hex::encode(h.finalize());
    let base = layout.work_dir().join("lab/cache-model/plugins");
    let dir = base.join(&key[..16]);
    let path = dir.join(out_name);
    // One lab compiles at a time: a second would replace the directory
    // while the first's QEMU is about to load the plugin from it; it
    // finds the plugin made instead.
    let _lock = Lock::acquire(
        &layout.lab_cache_lock("cache-model-plugins"),
        "the cache model's plugins",
        Wait::Yes,
    )?;
    if path.is_file() {
        return Ok(BuiltPlugin {
            sha256: sha256_file(&path)?,
            path,
            compiler,
        });
    }
    remove_stale_staging(&base, ".build-")?;
    let stage = StagingDir::new(&base, ".build-")?;
    for (file, text) in files {
        let path = stage.path().join(file);
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    let src = stage.path().join(name);
    let mut gcc = Command::new("gcc");
    gcc.args(flags)
        .arg("-I")
        .arg(&source.dir)
        .arg(&src)
        .arg("-o")
        .arg(stage.path().join(out_name))
        .args(libs);
    let log = stage.path().join("gcc.log");
    run_appending_to_log(
        gcc,
        &format!("gcc {name} (the cache model's plugin)"),
        &log,
        Duration::from_secs(300),
    )
    .map_err(|e| keep_log(e, &log, &base))?;
    let kept = stage.keep()?;
    if dir.exists() {
        std::fs::remove_dir_all(&dir).with_context(|| format!("removing {}", dir.display()))?;
    }
    std::fs::rename(&kept, &dir)
        .with_context(|| format!("moving {} to {}", kept.display(), dir.display()))?;
    Ok(BuiltPlugin {
        sha256: sha256_file(&path)?,
        path,
        compiler,
    })
}

/// Keeps gcc's log next to the plugins, where the error can point.
fn keep_log(e: anyhow::Error, log: &Path, base: &Path) -> anyhow::Error {
    let kept = base.join("gcc-failed.log");
    match std::fs::copy(log, &kept) {
        Ok(_) => e.context(format!("gcc's output is kept in {}", kept.display())),
        Err(_) => e,
    }
}

/// sha256 of the plugin's source, for `lab.json`: of `xtask-cache.c`
/// alone while it was one file, since of it and then each of
/// [`PLUGIN_HEADERS`] in order, each followed by a NUL byte.
pub fn plugin_source_sha256() -> String {
    let mut all = PLUGIN_SOURCE.as_bytes().to_vec();
    all.push(0);
    for (_, text) in PLUGIN_HEADERS {
        all.extend_from_slice(text.as_bytes());
        all.push(0);
    }
    sha256_bytes(&all)
}
