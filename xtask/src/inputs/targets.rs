//! Build targets: `targets/<name>.toml`, one file per target.
//!
//! A target names an OpenWrt target/subtarget, the kernel ARCH and cross
//! compiler, a kconfig base plus fragments, what `make` builds and which
//! artifacts are measured. See `targets/bcm53xx.toml` for a commented example.

use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde::Deserialize;

use crate::inputs::kernel_source::{self, SourceInput};

/// One image or file a build produces and measures.
///
/// Names (as written in target files and `result.json`) follow OpenWrt's
/// `$(KDIR)` conventions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize)]
pub enum Artifact {
    /// The ELF kernel, `vmlinux` in the build directory.
    #[serde(rename = "vmlinux")]
    Vmlinux,
    /// `vmlinux` as a raw binary, stripped as OpenWrt's `kernel_defaults.mk`
    /// does (`objcopy -O binary -R .reginfo -R .notes -R .note -R .comment
    /// -R .mdebug -R .note.gnu.build-id -S`).
    #[serde(rename = "vmlinux.bin")]
    VmlinuxBin,
    /// `vmlinux.bin` compressed as OpenWrt's `Build/lzma` does
    /// (LZMA "alone" format, lc=1 lp=2 pb=2, 8 MiB dictionary: the LZMA SDK default).
    #[serde(rename = "vmlinux.lzma")]
    VmlinuxLzma,
    /// The kernel's own self-decompressing ARM image, `arch/arm/boot/zImage`.
    #[serde(rename = "zImage")]
    ZImage,
    /// A U-Boot legacy image (`mkimage -C lzma`) wrapping `vmlinux.lzma`.
    #[serde(rename = "uImage")]
    UImage,
}

impl Artifact {
    /// The file name used in results directories and reports.
    pub fn file_name(self) -> &'static str {
        match self {
            Artifact::Vmlinux => "vmlinux",
            Artifact::VmlinuxBin => "vmlinux.bin",
            Artifact::VmlinuxLzma => "vmlinux.lzma",
            Artifact::ZImage => "zImage",
            Artifact::UImage => "uImage",
        }
    }
}

impl fmt::Display for Artifact {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.file_name())
    }
}

/// Kconfig inputs: a base (a `make` config target such as `multi_v7_defconfig`
/// or `tinyconfig`) and fragment files from `targets/`, merged in order.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KconfigSpec {
    /// The `make` target that writes the base `.config`.
    pub base: String,
    /// Fragment file names relative to `targets/`, applied in order.
    #[serde(default)]
    pub fragments: Vec<String>,
}

/// U-Boot legacy image parameters (`mkimage -a LOAD -e ENTRY`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UImageSpec {
    /// Load address, e.g. `"0x80001000"`, as in the kernel's `load-y`.
    pub load_address: String,
    /// ELF symbol whose address is the entry point (`kernel_entry` on MIPS).
    #[serde(default = "default_entry_symbol")]
    pub entry_symbol: String,
    /// Image name written into the header (`mkimage -n`).
    #[serde(default = "default_uimage_name")]
    pub name: String,
}

fn default_entry_symbol() -> String {
    "kernel_entry".to_string()
}

fn default_uimage_name() -> String {
    "Linux".to_string()
}

