//! The kernel image OpenWrt makes for one device (`$(KDIR)/<device>-kernel.bin`,
//! include/image.mk `Device/Build/kernel`), made from a finished OpenWrt-mode
//! kernel build.
//!
//! The target file's `openwrt_device` names the device; its recipe comes from
//! the checkout, evaluated by GNU make ([`crate::inputs::openwrt::image`]).
//! Then, as OpenWrt does:
//!
//! 1. `$(KDIR)/$(KERNEL_NAME)`, the recipe's input ([`kernel_input`]):
//!    `vmlinux` is the ELF made binary (`objcopy -O binary` with
//!    `OBJCOPY_STRIP`, include/kernel-defaults.mk `Kernel/CopyImage`); a
//!    file of `arch/<karch>/boot/` (`zImage`) is copied from there, as
//!    `Kernel/CopyImage` copies each `KERNELNAME` image; `vmlinux.lzma` is
//!    bcm47xx's `Image/Prepare` (`lzma e -si -so -eos -lc1 -lp2 -pb2` of
//!    `$(KDIR)/vmlinux`);
//! 2. `$(KDIR)/image-<dts>.dtb` for each of `DEVICE_DTS` ([`dtb`]);
//! 3. the recipe's steps in order on `<device>-kernel.bin` ([`steps`]).
//!
//! The image is recorded as the artifact [`artifact_name`] next to the
//! target's other artifacts.

mod device_trees;
pub mod dtb;
pub mod fit;
pub mod image_recipes;
pub mod loader;
pub mod lzma_prefix;
pub mod lzma_sdk;
mod parallel;
pub mod steps;
pub mod tree;

pub use tree::KernelTree;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use xshell::{cmd, Shell};

use crate::inputs::openwrt::image::{self, DeviceRecipe, MakeEnv};
use crate::inputs::openwrt::{Checkout, OpenwrtTarget};
use crate::inputs::targets::Target;
use crate::kernel_build::artifacts::{lzma_alone, OBJCOPY_STRIP, OPENWRT_LZMA};
use crate::kernel_build::plan::Unevaluated;
use crate::results::{ArtifactRecord, PatchRecord};
use crate::util::hash::sha256_bytes;

/// The artifact name of `device`'s kernel image: OpenWrt's own
/// `$(KDIR)/<device>$(KERNEL_SUFFIX)` (`-kernel.bin`, image.mk `Device/Init`).
pub fn artifact_name(device: &str) -> String {
    format!("{device}-kernel.bin")
}

/// `target`'s device recipe when its file names an `openwrt_device`
/// (else `None`), evaluated in `checkout` for the kernel tree `linux_dir`
/// ([`image::evaluate`]) and checked ([`check`]), so that a recipe xtask
/// cannot make stops the build before the kernel is built.
pub fn plan(
    checkout: &Checkout,
    openwrt_target: &OpenwrtTarget,
    target: &Target,
    linux_dir: &Path,
    linux_version: &str,
) -> Result<Option<DeviceRecipe>> {
    let Some(device) = &target.openwrt_device else {
        return Ok(None);
    };
    let env = MakeEnv {
        linux_dir,
        karch: &target.arch,
        linux_version,
    };
    let recipe = image::evaluate(checkout, openwrt_target, device, &env)
        .and_then(|r| check(&r, &target.make_targets).map(|()| r))
        .with_context(|| format!("{} says openwrt_device = {device:?}", target.file.display()))?;
    Ok(Some(recipe))
}

