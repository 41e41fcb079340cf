//! Debian's source packages of a static guest: `apt-get source
//! --download-only` through a private apt configuration whose one line is
//! `deb-src … <suite> main` (the suite the Debian guests' binary packages
//! come from, so the versions are theirs), into
//! `target/xtask/lab/static-guest/sources/<suite>/<package>/`.
//!
//! A package's directory holds its `.dsc` and the files it lists; apt
//! checked them against the signed `Sources` index when it downloaded
//! them, and every later use checks them against the `.dsc`'s
//! `Checksums-Sha256` again. Once there, a package is reused without
//! network access (remove the directory to pick up a newer point release).
//!
//! A package wanted as [`Parts::Upstream`] is the `.dsc` and its upstream
//! tarballs only (`*.orig.tar.*`), each downloaded by apt's `apt-helper
//! download-file` against the sha256 the signed index (for the `.dsc`) and
//! the `.dsc` (for the tarballs) give: for a package whose Debian changes
//! (`.debian.tar.*`) the mirror does not serve.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{bail, Context, Result};

use crate::lab::apt::{host_arch, PrivateApt, KEYRING, MIRROR};
use crate::lab::process::run_appending_to_log;
use crate::results::lab::DebRecord;
use crate::util::fs::{remove_stale_staging, StagingDir};
use crate::util::hash::sha256_file;

/// What of a source package the static guest builds from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parts {
    /// The `.dsc` and every file it lists: upstream tarballs and Debian's
    /// changes, unpacked with `dpkg-source -x`.
    Debian,
    /// The `.dsc` and its upstream tarballs (`*.orig.tar.*`, no
    /// signatures), unpacked with `tar`: Debian's changes are left out.
    Upstream,
}

impl Parts {
    /// Whether a file the `.dsc` lists is one of these parts.
    fn holds(self, file: &str) -> bool {
        match self {
            Parts::Debian => true,
            Parts::Upstream => file.contains(".orig.tar.") && !file.ends_with(".asc"),
        }
    }
}

/// One downloaded source package.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourcePackage {
    /// Source package name (`busybox`).
    pub name: String,
    /// Its Debian version (`1:1.35.0-4+deb12u1`).
    pub version: String,
    /// What of it was downloaded.
    pub parts: Parts,
    /// The `.dsc`.
    pub dsc: PathBuf,
    /// The `.dsc` and every file it lists, with their sha256.
    pub files: Vec<DebRecord>,
}

/// What a `.dsc` says: `Version:` and `Checksums-Sha256:` (sha256, size,
/// file name per line; Debian policy §5.6.24). A clearsigned `.dsc`'s
/// armour lines are not fields, so they are skipped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dsc {
    /// `Source:`.
    pub source: String,
    /// `Version:`.
    pub version: String,
    /// (sha256, size in bytes, file name) of each listed file.
    pub sha256: Vec<(String, u64, String)>,
}

/// Parses a `.dsc`'s text.
pub fn parse_dsc(text: &str) -> Result<Dsc> {
    let mut source = None;
    let mut version = None;
    let mut sha256 = Vec::new();
    let mut in_sums = false;
    for line in text.lines() {
        if line.starts_with(' ') || line.starts_with('\t') {
            if in_sums {
                match line.split_whitespace().collect::<Vec<_>>()[..] {
                    [sum, size, name] => sha256.push((
                        sum.to_string(),
                        size.parse()
                            .with_context(|| format!("size {size:?} in .dsc line {line:?}"))?,
                        name.to_string(),
                    )),
                    _ => bail!("unexpected Checksums-Sha256 line {line:?}"),
                }
            }
            continue;
        }
        in_sums = line.trim_end() == "Checksums-Sha256:";
        if let Some(v) = line.strip_prefix("Source: ") {
            source = Some(v.trim().to_string());
        } else if let Some(v) = line.strip_prefix("Version: ") {
            version = Some(v.trim().to_string());
        }
    }
    let (Some(source), Some(version)) = (source, version) else {
        bail!("a .dsc without Source: or Version:");
    };
    if sha256.is_empty() {
        bail!("the .dsc of {source} {version} lists no Checksums-Sha256");
    }
    for (_, _, name) in &sha256 {
        if name.contains('/') || name.starts_with('.') {
            bail!("the .dsc of {source} lists a file {name:?} outside its directory");
        }
    }
    Ok(Dsc {
        source,
        version,
        sha256,
    })
}

