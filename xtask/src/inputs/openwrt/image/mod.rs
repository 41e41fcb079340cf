//! One OpenWrt device's kernel image recipe, as the checkout's
//! `target/linux/<board>/image/` Makefiles define it.
//!
//! OpenWrt's include/image.mk expands, for each device, `Device/Init`
//! (defaults such as `KERNEL_NAME := vmlinux`), the board's
//! `Device/Default`, then `Device/<name>` (which pulls in shared
//! definitions with `$(Device/...)` or `$(call Device/...)` and overrides
//! variables), and `Device/Build/kernel` makes `$(KDIR)/<name>-kernel.bin`
//! from `$(KDIR)/$(KERNEL_NAME)` by `$(call concat_cmd,$(KERNEL))`: the
//! `KERNEL` recipe split at `|` into steps, each a `Build/<step>`
//! definition called with the rest of its words as arguments.
//!
//! GNU make itself evaluates all of that here ([`evaluate`]): the board's
//! own image Makefile is read with xtask's stand-ins for rules.mk and
//! include/image.mk (`rules.mk`, `image.mk` beside this file), which expand
//! the device as image.mk does (`Device/Init`'s defaults, `Device/Default`,
//! `Device/<name>`, the recipe's variables made target-specific as
//! `Device/Export` makes them) and, where image.mk's kernel rule runs the
//! steps, print each step, the variables the steps read
//! (`KERNEL_LOADADDR`, `KERNEL_ENTRY`, `DEVICE_DTS`, …) and the unexpanded
//! `Build/<step>` definitions, so that the build can check that each step
//! still means what it implements.

pub mod devices;
pub mod limits;
mod origin;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{bail, Context, Result};

pub use origin::{kernel_origin, Origin};

use super::{Checkout, OpenwrtTarget};
use crate::util::process::run_captured;

/// How long one make run evaluating a board's image Makefiles may take:
/// every device of ath79/generic (386) in seconds; a checkout whose
/// Makefiles loop is stopped, not waited for.
pub const MAKE_TIMEOUT: Duration = Duration::from_secs(300);

/// The stand-in for OpenWrt's rules.mk (see the module docs).
pub const RULES_MK: &str = include_str!("rules.mk");
/// The stand-in for OpenWrt's include/image.mk (see the module docs).
pub const IMAGE_MK: &str = include_str!("image.mk");

/// One step of a `KERNEL` recipe: `uImage lzma` is step `uImage` with
/// arguments `["lzma"]` (image.mk `build_cmd`: `$(call Build/<first
/// word>,<other words>)`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelRecipeStep {
    /// The `Build/<name>` definition the step calls.
    pub name: String,
    /// Its arguments (`$(1)` of the definition), split at white space.
    pub args: Vec<String>,
}

impl fmt::Display for KernelRecipeStep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)?;
        for a in &self.args {
            write!(f, " {a}")?;
        }
        Ok(())
    }
}

/// What make needs besides the checkout to evaluate a device.
#[derive(Debug, Clone)]
pub struct MakeEnv<'a> {
    /// The kernel tree (OpenWrt's `$(LINUX_DIR)`): where `DTS_DIR` and the
    /// DTB include directories are. Only its `.dts` file names are read
    /// during evaluation.
    pub linux_dir: &'a Path,
    /// OpenWrt's `$(LINUX_KARCH)`, the kernel `ARCH` (`mips`, `arm`).
    pub karch: &'a str,
    /// OpenWrt's `$(LINUX_VERSION)`, the full kernel version (`6.12.57`).
    pub linux_version: &'a str,
}

/// Recipe variables that bear on the fit but not on the kernel image (left
/// out of [`DeviceRecipe::fingerprint`]).
pub const FIT_VARS: &[&str] = &[
    "KERNEL_SIZE",
    "IMAGE_SIZE",
    "DEFAULT",
    "BROKEN",
    "IMAGES",
    "BLOCKSIZE",
];

