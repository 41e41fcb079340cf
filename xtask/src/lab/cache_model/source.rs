//! The installed QEMU's plugin API: `include/qemu/qemu-plugin.h` (and
//! `contrib/plugins/cache.c`, the reference the tests compare with) from
//! Debian's `qemu` source package of exactly the installed version.
//!
//! Debian ships no QEMU plugin headers in a binary package; the source
//! package has them. Its version is the installed binary package's
//! `${source:Version}` (`dpkg-query`), so a QEMU security update brings a
//! matching header. It is fetched once with a private apt configuration
//! ([`crate::lab::apt`], `deb-src` lines of the suite, its updates and
//! security suites; the host's sources are untouched) into
//! `target/xtask/lab/cache-model/qemu-src/<version>/`, keeping only the
//! two files and a manifest (package, version, the orig tarball's sha256).
//! Debian's own patches (`debian/patches/series`) are checked: none may
//! touch either file, since only the upstream tarball's copy is kept.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use crate::lab::apt::SUITE;
use crate::lab::apt::{host_arch, source_lines, PrivateApt};
use crate::lab::process::run_appending_to_log;
use crate::util::fs::{remove_stale_staging, write_atomic, StagingDir};
use crate::util::hash::sha256_file;
use crate::util::layout::Layout;
use crate::util::lock::{Lock, Wait};

/// The plugin API header, as the source tree has it.
pub const HEADER: &str = "include/qemu/qemu-plugin.h";
/// QEMU's own cache-modelling plugin, the reference of the tests.
pub const REFERENCE: &str = "contrib/plugins/cache.c";

const MANIFEST: &str = "manifest.json";

/// The files kept from the installed QEMU's source package.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QemuSource {
    /// Source package name (`qemu`).
    pub package: String,
    /// Source package version (`1:7.2+dfsg-7+deb12u18`).
    pub version: String,
    /// The upstream tarball the files come from, and its sha256.
    pub orig_tarball: String,
    /// sha256 of the upstream tarball.
    pub orig_sha256: String,
    /// Directory holding `qemu-plugin.h` and `cache.c`.
    pub dir: PathBuf,
    /// sha256 of `qemu-plugin.h`.
    pub header_sha256: String,
    /// Debian patches checked for changes to the two files (none had any).
    pub debian_patches_checked: usize,
}

impl QemuSource {
    /// `qemu-plugin.h`.
    pub fn header(&self) -> PathBuf {
        self.dir.join("qemu-plugin.h")
    }

    /// QEMU's `contrib/plugins/cache.c`.
    pub fn reference(&self) -> PathBuf {
        self.dir.join("cache.c")
    }

    /// `qemu 1:7.2+dfsg-7+deb12u18`.
    pub fn describe(&self) -> String {
        format!("{} {}", self.package, self.version)
    }
}

/// The source package and version of installed binary package `binary`
/// (`qemu-system-mips` → `qemu`, `1:7.2+dfsg-7+deb12u18`).
pub fn installed_source(binary: &str) -> Result<(String, String)> {
    let out = Command::new("dpkg-query")
        .args(["--show", "--showformat=${source:Package} ${source:Version}"])
        .arg(binary)
        .output()
        .context("running dpkg-query")?;
    let text = String::from_utf8_lossy(&out.stdout);
    match text.split_whitespace().collect::<Vec<_>>()[..] {
        [package, version] if out.status.success() => Ok((package.to_string(), version.to_string())),
        _ => bail!(
            "dpkg-query does not know {binary}: the cache model needs the installed QEMU's Debian package ({})",
            String::from_utf8_lossy(&out.stderr).trim()
        ),
    }
}

