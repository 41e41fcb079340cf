//! The kernel source: find it, verify it, unpack it once, never modify it.
//!
//! Input is a tarball (default: Debian's `/usr/src/linux-source-<kver>.tar.xz`)
//! or an unpacked tree (`--kernel-src DIR`). A tarball is unpacked once into
//! `target/xtask/pristine/<sha256-prefix>/`; a tarball whose file name is
//! pinned in `patches/kernel-sources.toml` must match one of its sha256 sums.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::util::hash::sha256_file;
use anyhow::{bail, Context, Result};
use serde::Deserialize;
use xshell::{cmd, Shell};

use crate::util::fs::StagingDir;
use crate::util::layout::Layout;
use crate::util::lock::{Lock, Wait};
use crate::util::process::run_tied;

/// Where the kernel source comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SourceInput {
    /// A `.tar.xz`/`.tar.gz`/`.tar` file.
    Tarball(PathBuf),
    /// An unpacked tree (used read-only).
    Tree(PathBuf),
}

/// An unpacked, read-only kernel tree and what identifies it.
#[derive(Debug, Clone)]
pub struct PristineTree {
    /// The top directory (holds the top-level `Makefile`).
    pub dir: PathBuf,
    /// `VERSION.PATCHLEVEL.SUBLEVEL` + `EXTRAVERSION` from the Makefile, e.g. `6.12.117`.
    pub version: String,
    /// sha256 of the tarball (hex); `None` for a user's tree.
    pub tarball_sha256: Option<String>,
    /// Where it came from, for result.json.
    pub origin: PathBuf,
}

/// The Debian package that ships the source of kernel series `kver` (`6.12`).
pub fn debian_package(kver: &str) -> String {
    format!("linux-source-{kver}")
}

/// Debian's tarball path for kernel series `kver`.
pub fn default_tarball(kver: &str) -> PathBuf {
    PathBuf::from(format!("/usr/src/linux-source-{kver}.tar.xz"))
}

