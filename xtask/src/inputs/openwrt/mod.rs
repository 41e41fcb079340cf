//! OpenWrt mode: read an OpenWrt checkout (`--openwrt PATH`) the way
//! OpenWrt's own build reads it.
//!
//! * [`kconfig`]: the kernel config as `scripts/kconfig.pl + + …` merges the
//!   generic, target and subtarget `config-<kver>` files (include/target.mk).
//! * [`series`]: the patch directories in OpenWrt's order and the `files/`
//!   overlays (include/quilt.mk `Kernel/Patch/Default`, scripts/patch-kernel.sh).
//! * [`flags`]: KCFLAGS from `CONFIG_EXTRA_OPTIMIZATION` and
//!   `CONFIG_KERNEL_CFLAGS` (include/kernel.mk, config/Config-devel.in).
//! * [`optimization`]: the kernel's `-O2` or `-Os`, as config/Config-kernel.in
//!   chooses it from the target's FEATURES.
//! * [`cpu`]: `CPU_TYPE` and the flags include/target.mk derives from it.
//! * [`image`]: one device's `KERNEL` recipe (`target/linux/<board>/image/`),
//!   evaluated by GNU make.
//!
//! This module only reads the checkout; applying patches is
//! `patches::openwrt_series`.

pub mod cpu;
pub mod flags;
pub mod image;
pub mod kconfig;
pub mod optimization;
pub mod series;
pub mod steering;

use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::inputs::targets::{self, Target};

/// OpenWrt's old names of boards that were renamed, mapped to the current
/// directory under `target/linux/` (brcm47xx became bcm47xx in 2017).
const RENAMED_BOARDS: &[(&str, &str)] = &[("brcm47xx", "bcm47xx")];

/// An OpenWrt checkout: the directory holding `target/linux/` and `include/`.
#[derive(Debug, Clone)]
pub struct Checkout {
    root: PathBuf,
}

impl Checkout {
    /// Opens the checkout at `root`; errors when it has no
    /// `target/linux/generic/` (not an OpenWrt tree, or the wrong directory).
    pub fn open(root: &Path) -> Result<Checkout> {
        let generic = root.join("target/linux/generic");
        if !generic.is_dir() {
            bail!(
                "--openwrt {}: no target/linux/generic/ there; pass the top directory of an OpenWrt checkout",
                root.display()
            );
        }
        // Absolute: make runs in the checkout's directories (`make -C
        // target/linux/<board>/image`), where a relative path given on its
        // command line would name another place; canonical, so that
        // messages name it without `..`.
        let root = std::fs::canonicalize(root)
            .with_context(|| format!("--openwrt {}: resolving its path", root.display()))?;
        Ok(Checkout { root })
    }

    /// The checkout's top directory (OpenWrt's `$(TOPDIR)`).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `target/linux/generic`, OpenWrt's `$(GENERIC_PLATFORM_DIR)` (include/target.mk).
    pub fn generic_dir(&self) -> PathBuf {
        self.root.join("target/linux/generic")
    }

    /// `target/linux/<board>`, OpenWrt's `$(PLATFORM_DIR)` (include/target.mk).
    pub fn board_dir(&self, board: &str) -> PathBuf {
        self.root.join("target/linux").join(board)
    }

    /// Every board (target) of the checkout: the directories of
    /// `target/linux/` with a `Makefile`, except `generic`, sorted.
    pub fn boards(&self) -> Result<Vec<String>> {
        let dir = self.root.join("target/linux");
        let mut boards = Vec::new();
        for entry in
            std::fs::read_dir(&dir).with_context(|| format!("reading {}", dir.display()))?
        {
            let entry = entry.with_context(|| format!("reading {}", dir.display()))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if name != "generic" && entry.path().join("Makefile").is_file() {
                boards.push(name);
            }
        }
        boards.sort();
        Ok(boards)
    }

    /// The subtargets of `board`: its subdirectories holding a `target.mk`,
    /// sorted, as include/target.mk finds them (`$(wildcard $(PLATFORM_DIR)/*/target.mk)`).
    pub fn subtargets(&self, board: &str) -> Result<Vec<String>> {
        let dir = self.board_dir(board);
        let mut subs = Vec::new();
        for entry in
            std::fs::read_dir(&dir).with_context(|| format!("reading {}", dir.display()))?
        {
            let entry = entry.with_context(|| format!("reading {}", dir.display()))?;
            if entry.path().join("target.mk").is_file() {
                subs.push(entry.file_name().to_string_lossy().into_owned());
            }
        }
        subs.sort();
        Ok(subs)
    }

