//! The `Build/<step>` definitions a device's `KERNEL` recipe may call, done
//! in Rust with the reference tools as subprocesses, and the check that the
//! checkout still defines each one as implemented here.
//!
//! Each step works on `$@`, the image being made, in place:
//!
//! * `kernel-bin` (include/image-commands.mk): `cp $< $@`, `$<` being
//!   `$(KDIR)/$(KERNEL_NAME)`;
//! * `append-dtb` (include/image-commands.mk): `cat
//!   $(KDIR)/image-$(firstword $(DEVICE_DTS)).dtb >> $@`;
//! * `lzma` (include/image-commands.mk `Build/lzma`): `lzma e $@ -lc1 -lp2
//!   -pb2 $(1) $@.new` through `Build/lzma-no-dict`; `lzma-no-dict`: `lzma
//!   e $@ $(1)`; `lzma-d16` (bcm53xx's image Makefile): `lzma e $@ -d16
//!   $(1)`, i.e. the LZMA SDK's own lc3 lp0 pb2 with a 64 KiB dictionary.
//!   Encoded with liblzma ([`crate::kernel_build::artifacts::lzma_alone`]);
//! * `uImage` (include/image-commands.mk): `mkimage -A $(LINUX_KARCH) -O
//!   linux -T kernel -C <first argument> -a $(KERNEL_LOADADDR) -e
//!   <KERNEL_ENTRY, else KERNEL_LOADADDR> -n '<UIMAGE_NAME, else "<KARCH>
//!   OpenWrt Linux-<version>">' [-M $(UIMAGE_MAGIC)] <other arguments> -d
//!   $@`, with `SOURCE_DATE_EPOCH` from `UIMAGE_TIME`, else 0 (OpenWrt's
//!   build sets it from the checkout's commit; 0 gives equal bytes for
//!   equal kernels);
//! * `gzip` (include/image-commands.mk): `gzip -f -9n -c $@ $(1)`;
//! * `loader-kernel` and `relocate-kernel` (ramips' image Makefile): the
//!   checkout's lzma-loader and relocation stub, built by its Makefiles
//!   ([`super::loader`]);
//! * `pad-to <size>` (include/image-commands.mk): `$(call
//!   Image/pad-to,$@,$(1))`, which include/image.mk defines as `dd
//!   if=$(1) of=$(1).new bs=$(2) conv=sync`: NUL bytes up to the next
//!   multiple of the size, dd's units (`64k` is 65,536 bytes); a second
//!   argument (`pad-to 4 skip=16`) is refused.
//!
//! Anything else (a firmware header, `trx`, `fit`) is
//! refused, naming the device, the recipe's `file:line` and the step.

use std::path::Path;

use anyhow::{bail, Context, Result};
use xshell::{cmd, Shell};

use crate::inputs::openwrt::image::{DeviceRecipe, KernelRecipeStep};
use crate::kernel_build::artifacts::lzma_alone;
use crate::results::LzmaRecord;
use crate::util::shell_arith::dd_bytes;

/// The steps implemented here.
pub const SUPPORTED: &[&str] = &[
    "kernel-bin",
    "append-dtb",
    "lzma",
    "lzma-no-dict",
    "lzma-d16",
    "uImage",
    "gzip",
    "loader-kernel",
    "relocate-kernel",
    "pad-to",
];

/// Steps xtask does not make, with what it would take: each runs a tool
/// that neither the OpenWrt snapshot nor Debian has, so there is no
/// reference to check an implementation against.
pub const UNSUPPORTED_WHY: &[(&str, &str)] = &[
    (
        "tplink-v1-header",
        "it runs OpenWrt's host tool mktplinkfw (firmware-utils, not in the checkout or Debian)",
    ),
    (
        "zytrx-header",
        "it runs OpenWrt's host tool zytrx (firmware-utils, not in the checkout or Debian)",
    ),
    (
        "uimage-sgehdr",
        "it runs OpenWrt's host tool uimage_sgehdr (firmware-utils, not in the checkout or Debian)",
    ),
];

