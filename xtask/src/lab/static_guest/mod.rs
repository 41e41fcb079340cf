//! The guest userspace of an architecture Debian 12 has no port of
//! (big-endian MIPS, `[lab.static_guest]` in a target's `[lab]` table):
//! the Debian guests' programs built static with Debian's cross compiler.
//!
//! * busybox and ethtool from Debian's source packages of the suite the
//!   other guests' binary packages come from ([`sources`]: `apt-get source
//!   --download-only` with a private `deb-src` configuration), Debian's
//!   patches applied; busybox with Debian's own `busybox-static`
//!   configuration ([`build`]).
//! * `tbench`, `tbench_srv` and tbench's loadfile from dbench's upstream
//!   tarball, checked against Debian's `.dsc` (the mirror serves no
//!   `dbench_4.0-2.1.debian.tar.xz`, so Debian's changes are left out),
//!   linked with popt from Debian's source, built static.
//! * `nft`: the lab's loader of its router ruleset
//!   (`lab/static-guest/nft.c`), which sends the netlink batch nftables
//!   1.0.6 sends for [`guest::ruleset`] and loads nothing else. Building
//!   nftables itself would take libmnl, libnftnl and nftables' sources;
//!   the kernel's nf_tables masquerades the same way whichever program
//!   loaded the rules (the tests compare the kernel's listings).
//! * `batctl`: the lab's read-only batctl (`lab/static-guest/batctl.c`:
//!   `-v`, routing algorithms, hard interfaces, originators, neighbors
//!   over batman-adv's generic netlink). The mirror serves none of
//!   batctl's source files (bookworm's 2023.0, bookworm-backports' and
//!   trixie's 2025.0: 404), so Debian's batctl cannot be built here; the
//!   mesh itself is made with busybox's `ip link` (rtnetlink).
//!
//! The guest protocol is the Debian guests' ([`guest`]: the same `/init`,
//! ruleset and sampling script at the same paths), so the console, the
//! sampling and the runs are shared.
//!
//! Every binary is checked to be a static ELF of the guest's architecture
//! ([`elf`]). The archive is cached as
//! `target/xtask/lab/initramfs/<arch>-static-<key>.cpio`, the key the
//! sha256 of every input: the sources' files, the cross compiler's version
//! and its packages' versions, the build arguments, `nft.c` and the guest's
//! scripts. Its manifest (`.json` beside it) records what was built from
//! which source package and how. Build logs stay in
//! `target/xtask/lab/static-guest/logs/`.

pub mod build;
pub mod elf;
pub mod sources;

use std::process::Command;

use anyhow::{bail, Context, Result};
use sha2::{Digest, Sha256};

use super::apt::SUITE;
use super::cpio;
use super::guest;
use crate::inputs::lab::StaticGuestSpec;
use crate::results::lab::BuiltProgram;
use crate::results::lab::Initramfs;
use crate::util::fs::{remove_stale_staging, write_atomic, StagingDir};
use crate::util::hash::sha256_file;
use crate::util::layout::Layout;
use crate::util::lock::{Lock, Wait};

/// Debian source packages built for the guest, in build order, and what
/// of each: dbench's Debian changes are not on the lab's mirror.
pub const SOURCE_PACKAGES: &[(&str, sources::Parts)] = &[
    ("busybox", sources::Parts::Debian),
    ("ethtool", sources::Parts::Debian),
    ("popt", sources::Parts::Debian),
    ("dbench", sources::Parts::Upstream),
];

/// Host programs the build runs besides the cross compiler's, with their
/// Debian packages.
pub const BUILD_TOOLS: &[(&str, &str)] = &[
    ("make", "make"),
    ("dpkg-source", "dpkg-dev"),
    ("autoconf", "autoconf"),
    ("autoheader", "autoconf"),
    ("tar", "tar"),
    ("xz", "xz-utils"),
    ("bzip2", "bzip2"),
    ("nice", "coreutils"),
];

/// Debian packages the static guest's build needs on the host.
pub fn host_packages(spec: &StaticGuestSpec) -> Vec<String> {
    let mut p: Vec<String> = BUILD_TOOLS.iter().map(|(_, p)| p.to_string()).collect();
    p.extend(spec.packages.iter().cloned());
    p
}

/// Fails naming what the build lacks: a host tool, the cross compiler or
/// its static C library.
pub fn check_tools(spec: &StaticGuestSpec) -> Result<()> {
    let gcc = format!("{}gcc", spec.cross_compile);
    let strip = format!("{}strip", spec.cross_compile);
    let packages = spec.packages.join(" ");
    let mut tools: Vec<(&str, &str)> = BUILD_TOOLS.to_vec();
    tools.push((&gcc, &packages));
    tools.push((&strip, &packages));
    super::host_tools::require_tools("the static guest's build", &tools)?;
    let out = Command::new(&gcc)
        .arg("-print-file-name=libc.a")
        .output()
        .with_context(|| format!("running {gcc}"))?;
    let libc = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if !out.status.success() || !std::path::Path::new(&libc).is_absolute() {
        bail!(
            "{gcc} has no static C library (libc.a): run `apt-get install {packages}` (or `cargo xtask setup`)"
        );
    }
    Ok(())
}