/// A device's kernel recipe as make evaluated it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceRecipe {
    /// The device (`tplink_archer-c6-v3`).
    pub device: String,
    /// Its OpenWrt target.
    pub target: OpenwrtTarget,
    /// The `KERNEL` recipe split into steps, in order.
    pub steps: Vec<KernelRecipeStep>,
    /// Where the `KERNEL` assignment in effect is written, when found.
    pub origin: Option<Origin>,
    /// `KERNEL_NAME`: the file of `$(KDIR)` the first step reads (`vmlinux`,
    /// `zImage`, `vmlinux.lzma`).
    pub kernel_name: String,
    /// `DEVICE_DTS`: the device trees, without `.dts`.
    pub device_dts: Vec<String>,
    /// `$(DTS_DIR)` after the board Makefile's changes (`-I` of the DTB
    /// preprocessor), in the real kernel tree.
    pub dts_dir: PathBuf,
    /// Where `DEVICE_DTS` files are: `DEVICE_DTS_DIR` (relative ones taken
    /// from the board's `image/` directory, as make's working directory
    /// there makes them), else `$(DTS_DIR)`.
    pub dtb_source_dir: PathBuf,
    /// Every recipe variable make printed (`KERNEL_LOADADDR`, `UIMAGE_NAME`,
    /// …), empty ones included.
    pub vars: BTreeMap<String, String>,
    /// Unexpanded definitions (`Build/<step>`, `Build/lzma-no-dict`,
    /// `Image/Prepare`), as `$(value …)` gives them; empty when undefined.
    pub definitions: BTreeMap<String, String>,
    /// The device's `IMAGES` with each one's `IMAGE/<image>` recipe as
    /// expanded when the device was (where `check-size` applies
    /// `IMAGE_SIZE`, [`limits`]).
    pub images: BTreeMap<String, String>,
    /// The checkout's definitions of the image steps xtask sizes
    /// (`Build/append-rootfs` …, unexpanded), which
    /// kernel_build/openwrt_image/image_recipes.rs checks; not part of
    /// the kernel image's [`DeviceRecipe::fingerprint`].
    pub image_definitions: BTreeMap<String, String>,
    /// The board's image directory in the checkout
    /// (`target/linux/ramips/image`): make's working directory for the
    /// recipe's steps (`lzma-loader`, `../../generic/image/relocate`).
    pub image_dir: PathBuf,
}

impl DeviceRecipe {
    /// A recipe variable; `None` when empty or not printed.
    pub fn var(&self, name: &str) -> Option<&str> {
        self.vars
            .get(name)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }

    /// The same recipe for the kernel tree at `new` instead of `old`
    /// (`dts_dir` and `dtb_source_dir` inside `old` are moved).
    pub fn with_linux_dir(&self, old: &Path, new: &Path) -> DeviceRecipe {
        let move_path = |p: &Path| match p.strip_prefix(old) {
            Ok(rest) => new.join(rest),
            Err(_) => p.to_path_buf(),
        };
        DeviceRecipe {
            dts_dir: move_path(&self.dts_dir),
            dtb_source_dir: move_path(&self.dtb_source_dir),
            ..self.clone()
        }
    }

    /// The `KERNEL` recipe as written after expansion (`kernel-bin | lzma`).
    pub fn recipe(&self) -> String {
        self.steps
            .iter()
            .map(KernelRecipeStep::to_string)
            .collect::<Vec<_>>()
            .join(" | ")
    }

    /// Where the recipe comes from, for messages: `file:line` or the board's
    /// image directory.
    pub fn origin_text(&self) -> String {
        match &self.origin {
            Some(o) => o.to_string(),
            None => format!(
                "target/linux/{}/image (Device/{} and what it includes)",
                self.target.board, self.device
            ),
        }
    }

    /// One line naming everything that makes the image, for the build key:
    /// device, steps, `KERNEL_NAME`, the variables (but the limits and
    /// flags of [`FIT_VARS`], which do not change the image) and the
    /// definitions.
    pub fn fingerprint(&self) -> String {
        let mut s = format!(
            "device={} target={} kernel={} name={} dts={}",
            self.device,
            self.target,
            self.recipe(),
            self.kernel_name,
            self.device_dts.join(",")
        );
        let image_only = |k: &str| FIT_VARS.contains(&k);
        for (k, v) in self
            .vars
            .iter()
            .filter(|(k, _)| !image_only(k))
            .chain(&self.definitions)
        {
            s.push_str(&format!("\n{k}={v}"));
        }
        s
    }
}