/// Why `step` of `recipe` cannot be made: the refusal naming the device,
/// the recipe's `file:line`, the step and, where known, what is missing
/// (for `fit`: the checkout's scripts/mkits.sh, which writes the `.its`).
pub fn unsupported(recipe: &DeviceRecipe, step: &KernelRecipeStep) -> anyhow::Error {
    let mkits = recipe
        .image_dir
        .ancestors()
        .nth(4)
        .map(|root| root.join("scripts/mkits.sh"));
    let why = match step.name.as_str() {
        "fit" => match mkits {
            Some(m) if !m.is_file() => format!(
                "it runs the checkout's scripts/mkits.sh to write the FIT's .its file, and {} \
                 does not exist (the snapshot has no mkits.sh)",
                m.display()
            ),
            _ => "FIT images are not implemented".to_string(),
        },
        other => UNSUPPORTED_WHY
            .iter()
            .find(|(s, _)| *s == other)
            .map(|(_, w)| w.to_string())
            .unwrap_or_else(|| "xtask does not implement it".to_string()),
    };
    anyhow::anyhow!(
        "device {} ({}): KERNEL step `{step}` is not supported by xtask: {why} (supported: {})",
        recipe.device,
        recipe.origin_text(),
        SUPPORTED.join(", ")
    )
}

/// For each implemented definition, text it must contain (white space
/// collapsed): what this module does is what the checkout's definition does.
pub const DEFINITIONS: &[(&str, &[&str])] = &[
    ("Build/kernel-bin", &["cp $< $@"]),
    (
        "Build/append-dtb",
        &["cat $(KDIR)/image-$(firstword $(DEVICE_DTS)).dtb >> $@"],
    ),
    (
        "Build/lzma",
        &["$(call Build/lzma-no-dict,-lc1 -lp2 -pb2 $(1))"],
    ),
    ("Build/lzma-no-dict", &["/bin/lzma e $@ $(1) $@.new"]),
    ("Build/lzma-d16", &["/bin/lzma e $@ -d16 $(1) $@.new"]),
    (
        "Build/uImage",
        &[
            "$(if $(UIMAGE_TIME),SOURCE_DATE_EPOCH=\"$(UIMAGE_TIME)\") mkimage -A $(LINUX_KARCH) \
             -O linux -T kernel -C $(word 1,$(1)) -a $(KERNEL_LOADADDR) \
             -e $(if $(KERNEL_ENTRY),$(KERNEL_ENTRY),$(KERNEL_LOADADDR)) \
             -n '$(if $(UIMAGE_NAME),$(UIMAGE_NAME),$(call toupper,$(LINUX_KARCH)) \
             $(VERSION_DIST) Linux-$(LINUX_VERSION))' $(if $(UIMAGE_MAGIC),-M $(UIMAGE_MAGIC)) \
             $(wordlist 2,$(words $(1)),$(1)) -d $@ $@.new",
        ],
    ),
    ("Build/gzip", &["gzip -f -9n -c $@ $(1) > $@.new"]),
    ("Build/pad-to", &["$(call Image/pad-to,$@,$(1))"]),
    (
        "Build/loader-kernel",
        &["$(call Build/loader-common,LOADER_DATA=\"$@\")"],
    ),
    (
        "Build/relocate-kernel",
        &[
            "$(CP) ../../generic/image/relocate $@.relocate",
            "$(MAKE) -C $@.relocate KERNEL_ADDR=$(if $(1),$(1),$(KERNEL_LOADADDR)) \
             CROSS_COMPILE=$(TARGET_CROSS)",
            "( dd if=$@.relocate/loader.bin bs=32 conv=sync && perl -e '@s = stat(\"$@\"); \
             print pack(\"V\", @s[7])' && cat $@ ) > $@.new",
            "mv $@.new $@",
        ],
    ),
];