/// A parsed `targets/<name>.toml`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Target {
    /// The file stem; the name used on the command line and in results paths.
    #[serde(skip)]
    pub name: String,
    /// Where this target was read from.
    #[serde(skip)]
    pub file: PathBuf,
    /// OpenWrt's `target/subtarget`, e.g. `ramips/mt7621`; also accepted by `--target`.
    pub openwrt: String,
    /// Other names accepted by `--target` (e.g. `ar71xx` for `ath79`).
    #[serde(default)]
    pub aliases: Vec<String>,
    /// The one OpenWrt device (a `TARGET_DEVICES` name of the subtarget,
    /// e.g. `tplink_archer-c6-v3`) whose kernel image (its `KERNEL :=`
    /// recipe) OpenWrt mode makes and measures; `None`: no device image.
    #[serde(default)]
    pub openwrt_device: Option<String>,
    /// SoC or board for report headings, e.g. `BCM47094`.
    pub soc: String,
    /// One line describing the CPU, e.g. `ARM Cortex-A9 (SMP)`.
    pub cpu: String,
    /// Kernel `ARCH=`.
    pub arch: String,
    /// Kernel `CROSS_COMPILE=` prefix, e.g. `mips-linux-gnu-`.
    pub cross_compile: String,
    /// Debian package providing `<cross_compile>gcc`.
    pub compiler_package: String,
    /// Kernel version series, `6.12` or `6.1`.
    pub kernel: String,
    /// Whether `--target all` includes this target (the tiny profiles say no).
    #[serde(default = "default_true")]
    pub in_all: bool,
    /// Base config and fragments.
    pub kconfig: KconfigSpec,
    /// `make` goals besides `vmlinux`, e.g. `["zImage"]`.
    #[serde(default)]
    pub make_targets: Vec<String>,
    /// What to measure and keep in the results directory.
    pub artifacts: Vec<Artifact>,
    /// Needed when `artifacts` has `uImage`.
    pub uimage: Option<UImageSpec>,
    /// The QEMU router lab for this target (`cargo xtask lab`), if any.
    pub lab: Option<crate::inputs::lab::LabSpec>,
}

fn default_true() -> bool {
    true
}

impl Target {
    /// Errors unless Linux `version` (from `input`) is in the series
    /// it builds (`kernel = "6.12"`): another series would be
    /// built with other patches into the target's results directory, replacing
    /// its results under the same name. The message names the source, its
    /// version, the target file's `kernel =` and the fixes.
    pub fn ensure_series(&self, input: &SourceInput, version: &str) -> Result<()> {
        let series = kernel_source::series_of(version);
        if series == self.kernel {
            return Ok(());
        }
        let (SourceInput::Tarball(path) | SourceInput::Tree(path)) = input;
        bail!(
            "kernel source {} is Linux {version}, but {} says kernel = \"{}\"; its results would \
             replace target {}'s Linux {} results. Pass --kernel-src with a Linux {} tarball or tree \
             (or leave it out for {}), or, to measure Linux {series}, set kernel = \"{series}\" in \
             {} (or in a copy of it under another name)",
            path.display(),
            self.file.display(),
            self.kernel,
            self.name,
            self.kernel,
            self.kernel,
            kernel_source::default_tarball(&self.kernel).display(),
            self.file.display(),
        )
    }

    /// Reads and validates one target file. The target's name is the file stem.
    ///
    /// Errors name the file and what is wrong (unknown key, missing fragment,
    /// `uImage` without `[uimage]`).
    pub fn load(file: &Path) -> Result<Target> {
        let limit = crate::util::fs::FileLimit {
            what: "target file",
            max_bytes: crate::util::fs::MAX_INPUT_BYTES,
        };
        let text = crate::util::fs::read_limited(file, limit, "restore it from git")?;
        let mut target: Target = toml_edit::de::from_str(&text)
            .with_context(|| format!("{}: not a valid target file", file.display()))?;
        target.name = file
            .file_stem()
            .and_then(|s| s.to_str())
            .with_context(|| format!("{}: file name is not UTF-8", file.display()))?
            .to_string();
        target.file = file.to_path_buf();
        target
            .check_fields()
            .with_context(|| format!("{}: refusing this target file", file.display()))?;
        if target.artifacts.contains(&Artifact::UImage) && target.uimage.is_none() {
            bail!(
                "{}: artifacts lists \"uImage\" but there is no [uimage] table; add one with load_address",
                file.display()
            );
        }
        if !target.cross_compile.ends_with('-') {
            bail!(
                "{}: cross_compile = {:?} should end in '-' (e.g. \"mips-linux-gnu-\")",
                file.display(),
                target.cross_compile
            );
        }
        let dir = file.parent().unwrap_or(Path::new("."));
        for fragment in &target.kconfig.fragments {
            if !dir.join(fragment).is_file() {
                bail!(
                    "{}: kconfig fragment {:?} does not exist in {}",
                    file.display(),
                    fragment,
                    dir.display()
                );
            }
        }
        if let Some(lab) = &target.lab {
            lab.validate(file, &target.kconfig.fragments)?;
        }
        Ok(target)
    }

