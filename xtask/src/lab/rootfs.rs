//! The guest's initramfs: Debian packages of the guest architecture
//! (busybox-static, nftables with its libraries, ethtool), fetched with a
//! private apt configuration and unpacked with `dpkg-deb -x`, plus the
//! lab's `/init` ([`super::guest`]).
//!
//! The private configuration (sources list, lists, dpkg status, cache
//! under `target/xtask/lab/apt/<arch>/`) sets `APT::Architecture`, so the
//! host's dpkg architectures and apt state are never touched. The archive
//! is cached as `target/xtask/lab/initramfs/<arch>-<key>.cpio`, where the
//! key is the sha256 of everything that goes in: architecture, suite,
//! package names, the init script and ruleset. A cached archive is reused
//! without network access; its manifest lists the packages' versions and
//! sha256s.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use sha2::{Digest, Sha256};

use super::process::run_logged;
use super::{cpio, guest};
pub use crate::results::lab::{DebRecord, Initramfs};
use crate::util::fs::write_atomic;
use crate::util::hash::sha256_file;
use crate::util::layout::Layout;

/// The Debian packages the guest runs (their dependencies come along).
pub const GUEST_PACKAGES: &[&str] = &["busybox-static", "nftables", "ethtool"];

/// The Debian release the guest's packages come from.
pub const SUITE: &str = "bookworm";

/// The Debian archive; the lab's network reaches only Debian's mirrors.
pub const MIRROR: &str = "http://deb.debian.org/debian";

/// Files in the packages the guest never reads, left out of the archive.
const PRUNE: &[&str] = &[
    "usr/share/doc",
    "usr/share/man",
    "usr/share/info",
    "usr/share/locale",
    "usr/share/lintian",
    "usr/share/bug",
    "usr/share/zsh",
    "usr/share/bash-completion",
];

/// Longest an `apt-get` step may take (downloads included).
const APT_TIMEOUT: Duration = Duration::from_secs(600);

/// The cache key of an initramfs for `arch`: sha256 over every input.
pub fn cache_key(arch: &str) -> String {
    let mut h = Sha256::new();
    for part in [
        "xtask-lab-initramfs-2",
        arch,
        SUITE,
        MIRROR,
        &GUEST_PACKAGES.join(" "),
        &guest::init_script(),
        &guest::ruleset(),
        &guest::sample_script(),
    ] {
        h.update(part.as_bytes());
        h.update([0]);
    }
    hex::encode(h.finalize())
}

/// Fails when the lab cannot make a userspace for `arch` (`none`: Debian
/// has no packages for the guest), before any kernel is built.
pub fn check_arch(arch: &str) -> Result<()> {
    if arch == "none" {
        bail!(
            "Debian 12 has no packages for this guest (big-endian MIPS); its userspace \
             would be a static init built with the cross compiler, which the lab does not have yet"
        );
    }
    Ok(())
}

/// The initramfs for Debian architecture `arch`, from the cache or made now.
pub fn prepare(layout: &Layout, arch: &str) -> Result<Initramfs> {
    check_arch(arch)?;
    let lab_dir = layout.work_dir().join("lab");
    let key = cache_key(arch);
    let out_dir = lab_dir.join("initramfs");
    let archive = out_dir.join(format!("{arch}-{}.cpio", &key[..16]));
    let manifest = archive.with_extension("json");
    if let Ok(text) = std::fs::read_to_string(&manifest) {
        if let Ok(found) = serde_json::from_str::<Initramfs>(&text) {
            if archive.is_file() && sha256_file(&archive)? == found.sha256 {
                return Ok(found);
            }
        }
    }
    eprintln!("lab: making the {arch} initramfs from Debian packages (once)");
    let apt = PrivateApt::new(&lab_dir.join("apt").join(arch), arch)?;
    let debs = apt.download(GUEST_PACKAGES)?;
    let stage = tempfile::Builder::new()
        .prefix(".stage-")
        .tempdir_in(&lab_dir)
        .with_context(|| format!("creating a staging directory in {}", lab_dir.display()))?;
    let mut packages = Vec::new();
    for deb in &debs {
        let mut cmd = Command::new("dpkg-deb");
        cmd.arg("-x").arg(deb).arg(stage.path());
        let log = apt.dir.join("dpkg-deb.log");
        run_logged(
            cmd,
            &format!("dpkg-deb -x {}", deb.display()),
            &log,
            Duration::from_secs(120),
        )?;
        packages.push(DebRecord {
            file: deb
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            sha256: sha256_file(deb)?,
        });
    }
    // glibc's iconv modules (20 MB); nothing in the guest converts charsets.
    let mut prune: Vec<PathBuf> = PRUNE.iter().map(|p| stage.path().join(p)).collect();
    if let Ok(dirs) = std::fs::read_dir(stage.path().join("usr/lib")) {
        prune.extend(dirs.filter_map(|d| d.ok()).map(|d| d.path().join("gconv")));
    }
    for path in prune {
        if path.exists() {
            std::fs::remove_dir_all(&path)
                .with_context(|| format!("removing {}", path.display()))?;
        }
    }
    guest::install(stage.path())?;
    let mut writer = cpio::Writer::new(Vec::new());
    writer.tree(stage.path())?;
    if !stage.path().join("dev").exists() {
        writer.dir("dev", 0o755)?;
    }
    writer.char_device("dev/console", 0o600, 5, 1)?;
    let bytes = writer.finish()?;
    write_atomic(&archive, &bytes)?;
    let made = Initramfs {
        sha256: sha256_file(&archive)?,
        size: bytes.len() as u64,
        path: archive,
        arch: arch.to_string(),
        packages,
    };
    write_atomic(&manifest, serde_json::to_string_pretty(&made)?.as_bytes())?;
    Ok(made)
}

/// apt-get with its own configuration, state and cache in `dir`.
struct PrivateApt {
    dir: PathBuf,
    arch: String,
}

impl PrivateApt {
    fn new(dir: &Path, arch: &str) -> Result<PrivateApt> {
        for sub in [
            "lists/partial",
            "cache/archives/partial",
            "sources.list.d",
            "parts",
        ] {
            let d = dir.join(sub);
            std::fs::create_dir_all(&d).with_context(|| format!("creating {}", d.display()))?;
        }
        let sources = format!(
            "deb [arch={arch} signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] {MIRROR} {SUITE} main\n"
        );
        std::fs::write(dir.join("sources.list"), sources)
            .with_context(|| format!("writing {}", dir.join("sources.list").display()))?;
        let status = dir.join("status");
        if !status.exists() {
            std::fs::write(&status, "").with_context(|| format!("writing {}", status.display()))?;
        }
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

    /// Downloads `packages` and their dependencies; returns the `.deb`
    /// files, sorted.
    fn download(&self, packages: &[&str]) -> Result<Vec<PathBuf>> {
        std::fs::write(self.dir.join("apt.conf"), "")
            .with_context(|| format!("writing {}", self.dir.join("apt.conf").display()))?;
        let mut update = self.apt_get();
        update.arg("update");
        let log = self.dir.join("apt-update.log");
        run_logged(
            update,
            "apt-get update (private, for the guest)",
            &log,
            APT_TIMEOUT,
        )
        .context("fetching Debian's package lists for the guest; the lab needs deb.debian.org")?;
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
        run_logged(
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
}