/// Evaluates `device`'s kernel recipe in `checkout` for `target` with GNU
/// make (see the module docs).
///
/// `TOPDIR` and `INCLUDE_DIR` point at the stand-ins; `BOARD`, `SUBTARGET`,
/// `CONFIG_TARGET_<board>=y` and `CONFIG_TARGET_<board>_<subtarget>=y`
/// (which board Makefiles test, e.g. ramips' `loadaddr-$(CONFIG_TARGET_ramips_mt7621)`),
/// `LINUX_DIR`, `LINUX_KARCH`, `LINUX_VERSION` are set on make's command
/// line. `$(wildcard $(DTS_DIR)/*.dtb)` in a recipe (bcm53xx finds its
/// `DEVICE_DTS` that way, among the DTBs the kernel's `make dtbs` wrote)
/// sees a `<name>.dtb` for every `<name>.dts` of the kernel tree: make runs
/// with `LINUX_DIR` set to a scratch copy of `arch/<karch>/boot/dts` holding
/// those names, and paths in it are mapped back to `env.linux_dir`.
///
/// Errors: the device is not in the subtarget's `TARGET_DEVICES` (the
/// message lists them), make fails (its stderr is included), or its output
/// lacks a variable.
pub fn evaluate(
    checkout: &Checkout,
    target: &OpenwrtTarget,
    device: &str,
    env: &MakeEnv<'_>,
) -> Result<DeviceRecipe> {
    let run = MakeRun::run(checkout, target, env, &format!("XTASK_DEVICE={device}"))?;
    if let Some(devices) = &run.printed.devices {
        if !devices.iter().any(|d| d == device) {
            bail!(
                "OpenWrt target {target} has no device {device:?} (not in TARGET_DEVICES of {}); \
                 its devices: {}",
                run.image_dir.display(),
                devices.join(" ")
            );
        }
    }
    run.ensure_success(&format!("device {device}"))?;
    let printed = run
        .printed
        .per_device
        .get(device)
        .cloned()
        .unwrap_or_default();
    run.recipe(device, printed)
}

/// One make run of the board's image Makefile with the stand-ins.
pub(crate) struct MakeRun<'a> {
    pub(crate) target: &'a OpenwrtTarget,
    pub(crate) env: &'a MakeEnv<'a>,
    pub(crate) image_dir: PathBuf,
    /// The scratch copy of the kernel tree's `.dts` names (`LINUX_DIR`).
    names: PathBuf,
    pub(crate) status: std::process::ExitStatus,
    pub(crate) stderr: String,
    pub(crate) printed: Printed,
    _scratch: tempfile::TempDir,
}

impl<'a> MakeRun<'a> {
    /// Runs make (see [`evaluate`]) with `select` (`XTASK_DEVICE=<name>` or
    /// `XTASK_ALL_DEVICES=1`) on its command line.
    pub(crate) fn run(
        checkout: &Checkout,
        target: &'a OpenwrtTarget,
        env: &'a MakeEnv<'a>,
        select: &str,
    ) -> Result<MakeRun<'a>> {
        let image_dir = checkout.board_dir(&target.board).join("image");
        anyhow::ensure!(
            image_dir.join("Makefile").is_file(),
            "OpenWrt target {target}: {} has no Makefile",
            image_dir.display()
        );
        let scratch = tempfile::tempdir().context("creating a scratch directory for make")?;
        let stub = scratch.path().join("include");
        std::fs::create_dir(&stub).with_context(|| format!("creating {}", stub.display()))?;
        std::fs::write(stub.join("rules.mk"), RULES_MK).context("writing the rules.mk stand-in")?;
        std::fs::write(stub.join("image.mk"), IMAGE_MK).context("writing the image.mk stand-in")?;
        let names = scratch.path().join("linux");
        let dts_rel = Path::new("arch").join(env.karch).join("boot/dts");
        mirror_dtb_names(&env.linux_dir.join(&dts_rel), &names.join(&dts_rel))?;
        let kdir = scratch.path().join("kdir");

