//! A device's size limits as OpenWrt applies them, and what it says about
//! building the device at all.
//!
//! OpenWrt checks sizes with `Build/check-size` (include/image-commands.mk):
//! `limitsize=$(( $(call exp_units,<limit>) ))`, then `[ $limitsize -ge
//! $imagesize ] || { WARNING…; rm -f $@; }`: an image fits when its size is
//! at most the limit, and one that does not is deleted. `exp_units`
//! (OpenWrt's rules.mk) turns units into arithmetic: `g` → ` * 1024m`, then
//! `m` → ` * 1024k`, then `k` → ` * 1024`, so `15424k` is `15424 * 1024`,
//! `16m` is `16 * 1024 * 1024`; the shell's `$(( ))` reads `0x…` as hex and a
//! leading `0` as octal ([`shell_arith`]).
//!
//! * `KERNEL_SIZE` (include/image.mk `Device/Build/kernel`: `$(if
//!   $(KERNEL_SIZE),$(call Build/check-size,$(KERNEL_SIZE)))`) applies to
//!   the kernel image itself, `<device>-kernel.bin`: exactly what the
//!   workbench makes.
//! * `IMAGE_SIZE` applies where an image recipe (`IMAGE/sysupgrade.bin`,
//!   `IMAGE/factory.bin`, …) calls `check-size` without an argument: to the
//!   whole image, kernel and root file system. The workbench builds no root
//!   file system; for `IMAGE_SIZE` it reports the kernel's share: the kernel
//!   image against the limit, the rest being the room left for the rootfs
//!   (and the recipe's padding and metadata). A kernel within `IMAGE_SIZE`
//!   is necessary for the image to fit, not sufficient.
//! * `DEFAULT := n` (include/image.mk `Device/Init` resets it; `Device/DumpInfo`
//!   prints `Target-Profile-Default`) leaves the device out of default
//!   builds, the buildbot's included: OpenWrt's mark for a device that no
//!   longer fits. `BROKEN` hides it from menuconfig.

use std::collections::BTreeMap;

use anyhow::{Context, Result};

use super::DeviceRecipe;
pub use crate::util::shell_arith::{exp_units, shell_arith};

pub use super::FIT_VARS;

/// One size limit as the Makefile writes it and in bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MakefileLimit {
    /// As written after make's expansion (`3072k`, `0xf60000`).
    pub text: String,
    /// In bytes.
    pub bytes: u64,
}

/// What limits a device's images, as [`limits`] reads its recipe.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MakefileLimits {
    /// `KERNEL_SIZE`: the kernel image's limit.
    pub kernel_size: Option<MakefileLimit>,
    /// `IMAGE_SIZE`, when an image recipe applies it (`check-size` without
    /// an argument).
    pub image_size: Option<MakefileLimit>,
    /// The images whose recipe applies `IMAGE_SIZE` (`sysupgrade.bin`, …).
    pub image_size_checks: Vec<String>,
    /// `DEFAULT := n`: not built by default (the buildbot skips it).
    pub default_n: bool,
    /// `BROKEN` set: hidden from menuconfig.
    pub broken: bool,
}

/// A limit as `check-size` evaluates it: [`exp_units`] then the shell's
/// `$(( ))` ([`shell_arith`]).
///
/// Errors name the text when it is no such expression or not positive.
pub fn parse_limit(text: &str) -> Result<MakefileLimit> {
    Ok(MakefileLimit {
        text: text.trim().to_string(),
        bytes: crate::util::shell_arith::limit_bytes(text)?,
    })
}

/// Whether an image recipe (`IMAGE/<image>`) calls `check-size` without an
/// argument, i.e. applies `IMAGE_SIZE`.
pub fn checks_image_size(recipe: &str) -> bool {
    recipe
        .split('|')
        .any(|step| step.split_whitespace().collect::<Vec<_>>() == ["check-size"])
}

/// `recipe`'s limits (see the module docs).
///
/// Errors name the device and the variable whose value is no size.
pub fn limits(recipe: &DeviceRecipe) -> Result<MakefileLimits> {
    let parse = |var: &str| -> Result<Option<MakefileLimit>> {
        recipe
            .var(var)
            .map(parse_limit)
            .transpose()
            .with_context(|| format!("device {}: {var}", recipe.device))
    };
    let checks: Vec<String> = recipe
        .images
        .iter()
        .filter(|(_, r)| checks_image_size(r))
        .map(|(i, _)| i.clone())
        .collect();
    Ok(MakefileLimits {
        kernel_size: parse("KERNEL_SIZE")?,
        image_size: if checks.is_empty() {
            None
        } else {
            parse("IMAGE_SIZE")?
        },
        image_size_checks: checks,
        default_n: recipe.var("DEFAULT") == Some("n"),
        broken: recipe.var("BROKEN").is_some(),
    })
}

/// The images of `recipe` by name (for messages).
pub fn image_names(images: &BTreeMap<String, String>) -> String {
    images.keys().cloned().collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_as_check_size_reads_them() {
        // Cases from the snapshot's ramips/ath79 image Makefiles.
        assert_eq!(parse_limit("3072k").unwrap().bytes, 3072 * 1024);
        assert_eq!(parse_limit("15424k").unwrap().bytes, 15424 * 1024);
        assert_eq!(parse_limit("16m").unwrap().bytes, 16 << 20);
        assert_eq!(parse_limit("0xf60000").unwrap().bytes, 0xf60000);
        assert_eq!(parse_limit("1g").unwrap().bytes, 1 << 30);
        assert_eq!(shell_arith("010").unwrap(), 8);
        assert_eq!(
            shell_arith(
                "(16 * 1024k) - (128*20/1024 + 4*64 * 1024)"
                    .replace('k', " * 1024")
                    .as_str()
            )
            .unwrap(),
            16 * 1024 * 1024 - (128 * 20 / 1024 + 4 * 64 * 1024)
        );
        assert!(parse_limit("3072q").is_err());
        assert!(parse_limit("").is_err());
        assert!(shell_arith("1 / 0").is_err());
        assert!(checks_image_size(
            "append-kernel | append-rootfs | check-size | append-metadata"
        ));
        assert!(!checks_image_size("append-kernel | check-size 4096k"));
    }
}