/// Checks that xtask can make `recipe` from a kernel build of
/// `make_targets` (besides `vmlinux`): every step is implemented and the
/// checkout defines it as implemented ([`steps::check_definition`]), and
/// `KERNEL_NAME` is `vmlinux`, `vmlinux.lzma` or one of `make_targets`.
///
/// Errors name the device, the recipe's `file:line` and what is missing.
pub fn check(recipe: &DeviceRecipe, make_targets: &[String]) -> Result<()> {
    anyhow::ensure!(
        !recipe.steps.is_empty(),
        "device {} ({}): the KERNEL recipe is empty",
        recipe.device,
        recipe.origin_text()
    );
    for step in &recipe.steps {
        if !steps::SUPPORTED.contains(&step.name.as_str()) {
            return Err(steps::unsupported(recipe, step));
        }
        steps::check_definition(recipe, &format!("Build/{}", step.name))?;
        if step.name == "loader-kernel" {
            loader::check_loader_common(recipe)?;
        }
        if let Some(args) = steps::lzma_arguments(step) {
            steps::lzma_parameters(&args).with_context(|| {
                format!(
                    "device {} ({}): step `{step}`",
                    recipe.device,
                    recipe.origin_text()
                )
            })?;
        }
    }
    let name = recipe.kernel_name.as_str();
    anyhow::ensure!(
        name == "vmlinux" || name == "vmlinux.lzma" || make_targets.iter().any(|t| t == name),
        "device {} ({}): KERNEL_NAME = {name:?}, which the kernel build does not make; add it to \
         the target file's make_targets",
        recipe.device,
        recipe.origin_text()
    );
    Ok(())
}

/// A dry run's stand-in for `target`'s device recipe, which it does not
/// evaluate (make runs the checkout's image Makefiles, which are code):
/// `None` when the target names no `openwrt_device`. Its placeholder
/// takes the place of [`record`] in the series
/// ([`crate::kernel_build::plan::Unevaluated`]).
pub fn unevaluated(target: &Target) -> Option<Unevaluated> {
    let device = target.openwrt_device.as_ref()?;
    let board = target.openwrt.split('/').next().unwrap_or(&target.openwrt);
    Some(Unevaluated {
        placeholder: format!("openwrt-image:{device}: (not evaluated on a dry run)"),
        record_prefix: format!("openwrt-image:{device}:"),
        what: format!("device {device}, target/linux/{board}/image"),
    })
}

/// The recipe as a build input (`openwrt-image:<device>: <recipe>` with the
/// sha256 of [`DeviceRecipe::fingerprint`]), so that a changed recipe or
/// device changes the build key.
pub fn record(recipe: &DeviceRecipe) -> PatchRecord {
    PatchRecord {
        name: format!("openwrt-image:{}: {}", recipe.device, recipe.recipe()),
        sha256: sha256_bytes(recipe.fingerprint().as_bytes()),
    }
}

/// What `Image/Prepare` must contain for `vmlinux.lzma` (bcm47xx's image
/// Makefile), white space collapsed.
pub const VMLINUX_LZMA_PREPARE: &str = "cat $(KDIR)/vmlinux | $(STAGING_DIR_HOST)/bin/lzma e -si \
                                        -so -eos -lc1 -lp2 -pb2 > $(KDIR)/vmlinux.lzma";