        let board = &target.board;
        let mut vars = vec![
            format!("TOPDIR={}", stub.display()),
            format!("INCLUDE_DIR={}", stub.display()),
            format!("XTASK_CHECKOUT={}", checkout.root().display()),
            select.to_string(),
            format!("BOARD={board}"),
            format!("CONFIG_TARGET_{board}=y"),
            format!("CONFIG_TARGET_BOARD=\"{board}\""),
            format!("LINUX_DIR={}", names.display()),
            format!("LINUX_KARCH={}", env.karch),
            format!("LINUX_VERSION={}", env.linux_version),
            format!("KERNEL_BUILD_DIR={}", kdir.display()),
        ];
        if let Some(sub) = &target.subtarget {
            vars.push(format!("SUBTARGET={sub}"));
            vars.push(format!("CONFIG_TARGET_{board}_{sub}=y"));
        }
        let mut make = Command::new("make");
        make.args(["-s", "--no-print-directory", "-C"])
            .arg(&image_dir)
            .args(["-f", "Makefile"])
            .args(&vars)
            .arg("xtask-done")
            .env_remove("MAKEFLAGS")
            .env_remove("MFLAGS")
            .env_remove("MAKELEVEL");
        let output = run_captured(
            make,
            "make (GNU make) evaluating OpenWrt's image Makefiles",
            "is make installed? (`cargo xtask setup`)",
            MAKE_TIMEOUT,
        )?;
        Ok(MakeRun {
            target,
            env,
            image_dir,
            names,
            status: output.status,
            stderr: output.stderr.trim().to_string(),
            printed: parse_output(&output.stdout),
            _scratch: scratch,
        })
    }

    /// Errors when make failed or printed no device list; `what` names
    /// what was evaluated.
    pub(crate) fn ensure_success(&self, what: &str) -> Result<()> {
        if !self.status.success() || self.printed.devices.is_none() {
            bail!(
                "make could not evaluate {}/Makefile for {what} ({}): {}",
                self.image_dir.display(),
                self.status,
                self.stderr
            );
        }
        Ok(())
    }

    /// `device`'s recipe from what make printed for it.
    pub(crate) fn recipe(&self, device: &str, printed: DevicePrinted) -> Result<DeviceRecipe> {
        let target = self.target;
        let get =
            |name: &str| -> Result<String> {
                printed.vars.get(name).cloned().with_context(|| {
                    format!("make printed no {name} for device {device} of {target}")
                })
            };
        let remap = |printed: &str| -> PathBuf {
            match Path::new(printed).strip_prefix(&self.names) {
                Ok(rest) => self.env.linux_dir.join(rest),
                Err(_) => self.image_dir.join(printed),
            }
        };
        let dts_dir = remap(&get("DTS_DIR")?);
        let dtb_source_dir = remap(&get("DTB_SOURCE_DIR")?);
        let kernel_name = get("KERNEL_NAME")?;
        let device_dts = get("DEVICE_DTS")?
            .split_whitespace()
            .map(str::to_string)
            .collect();
        // Paths of this run's scratch directory stay out of `vars` (and so of
        // the fingerprint); they are in the fields above.
        let mut vars = printed.vars;
        for scratch_var in ["DTS_DIR", "DTB_SOURCE_DIR", "KERNEL_NAME"] {
            vars.remove(scratch_var);
        }
        Ok(DeviceRecipe {
            device: device.to_string(),
            target: target.clone(),
            steps: printed.steps,
            origin: kernel_origin(&self.image_dir, device)?,
            kernel_name,
            device_dts,
            dts_dir,
            dtb_source_dir,
            vars,
            definitions: printed.definitions,
            images: printed.images,
            image_definitions: self.printed.image_definitions.clone(),
            image_dir: self.image_dir.clone(),
        })
    }
}

/// What the stand-in printed.
#[derive(Debug, Default)]
pub(crate) struct Printed {
    pub(crate) devices: Option<Vec<String>>,
    /// By device, in the order make expanded them.
    pub(crate) per_device: BTreeMap<String, DevicePrinted>,
    pub(crate) order: Vec<String>,
    /// `XTASK IDEF` lines: the image steps' definitions.
    pub(crate) image_definitions: BTreeMap<String, String>,
}

/// What the stand-in printed for one device.
#[derive(Debug, Default, Clone)]
pub(crate) struct DevicePrinted {
    pub(crate) vars: BTreeMap<String, String>,
    pub(crate) steps: Vec<KernelRecipeStep>,
    pub(crate) definitions: BTreeMap<String, String>,
    pub(crate) images: BTreeMap<String, String>,
}