    /// Checks every field that reaches make's command line or a path
    /// ([`check_plain`]), the kernel series, and the fragments' paths.
    fn check_fields(&self) -> Result<()> {
        check_plain("the file name", &self.name, "._-")?;
        check_plain("openwrt", &self.openwrt, "._-/")?;
        if self.openwrt.split('/').count() != 2 {
            bail!(
                "openwrt = {:?}: write OpenWrt's target/subtarget, e.g. \"ramips/mt7621\"",
                self.openwrt
            );
        }
        for alias in &self.aliases {
            check_plain("aliases", alias, "._-/")?;
        }
        if let Some(device) = &self.openwrt_device {
            check_plain("openwrt_device", device, "._-")?;
        }
        check_plain("arch", &self.arch, "_")?;
        check_plain("cross_compile", &self.cross_compile, "._-/+")?;
        check_plain("compiler_package", &self.compiler_package, ".+-")?;
        kernel_source::check_series(&self.kernel, "kernel")?;
        check_plain("kconfig.base", &self.kconfig.base, "._-")?;
        for fragment in &self.kconfig.fragments {
            if let Some(why) = crate::util::path::unsafe_reason(Path::new(fragment)) {
                bail!("kconfig.fragments: {fragment:?} ({why}); name a file under targets/");
            }
        }
        for goal in &self.make_targets {
            check_plain("make_targets", goal, "._-/")?;
        }
        if let Some(u) = &self.uimage {
            let hex = u.load_address.strip_prefix("0x").unwrap_or("");
            if hex.is_empty() || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                bail!(
                    "uimage.load_address = {:?}: write a hex address such as \"0x80001000\"",
                    u.load_address
                );
            }
            check_plain("uimage.entry_symbol", &u.entry_symbol, "_")?;
            if u.name.chars().any(char::is_control) {
                bail!("uimage.name = {:?} contains a control character", u.name);
            }
        }
        Ok(())
    }

    /// Absolute paths of the kconfig fragments, in merge order.
    pub fn fragment_paths(&self) -> Vec<PathBuf> {
        let dir = self.file.parent().unwrap_or(Path::new("."));
        self.kconfig.fragments.iter().map(|f| dir.join(f)).collect()
    }

    /// `<cross_compile>gcc`.
    pub fn cc(&self) -> String {
        format!("{}gcc", self.cross_compile)
    }

    /// Whether `spelling` names this target: its name, an alias, or OpenWrt's
    /// `target/subtarget` (`ramips/mt7621`), or the target alone when the
    /// OpenWrt subtarget is `generic` (`bcm53xx` for `bcm53xx/generic`).
    pub fn is_named(&self, spelling: &str) -> bool {
        spelling == self.name
            || self.aliases.iter().any(|a| a == spelling)
            || spelling == self.openwrt
            || spelling.replace('/', "-") == self.name
    }
}

pub use crate::util::path::check_plain;

/// `cargo xtask targets`: one line per target: name, SoC, ARCH, cross
/// prefix, and every spelling `--target` accepts.
pub fn print_list(targets_dir: &Path) -> Result<()> {
    for t in load_all(targets_dir)? {
        let mut names = vec![t.openwrt.clone()];
        names.extend(t.aliases.iter().cloned());
        println!(
            "{:<16} {:<10} {:<4} {:<20} {}{}",
            t.name,
            t.soc,
            t.arch,
            t.cross_compile,
            names.join(", "),
            if t.in_all { "" } else { "  (not in `all`)" }
        );
    }
    Ok(())
}