/// The package in `dir` when its `.dsc` and the listed files of `parts`
/// are all there and match; `None` when something is missing or differs.
fn verified(name: &str, parts: Parts, dir: &Path) -> Result<Option<SourcePackage>> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(None);
    };
    let dscs: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "dsc"))
        .collect();
    let [dsc] = &dscs[..] else {
        return Ok(None);
    };
    let text =
        crate::util::fs::read_limited(dsc, crate::util::fs::FileLimit::record(".dsc file"), "")?;
    let parsed = parse_dsc(&text).with_context(|| format!("reading {}", dsc.display()))?;
    if parsed.source != name {
        bail!(
            "{} is the .dsc of {}, not {name}",
            dsc.display(),
            parsed.source
        );
    }
    let mut files = vec![DebRecord {
        file: file_name(dsc),
        sha256: sha256_file(dsc)?,
    }];
    for (sum, _, file) in parsed.sha256.iter().filter(|(_, _, f)| parts.holds(f)) {
        let path = dir.join(file);
        if !path.is_file() || &sha256_file(&path)? != sum {
            return Ok(None);
        }
        files.push(DebRecord {
            file: file.clone(),
            sha256: sum.clone(),
        });
    }
    if files.len() < 2 {
        bail!(
            "the .dsc of {name} {} lists no upstream tarball ({})",
            parsed.version,
            dsc.display()
        );
    }
    Ok(Some(SourcePackage {
        name: name.to_string(),
        version: parsed.version,
        parts,
        dsc: dsc.clone(),
        files,
    }))
}

/// The source packages `wanted` (name and parts) of Debian `suite` under
/// `base` (`…/static-guest`), from its cache or downloaded now.
pub fn fetch(base: &Path, suite: &str, wanted: &[(&str, Parts)]) -> Result<Vec<SourcePackage>> {
    let dir = base.join("sources").join(suite);
    let mut found = Vec::new();
    let mut missing = Vec::new();
    for &(name, parts) in wanted {
        match verified(name, parts, &dir.join(name))? {
            Some(p) => found.push(p),
            None => missing.push((name, parts)),
        }
    }
    if !missing.is_empty() {
        let names: Vec<&str> = missing.iter().map(|(n, _)| *n).collect();
        eprintln!(
            "lab: fetching Debian's source packages {} ({suite}, once)",
            names.join(", ")
        );
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        remove_stale_staging(&dir, ".fetch-")?;
        let line = format!("deb-src [signed-by={KEYRING}] {MIRROR} {suite} main");
        let apt = PrivateApt::new(&base.join("apt"), &host_arch()?, &[line])?;
        apt.update("for the static guest's sources")?;
        for (name, parts) in missing {
            let stage = StagingDir::new(&dir, ".fetch-")?;
            match parts {
                Parts::Debian => apt.source_candidate(name, stage.path()),
                Parts::Upstream => download_upstream(&apt, name, stage.path()),
            }
            .with_context(|| format!("downloading Debian's source package {name}"))?;
            let Some(p) = verified(name, parts, stage.path())? else {
                bail!(
                    "apt-get source {name} left no complete .dsc in {}",
                    stage.path().display()
                );
            };
            let into = dir.join(name);
            if into.exists() {
                std::fs::remove_dir_all(&into)
                    .with_context(|| format!("removing {}", into.display()))?;
            }
            let kept = stage.keep()?;
            std::fs::rename(&kept, &into)
                .with_context(|| format!("moving {} to {}", kept.display(), into.display()))?;
            found.push(SourcePackage {
                dsc: into.join(file_name(&p.dsc)),
                ..p
            });
        }
    }
    found.sort_by_key(|p| wanted.iter().position(|(n, _)| *n == p.name));
    Ok(found)
}

/// One file `apt-get source --print-uris` names: its URI, file name and
/// sha256 (from the signed `Sources` index).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceUri {
    /// Where it is.
    pub uri: String,
    /// Its file name.
    pub file: String,
    /// Its sha256, lowercase hex.
    pub sha256: String,
}

/// Parses `apt-get source --print-uris` output: lines `'URI' FILE SIZE
/// SHA256:HEX`; other lines are apt's messages.
pub fn parse_print_uris(text: &str) -> Vec<SourceUri> {
    text.lines()
        .filter_map(|line| {
            let rest = line.strip_prefix('\'')?;
            let (uri, rest) = rest.split_once("' ")?;
            let mut words = rest.split_whitespace();
            let file = words.next()?.to_string();
            let _size = words.next()?;
            let sha256 = words.next()?.strip_prefix("SHA256:")?.to_string();
            (!file.contains('/') && !file.starts_with('.')).then(|| SourceUri {
                uri: uri.to_string(),
                file,
                sha256,
            })
        })
        .collect()
}

/// Longest one download may take.
const DOWNLOAD_TIMEOUT: Duration = Duration::from_secs(600);

