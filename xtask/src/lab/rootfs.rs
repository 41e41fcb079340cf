//! The guest's initramfs: Debian packages of the guest architecture
//! (busybox-static, nftables with its libraries, ethtool; batctl for the
//! mesh's batman-adv and dbench for tbench, with its loadfile
//! `/usr/share/dbench/client.txt`), fetched with a
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
//!
//! Each guest boots that archive with its own network setup appended as a
//! second `newc` archive ([`with_setup`]; the kernel unpacks concatenated
//! archives in order, Documentation/driver-api/early-userspace/
//! buffer-format.rst), so that a new topology never rebuilds the guest's
//! programs.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result};
use sha2::{Digest, Sha256};

use super::apt::{PrivateApt, KEYRING};
pub use super::apt::{MIRROR, SUITE};
pub use super::cpio::pack;
use super::process::run_appending_to_log;
use super::{cpio, guest, static_guest};
use crate::inputs::lab::LabSpec;
pub use crate::results::lab::{DebRecord, Initramfs};
use crate::util::fs::write_atomic;
use crate::util::hash::sha256_file;
use crate::util::layout::Layout;
use crate::util::lock::{Lock, Wait};

/// The Debian packages the guest runs (their dependencies come along):
/// the router's (busybox, nftables, ethtool), batman-adv's `batctl`, and
/// `dbench` for `tbench`/`tbench_srv` and the loadfile tbench reads.
pub const GUEST_PACKAGES: &[&str] = &["busybox-static", "nftables", "ethtool", "batctl", "dbench"];

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
    match &spec.static_guest {
        Some(g) => static_guest::prepare(layout, &spec.guest_arch, g),
        None => prepare_debian(layout, &spec.guest_arch),
    }
}