/// `text` with every run of white space made one space, trimmed, and
/// make's `\` line continuations dropped.
pub fn collapse(text: &str) -> String {
    crate::util::text::collapse_make(text)
}

/// Checks that `definition` (a make variable such as `Build/lzma`) is
/// defined in `recipe`'s checkout as [`DEFINITIONS`] expects.
pub fn check_definition(recipe: &DeviceRecipe, definition: &str) -> Result<()> {
    let Some((_, wanted)) = DEFINITIONS.iter().find(|(d, _)| *d == definition) else {
        bail!("xtask knows no definition {definition}");
    };
    let have = recipe
        .definitions
        .get(definition)
        .map(|d| collapse(d))
        .unwrap_or_default();
    if have.is_empty() {
        bail!(
            "device {} ({}): Missing {definition} (as image.mk's build_cmd says): the checkout \
             does not define it",
            recipe.device,
            recipe.origin_text()
        );
    }
    for w in *wanted {
        let w = collapse(w);
        if !have.contains(&w) {
            bail!(
                "device {} ({}): the checkout's {definition} is not what xtask implements: it \
                 should contain `{w}` but is `{have}`",
                recipe.device,
                recipe.origin_text()
            );
        }
    }
    Ok(())
}

/// The LZMA SDK 4.65 `lzma e` parameters for `args` (`-lc1 -lp2 -pb2
/// -d16`), starting from its defaults lc3 lp0 pb2 and `-d23` (8 MiB).
///
/// Errors on any other option (`-a0`, `-fb`, `-mf`, `-eos`): liblzma is set
/// up for the SDK's defaults of those only.
pub fn lzma_parameters(args: &[String]) -> Result<LzmaRecord> {
    let mut p = LzmaRecord {
        lc: 3,
        lp: 0,
        pb: 2,
        dict_size: 1 << 23,
    };
    for arg in args {
        let number = |prefix: &str| -> Option<Result<u32>> {
            arg.strip_prefix(prefix).map(|n| {
                n.parse::<u32>()
                    .with_context(|| format!("lzma option {arg}: not a number"))
            })
        };
        if let Some(n) = number("-lc") {
            p.lc = n?;
        } else if let Some(n) = number("-lp") {
            p.lp = n?;
        } else if let Some(n) = number("-pb") {
            p.pb = n?;
        } else if let Some(n) = number("-d") {
            let n = n?;
            anyhow::ensure!(
                (12..=30).contains(&n),
                "lzma option {arg}: -d takes 12 to 30"
            );
            p.dict_size = 1 << n;
        } else {
            bail!("lzma option {arg} is not supported (only -lc, -lp, -pb and -d are)");
        }
    }
    anyhow::ensure!(
        p.lc <= 8 && p.lp <= 4 && p.pb <= 4 && p.lc + p.lp <= 4,
        "lzma options {}: lc ≤ 8, lp ≤ 4, pb ≤ 4 and lc + lp ≤ 4 (liblzma's limits)",
        args.join(" ")
    );
    Ok(p)
}

/// What a step needs besides the image.
#[derive(Debug, Clone, Copy)]
pub struct StepContext<'a> {
    /// The recipe (device, variables, definitions).
    pub recipe: &'a DeviceRecipe,
    /// `$(KDIR)`: where `$(KERNEL_NAME)` and `image-<dts>.dtb` are.
    pub kdir: &'a Path,
    /// `$<`: `$(KDIR)/$(KERNEL_NAME)`.
    pub input: &'a Path,
    /// `$(LINUX_KARCH)`.
    pub karch: &'a str,
    /// `$(LINUX_VERSION)`.
    pub linux_version: &'a str,
    /// The kernel build (the loaders' headers and cross compiler).
    pub tree: &'a super::tree::KernelTree<'a>,
}