    /// `KERNEL_PATCHVER` and `KERNEL_TESTING_PATCHVER` from
    /// `target/linux/<board>/Makefile` (include/kernel-version.mk).
    pub fn kernel_versions(&self, board: &str) -> Result<KernelVersions> {
        let makefile = self.board_dir(board).join("Makefile");
        let text = read_checkout_file(&self.root, &makefile)?;
        let mut default = None;
        let mut testing = None;
        for line in text.lines() {
            if let Some((key, value)) = make_assignment(line) {
                match key {
                    "KERNEL_PATCHVER" => default = Some(value.to_string()),
                    "KERNEL_TESTING_PATCHVER" => testing = Some(value.to_string()),
                    _ => {}
                }
            }
        }
        let default = default.with_context(|| {
            format!(
                "{}: no KERNEL_PATCHVER:= line; every OpenWrt target Makefile sets one",
                makefile.display()
            )
        })?;
        Ok(KernelVersions { default, testing })
    }

    /// `ARCH` from `target/linux/<board>/Makefile` (`ARCH:=mipsel`); `None`
    /// when the Makefile does not set it (OpenWrt then takes it from the subtarget).
    pub fn board_arch(&self, board: &str) -> Result<Option<String>> {
        let makefile = self.board_dir(board).join("Makefile");
        let text = read_checkout_file(&self.root, &makefile)?;
        Ok(text.lines().find_map(|l| match make_assignment(l) {
            Some(("ARCH", v)) => Some(v.to_string()),
            _ => None,
        }))
    }
}

/// Reads `file` of the OpenWrt checkout `root` as text through the capped
/// reader ([`crate::util::fs::read_limited`]): a FIFO, a device (a link to
/// `/dev/zero`) or a file over 16 MiB put in a checkout is refused,
/// naming it, instead of hanging the read or filling memory. A missing
/// file is the `NotFound` error ([`crate::util::fs::is_not_found`]).
pub(crate) fn read_checkout_file(root: &Path, file: &Path) -> Result<String> {
    crate::util::fs::read_limited(
        file,
        crate::util::fs::FileLimit::input("file of an OpenWrt checkout"),
        &format!("restore it in the OpenWrt checkout {}", root.display()),
    )
}

/// `KEY:=value`, `KEY=value` or `KEY?=value` of a Makefile line, trimmed.
pub(crate) fn make_assignment(line: &str) -> Option<(&str, &str)> {
    let (key, value) = line.split_once('=')?;
    let key = key.trim_end_matches([':', '?', '+']).trim();
    if key.is_empty() || !key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return None;
    }
    Some((key, value.trim()))
}

/// A board's kernel versions, as its Makefile declares them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelVersions {
    /// `KERNEL_PATCHVER`: what the board builds by default.
    pub default: String,
    /// `KERNEL_TESTING_PATCHVER`: built with `CONFIG_TESTING_KERNEL=y`.
    pub testing: Option<String>,
}

impl KernelVersions {
    /// The default version, then the testing one when it differs.
    pub fn all(&self) -> Vec<String> {
        let mut v = vec![self.default.clone()];
        if let Some(t) = &self.testing {
            if t != &self.default {
                v.push(t.clone());
            }
        }
        v
    }
}

/// An OpenWrt `target/subtarget` such as `ramips/mt7621`, resolved in a checkout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenwrtTarget {
    /// The board, OpenWrt's `$(BOARD)` (`ramips`).
    pub board: String,
    /// The subtarget (`mt7621`); `None` for boards without subtargets.
    pub subtarget: Option<String>,
}

