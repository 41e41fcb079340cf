//! `apt-get` with a private configuration: its own sources list, package
//! lists, dpkg status and cache in one directory, so the host's apt
//! sources, state and dpkg architectures are never touched.
//!
//! The guest's initramfs ([`super::rootfs`]) downloads binary packages of
//! the guest architecture with it; the cache model
//! ([`super::cache_model`]) downloads the installed QEMU's source package
//! (`apt-get source --download-only`, which needs `deb-src` lines: the
//! host's sources list may have none); a static guest
//! ([`super::static_guest`]) downloads the source packages it builds.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{bail, Context, Result};

use super::process::run_appending_to_log;

/// The Debian release the guest's packages come from.
pub const SUITE: &str = "bookworm";

/// The Debian archive; the lab's network reaches only Debian's mirrors.
pub const MIRROR: &str = "http://deb.debian.org/debian";

/// Debian's security archive (`<suite>-security`).
pub const SECURITY_MIRROR: &str = "http://deb.debian.org/debian-security";

/// The keyring that signs Debian's archives (package `debian-archive-keyring`).
pub const KEYRING: &str = "/usr/share/keyrings/debian-archive-keyring.gpg";

/// Longest an `apt-get` step may take (downloads included).
const APT_TIMEOUT: Duration = Duration::from_secs(600);

/// apt-get with its own configuration, state and cache in `dir`.
pub struct PrivateApt {
    /// The directory holding everything apt reads and writes.
    pub dir: PathBuf,
    arch: String,
}

impl PrivateApt {
    /// A private apt in `dir` for Debian architecture `arch`, whose
    /// sources list is `sources` (one `deb …` or `deb-src …` line each).
    pub fn new(dir: &Path, arch: &str, sources: &[String]) -> Result<PrivateApt> {
        for sub in [
            "lists/partial",
            "cache/archives/partial",
            "sources.list.d",
            "parts",
        ] {
            let d = dir.join(sub);
            std::fs::create_dir_all(&d).with_context(|| format!("creating {}", d.display()))?;
        }
        let mut list = sources.join("\n");
        list.push('\n');
        std::fs::write(dir.join("sources.list"), list)
            .with_context(|| format!("writing {}", dir.join("sources.list").display()))?;
        let status = dir.join("status");
        if !status.exists() {
            std::fs::write(&status, "").with_context(|| format!("writing {}", status.display()))?;
        }
        // APT_CONFIG names this empty file, so /etc/apt/apt.conf is not read.
        std::fs::write(dir.join("apt.conf"), "")
            .with_context(|| format!("writing {}", dir.join("apt.conf").display()))?;
        Ok(PrivateApt {
            dir: dir.to_path_buf(),
            arch: arch.to_string(),
        })
    }

    /// `apt-get` with every directory redirected into `self.dir`.
    fn apt_get(&self) -> Command {
        let d = |sub: &str| self.dir.join(sub).display().to_string();
        let mut cmd = Command::new("apt-get");
        // APT_CONFIG names an empty file, so /etc/apt/apt.conf is not read;
        // Dir::Etc::Parts below keeps apt.conf.d out too.
        cmd.env("APT_CONFIG", d("apt.conf"));
        for (k, v) in [
            ("APT::Architecture", self.arch.clone()),
            ("APT::Architectures", self.arch.clone()),
            ("Dir::Etc::Parts", d("parts")),
            ("Dir::Etc::SourceList", d("sources.list")),
            ("Dir::Etc::SourceParts", d("sources.list.d")),
            ("Dir::Etc::Preferences", d("preferences")),
            ("Dir::Etc::PreferencesParts", d("parts")),
            ("Dir::State", d("")),
            ("Dir::State::Lists", d("lists")),
            ("Dir::State::status", d("status")),
            ("Dir::Cache", d("cache")),
            ("Dir::Cache::archives", d("cache/archives")),
            ("Debug::NoLocking", "true".to_string()),
            ("APT::Install-Recommends", "false".to_string()),
            ("APT::Sandbox::User", "root".to_string()),
        ] {
            cmd.arg("-o").arg(format!("{k}={v}"));
        }
        cmd.env("DEBIAN_FRONTEND", "noninteractive");
        cmd
    }

    /// `apt-get update` of the private lists; `why` says what for.
    pub fn update(&self, why: &str) -> Result<()> {
        let mut update = self.apt_get();
        update.arg("update");
        let log = self.dir.join("apt-update.log");
        run_appending_to_log(
            update,
            &format!("apt-get update (private, {why})"),
            &log,
            APT_TIMEOUT,
        )
        .with_context(|| {
            format!("fetching Debian's package lists {why}; the lab needs deb.debian.org")
        })
    }