/// Reads the `XTASK …` lines (see image.mk beside this file): each line
/// after `XTASK DEVICE <name>` is that device's.
fn parse_output(stdout: &str) -> Printed {
    let mut p = Printed::default();
    let mut current = String::new();
    for line in stdout.lines() {
        let Some(rest) = line.strip_prefix("XTASK ") else {
            continue;
        };
        if let Some(devices) = rest
            .strip_prefix("DEVICES ")
            .or((rest == "DEVICES").then_some(""))
        {
            p.devices = Some(devices.split_whitespace().map(str::to_string).collect());
            continue;
        }
        if let Some((k, v)) = rest.strip_prefix("IDEF ").and_then(|r| r.split_once('=')) {
            p.image_definitions
                .insert(k.to_string(), v.replace("\\n", "\n").trim().to_string());
            continue;
        }
        if let Some(name) = rest.strip_prefix("DEVICE ") {
            current = name.trim().to_string();
            if !p.per_device.contains_key(&current) {
                p.order.push(current.clone());
            }
            p.per_device.entry(current.clone()).or_default();
            continue;
        }
        let d = p.per_device.entry(current.clone()).or_default();
        if let Some((k, v)) = rest.strip_prefix("VAR ").and_then(|r| r.split_once('=')) {
            d.vars.insert(k.to_string(), v.trim().to_string());
        } else if let Some((k, v)) = rest.strip_prefix("DEF ").and_then(|r| r.split_once('=')) {
            d.definitions
                .insert(k.to_string(), v.replace("\\n", "\n").trim().to_string());
        } else if let Some((k, v)) = rest.strip_prefix("IMAGE ").and_then(|r| r.split_once('=')) {
            d.images
                .insert(k.to_string(), v.replace("\\n", "\n").trim().to_string());
        } else if let Some(step) = rest.strip_prefix("STEP ") {
            let mut words = step.split_whitespace().map(str::to_string);
            if let Some(name) = words.next() {
                d.steps.push(KernelRecipeStep {
                    name,
                    args: words.collect(),
                });
            }
        }
    }
    p
}

/// Writes an empty `<name>.dtb` under `to` for every `<name>.dts` under
/// `from` (same subdirectories); nothing when `from` does not exist.
fn mirror_dtb_names(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to).with_context(|| format!("creating {}", to.display()))?;
    if !from.is_dir() {
        return Ok(());
    }
    for entry in walkdir::WalkDir::new(from).follow_links(false) {
        let entry = entry.with_context(|| format!("reading {}", from.display()))?;
        let path = entry.path();
        if !entry.file_type().is_file() || path.extension().is_none_or(|e| e != "dts") {
            continue;
        }
        let rel = path
            .strip_prefix(from)
            .unwrap_or(path)
            .with_extension("dtb");
        let dest = to.join(rel);
        if let Some(parent) = dest.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
        }
        std::fs::write(&dest, b"").with_context(|| format!("writing {}", dest.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn printed_lines() {
        let out = "noise\nXTASK DEVICES a b\nXTASK DEVICE a\nXTASK VAR KERNEL=kernel-bin | lzma\n\
                   XTASK VAR KERNEL_ENTRY=\nXTASK STEP uImage lzma -M 0x1\n\
                   XTASK DEF Build/x=\tcp $< $@\\n\tmv a b\nXTASK DEVICE b\nXTASK VAR KERNEL=x\n";
        let all = parse_output(out);
        assert_eq!(all.order, ["a", "b"]);
        assert_eq!(all.per_device["b"].vars["KERNEL"], "x");
        let p = &all.per_device["a"];
        assert_eq!(all.devices, Some(vec!["a".to_string(), "b".to_string()]));
        assert_eq!(p.vars["KERNEL"], "kernel-bin | lzma");
        assert_eq!(p.vars["KERNEL_ENTRY"], "");
        assert_eq!(
            p.steps,
            vec![KernelRecipeStep {
                name: "uImage".into(),
                args: vec!["lzma".into(), "-M".into(), "0x1".into()]
            }]
        );
        assert_eq!(p.definitions["Build/x"], "cp $< $@\n\tmv a b");
    }
}