/// What identifies the toolchain: `<gcc> --version`'s first line, its
/// target, and the installed versions of `spec.packages` (`dpkg-query`).
pub fn toolchain(spec: &StaticGuestSpec) -> Result<Vec<String>> {
    let gcc = format!("{}gcc", spec.cross_compile);
    let mut parts = Vec::new();
    for arg in ["--version", "-dumpmachine"] {
        let out = Command::new(&gcc)
            .arg(arg)
            .output()
            .with_context(|| format!("running {gcc} {arg}"))?;
        if !out.status.success() {
            bail!("{gcc} {arg} failed");
        }
        let text = String::from_utf8_lossy(&out.stdout);
        parts.push(text.lines().next().unwrap_or_default().to_string());
    }
    let out = Command::new("dpkg-query")
        .args(["--show", "--showformat=${Package} ${Version}\\n"])
        .args(&spec.packages)
        .output()
        .context("running dpkg-query")?;
    if !out.status.success() {
        bail!(
            "dpkg-query does not know {}: install them (`cargo xtask setup`)",
            spec.packages.join(" ")
        );
    }
    parts.extend(
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_string),
    );
    Ok(parts)
}

/// The cache key: sha256 over every input of the build.
pub fn cache_key(
    arch: &str,
    spec: &StaticGuestSpec,
    sources: &[sources::SourcePackage],
    toolchain: &[String],
) -> String {
    let mut h = Sha256::new();
    let mut part = |s: &str| {
        h.update(s.as_bytes());
        h.update([0]);
    };
    part("xtask-lab-static-guest-2");
    part(arch);
    part(&spec.cross_compile);
    toolchain.iter().for_each(|t| part(t));
    for s in sources {
        for f in &s.files {
            part(&f.file);
            part(&f.sha256);
        }
    }
    for args in [
        build::BUSYBOX_MAKE,
        build::ETHTOOL_CONFIGURE,
        build::NFT_CFLAGS,
        build::POPT_CONFIGURE,
        build::DBENCH_MAKE,
    ] {
        part(&args.join(" "));
    }
    part(build::NFT_SOURCE);
    part(build::BATCTL_SOURCE);
    part(&guest::init_script());
    part(&guest::ruleset());
    part(&guest::sample_script());
    hex::encode(h.finalize())
}