/// The initramfs of Debian's binary packages for `arch`.
fn prepare_debian(layout: &Layout, arch: &str) -> Result<Initramfs> {
    let lab_dir = layout.work_dir().join("lab");
    let key = cache_key(arch);
    let out_dir = lab_dir.join("initramfs");
    let archive = out_dir.join(format!("{arch}-{}.cpio", &key[..16]));
    let manifest = archive.with_extension("json");
    let limit = crate::util::fs::FileLimit {
        what: "initramfs manifest",
        max_bytes: crate::util::fs::MAX_RECORD_BYTES,
    };
    let cached = || -> Result<Option<Initramfs>> {
        if let Ok(text) = crate::util::fs::read_limited(&manifest, limit, "") {
            if let Ok(found) = serde_json::from_str::<Initramfs>(&text) {
                if archive.is_file() && sha256_file(&archive)? == found.sha256 {
                    return Ok(Some(found));
                }
            }
        }
        Ok(None)
    };
    if let Some(found) = cached()? {
        return Ok(found);
    }
    // One lab makes it at a time (two labs in one workspace shared the
    // private apt directory and its downloads); the second finds it made.
    let _lock = Lock::acquire(
        &layout.lab_cache_lock(&format!("initramfs-{arch}")),
        &format!("the {arch} initramfs"),
        Wait::Yes,
    )?;
    if let Some(found) = cached()? {
        return Ok(found);
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
        run_appending_to_log(
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
    let size = pack(stage.path(), &archive)?;
    let made = Initramfs {
        sha256: sha256_file(&archive)?,
        size,
        path: archive,
        arch: arch.to_string(),
        packages,
        built: Vec::new(),
        toolchain: Vec::new(),
        ruleset: None,
    };
    write_atomic(&manifest, serde_json::to_string_pretty(&made)?.as_bytes())?;
    Ok(made)
}

/// The initramfs `base` with a guest's overlay `files` (path under `/`
/// without the leading `/`, text; [`guest::overlay`]: its generated network
/// setup as [`guest::NET_SETUP`], its ruleset if not the shared one) for
/// QEMU's `-initrd`: `base`'s bytes followed by a small archive of those
/// files under `etc/`. Cached next to `base` as `<base>-net-<key>.cpio`,
/// the key the sha256 of `base`'s sha256 and the files, written
/// atomically once. Errors: a path outside `etc/`.
pub fn with_setup(base: &Initramfs, files: &[(String, String)]) -> Result<PathBuf> {
    let mut h = Sha256::new();
    h.update(base.sha256.as_bytes());
    for (path, text) in files {
        anyhow::ensure!(
            path.strip_prefix("etc/")
                .is_some_and(|f| !f.is_empty() && !f.contains('/')),
            "a guest's overlay holds files in /etc only, not {path:?}"
        );
        h.update([0]);
        h.update(path.as_bytes());
        h.update([0]);
        h.update(text.as_bytes());
    }
    let key = hex::encode(h.finalize());
    let stem = base
        .path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let path = base
        .path
        .with_file_name(format!("{stem}-net-{}.cpio", &key[..16]));
    let mut overlay = cpio::Writer::new(Vec::new());
    overlay.dir("etc", 0o755)?;
    for (path, text) in files {
        overlay.file(path, 0o644, text.as_bytes())?;
    }
    let overlay = overlay.finish()?;
    let size = std::fs::metadata(&path).map(|m| m.len()).ok();
    if size != Some(base.size + overlay.len() as u64) {
        let mut bytes = crate::util::fs::read_bytes_limited(
            &base.path,
            crate::util::fs::FileLimit::binary("initramfs"),
            "",
        )?;
        anyhow::ensure!(
            bytes.len() as u64 == base.size && bytes.len() % 4 == 0,
            "{}: {} bytes, but its manifest says {}",
            base.path.display(),
            bytes.len(),
            base.size
        );
        bytes.extend_from_slice(&overlay);
        write_atomic(&path, &bytes)?;
    }
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_guest_s_setup_follows_the_base_archive() {
        let dir = tempfile::tempdir().unwrap();
        let base_path = dir.path().join("mipsel-0123.cpio");
        let mut w = cpio::Writer::new(Vec::new());
        w.file("init", 0o755, b"#!/bin/sh\n").unwrap();
        let bytes = w.finish().unwrap();
        std::fs::write(&base_path, &bytes).unwrap();
        let base = Initramfs {
            sha256: sha256_file(&base_path).unwrap(),
            size: bytes.len() as u64,
            path: base_path,
            arch: "mipsel".into(),
            packages: Vec::new(),
            built: Vec::new(),
            toolchain: Vec::new(),
            ruleset: None,
        };
        let setup = |text: &str| vec![("etc/xl-net.sh".to_string(), text.to_string())];
        let a = with_setup(&base, &setup("xl_nic lan 52:54:00:12:34:01\n")).unwrap();
        let joined = std::fs::read(&a).unwrap();
        assert!(joined.starts_with(&bytes));
        let tail = String::from_utf8_lossy(&joined[bytes.len()..]).into_owned();
        assert!(tail.starts_with("070701"), "{tail}");
        assert!(tail.contains("etc/xl-net.sh\0"), "{tail}");
        assert!(tail.contains("xl_nic lan 52:54:00:12:34:01\n"), "{tail}");
        assert_eq!(
            with_setup(&base, &setup("xl_nic lan 52:54:00:12:34:01\n")).unwrap(),
            a
        );
        assert_ne!(with_setup(&base, &setup("other")).unwrap(), a);
        let mut two = setup("xl_nic lan 52:54:00:12:34:01\n");
        two.push(("etc/xl-fw4.nft".into(), "table inet fw4\n".into()));
        let b = with_setup(&base, &two).unwrap();
        assert_ne!(b, a);
        let tail = String::from_utf8_lossy(&std::fs::read(&b).unwrap()[bytes.len()..]).into_owned();
        assert!(tail.contains("etc/xl-fw4.nft\0"), "{tail}");
        assert!(tail.contains("table inet fw4\n"), "{tail}");
        let outside = vec![("init".to_string(), String::new())];
        assert!(with_setup(&base, &outside).is_err());
    }
}