/// Decides what `--kernel-src` (or its absence) means for series `kver`.
///
/// Errors when the default tarball is missing (with the `apt-get install`
/// fix) or the given path does not exist.
pub fn resolve_input(arg: Option<&Path>, kver: &str) -> Result<SourceInput> {
    match arg {
        None => {
            let tarball = default_tarball(kver);
            if !tarball.is_file() {
                bail!(
                    "kernel source {} is missing; install it with `apt-get install {}` \
                     (or run `cargo xtask setup`), or pass --kernel-src PATH (a kernel.org tarball or tree)",
                    tarball.display(),
                    debian_package(kver)
                );
            }
            Ok(SourceInput::Tarball(tarball))
        }
        Some(path) if path.is_dir() => {
            if !path.join("Makefile").is_file() || !path.join("Kbuild").is_file() {
                bail!(
                    "--kernel-src {}: not a kernel tree (no top-level Makefile and Kbuild)",
                    path.display()
                );
            }
            Ok(SourceInput::Tree(path.to_path_buf()))
        }
        Some(path) if path.is_file() => Ok(SourceInput::Tarball(path.to_path_buf())),
        Some(path) => bail!("--kernel-src {}: no such file or directory", path.display()),
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Pins {
    /// File name → accepted sha256 sums.
    sha256: BTreeMap<String, Vec<String>>,
    /// Debian package → the version whose tarball has the pinned sum.
    #[serde(default)]
    debian: BTreeMap<String, String>,
}

/// The pin file `patches/kernel-sources.toml`, parsed; `None` when the
/// workspace has none.
fn read_pins(layout: &Layout) -> Result<Option<(PathBuf, Pins)>> {
    let pins_file = layout.patches_dir().join("kernel-sources.toml");
    if !pins_file.is_file() {
        return Ok(None);
    }
    let limit = crate::util::fs::FileLimit {
        what: "pin file",
        max_bytes: crate::util::fs::MAX_INPUT_BYTES,
    };
    let text = crate::util::fs::read_limited(&pins_file, limit, "restore it from git")?;
    let pins: Pins = toml_edit::de::from_str(&text)
        .with_context(|| format!("{}: not a valid pin file", pins_file.display()))?;
    for (package, version) in &pins.debian {
        let package_ok = package.starts_with("linux-source-")
            && check_series(&package["linux-source-".len()..], "").is_ok();
        // Debian policy §5.6.12: upstream version and revision are
        // alphanumerics and . + ~ - (with an epoch's :).
        let version_ok = version.starts_with(|c: char| c.is_ascii_digit())
            && version
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b".+~-:".contains(&b));
        if !package_ok || !version_ok {
            bail!(
                "{}: [debian] {package:?} = {version:?} is not a Debian linux-source-MAJOR.MINOR \
                 package and version (e.g. \"linux-source-6.12\" = \"6.12.117-1~deb12u1\")",
                pins_file.display()
            );
        }
    }
    Ok(Some((pins_file, pins)))
}

/// The Debian package versions `patches/kernel-sources.toml` pins
/// (`[debian]`: `linux-source-6.12` → `6.12.117-1~deb12u1`), whose
/// tarballs have the pinned sums; `cargo xtask setup` installs these.
/// Empty when the workspace has no pin file.
///
/// Errors when the pin file cannot be read or names something that is not
/// a `linux-source-MAJOR.MINOR` package and a Debian version.
pub fn pinned_debian_versions(layout: &Layout) -> Result<BTreeMap<String, String>> {
    Ok(read_pins(layout)?
        .map(|(_, p)| p.debian)
        .unwrap_or_default())
}

/// The version of Debian package `package` that dpkg has installed
/// (`dpkg-query -W -f '${Version}'`), if any.
pub fn installed_debian_version(sh: &Shell, package: &str) -> Option<String> {
    let format = "${db:Status-Abbrev} ${Version}";
    let out = cmd!(sh, "dpkg-query -W -f {format} {package}")
        .quiet()
        .ignore_stderr()
        .read()
        .ok()?;
    let (status, version) = out.trim().split_once(' ')?;
    status.starts_with("ii").then(|| version.trim().to_string())
}

/// Checks `tarball` against `patches/kernel-sources.toml` and returns its sha256.
///
/// A file name that is not pinned passes; a pinned one whose sum differs is
/// an error naming both sums, the Debian version the pin file pins and how
/// to install it (`cargo xtask setup`, or the exact `apt-get install
/// linux-source-<kver>=<version>`), `--kernel-src`, and the file to update
/// for a release the user trusts.
pub fn verify_tarball(layout: &Layout, tarball: &Path) -> Result<String> {
    let sum = sha256_file(tarball)?;
    let Some((pins_file, pins)) = read_pins(layout)? else {
        return Ok(sum);
    };
    let name = tarball
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    if let Some(allowed) = pins.sha256.get(name) {
        if !allowed.iter().any(|a| a.eq_ignore_ascii_case(&sum)) {
            let package = name.strip_suffix(".tar.xz").unwrap_or(name);
            let how = match pins.debian.get(package) {
                Some(version) => {
                    // Debian's own tarball: say which version dpkg installed.
                    let series = package.strip_prefix("linux-source-").unwrap_or_default();
                    let installed = (tarball == default_tarball(series))
                        .then(|| installed_debian_version(&Shell::new().ok()?, package))
                        .flatten()
                        .map(|v| {
                            if v == *version {
                                format!(" (dpkg has {package} {v} installed)")
                            } else {
                                format!(
                                    " (dpkg has {package} {v} installed, not the pinned \
                                     version: an `apt-get upgrade` or install replaced it)"
                                )
                            }
                        })
                        .unwrap_or_default();
                    format!(
                        "The pinned sum is that of Debian's {package} {version}{installed}. \
                         Install that version with `cargo xtask setup` (it installs the pinned \
                         versions) or `apt-get install --allow-downgrades {package}={version}`; "
                    )
                }
                None => String::new(),
            };
            bail!(
                "{}: sha256 {sum} is not one of the sums pinned for {name:?} in {}.\n\
                 {how}or pass --kernel-src PATH to build another kernel source (a tree, or a \
                 tarball under another name; its sum is recorded in result.json, and its results \
                 are not those of the pinned source). If this is a new upstream or Debian release \
                 you trust, add its sum to that list.",
                tarball.display(),
                pins_file.display()
            );
        }
    }
    Ok(sum)
}

/// Prefix of the staging directories unpacks go to, in
/// `target/xtask/pristine/`.
pub const UNPACK_PREFIX: &str = ".unpack-";

/// Returns the pristine tree for `input`, unpacking a tarball on first use.
///
/// Unpacking goes to a temporary directory renamed into place when complete,
/// so an interrupted unpack is never mistaken for a tree; `tar` (and the
/// `xz` it starts) die with this process. Every call first removes the
/// staging directories killed unpacks left (215 MB each for Linux 6.12),
/// whether or not this one unpacks: a run whose source is already
/// unpacked used to leave them for ever.
pub fn pristine_tree(sh: &Shell, layout: &Layout, input: &SourceInput) -> Result<PristineTree> {
    crate::util::fs::remove_stale_staging(&layout.pristine_dir(), UNPACK_PREFIX)?;
    match input {
        SourceInput::Tree(dir) => {
            if dir.join(".config").exists() || dir.join("include/config").exists() {
                bail!(
                    "--kernel-src {}: the tree has been configured or built in place (.config); \
                     out-of-tree builds need a clean source: run `make mrproper` in it or pass a tarball",
                    dir.display()
                );
            }
            Ok(PristineTree {
                version: makefile_version(dir)?,
                dir: dir.clone(),
                tarball_sha256: None,
                origin: dir.clone(),
            })
        }
        SourceInput::Tarball(tarball) => {
            let sum = verify_tarball(layout, tarball)?;
            let cache = layout.pristine_dir().join(&sum[..16]);
            if !cache.is_dir() {
                unpack(sh, tarball, &cache)?;
            }
            let dir = single_top_dir(&cache)?;
            Ok(PristineTree {
                version: makefile_version(&dir)?,
                dir,
                tarball_sha256: Some(sum),
                origin: tarball.clone(),
            })
        }
    }
}

fn unpack(sh: &Shell, tarball: &Path, cache: &Path) -> Result<()> {
    let parent = cache.parent().context("pristine cache has no parent")?;
    std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
    // One run unpacks a given tarball at a time; the second finds it unpacked.
    let _lock = Lock::acquire(
        &parent.join(format!(
            ".{}.lock",
            cache.file_name().unwrap_or_default().to_string_lossy()
        )),
        &format!("the unpacked source {}", cache.display()),
        Wait::Yes,
    )?;
    if cache.is_dir() {
        return Ok(());
    }
    let staging = StagingDir::new(parent, UNPACK_PREFIX)?;
    eprintln!(
        "unpacking {} (once) into {}",
        tarball.display(),
        cache.display()
    );
    let dest = staging.path();
    // Tied to this process: a killed run's tar would keep unpacking into
    // a directory nobody renames (its decompressor, tar's child, ends on
    // the broken pipe when tar does).
    let tar = cmd!(sh, "tar -xf {tarball} -C {dest}");
    eprintln!("$ {tar}");
    run_tied(tar).with_context(|| format!("unpacking {}", tarball.display()))?;
    let staged = staging.keep()?;
    std::fs::rename(&staged, cache)
        .with_context(|| format!("moving {} to {}", staged.display(), cache.display()))?;
    Ok(())
}

fn single_top_dir(cache: &Path) -> Result<PathBuf> {
    let mut dirs = Vec::new();
    for entry in std::fs::read_dir(cache).with_context(|| format!("reading {}", cache.display()))? {
        let path = entry?.path();
        if path.is_dir() {
            dirs.push(path);
        }
    }
    match dirs.as_slice() {
        [one] if one.join("Makefile").is_file() => Ok(one.clone()),
        _ => bail!(
            "{}: expected the tarball to hold one kernel directory; remove this cache directory and check the tarball",
            cache.display()
        ),
    }
}

/// The kernel version (`6.12.117`) of `input`, from its top-level Makefile;
/// a tarball is not unpacked (see [`top_makefile`]).
pub fn input_version(sh: &Shell, input: &SourceInput) -> Result<String> {
    let (SourceInput::Tarball(path) | SourceInput::Tree(path)) = input;
    let text = top_makefile(sh, path)?;
    version_from_makefile(&text).with_context(|| {
        format!(
            "{}: the top-level Makefile has no VERSION/PATCHLEVEL/SUBLEVEL lines; is this a kernel source?",
            path.display()
        )
    })
}

/// The top-level Makefile of kernel series `kver` (`6.12`), read without
/// unpacking: from the first of `candidates` (tarballs or trees) whose
/// version is in that series, else from Debian's tarball for it.
///
/// Errors when none is available, with the exact `apt-get install
/// linux-source-<kver>` (`cargo xtask setup` installs only the series the
/// targets build, which need not be every series with patches) and the
/// version of each candidate that did not match.
pub fn top_makefile_for_series(sh: &Shell, kver: &str, candidates: &[PathBuf]) -> Result<String> {
    let mut others = Vec::new();
    for candidate in candidates {
        let text = top_makefile(sh, candidate)?;
        let version = version_from_makefile(&text);
        if version.as_deref().is_some_and(|v| series_of(v) == kver) {
            return Ok(text);
        }
        others.push(format!(
            "{} is Linux {}",
            candidate.display(),
            version.as_deref().unwrap_or("(unknown version)")
        ));
    }
    let tarball = default_tarball(kver);
    if !tarball.is_file() {
        let others = if others.is_empty() {
            String::new()
        } else {
            format!(" (--kernel-src {})", others.join(", "))
        };
        bail!(
            "the top-level Makefile of Linux {kver} is needed, but {} is missing{others}: \
             install it with `apt-get install {}`, or pass --kernel-src PATH (a Linux {kver} \
             tarball or tree)",
            tarball.display(),
            debian_package(kver)
        );
    }
    top_makefile(sh, &tarball)
}

/// The top-level Makefile of a tree, or of a tarball (extracted alone with
/// `tar --occurrence=1`, matching `<topdir>/Makefile`).
pub fn top_makefile(sh: &Shell, source: &Path) -> Result<String> {
    if source.is_dir() {
        let file = source.join("Makefile");
        return crate::util::fs::read_limited(
            &file,
            crate::util::fs::FileLimit::input("kernel Makefile"),
            "",
        );
    }
    cmd!(
        sh,
        "tar -xOf {source} --wildcards --no-wildcards-match-slash --occurrence=1 */Makefile"
    )
    .quiet()
    .read()
    .with_context(|| format!("reading the top-level Makefile from {}", source.display()))
}

/// `VERSION.PATCHLEVEL.SUBLEVEL[EXTRAVERSION]` from a tree's top-level Makefile.
pub fn makefile_version(tree: &Path) -> Result<String> {
    let makefile = tree.join("Makefile");
    let text = crate::util::fs::read_limited(
        &makefile,
        crate::util::fs::FileLimit::input("kernel Makefile"),
        "",
    )?;
    version_from_makefile(&text).with_context(|| {
        format!(
            "{}: no VERSION/PATCHLEVEL/SUBLEVEL lines; is this a kernel tree?",
            makefile.display()
        )
    })
}

fn version_from_makefile(text: &str) -> Option<String> {
    let get = |key: &str| {
        text.lines().find_map(|l| {
            let (k, v) = l.split_once('=')?;
            (k.trim() == key).then(|| v.trim().to_string())
        })
    };
    let (v, p, s) = (get("VERSION")?, get("PATCHLEVEL")?, get("SUBLEVEL")?);
    let extra = get("EXTRAVERSION").unwrap_or_default();
    Some(format!("{v}.{p}.{s}{extra}"))
}

/// Checks that `kver` is a kernel series, `MAJOR.MINOR` in digits (`6.12`):
/// it becomes part of directory names (`pending-6.12`, `patches-6.12`), so
/// anything else (a `/`, `..`) is refused, naming `what` (the option or file
/// it came from).
pub fn check_series(kver: &str, what: &str) -> Result<()> {
    let ok = kver.split_once('.').is_some_and(|(major, minor)| {
        [major, minor]
            .iter()
            .all(|p| !p.is_empty() && p.len() <= 3 && p.bytes().all(|b| b.is_ascii_digit()))
    });
    if !ok {
        bail!("{what}: {kver:?} is not a kernel series; write MAJOR.MINOR, e.g. 6.12");
    }
    Ok(())
}

/// The series a full version belongs to: `6.12.117` → `6.12`.
pub fn series_of(version: &str) -> String {
    version.split('.').take(2).collect::<Vec<_>>().join(".")
}

/// Every `patches/generic/pending-<kver>/` directory of `patches_dir`,
/// with its kernel series (`6.12`), sorted: the kernels `flags set` writes
/// the 201 patch for, and `setup` installs the sources of.
///
/// Errors: `patches/generic/` cannot be read.
pub fn pending_dirs(patches_dir: &Path) -> Result<Vec<(String, PathBuf)>> {
    let generic = patches_dir.join("generic");
    let mut dirs = Vec::new();
    for entry in
        std::fs::read_dir(&generic).with_context(|| format!("reading {}", generic.display()))?
    {
        let path = entry?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if let Some(kver) = name.strip_prefix("pending-") {
            if path.is_dir() {
                dirs.push((kver.to_string(), path.clone()));
            }
        }
    }
    dirs.sort();
    Ok(dirs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::hash::sha256_bytes;

    #[test]
    fn version_and_series_from_makefile() {
        let mk =
            "# SPDX\nVERSION = 6\nPATCHLEVEL = 12\nSUBLEVEL = 117\nEXTRAVERSION = -rc1\nNAME = x\n";
        assert_eq!(version_from_makefile(mk).as_deref(), Some("6.12.117-rc1"));
        assert_eq!(series_of("6.12.117-rc1"), "6.12");
        assert_eq!(version_from_makefile("VERSION = 6\n"), None);
    }

    #[test]
    fn missing_default_tarball_names_the_package() {
        let err = resolve_input(None, "9.99").unwrap_err().to_string();
        assert!(err.contains("apt-get install linux-source-9.99"), "{err}");
    }

    /// `flags set` needs every series' Makefile; `cargo xtask setup` does
    /// not install a series no target builds, so the message names the
    /// package, not setup.
    #[test]
    fn missing_series_source_names_the_exact_apt_get_install() {
        let sh = Shell::new().unwrap();
        let tree = tempfile::tempdir().unwrap();
        std::fs::write(
            tree.path().join("Makefile"),
            "VERSION = 6\nPATCHLEVEL = 12\nSUBLEVEL = 3\n",
        )
        .unwrap();
        let err = top_makefile_for_series(&sh, "9.99", &[tree.path().to_path_buf()])
            .unwrap_err()
            .to_string();
        assert!(err.contains("`apt-get install linux-source-9.99`"), "{err}");
        assert!(!err.contains("cargo xtask setup"), "{err}");
        assert!(err.contains("is Linux 6.12.3"), "{err}");
    }

    /// A newer Debian source than the pinned one (Debian moved on to
    /// 6.12.118): the
    /// refusal says which version is pinned and how to install it, and
    /// names --kernel-src, not only "add the sum".
    #[test]
    fn a_newer_debian_source_is_refused_with_the_pinned_version_and_how_to_get_it() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("patches")).unwrap();
        std::fs::write(
            dir.path().join("patches/kernel-sources.toml"),
            "[sha256]\n\"linux-source-9.9.tar.xz\" = [\"00\"]\n\
             [debian]\n\"linux-source-9.9\" = \"9.9.1-1~deb12u1\"\n",
        )
        .unwrap();
        let tarball = dir.path().join("linux-source-9.9.tar.xz");
        std::fs::write(&tarball, b"9.9.2").unwrap();
        let layout = Layout::new(dir.path());
        let err = verify_tarball(&layout, &tarball).unwrap_err().to_string();
        assert!(
            err.contains("Debian's linux-source-9.9 9.9.1-1~deb12u1"),
            "{err}"
        );
        assert!(err.contains("`cargo xtask setup`"), "{err}");
        assert!(
            err.contains("`apt-get install --allow-downgrades linux-source-9.9=9.9.1-1~deb12u1`"),
            "{err}"
        );
        assert!(err.contains("--kernel-src PATH"), "{err}");
        assert_eq!(
            pinned_debian_versions(&layout).unwrap()["linux-source-9.9"],
            "9.9.1-1~deb12u1"
        );
        // A version that could be read as an option, or a package that is
        // not a kernel source, is refused: both reach apt-get's argv.
        for bad in [
            "[debian]\n\"linux-source-9.9\" = \"-o=x\"\n",
            "[debian]\n\"bash\" = \"5.2\"\n",
        ] {
            std::fs::write(
                dir.path().join("patches/kernel-sources.toml"),
                format!("[sha256]\n{bad}"),
            )
            .unwrap();
            let err = pinned_debian_versions(&layout).unwrap_err().to_string();
            assert!(err.contains("kernel-sources.toml: [debian]"), "{err}");
        }
    }

    /// The repository's own pin file pins a Debian version for every
    /// pinned Debian tarball, so setup can install it.
    #[test]
    fn every_pinned_debian_tarball_has_its_version() {
        let layout = Layout::from_manifest_dir();
        let (_, pins) = read_pins(&layout).unwrap().unwrap();
        for name in pins.sha256.keys() {
            let package = name.strip_suffix(".tar.xz").unwrap();
            assert!(pins.debian.contains_key(package), "{name}");
        }
    }

    #[test]
    fn pinned_tarball_with_other_sum_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("patches")).unwrap();
        std::fs::write(
            dir.path().join("patches/kernel-sources.toml"),
            "[sha256]\n\"linux-x.tar\" = [\"00\"]\n",
        )
        .unwrap();
        let tarball = dir.path().join("linux-x.tar");
        std::fs::write(&tarball, b"not really").unwrap();
        let layout = Layout::new(dir.path());
        let err = verify_tarball(&layout, &tarball).unwrap_err().to_string();
        assert!(err.contains(&sha256_bytes(b"not really")), "{err}");
        let other = dir.path().join("linux-y.tar");
        std::fs::write(&other, b"unpinned").unwrap();
        assert_eq!(
            verify_tarball(&layout, &other).unwrap(),
            sha256_bytes(b"unpinned")
        );
    }
}