/// Downloads `name`'s `.dsc` and upstream tarballs into `into`, each
/// checked by `apt-helper download-file` against its sha256.
fn download_upstream(apt: &PrivateApt, name: &str, into: &Path) -> Result<()> {
    let uris = parse_print_uris(&apt.source_uris(name)?);
    let dsc = uris
        .iter()
        .find(|u| u.file.ends_with(".dsc"))
        .with_context(|| format!("apt-get source --print-uris {name} names no .dsc"))?;
    let wanted = uris
        .iter()
        .filter(|u| u.file.ends_with(".dsc") || Parts::Upstream.holds(&u.file));
    for u in wanted {
        let mut cmd = Command::new("/usr/lib/apt/apt-helper");
        cmd.args(["download-file", &u.uri])
            .arg(into.join(&u.file))
            .arg(format!("SHA256:{}", u.sha256));
        run_appending_to_log(
            cmd,
            &format!("apt-helper download-file {}", u.uri),
            &apt.dir.join("apt-helper.log"),
            DOWNLOAD_TIMEOUT,
        )?;
    }
    if !into.join(&dsc.file).is_file() {
        bail!("{} was not downloaded", dsc.file);
    }
    Ok(())
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    const DSC: &str = "-----BEGIN PGP SIGNED MESSAGE-----\nHash: SHA512\n\n\
        Format: 3.0 (quilt)\nSource: ethtool\nVersion: 1:6.1-1\n\
        Checksums-Sha1:\n 0a 327644 ethtool_6.1.orig.tar.xz\n\
        Checksums-Sha256:\n aa11 327644 ethtool_6.1.orig.tar.xz\n bb22 14680 ethtool_6.1-1.debian.tar.xz\n\
        Files:\n cc 327644 ethtool_6.1.orig.tar.xz\n\n-----BEGIN PGP SIGNATURE-----\n\nxyz\n";

    #[test]
    fn a_dsc_gives_its_version_and_sha256_sums() {
        let d = parse_dsc(DSC).unwrap();
        assert_eq!(d.source, "ethtool");
        assert_eq!(d.version, "1:6.1-1");
        assert_eq!(
            d.sha256,
            vec![
                ("aa11".into(), 327644, "ethtool_6.1.orig.tar.xz".into()),
                ("bb22".into(), 14680, "ethtool_6.1-1.debian.tar.xz".into()),
            ]
        );
        let evil = DSC.replace("ethtool_6.1-1.debian", "../x");
        assert!(parse_dsc(&evil).is_err());
    }

    #[test]
    fn a_package_is_reused_only_when_every_file_matches() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        std::fs::write(p.join("x_1.orig.tar.xz"), b"upstream").unwrap();
        let sum = sha256_file(&p.join("x_1.orig.tar.xz")).unwrap();
        let dsc = format!("Source: x\nVersion: 1-1\nChecksums-Sha256:\n {sum} 8 x_1.orig.tar.xz\n");
        std::fs::write(p.join("x_1-1.dsc"), dsc).unwrap();
        let got = verified("x", Parts::Debian, p).unwrap().unwrap();
        assert_eq!(got.version, "1-1");
        assert_eq!(got.files.len(), 2);
        std::fs::write(p.join("x_1.orig.tar.xz"), b"changed!").unwrap();
        assert_eq!(verified("x", Parts::Debian, p).unwrap(), None);
        assert!(verified("y", Parts::Debian, p).is_err());
    }

    #[test]
    fn upstream_parts_need_the_tarball_but_not_debian_s_changes() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        std::fs::write(p.join("x_1.orig.tar.gz"), b"upstream").unwrap();
        let sum = sha256_file(&p.join("x_1.orig.tar.gz")).unwrap();
        let dsc = format!(
            "Source: x\nVersion: 1-2\nChecksums-Sha256:\n {sum} 8 x_1.orig.tar.gz\n \
             ab 4 x_1.orig.tar.gz.asc\n cd 9 x_1-2.debian.tar.xz\n"
        );
        std::fs::write(p.join("x_1-2.dsc"), dsc).unwrap();
        // Debian's changes are missing: the whole package is not there.
        assert_eq!(verified("x", Parts::Debian, p).unwrap(), None);
        let got = verified("x", Parts::Upstream, p).unwrap().unwrap();
        assert_eq!(got.parts, Parts::Upstream);
        let files: Vec<&str> = got.files.iter().map(|f| f.file.as_str()).collect();
        assert_eq!(files, ["x_1-2.dsc", "x_1.orig.tar.gz"]);
        std::fs::remove_file(p.join("x_1.orig.tar.gz")).unwrap();
        assert_eq!(verified("x", Parts::Upstream, p).unwrap(), None);
    }

    #[test]
    fn print_uris_lines_give_uri_file_and_sha256() {
        let text = "Reading package lists...\nNeed to get 2061 kB of source archives.\n\
            'http://deb.debian.org/debian/pool/main/d/dbench/dbench_4.0-2.1.dsc' dbench_4.0-2.1.dsc 1708 SHA256:f8ee\n\
            'http://deb.debian.org/debian/pool/main/d/dbench/dbench_4.0.orig.tar.gz' dbench_4.0.orig.tar.gz 2055359 SHA256:6001\n\
            'http://x/../evil' ../evil 1 SHA256:00\n";
        let uris = parse_print_uris(text);
        assert_eq!(uris.len(), 2, "{uris:?}");
        assert_eq!(
            uris[1],
            SourceUri {
                uri: "http://deb.debian.org/debian/pool/main/d/dbench/dbench_4.0.orig.tar.gz"
                    .into(),
                file: "dbench_4.0.orig.tar.gz".into(),
                sha256: "6001".into(),
            }
        );
    }
}