impl OpenwrtTarget {
    /// Parses `board[/subtarget]` and checks it against `checkout`: the board
    /// directory must exist (old names such as `brcm47xx` are mapped to the
    /// current ones), and so must the subtarget's `target.mk`.
    pub fn resolve(checkout: &Checkout, spelling: &str) -> Result<OpenwrtTarget> {
        let (board, sub) = match spelling.split_once('/') {
            Some((b, s)) => (b, Some(s.to_string())),
            None => (spelling, None),
        };
        let board = if checkout.board_dir(board).join("Makefile").is_file() {
            board.to_string()
        } else {
            match RENAMED_BOARDS.iter().find(|(old, _)| *old == board) {
                Some((_, new)) if checkout.board_dir(new).join("Makefile").is_file() => {
                    new.to_string()
                }
                _ => bail!(
                    "OpenWrt target {spelling:?}: {} has no Makefile; pass one of this checkout's targets: {}",
                    checkout.board_dir(board).display(),
                    checkout.boards()?.join(", ")
                ),
            }
        };
        let subtargets = checkout.subtargets(&board)?;
        let subtarget = match sub {
            Some(s) if subtargets.contains(&s) => Some(s),
            Some(s) => bail!(
                "OpenWrt target {spelling:?}: {} has no subtarget {s:?} (no {s}/target.mk); pass one of its subtargets: {}",
                checkout.board_dir(&board).display(),
                subtargets
                    .iter()
                    .map(|s| format!("{board}/{s}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            None if subtargets.is_empty() => None,
            None => bail!(
                "OpenWrt target {spelling:?} has subtargets; name one: {}",
                subtargets
                    .iter()
                    .map(|s| format!("{board}/{s}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        Ok(OpenwrtTarget { board, subtarget })
    }

    /// `$(PLATFORM_SUBDIR)` of include/target.mk: the subtarget's directory,
    /// or the board's when there is no subtarget.
    pub fn subtarget_dir(&self, checkout: &Checkout) -> Option<PathBuf> {
        self.subtarget
            .as_ref()
            .map(|s| checkout.board_dir(&self.board).join(s))
    }
}

impl fmt::Display for OpenwrtTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.subtarget {
            Some(s) => write!(f, "{}/{s}", self.board),
            None => f.write_str(&self.board),
        }
    }
}

/// What `--target` and `--kernel` resolve to in OpenWrt mode.
#[derive(Debug, Clone)]
pub struct Selection {
    /// The OpenWrt target/subtarget.
    pub target: OpenwrtTarget,
    /// The kernel series (`6.12`).
    pub kernel: String,
}

/// Which kernel series a selection wants, and where that came from: it
/// decides the fix an error names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wanted<'a> {
    /// Nothing asked: the workbench target's `kernel` when the board has
    /// it, else the board's `KERNEL_PATCHVER`.
    Default,
    /// `--kernel KVER` (`config show`).
    Flag(&'a str),
    /// The kernel source a build uses: its series (`6.12`) and full
    /// version (`6.12.117`).
    Source {
        /// The series.
        series: &'a str,
        /// The full version, for messages.
        version: &'a str,
    },
}

/// Resolves `spelling` in OpenWrt mode: a workbench target (`ramips-mt7621`,
/// `bcm53xx`, an alias; mapped through its file's `openwrt = "…"`) or any
/// OpenWrt `board/subtarget` of the checkout (`ramips/mt7620`).
///
/// The kernel is `kernel` when given; else the workbench target's `kernel`
/// when the board has that version (`KERNEL_PATCHVER` or
/// `KERNEL_TESTING_PATCHVER`); else the board's `KERNEL_PATCHVER`. A version
/// the board does not have is an error listing those it has.
pub fn select(
    checkout: &Checkout,
    targets_dir: &Path,
    spelling: &str,
    kernel: Option<&str>,
) -> Result<Selection> {
    select_for(
        checkout,
        targets_dir,
        spelling,
        kernel.map_or(Wanted::Default, Wanted::Flag),
    )
}

/// [`select`] with the kernel series `wanted`, whose errors name the fix
/// for each case: a target the checkout does not have (the targets it
/// has), a subtarget it does not have (its subtargets), and a version the
/// board does not build: `--kernel` with one it builds, or, for a newer
/// series than the board's, the bump (`cargo xtask patches rebase
/// --openwrt …`); for a build's source, the bump when the source is newer
/// and `--kernel-src` with a source of the board's series when it is older.
pub fn select_for(
    checkout: &Checkout,
    targets_dir: &Path,
    spelling: &str,
    wanted: Wanted<'_>,
) -> Result<Selection> {
    let all = targets::load_all(targets_dir)?;
    let workbench: Option<&Target> = all.iter().find(|t| t.is_named(spelling));
    let openwrt_spelling = workbench.map_or(spelling, |t| t.openwrt.as_str());
    let target =
        OpenwrtTarget::resolve(checkout, openwrt_spelling).with_context(|| match workbench {
            Some(t) => format!(
                "{} says openwrt = {:?}, which this checkout ({}) does not have; update the checkout, or correct the target file",
                t.file.display(),
                t.openwrt,
                checkout.root().display()
            ),
            None => format!(
                "--target {spelling} is not a target of {} (`cargo xtask targets` lists them), so it was read as an OpenWrt target of {}",
                targets_dir.display(),
                checkout.root().display()
            ),
        })?;
    let versions = checkout.kernel_versions(&target.board)?;
    let kernel = match (wanted, workbench) {
        (Wanted::Flag(k), _) => k.to_string(),
        (Wanted::Source { series, .. }, _) => series.to_string(),
        (Wanted::Default, Some(t)) if versions.all().contains(&t.kernel) => t.kernel.clone(),
        (Wanted::Default, Some(t)) => {
            eprintln!(
                "note: {} says kernel = {:?}, but OpenWrt's {target} has Linux {} only; using {}",
                t.file.display(),
                t.kernel,
                versions.all().join(" and "),
                versions.default
            );
            versions.default.clone()
        }
        (Wanted::Default, None) => versions.default.clone(),
    };
    if !versions.all().contains(&kernel) {
        bail!(
            "{}",
            version_error(checkout, &target, &versions, spelling, &kernel, wanted)
        );
    }
    Ok(Selection { target, kernel })
}

/// The error of a board that does not build `kernel`, with the fix for
/// where the version came from (see [`select_for`]).
fn version_error(
    checkout: &Checkout,
    target: &OpenwrtTarget,
    versions: &KernelVersions,
    spelling: &str,
    kernel: &str,
    wanted: Wanted<'_>,
) -> String {
    let makefile = checkout.board_dir(&target.board).join("Makefile");
    let declared = match &versions.testing {
        Some(t) if *t != versions.default => format!(
            "KERNEL_PATCHVER:={}, KERNEL_TESTING_PATCHVER:={t}",
            versions.default
        ),
        _ => format!("KERNEL_PATCHVER:={}", versions.default),
    };
    let newest = versions
        .all()
        .into_iter()
        .max_by_key(|v| series_key(v))
        .unwrap_or_else(|| versions.default.clone());
    let newer = series_key(kernel) > series_key(&newest);
    let bump = format!(
        "cargo xtask patches rebase --openwrt {} --target {spelling} --from {newest} --to {kernel}",
        checkout.root().display()
    );
    let builds = format!(
        "OpenWrt's {target} builds Linux {} ({}: {declared})",
        versions.all().join(" and "),
        makefile.display()
    );
    match wanted {
        Wanted::Source { version, .. } if newer => format!(
            "{builds}, and the kernel source is Linux {version}: bump the board to {kernel} first with `{bump}` (what OpenWrt's scripts/kernel_bump.sh does), then build again"
        ),
        Wanted::Source { version, .. } => format!(
            "{builds}, and the kernel source is Linux {version}: pass --kernel-src with a Linux {newest} source (a tarball or an unpacked tree)"
        ),
        _ if newer => format!(
            "{builds}, not {kernel}: pass --kernel {newest}, or bump the board to {kernel} first with `{bump}`"
        ),
        _ => format!("{builds}, not {kernel}: pass --kernel {newest}"),
    }
}

/// `6.12` → (6, 12), for ordering series; unparsable parts count as 0.
fn series_key(v: &str) -> (u32, u32) {
    let mut parts = v.split('.').map(|p| p.parse().unwrap_or(0));
    (parts.next().unwrap_or(0), parts.next().unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn makefile_assignments() {
        assert_eq!(
            make_assignment("KERNEL_PATCHVER:=6.6"),
            Some(("KERNEL_PATCHVER", "6.6"))
        );
        assert_eq!(make_assignment("ARCH ?= mips "), Some(("ARCH", "mips")));
        assert_eq!(make_assignment("\t$(CP) a=b"), None);
    }
}