/// The LZMA step's arguments to `lzma e` for `step` (`lzma`, `lzma-no-dict`,
/// `lzma-d16`), `None` for other steps.
pub fn lzma_arguments(step: &KernelRecipeStep) -> Option<Vec<String>> {
    let fixed: &[&str] = match step.name.as_str() {
        "lzma" => &["-lc1", "-lp2", "-pb2"],
        "lzma-no-dict" => &[],
        "lzma-d16" => &["-d16"],
        _ => return None,
    };
    let mut args: Vec<String> = fixed.iter().map(|s| s.to_string()).collect();
    args.extend(step.args.iter().cloned());
    Some(args)
}

/// Runs `step` on `image` (`$@`).
pub fn run(sh: &Shell, ctx: &StepContext<'_>, step: &KernelRecipeStep, image: &Path) -> Result<()> {
    let recipe = ctx.recipe;
    let refuse = || unsupported(recipe, step);
    let read = |p: &Path| {
        crate::util::fs::read_bytes_limited(p, crate::util::fs::FileLimit::binary("image"), "")
    };
    let write = |bytes: &[u8]| {
        std::fs::write(image, bytes).with_context(|| format!("writing {}", image.display()))
    };
    if !SUPPORTED.contains(&step.name.as_str()) {
        return Err(refuse());
    }
    check_definition(recipe, &format!("Build/{}", step.name))?;
    match step.name.as_str() {
        "kernel-bin" => write(&read(ctx.input)?),
        "append-dtb" => {
            let dts = recipe.device_dts.first().with_context(|| {
                format!(
                    "device {} ({}): append-dtb, but DEVICE_DTS is empty",
                    recipe.device,
                    recipe.origin_text()
                )
            })?;
            let dtb = ctx.kdir.join(dtb_file_name(dts));
            let mut bytes = read(image)?;
            bytes.extend_from_slice(&read(&dtb)?);
            write(&bytes)
        }
        "lzma" | "lzma-no-dict" | "lzma-d16" => {
            if step.name == "lzma" {
                check_definition(recipe, "Build/lzma-no-dict")?;
            }
            let args = lzma_arguments(step).unwrap_or_default();
            let params = lzma_parameters(&args).with_context(|| {
                format!(
                    "device {} ({}): step `{step}`",
                    recipe.device,
                    recipe.origin_text()
                )
            })?;
            write(&lzma_alone(&read(image)?, &params)?)
        }
        "uImage" => uimage(sh, ctx, step, image),
        "loader-kernel" => {
            let work = image.with_extension("loader");
            let built = super::loader::lzma_loader(sh, recipe, ctx.tree, &read(image)?, &work);
            let _ = std::fs::remove_dir_all(&work);
            write(&built?.bytes)
        }
        "relocate-kernel" => {
            let addr = super::loader::relocate_address(recipe, step)?;
            let work = image.with_extension("relocate");
            let stub = super::loader::relocate_stub(recipe, ctx.tree, &addr, &work);
            let _ = std::fs::remove_dir_all(&work);
            write(&super::loader::relocate(&stub?, &read(image)?)?)
        }
        "pad-to" => {
            let [size] = step.args.as_slice() else {
                bail!(
                    "device {} ({}): step `{step}`: xtask pads to one size (`pad-to 64k`), \
                     not `{}`",
                    recipe.device,
                    recipe.origin_text(),
                    step.args.join(" ")
                );
            };
            let block = dd_bytes(size).with_context(|| {
                format!(
                    "device {} ({}): step `{step}`",
                    recipe.device,
                    recipe.origin_text()
                )
            })?;
            write(&pad_to(read(image)?, block))
        }
        "gzip" => {
            let args = &step.args;
            let out = cmd!(sh, "gzip -f -9n -c {image} {args...}")
                .quiet()
                .output()
                .context("gzip")?;
            write(&out.stdout)
        }
        _ => Err(refuse()),
    }
}

/// `bytes` with NULs up to the next multiple of `block` bytes, as `dd
/// bs=<block> conv=sync` pads its last block (nothing added to an empty
/// input or a multiple of `block`).
pub fn pad_to(mut bytes: Vec<u8>, block: u64) -> Vec<u8> {
    let block = block as usize;
    let rest = bytes.len() % block;
    if rest != 0 {
        bytes.resize(bytes.len() + block - rest, 0);
    }
    bytes
}