/// Makes `$(KDIR)/$(KERNEL_NAME)` in `kdir` (see the module docs) and
/// returns its path.
///
/// Errors on a `KERNEL_NAME` not handled here, naming the device.
pub fn kernel_input(
    sh: &Shell,
    recipe: &DeviceRecipe,
    tree: &KernelTree<'_>,
    kdir: &Path,
) -> Result<PathBuf> {
    let name = recipe.kernel_name.as_str();
    let out = kdir.join(name);
    let binary = |out: &Path| -> Result<()> {
        let objcopy = format!("{}objcopy", tree.cross_compile);
        let vmlinux = tree.vmlinux;
        let strip = OBJCOPY_STRIP;
        cmd!(sh, "{objcopy} -O binary {strip...} {vmlinux} {out}")
            .quiet()
            .run()
            .with_context(|| format!("{objcopy}: making {}", out.display()))
    };
    let boot = tree
        .linux_dir
        .join("arch")
        .join(tree.karch)
        .join("boot")
        .join(name);
    match name {
        "vmlinux" => binary(&out)?,
        "vmlinux.lzma" => {
            let prepare = steps::collapse(
                recipe
                    .definitions
                    .get("Image/Prepare")
                    .map(String::as_str)
                    .unwrap_or(""),
            );
            if !prepare.contains(&steps::collapse(VMLINUX_LZMA_PREPARE)) {
                bail!(
                    "device {}: KERNEL_NAME = vmlinux.lzma, but the board's Image/Prepare does not \
                     make it as xtask does (`{VMLINUX_LZMA_PREPARE}`); it says: `{prepare}`",
                    recipe.device
                );
            }
            let bin = kdir.join("vmlinux");
            binary(&bin)?;
            let raw = crate::util::fs::read_bytes_limited(
                &bin,
                crate::util::fs::FileLimit::binary("kernel binary"),
                "",
            )?;
            std::fs::write(&out, lzma_alone(&raw, &OPENWRT_LZMA)?)
                .with_context(|| format!("writing {}", out.display()))?;
        }
        _ if !name.contains('/') && boot.is_file() => {
            std::fs::copy(&boot, &out)
                .with_context(|| format!("copying {} to {}", boot.display(), out.display()))?;
        }
        _ => bail!(
            "device {} ({}): KERNEL_NAME = {name:?} is not supported by xtask (vmlinux, \
             vmlinux.lzma, or an image the kernel build left in {})",
            recipe.device,
            recipe.origin_text(),
            boot.parent().unwrap_or(&boot).display()
        ),
    }
    Ok(out)
}

/// Makes `recipe`'s kernel image from `tree` in `kdir` (created; files of
/// an earlier run there are replaced) and returns its path,
/// `<kdir>/<device>-kernel.bin`.
///
/// Errors name the device, the recipe's `file:line` and the step that
/// failed or is not supported.
pub fn make_image(
    sh: &Shell,
    recipe: &DeviceRecipe,
    tree: &KernelTree<'_>,
    kdir: &Path,
) -> Result<PathBuf> {
    // Every step is checked before anything runs.
    let name = recipe.kernel_name.clone();
    check(recipe, &[name])?;
    std::fs::create_dir_all(kdir).with_context(|| format!("creating {}", kdir.display()))?;
    let input = kernel_input(sh, recipe, tree, kdir)?;
    for dts in &recipe.device_dts {
        dtb::build(
            sh,
            &dtb::DtbJob {
                source: recipe.dtb_source_dir.join(format!("{dts}.dts")),
                output: kdir.join(steps::dtb_file_name(dts)),
                dts_dir: &recipe.dts_dir,
                linux_dir: tree.linux_dir,
                cross_compile: tree.cross_compile,
            },
        )
        .with_context(|| format!("device {}: building its device tree", recipe.device))?;
    }
    let image = kdir.join(artifact_name(&recipe.device));
    let ctx = steps::StepContext {
        recipe,
        kdir,
        input: &input,
        karch: tree.karch,
        linux_version: tree.linux_version,
        tree,
    };
    for step in &recipe.steps {
        steps::run(sh, &ctx, step, &image).with_context(|| {
            format!(
                "device {}: KERNEL step `{step}` ({})",
                recipe.device,
                recipe.origin_text()
            )
        })?;
    }
    Ok(image)
}

/// For the OpenWrt backend: makes `recipe`'s image (nothing when `None`)
/// in `kdir`, copies it into `dest` (the results directory) and returns
/// its artifact record keyed by [`artifact_name`].
pub fn produce(
    sh: &Shell,
    recipe: Option<&DeviceRecipe>,
    tree: &KernelTree<'_>,
    kdir: &Path,
    dest: &Path,
) -> Result<BTreeMap<String, ArtifactRecord>> {
    let mut records = BTreeMap::new();
    let Some(recipe) = recipe else {
        return Ok(records);
    };
    let image = make_image(sh, recipe, tree, kdir)?;
    let name = artifact_name(&recipe.device);
    let out = dest.join(&name);
    std::fs::copy(&image, &out)
        .with_context(|| format!("copying {} to {}", image.display(), out.display()))?;
    records.insert(name, super::artifacts::record(&out)?);
    Ok(records)
}