/// The static guest's initramfs for Debian architecture `arch`, from the
/// cache or built now (see the module docs).
pub fn prepare(layout: &Layout, arch: &str, spec: &StaticGuestSpec) -> Result<Initramfs> {
    check_tools(spec)?;
    let lab_dir = layout.work_dir().join("lab");
    let base = lab_dir.join("static-guest");
    // One lab fetches and builds at a time, whatever its architecture (the
    // fetch shares one private apt directory); the second finds the
    // initramfs made.
    let _lock = Lock::acquire(
        &layout.lab_cache_lock("static-guest"),
        "the static guests' sources and builds",
        Wait::Yes,
    )?;
    let sources = sources::fetch(&base, SUITE, SOURCE_PACKAGES)?;
    let toolchain = toolchain(spec)?;
    let key = cache_key(arch, spec, &sources, &toolchain);
    let archive = lab_dir
        .join("initramfs")
        .join(format!("{arch}-static-{}.cpio", &key[..16]));
    let manifest = archive.with_extension("json");
    let limit = crate::util::fs::FileLimit {
        what: "initramfs manifest",
        max_bytes: crate::util::fs::MAX_RECORD_BYTES,
    };
    if let Ok(text) = crate::util::fs::read_limited(&manifest, limit, "") {
        if let Ok(found) = serde_json::from_str::<Initramfs>(&text) {
            if archive.is_file() && sha256_file(&archive)? == found.sha256 {
                return Ok(found);
            }
        }
    }
    let cross = &spec.cross_compile;
    eprintln!(
        "lab: building the {arch} guest's userspace from Debian's sources with {cross}gcc (once; nice, -j1: minutes)"
    );
    remove_stale_staging(&base, ".build-")?;
    let stage = StagingDir::new(&base, ".build-")?;
    let work = stage.path().join("work");
    let root = stage.path().join("root");
    let logs = base.join("logs");
    std::fs::create_dir_all(&logs).with_context(|| format!("creating {}", logs.display()))?;
    let by_name = |n: &str| sources.iter().find(|s| s.name == n).context(n.to_string());
    let busybox = by_name("busybox")?;
    let ethtool = by_name("ethtool")?;
    let popt = by_name("popt")?;
    let dbench = by_name("dbench")?;
    let ruleset = guest::ruleset();
    let popt_stage = stage.path().join("popt");
    let tools = build::Toolchain {
        cross,
        work: &work,
        logs: &logs,
    };
    let popt_seconds = tools.popt(popt, &popt_stage)?;
    let [mut tbench, tbench_srv] = tools.dbench(dbench, &popt_stage, &root)?;
    // tbench's build time covers the library it links.
    tbench.seconds += popt_seconds;
    let dbench_source = format!(
        "{} {} (upstream {}: Debian's changes are not on the mirror), {} {}",
        dbench.name,
        dbench.version,
        dbench.files.get(1).map_or("tarball", |f| f.file.as_str()),
        popt.name,
        popt.version
    );
    let dbench_build = format!(
        "autoheader; autoconf; configure --host={} (static, popt: configure {}); make {}",
        cross.trim_end_matches('-'),
        build::POPT_CONFIGURE.join(" "),
        build::DBENCH_MAKE.join(" ")
    );
    let programs = [
        (
            tools.busybox(busybox, &root)?,
            format!("{} {}", busybox.name, busybox.version),
            format!(
                "Debian's debian/config/pkg/static; make CROSS_COMPILE={cross} {}",
                build::BUSYBOX_MAKE.join(" ")
            ),
        ),
        (
            tools.ethtool(ethtool, &root)?,
            format!("{} {}", ethtool.name, ethtool.version),
            format!(
                "configure --host={} {}; make -j1 ethtool",
                cross.trim_end_matches('-'),
                build::ETHTOOL_CONFIGURE.join(" ")
            ),
        ),
        (
            tools.nft(&ruleset, &root)?,
            "lab/static-guest/nft.c (the lab's ruleset loader)".to_string(),
            format!("{cross}gcc {}", build::NFT_CFLAGS.join(" ")),
        ),
        (tbench, dbench_source.clone(), dbench_build.clone()),
        (tbench_srv, dbench_source, dbench_build),
        (
            tools.batctl(&root)?,
            "lab/static-guest/batctl.c (the lab's read-only batctl)".to_string(),
            format!("{cross}gcc {}", build::NFT_CFLAGS.join(" ")),
        ),
    ];
    let mut built = Vec::new();
    for (program, source, how) in programs {
        elf::check(&program.binary, arch)?;
        built.push(BuiltProgram {
            path: program
                .binary
                .strip_prefix(&root)
                .unwrap_or(&program.binary)
                .display()
                .to_string(),
            source,
            build: how,
            sha256: sha256_file(&program.binary)?,
            build_seconds: program.seconds.round() as u64,
        });
    }
    // The build trees are large; only the root goes into the archive.
    std::fs::remove_dir_all(&work).with_context(|| format!("removing {}", work.display()))?;
    guest::install(&root)?;
    let size = cpio::pack(&root, &archive)?;
    let made = Initramfs {
        sha256: sha256_file(&archive)?,
        size,
        path: archive,
        arch: arch.to_string(),
        packages: sources.iter().flat_map(|s| s.files.clone()).collect(),
        built,
        toolchain,
        ruleset: None,
    };
    write_atomic(&manifest, serde_json::to_string_pretty(&made)?.as_bytes())?;
    let total: u64 = made.built.iter().map(|b| b.build_seconds).sum();
    eprintln!("lab: built the {arch} guest's userspace in {total} s");
    Ok(made)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::lab::DebRecord;

    #[test]
    fn the_key_changes_with_every_input() {
        let spec = StaticGuestSpec {
            cross_compile: "mips-linux-gnu-".into(),
            packages: vec!["gcc-mips-linux-gnu".into()],
        };
        let source = |sum: &str| sources::SourcePackage {
            name: "busybox".into(),
            version: "1:1.35.0-4".into(),
            parts: sources::Parts::Debian,
            dsc: "busybox_1.35.0-4.dsc".into(),
            files: vec![DebRecord {
                file: "busybox_1.35.0.orig.tar.bz2".into(),
                sha256: sum.into(),
            }],
        };
        let gcc = vec!["mips-linux-gnu-gcc (Debian 12.2.0-14) 12.2.0".to_string()];
        let key = cache_key("mips", &spec, &[source("aa")], &gcc);
        assert_eq!(key, cache_key("mips", &spec, &[source("aa")], &gcc));
        assert_ne!(key, cache_key("mips", &spec, &[source("bb")], &gcc));
        assert_ne!(key, cache_key("mipsel", &spec, &[source("aa")], &gcc));
        let newer = vec!["mips-linux-gnu-gcc (Debian 12.2.0-15) 12.2.0".to_string()];
        assert_ne!(key, cache_key("mips", &spec, &[source("aa")], &newer));
    }
}