/// The plugin header and `cache.c` of the source of installed package
/// `qemu_package`, from the cache or fetched now (see the module docs).
pub fn fetch(layout: &Layout, qemu_package: &str) -> Result<QemuSource> {
    let (package, version) = installed_source(qemu_package)?;
    let base = layout.work_dir().join("lab/cache-model/qemu-src");
    let dir = base.join(version.replace([':', '/'], "_"));
    // One lab fetches at a time (two labs at once shared the private apt
    // directory and replaced each other's result); the second finds it.
    let _lock = Lock::acquire(
        &layout.lab_cache_lock("qemu-src"),
        "the QEMU source of the cache model",
        Wait::Yes,
    )?;
    let limit = crate::util::fs::FileLimit {
        what: "QEMU source manifest",
        max_bytes: crate::util::fs::MAX_RECORD_BYTES,
    };
    if let Ok(text) = crate::util::fs::read_limited(&dir.join(MANIFEST), limit, "") {
        if let Ok(found) = serde_json::from_str::<QemuSource>(&text) {
            if found.version == version
                && found.reference().is_file()
                && sha256_file(&found.header()).ok().as_deref() == Some(&found.header_sha256)
            {
                return Ok(found);
            }
        }
    }
    eprintln!(
        "lab: fetching the plugin header of {package} {version} (Debian source package, once)"
    );
    std::fs::create_dir_all(&base).with_context(|| format!("creating {}", base.display()))?;
    remove_stale_staging(&base, ".fetch-")?;
    let apt = PrivateApt::new(&base.join("apt"), &host_arch()?, &source_lines(SUITE))?;
    apt.update("for QEMU's source")?;
    let stage = StagingDir::new(&base, ".fetch-")?;
    let download = stage.path().join("download");
    apt.source(&package, &version, &download)?;
    let orig = find_one(&download, ".orig.tar.")?;
    let debian = find_one(&download, ".debian.tar.")?;
    let out = stage.path().join("kept");
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    let unpacked = stage.path().join("tree");
    untar(&orig, &unpacked, &[HEADER, REFERENCE], &apt.dir)?;
    for (rel, name) in [(HEADER, "qemu-plugin.h"), (REFERENCE, "cache.c")] {
        let found = find_member(&unpacked, rel)?;
        std::fs::copy(&found, out.join(name))
            .with_context(|| format!("copying {}", found.display()))?;
    }
    untar(&debian, &unpacked, &["debian/patches"], &apt.dir)?;
    let checked = check_debian_patches(&unpacked.join("debian/patches"))?;
    let made = QemuSource {
        package,
        version,
        orig_tarball: file_name(&orig),
        orig_sha256: sha256_file(&orig)?,
        dir: dir.clone(),
        header_sha256: sha256_file(&out.join("qemu-plugin.h"))?,
        debian_patches_checked: checked,
    };
    write_atomic(
        &out.join(MANIFEST),
        serde_json::to_string_pretty(&made)?.as_bytes(),
    )?;
    if dir.exists() {
        std::fs::remove_dir_all(&dir).with_context(|| format!("removing {}", dir.display()))?;
    }
    std::fs::rename(&out, &dir)
        .with_context(|| format!("moving {} to {}", out.display(), dir.display()))?;
    Ok(made)
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The one file in `dir` whose name contains `part`.
fn find_one(dir: &Path, part: &str) -> Result<PathBuf> {
    let found: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| file_name(p).contains(part))
        .collect();
    match &found[..] {
        [one] => Ok(one.clone()),
        _ => bail!(
            "apt-get source left {} files named *{part}* in {}, expected one",
            found.len(),
            dir.display()
        ),
    }
}

/// Unpacks the members of `tarball` whose path ends with one of `tails`
/// (the upstream tarball has a `qemu-7.2.0/` prefix) into `into`.
fn untar(tarball: &Path, into: &Path, tails: &[&str], log_dir: &Path) -> Result<()> {
    std::fs::create_dir_all(into).with_context(|| format!("creating {}", into.display()))?;
    let mut tar = Command::new("tar");
    tar.arg("-xf")
        .arg(tarball)
        .arg("-C")
        .arg(into)
        .arg("--wildcards");
    for t in tails {
        // `debian/patches` sits at the top of the Debian tarball.
        if t.starts_with("debian/") {
            tar.arg(t);
        } else {
            tar.arg(format!("*/{t}"));
        }
    }
    run_appending_to_log(
        tar,
        &format!("tar -xf {}", tarball.display()),
        &log_dir.join("tar.log"),
        Duration::from_secs(300),
    )
}

/// The unpacked `rel` under `root`'s one top directory.
fn find_member(root: &Path, rel: &str) -> Result<PathBuf> {
    for top in std::fs::read_dir(root).with_context(|| format!("reading {}", root.display()))? {
        let candidate = top?.path().join(rel);
        if candidate.is_file() {
            return Ok(candidate);
        }
    }
    bail!("the QEMU source tarball has no {rel}")
}

/// Fails when a patch of `debian/patches/series` changes [`HEADER`] or
/// [`REFERENCE`]; returns how many patches it read.
pub fn check_debian_patches(patches: &Path) -> Result<usize> {
    let series = patches.join("series");
    let text = crate::util::fs::read_limited(
        &series,
        crate::util::fs::FileLimit::input("patch series"),
        "",
    )?;
    let mut checked = 0;
    for name in text
        .lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .filter(|l| !l.is_empty())
    {
        let name = name.split_whitespace().next().unwrap_or(name);
        let file = patches.join(name);
        let patch = crate::util::fs::read_bytes_limited(
            &file,
            crate::util::fs::FileLimit::input("patch"),
            "",
        )?;
        let patch = String::from_utf8_lossy(&patch);
        for line in patch.lines() {
            let touches = (line.starts_with("+++ ") || line.starts_with("--- "))
                && [HEADER, REFERENCE].iter().any(|f| line.contains(f));
            if touches {
                bail!(
                    "Debian's patch {name} changes {}: the cache model keeps the upstream file only, so it would not match the installed QEMU; apply the patch in xtask/src/lab/cache_model/source.rs",
                    line[4..].trim()
                );
            }
        }
        checked += 1;
    }
    Ok(checked)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_debian_patch_touching_the_header_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        std::fs::write(p.join("series"), "a.diff\n# comment\nb.patch -p1\n").unwrap();
        std::fs::write(
            p.join("a.diff"),
            "--- a/plugins/loader.c\n+++ b/plugins/loader.c\n",
        )
        .unwrap();
        std::fs::write(p.join("b.patch"), "--- a/x\n+++ b/x\n").unwrap();
        assert_eq!(check_debian_patches(p).unwrap(), 2);
        std::fs::write(
            p.join("b.patch"),
            "--- a/include/qemu/qemu-plugin.h\n+++ b/include/qemu/qemu-plugin.h\n",
        )
        .unwrap();
        let err = check_debian_patches(p).unwrap_err().to_string();
        assert!(
            err.contains("b.patch") && err.contains("qemu-plugin.h"),
            "{err}"
        );
    }
}