    /// Downloads `packages` and their dependencies; returns the `.deb`
    /// files, sorted. Call [`PrivateApt::update`] first.
    pub fn download(&self, packages: &[&str]) -> Result<Vec<PathBuf>> {
        // Only this download's packages go in: older versions leave first.
        let archives = self.dir.join("cache/archives");
        for old in std::fs::read_dir(&archives)
            .with_context(|| format!("reading {}", archives.display()))?
        {
            let old = old?.path();
            if old.extension().is_some_and(|e| e == "deb") {
                std::fs::remove_file(&old)
                    .with_context(|| format!("removing {}", old.display()))?;
            }
        }
        let log = self.dir.join("apt-install.log");
        let mut install = self.apt_get();
        install
            .args(["install", "--download-only", "--yes"])
            .args(packages);
        run_appending_to_log(
            install,
            "apt-get install --download-only (private, for the guest)",
            &log,
            APT_TIMEOUT,
        )?;
        let mut debs: Vec<PathBuf> = std::fs::read_dir(&archives)
            .with_context(|| format!("reading {}", archives.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "deb"))
            .collect();
        debs.sort();
        for wanted in packages {
            if !debs.iter().any(|d| {
                d.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with(&format!("{wanted}_")))
            }) {
                bail!(
                    "apt did not download {wanted} for {} (see {})",
                    self.arch,
                    log.display()
                );
            }
        }
        Ok(debs)
    }

    /// `apt-get source --download-only PACKAGE=VERSION` into `into` (the
    /// `.dsc` and its tarballs, checked against the signed lists' sums).
    /// Call [`PrivateApt::update`] first, with `deb-src` lines.
    pub fn source(&self, package: &str, version: &str, into: &Path) -> Result<()> {
        self.source_of(&format!("{package}={version}"), into)
    }

    /// `apt-get source --download-only PACKAGE` into `into`: the version
    /// the sources list's suites hold (the highest of them).
    pub fn source_candidate(&self, package: &str, into: &Path) -> Result<()> {
        self.source_of(package, into)
    }

    /// `apt-get source --print-uris PACKAGE`'s output: the candidate
    /// version's files with their URIs and sha256 (see
    /// [`super::static_guest::sources::parse_print_uris`]), downloading
    /// nothing. Call [`PrivateApt::update`] first, with `deb-src` lines.
    pub fn source_uris(&self, package: &str) -> Result<String> {
        let log = self.dir.join("apt-print-uris.log");
        if log.exists() {
            std::fs::remove_file(&log).with_context(|| format!("removing {}", log.display()))?;
        }
        let mut uris = self.apt_get();
        uris.args(["source", "--print-uris", "--yes"]).arg(package);
        run_appending_to_log(
            uris,
            &format!("apt-get source --print-uris {package} (private)"),
            &log,
            APT_TIMEOUT,
        )?;
        crate::util::fs::read_limited(&log, crate::util::fs::FileLimit::log("apt log"), "")
    }

    fn source_of(&self, wanted: &str, into: &Path) -> Result<()> {
        std::fs::create_dir_all(into).with_context(|| format!("creating {}", into.display()))?;
        let log = self.dir.join("apt-source.log");
        let mut source = self.apt_get();
        source
            .current_dir(into)
            .args(["source", "--download-only", "--yes"])
            .arg(wanted);
        run_appending_to_log(
            source,
            &format!("apt-get source --download-only {wanted} (private)"),
            &log,
            APT_TIMEOUT,
        )
    }
}

/// This machine's Debian architecture (`dpkg --print-architecture`).
pub fn host_arch() -> Result<String> {
    let out = Command::new("dpkg")
        .arg("--print-architecture")
        .output()
        .context("running dpkg --print-architecture")?;
    let arch = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if !out.status.success() || arch.is_empty() {
        bail!("dpkg --print-architecture failed");
    }
    Ok(arch)
}

/// The `deb-src` lines of Debian `suite` (main, its updates and security
/// suites): where a point release's or a security update's source lives.
pub fn source_lines(suite: &str) -> Vec<String> {
    [
        (MIRROR, suite.to_string()),
        (MIRROR, format!("{suite}-updates")),
        (SECURITY_MIRROR, format!("{suite}-security")),
    ]
    .into_iter()
    .map(|(mirror, s)| format!("deb-src [signed-by={KEYRING}] {mirror} {s} main"))
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn source_lines_cover_point_releases_and_security_updates() {
        let lines = source_lines("bookworm");
        assert_eq!(lines.len(), 3);
        assert!(lines.iter().all(|l| l.starts_with("deb-src [signed-by=")));
        assert!(
            lines[2].ends_with("debian-security bookworm-security main"),
            "{lines:?}"
        );
    }
}