/// Every target in `targets/`, sorted by name.
pub fn load_all(targets_dir: &Path) -> Result<Vec<Target>> {
    let mut targets = Vec::new();
    let entries = std::fs::read_dir(targets_dir)
        .with_context(|| format!("reading {}", targets_dir.display()))?;
    for entry in entries {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "toml") {
            targets.push(Target::load(&path)?);
        }
    }
    targets.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(targets)
}

/// Resolves `--target` spellings to targets, in the order given, without
/// duplicates. `all` means every target with `in_all = true`.
///
/// An unknown spelling is an error listing the known names.
pub fn select(all: &[Target], spellings: &[String]) -> Result<Vec<Target>> {
    let mut chosen: Vec<Target> = Vec::new();
    let mut push = |t: &Target| {
        if !chosen.iter().any(|c| c.name == t.name) {
            chosen.push(t.clone());
        }
    };
    for spelling in spellings {
        if spelling == "all" {
            all.iter().filter(|t| t.in_all).for_each(&mut push);
            continue;
        }
        match all.iter().find(|t| t.is_named(spelling)) {
            Some(t) => push(t),
            None => {
                let known: Vec<String> = all
                    .iter()
                    .map(|t| {
                        let mut names = vec![t.name.clone(), t.openwrt.clone()];
                        names.extend(t.aliases.iter().cloned());
                        names.dedup();
                        names.join(" | ")
                    })
                    .collect();
                bail!(
                    "unknown target {spelling:?}; known targets: {}, or `all`",
                    known.join(", ")
                );
            }
        }
    }
    Ok(chosen)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_that_reach_make_or_a_path_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let good = "openwrt = \"x/y\"\nsoc = \"s\"\ncpu = \"c\"\narch = \"arm\"\n\
                    cross_compile = \"arm-linux-gnueabi-\"\ncompiler_package = \"gcc-arm-linux-gnueabi\"\n\
                    kernel = \"6.12\"\nmake_targets = [\"zImage\"]\nartifacts = [\"vmlinux\"]\n\
                    [kconfig]\nbase = \"allnoconfig\"\n";
        let file = dir.path().join("t.toml");
        std::fs::write(&file, good).unwrap();
        Target::load(&file).unwrap();
        for (from, to, needle) in [
            (
                "[\"zImage\"]",
                "[\"KCFLAGS=$(shell touch x)\"]",
                "make_targets",
            ),
            ("[\"zImage\"]", "[\"-f/tmp/evil.mk\"]", "starts with '-'"),
            ("\"x/y\"", "\"../../x\"", "openwrt"),
            ("\"6.12\"", "\"6.12/../../x\"", "not a kernel series"),
            ("\"arm-linux-gnueabi-\"", "\"$(shell x)-\"", "cross_compile"),
            ("\"allnoconfig\"", "\"all noconfig\"", "kconfig.base"),
            ("\"arm\"", "\"arm KBUILD_CFLAGS=x\"", "arch"),
        ] {
            std::fs::write(&file, good.replace(from, to)).unwrap();
            let err = format!("{:#}", Target::load(&file).unwrap_err());
            assert!(err.contains(needle), "{to}: {err}");
            assert!(err.contains("t.toml"), "{err}");
        }
    }

    fn project_targets() -> Vec<Target> {
        load_all(&crate::util::layout::Layout::from_manifest_dir().targets_dir()).unwrap()
    }

    #[test]
    fn every_target_file_loads() {
        let targets = project_targets();
        for name in ["bcm53xx", "brcm47xx", "ramips-mt7621", "ath79"] {
            assert!(targets.iter().any(|t| t.name == name), "missing {name}");
        }
    }

    #[test]
    fn openwrt_spellings_and_aliases_resolve() {
        let targets = project_targets();
        let pick = |s: &str| select(&targets, &[s.to_string()]).unwrap()[0].name.clone();
        assert_eq!(pick("ramips/mt7621"), "ramips-mt7621");
        assert_eq!(pick("ar71xx"), "ath79");
        assert_eq!(pick("ath79/generic"), "ath79");
        let err = select(&targets, &["ar7xx".to_string()]).unwrap_err();
        assert!(err.to_string().contains("ath79"), "{err}");
    }

    #[test]
    fn all_excludes_tiny_profiles() {
        let targets = project_targets();
        let all = select(&targets, &["all".to_string()]).unwrap();
        assert_eq!(
            all.len(),
            4,
            "{:?}",
            all.iter().map(|t| &t.name).collect::<Vec<_>>()
        );
        assert!(all.iter().all(|t| t.in_all));
    }

    /// `[lab] max_cpus` is what the lab kernel's fragments build: more
    /// than one only with `CONFIG_SMP=y` and at most `CONFIG_NR_CPUS`
    /// (the last setting of each in the lab's fragments, after the
    /// target's own, as they merge).
    #[test]
    fn max_cpus_is_what_the_lab_kernel_boots() {
        let dir = crate::util::layout::Layout::from_manifest_dir().targets_dir();
        for t in project_targets() {
            let Some(lab) = &t.lab else { continue };
            let mut smp = false;
            let mut nr = 1u32;
            let kept = t
                .kconfig
                .fragments
                .iter()
                .filter(|f| !lab.replace_fragments.contains(f));
            for f in kept.chain(&lab.fragments) {
                let text = std::fs::read_to_string(dir.join(f)).unwrap();
                for line in text.lines() {
                    match line.trim() {
                        "CONFIG_SMP=y" => smp = true,
                        "# CONFIG_SMP is not set" => smp = false,
                        l => {
                            if let Some(n) = l.strip_prefix("CONFIG_NR_CPUS=") {
                                nr = n.parse().unwrap();
                            }
                        }
                    }
                }
            }
            let boots = if smp { nr } else { 1 };
            assert!(
                lab.max_cpus <= boots,
                "{}: [lab] max_cpus = {} but its lab kernel boots {boots}",
                t.name,
                lab.max_cpus
            );
            assert!(lab.cpus <= lab.max_cpus, "{}", t.name);
        }
        let two: Vec<_> = project_targets()
            .into_iter()
            .filter(|t| t.lab.as_ref().is_some_and(|l| l.max_cpus == 2))
            .map(|t| t.name)
            .collect();
        assert_eq!(two, ["bcm53xx", "ramips-mt7621"]);
    }

    /// ARM routers' kernels and their lab kernels are built in ARM mode,
    /// as OpenWrt builds them: `make allnoconfig` leaves
    /// `CONFIG_THUMB2_KERNEL=y` behind (a Thumb-only no-MMU CPU), so a
    /// fragment of each must turn it off, after any that could turn it on.
    /// arm-tiny, a no-MMU build test, is not a router.
    #[test]
    fn arm_router_kernels_are_built_in_arm_mode() {
        let dir = crate::util::layout::Layout::from_manifest_dir().targets_dir();
        let thumb2_off = |files: &[&String]| {
            let mut off = false;
            for f in files {
                for line in std::fs::read_to_string(dir.join(f)).unwrap().lines() {
                    match line.trim() {
                        "# CONFIG_THUMB2_KERNEL is not set" => off = true,
                        "CONFIG_THUMB2_KERNEL=y" => off = false,
                        _ => {}
                    }
                }
            }
            off
        };
        let arm: Vec<Target> = project_targets()
            .into_iter()
            .filter(|t| t.arch == "arm" && t.name != "arm-tiny")
            .collect();
        assert!(!arm.is_empty());
        for t in arm {
            let router: Vec<&String> = t.kconfig.fragments.iter().collect();
            assert!(
                thumb2_off(&router),
                "{}: its fragments build a Thumb-2 kernel",
                t.name
            );
            if let Some(lab) = &t.lab {
                let kept = t
                    .kconfig
                    .fragments
                    .iter()
                    .filter(|f| !lab.replace_fragments.contains(f));
                let files: Vec<&String> = kept.chain(&lab.fragments).collect();
                assert!(
                    thumb2_off(&files),
                    "{}: its lab kernel is built Thumb-2",
                    t.name
                );
            }
        }
    }
}
