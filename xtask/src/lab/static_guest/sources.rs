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

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::lab::apt::{host_arch, PrivateApt, KEYRING, MIRROR};
use crate::results::lab::DebRecord;
use crate::util::fs::{remove_stale_staging, StagingDir};
use crate::util::hash::sha256_file;

/// One downloaded source package.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourcePackage {
    /// Source package name (`busybox`).
    pub name: String,
    /// Its Debian version (`1:1.35.0-4+deb12u1`).
    pub version: String,
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

/// The package in `dir` when its `.dsc` and listed files are all there
/// and match; `None` when something is missing or differs.
fn verified(name: &str, dir: &Path) -> Result<Option<SourcePackage>> {
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
        std::fs::read_to_string(dsc).with_context(|| format!("reading {}", dsc.display()))?;
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
    for (sum, _, file) in &parsed.sha256 {
        let path = dir.join(file);
        if !path.is_file() || &sha256_file(&path)? != sum {
            return Ok(None);
        }
        files.push(DebRecord {
            file: file.clone(),
            sha256: sum.clone(),
        });
    }
    Ok(Some(SourcePackage {
        name: name.to_string(),
        version: parsed.version,
        dsc: dsc.clone(),
        files,
    }))
}

/// The source packages `names` of Debian `suite` under `base`
/// (`…/static-guest`), from its cache or downloaded now.
pub fn fetch(base: &Path, suite: &str, names: &[&str]) -> Result<Vec<SourcePackage>> {
    let dir = base.join("sources").join(suite);
    let mut found = Vec::new();
    let mut missing = Vec::new();
    for name in names {
        match verified(name, &dir.join(name))? {
            Some(p) => found.push(p),
            None => missing.push(*name),
        }
    }
    if !missing.is_empty() {
        eprintln!(
            "lab: fetching Debian's source packages {} ({suite}, once)",
            missing.join(", ")
        );
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        remove_stale_staging(&dir, ".fetch-")?;
        let line = format!("deb-src [signed-by={KEYRING}] {MIRROR} {suite} main");
        let apt = PrivateApt::new(&base.join("apt"), &host_arch()?, &[line])?;
        apt.update("for the static guest's sources")?;
        for name in missing {
            let stage = StagingDir::new(&dir, ".fetch-")?;
            apt.source_candidate(name, stage.path())
                .with_context(|| format!("downloading Debian's source package {name}"))?;
            let Some(p) = verified(name, stage.path())? else {
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
    found.sort_by_key(|p| names.iter().position(|n| *n == p.name));
    Ok(found)
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
        let got = verified("x", p).unwrap().unwrap();
        assert_eq!(got.version, "1-1");
        assert_eq!(got.files.len(), 2);
        std::fs::write(p.join("x_1.orig.tar.xz"), b"changed!").unwrap();
        assert_eq!(verified("x", p).unwrap(), None);
        assert!(verified("y", p).is_err());
    }
}
