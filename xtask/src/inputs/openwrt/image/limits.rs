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

use anyhow::{bail, Context, Result};

use super::DeviceRecipe;

pub use super::FIT_VARS;

/// One size limit as the Makefile writes it and in bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limit {
    /// As written after make's expansion (`3072k`, `0xf60000`).
    pub text: String,
    /// In bytes.
    pub bytes: u64,
}

/// What limits a device's images, as [`limits`] reads its recipe.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DeviceLimits {
    /// `KERNEL_SIZE`: the kernel image's limit.
    pub kernel_size: Option<Limit>,
    /// `IMAGE_SIZE`, when an image recipe applies it (`check-size` without
    /// an argument).
    pub image_size: Option<Limit>,
    /// The images whose recipe applies `IMAGE_SIZE` (`sysupgrade.bin`, …).
    pub image_size_checks: Vec<String>,
    /// `DEFAULT := n`: not built by default (the buildbot skips it).
    pub default_n: bool,
    /// `BROKEN` set: hidden from menuconfig.
    pub broken: bool,
}

/// OpenWrt's `exp_units` (rules.mk): unit suffixes made arithmetic.
pub fn exp_units(size: &str) -> String {
    size.replace('g', " * 1024m")
        .replace('m', " * 1024k")
        .replace('k', " * 1024")
}

/// A limit as `check-size` evaluates it: [`exp_units`] then the shell's
/// `$(( ))` ([`shell_arith`]).
///
/// Errors name the text when it is no such expression or not positive.
pub fn parse_limit(text: &str) -> Result<Limit> {
    let expr = exp_units(text.trim());
    let value = shell_arith(&expr).with_context(|| format!("size limit {text:?} (as `{expr}`)"))?;
    anyhow::ensure!(value >= 0, "size limit {text:?} is negative ({value})");
    Ok(Limit {
        text: text.trim().to_string(),
        bytes: value as u64,
    })
}

/// The shell's arithmetic expansion `$(( expr ))` for what size limits use:
/// integers (decimal, `0x` hex, leading-`0` octal), `+ - * / %`, unary
/// minus and parentheses, with the usual precedence.
///
/// Errors on anything else, on overflow and on division by zero.
pub fn shell_arith(expr: &str) -> Result<i64> {
    let tokens = tokenize(expr)?;
    let mut pos = 0;
    let v = sum(&tokens, &mut pos)?;
    if pos != tokens.len() {
        bail!("unexpected `{}` in `{expr}`", tokens[pos]);
    }
    Ok(v)
}

fn tokenize(expr: &str) -> Result<Vec<String>> {
    let mut out = Vec::new();
    let mut chars = expr.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
        } else if c.is_ascii_alphanumeric() {
            let mut t = String::new();
            while let Some(&c) = chars.peek().filter(|c| c.is_ascii_alphanumeric()) {
                t.push(c);
                chars.next();
            }
            out.push(t);
        } else if "+-*/%()".contains(c) {
            out.push(c.to_string());
            chars.next();
        } else {
            bail!("`{c}` in `{expr}` is not shell arithmetic xtask reads");
        }
    }
    Ok(out)
}

fn number(t: &str) -> Result<i64> {
    let parsed = if let Some(hex) = t.strip_prefix("0x").or(t.strip_prefix("0X")) {
        i64::from_str_radix(hex, 16)
    } else if t.len() > 1 && t.starts_with('0') {
        i64::from_str_radix(&t[1..], 8)
    } else {
        t.parse()
    };
    parsed.with_context(|| format!("`{t}` is not a number"))
}

fn sum(t: &[String], pos: &mut usize) -> Result<i64> {
    let mut v = product(t, pos)?;
    while let Some(op) = t.get(*pos).filter(|o| *o == "+" || *o == "-") {
        *pos += 1;
        let r = product(t, pos)?;
        v = if op == "+" {
            v.checked_add(r)
        } else {
            v.checked_sub(r)
        }
        .context("overflow")?;
    }
    Ok(v)
}

fn product(t: &[String], pos: &mut usize) -> Result<i64> {
    let mut v = unary(t, pos)?;
    while let Some(op) = t
        .get(*pos)
        .filter(|o| ["*", "/", "%"].contains(&o.as_str()))
    {
        *pos += 1;
        let r = unary(t, pos)?;
        v = match op.as_str() {
            "*" => v.checked_mul(r).context("overflow")?,
            _ if r == 0 => bail!("division by zero"),
            "/" => v / r,
            _ => v % r,
        };
    }
    Ok(v)
}

fn unary(t: &[String], pos: &mut usize) -> Result<i64> {
    match t.get(*pos).map(String::as_str) {
        Some("-") => {
            *pos += 1;
            Ok(-unary(t, pos)?)
        }
        Some("+") => {
            *pos += 1;
            unary(t, pos)
        }
        Some("(") => {
            *pos += 1;
            let v = sum(t, pos)?;
            if t.get(*pos).map(String::as_str) != Some(")") {
                bail!("missing `)`");
            }
            *pos += 1;
            Ok(v)
        }
        Some(n) => {
            *pos += 1;
            number(n)
        }
        None => bail!("expression ends early"),
    }
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
pub fn limits(recipe: &DeviceRecipe) -> Result<DeviceLimits> {
    let parse = |var: &str| -> Result<Option<Limit>> {
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
    Ok(DeviceLimits {
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