/// `$(KDIR)/image-<notdir dts>.dtb`'s file name (image.mk `Device/Build/dtb`).
pub fn dtb_file_name(dts: &str) -> String {
    let base = dts.rsplit('/').next().unwrap_or(dts);
    format!("image-{base}.dtb")
}

/// `mkimage`'s arguments for a `uImage` step on `image`, writing `out`
/// (see the module docs), and the `SOURCE_DATE_EPOCH` it runs with.
pub fn uimage_command(
    ctx: &StepContext<'_>,
    step: &KernelRecipeStep,
    image: &Path,
    out: &Path,
) -> Result<(Vec<String>, String)> {
    let recipe = ctx.recipe;
    let compression = step.args.first().with_context(|| {
        format!(
            "device {} ({}): `uImage` needs a compression argument",
            recipe.device,
            recipe.origin_text()
        )
    })?;
    let load = recipe.var("KERNEL_LOADADDR").with_context(|| {
        format!(
            "device {} ({}): `uImage`, but KERNEL_LOADADDR is empty",
            recipe.device,
            recipe.origin_text()
        )
    })?;
    let entry = recipe.var("KERNEL_ENTRY").unwrap_or(load);
    let name = match recipe.var("UIMAGE_NAME") {
        Some(n) => n.to_string(),
        None => format!(
            "{} OpenWrt Linux-{}",
            ctx.karch.to_uppercase(),
            ctx.linux_version
        ),
    };
    let mut args: Vec<String> = [
        "-A",
        ctx.karch,
        "-O",
        "linux",
        "-T",
        "kernel",
        "-C",
        compression,
        "-a",
        load,
        "-e",
        entry,
        "-n",
        &name,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    if let Some(magic) = recipe.var("UIMAGE_MAGIC") {
        args.extend(["-M".to_string(), magic.to_string()]);
    }
    args.extend(step.args.iter().skip(1).cloned());
    args.extend([
        "-d".to_string(),
        image.display().to_string(),
        out.display().to_string(),
    ]);
    let epoch = recipe.var("UIMAGE_TIME").unwrap_or("0").to_string();
    Ok((args, epoch))
}

fn uimage(sh: &Shell, ctx: &StepContext<'_>, step: &KernelRecipeStep, image: &Path) -> Result<()> {
    let new = image.with_extension("new");
    let (args, epoch) = uimage_command(ctx, step, image, &new)?;
    cmd!(sh, "mkimage {args...}")
        .env("SOURCE_DATE_EPOCH", epoch)
        .quiet()
        .ignore_stdout()
        .run()
        .context("mkimage (from u-boot-tools; `apt-get install u-boot-tools`)")?;
    std::fs::rename(&new, image).with_context(|| format!("renaming {}", new.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lzma_options_as_the_sdk_reads_them() {
        let args = |s: &str| s.split_whitespace().map(str::to_string).collect::<Vec<_>>();
        let p = lzma_parameters(&args("-lc1 -lp2 -pb2")).unwrap();
        assert_eq!((p.lc, p.lp, p.pb, p.dict_size), (1, 2, 2, 8 << 20));
        let p = lzma_parameters(&args("-d16")).unwrap();
        assert_eq!((p.lc, p.lp, p.pb, p.dict_size), (3, 0, 2, 64 << 10));
        assert!(lzma_parameters(&args("-a0")).is_err());
        assert!(lzma_parameters(&args("-lc4 -lp2")).is_err());
        let step = KernelRecipeStep {
            name: "lzma".into(),
            args: args("-d20"),
        };
        assert_eq!(lzma_arguments(&step).unwrap(), args("-lc1 -lp2 -pb2 -d20"));
        assert_eq!(dtb_file_name("sub/mt7621_x"), "image-mt7621_x.dtb");
    }
}
