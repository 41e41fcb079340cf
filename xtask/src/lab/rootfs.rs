//! The guest's initramfs: Debian packages of the guest architecture
//! (busybox-static, nftables with its libraries, ethtool), fetched with a
//! private apt configuration and unpacked with `dpkg-deb -x`, plus the
//! lab's `/init` ([`super::guest`]). A guest architecture Debian has no
//! port of gets the same programs built static from Debian's sources
//! instead ([`super::static_guest`], `[lab.static_guest]`).
//!
//! The private configuration ([`super::apt`]: sources list, lists, dpkg
//! status, cache under `target/xtask/lab/apt/<arch>/`) sets `APT::Architecture`, so the
//! host's dpkg architectures and apt state are never touched. The archive
//! is cached as `target/xtask/lab/initramfs/<arch>-<key>.cpio`, where the
//! key is the sha256 of everything that goes in: architecture, suite,
//! package names, the init script and ruleset. A cached archive is reused
//! without network access; its manifest lists the packages' versions and
//! sha256s.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result};
use sha2::{Digest, Sha256};

pub use super::apt::MIRROR;
use super::apt::{PrivateApt, KEYRING};
use super::firewall4::Ruleset;
use super::process::run_logged;
use super::{cpio, guest, static_guest, LabSpec};
pub use crate::results::lab::{DebRecord, Initramfs};
use crate::util::fs::write_atomic;
use crate::util::hash::sha256_file;
use crate::util::layout::Layout;

/// The Debian packages the guest runs (their dependencies come along).
pub const GUEST_PACKAGES: &[&str] = &["busybox-static", "nftables", "ethtool"];

/// The Debian release the guest's packages come from.
pub const SUITE: &str = "bookworm";

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

/// The cache key of an initramfs for `arch` with the lab's ruleset:
/// sha256 over every input.
pub fn cache_key(arch: &str) -> String {
    cache_key_with(arch, Ruleset::Lab)
}

/// [`cache_key`] with `ruleset`.
pub fn cache_key_with(arch: &str, ruleset: Ruleset) -> String {
    let mut h = Sha256::new();
    for part in [
        "xtask-lab-initramfs-2",
        arch,
        SUITE,
        MIRROR,
        &GUEST_PACKAGES.join(" "),
        &guest::init_script(),
        &ruleset.text(),
        &guest::sample_script(),
    ] {
        h.update(part.as_bytes());
        h.update([0]);
    }
    hex::encode(h.finalize())
}

/// Fails when the lab cannot make `spec`'s userspace, before any kernel is
/// built: a static guest needs its cross compiler and build tools.
pub fn check(spec: &LabSpec) -> Result<()> {
    match &spec.static_guest {
        Some(g) => static_guest::check_tools(g),
        None => Ok(()),
    }
}

/// The initramfs of `spec`'s guest, from the cache or made now: Debian's
/// binary packages of `guest_arch`, or with `[lab.static_guest]` the same
/// programs built from Debian's sources ([`static_guest`]).
pub fn prepare(layout: &Layout, spec: &LabSpec) -> Result<Initramfs> {
    prepare_with(layout, spec, Ruleset::Lab)
}

/// [`prepare`] with `ruleset` as the guest's masquerade where the guest can
/// load it: a static guest's loader knows only the lab's
/// ([`Ruleset::for_guest`]), which it then keeps, saying so.
pub fn prepare_with(layout: &Layout, spec: &LabSpec, ruleset: Ruleset) -> Result<Initramfs> {
    let loaded = ruleset.for_guest(spec.static_guest.is_some());
    if loaded != ruleset {
        eprintln!(
            "lab: {}'s guest is built static with the lab's loader of its own ruleset (lab/static-guest/nft.c): it loads {}, not {}",
            spec.guest_arch,
            loaded.describe(),
            ruleset.describe()
        );
    }
    let mut made = match &spec.static_guest {
        Some(g) => static_guest::prepare(layout, &spec.guest_arch, g)?,
        None => prepare_debian(layout, &spec.guest_arch, loaded)?,
    };
    made.ruleset = Some(loaded.describe().to_string());
    Ok(made)
}

/// The initramfs of Debian's binary packages for `arch`.
fn prepare_debian(layout: &Layout, arch: &str, ruleset: Ruleset) -> Result<Initramfs> {
    let lab_dir = layout.work_dir().join("lab");
    let key = cache_key_with(arch, ruleset);
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
    let sources = [format!(
        "deb [arch={arch} signed-by={KEYRING}] {MIRROR} {SUITE} main"
    )];
    let apt = PrivateApt::new(&lab_dir.join("apt").join(arch), arch, &sources)?;
    apt.update("for the guest")?;
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
    guest::install_with(stage.path(), &ruleset.text())?;
    let size = pack(stage.path(), &archive)?;
    let made = Initramfs {
        sha256: sha256_file(&archive)?,
        size,
        path: archive,
        arch: arch.to_string(),
        packages,
        built: Vec::new(),
        toolchain: Vec::new(),
        ruleset: Some(ruleset.describe().to_string()),
    };
    write_atomic(&manifest, serde_json::to_string_pretty(&made)?.as_bytes())?;
    Ok(made)
}

/// Writes the tree `root` and `/dev/console` (the kernel opens it before
/// `/init` runs) as a `newc` archive to `archive`; returns its size in
/// bytes.
pub fn pack(root: &Path, archive: &Path) -> Result<u64> {
    let mut writer = cpio::Writer::new(Vec::new());
    writer.tree(root)?;
    if !root.join("dev").exists() {
        writer.dir("dev", 0o755)?;
    }
    writer.char_device("dev/console", 0o600, 5, 1)?;
    let bytes = writer.finish()?;
    write_atomic(archive, &bytes)?;
    Ok(bytes.len() as u64)
}
