//! The whole-image rows of device fit: each image of a device whose
//! recipe checks a size, sized with the rootfs as the recipe makes it
//! ([`crate::measure::whole_image`]), and the rootfs the report is given.

use std::io::Read as _;
use std::path::Path;

use anyhow::{bail, Context, Result};
use serde::Serialize;

use super::row::{DeviceRow, FitSide};
use crate::measure::image_sink::Lengths;
use crate::measure::whole_image::{self, ImageVars, SizeCheck};
use crate::results::device_fit::{self, DeviceFit, ImageRecipe, LimitKind};
use crate::util::elf_ident::{elf_kind, ElfIdent};
use crate::util::text::printable;

/// The rootfs whole images are sized with, as `--rootfs` read it
/// (inputs/rootfs.rs; `experiment::rootfs::rootfs_summary` makes this).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RootfsSummary {
    /// The file given.
    pub source: String,
    /// How the squashfs was found in it (`a squashfs`, `split from a
    /// uImage + squashfs image (kernel 1234 bytes)`).
    pub origin: String,
    /// The squashfs's length, bytes (`IMAGE_ROOTFS`).
    pub bytes: u64,
    /// Its sha256.
    pub sha256: String,
    /// Its programs' architecture and the program that told it, if one
    /// did.
    pub arch: Option<(ElfIdent, String)>,
}

impl RootfsSummary {
    /// Errors unless the rootfs's programs run on the kernel `vmlinux`
    /// (its ELF header; `what` names the build): the same machine,
    /// endianness and class. A rootfs whose architecture is unknown is
    /// refused too.
    pub fn check_against(&self, vmlinux: &Path, what: &str) -> Result<()> {
        let limit = crate::util::fs::FileLimit {
            what: "vmlinux",
            max_bytes: 1 << 30,
        };
        let mut header = Vec::new();
        crate::util::fs::open_limited(vmlinux, limit, "")?
            .take(64)
            .read_to_end(&mut header)
            .with_context(|| format!("reading {}", vmlinux.display()))?;
        let Some(kernel) = elf_kind(&header) else {
            bail!("{} is not an ELF file", vmlinux.display());
        };
        match &self.arch {
            Some((kind, _)) if *kind == kernel => Ok(()),
            Some((kind, program)) => bail!(
                "--rootfs {}: its {program} is {kind}, but {what}'s vmlinux is {kernel}; give a \
                 rootfs of the target's architecture",
                printable(&self.source)
            ),
            None => bail!(
                "--rootfs {}: none of bin/busybox, lib/libc.so, sbin/procd in it is an ELF \
                 program, so its architecture is unknown ({what}'s vmlinux is {kernel}); give \
                 OpenWrt's root.squashfs",
                printable(&self.source)
            ),
        }
    }
}

/// The rows of each image either side lists for the device, sized with a
/// rootfs of `rootfs_bytes` (variant's images first, then those only the
/// base has).
pub(super) fn image_rows(
    base: Option<&DeviceFit>,
    variant: Option<&DeviceFit>,
    rootfs_bytes: u64,
) -> Vec<DeviceRow> {
    let own = variant.or(base).expect("a row of a device one side lists");
    fn find<'a>(d: Option<&'a DeviceFit>, image: &str) -> Option<(&'a DeviceFit, &'a ImageRecipe)> {
        d.and_then(|d| d.images.iter().find(|i| i.image == image).map(|i| (d, i)))
    }
    let mut names: Vec<&str> = Vec::new();
    for d in [variant, base].into_iter().flatten() {
        for i in &d.images {
            if !names.contains(&i.image.as_str()) {
                names.push(&i.image);
            }
        }
    }
    names
        .into_iter()
        .map(|image| {
            let b = find(base, image).map(|(d, i)| size_image(d, i, rootfs_bytes, 0));
            let v = find(variant, image).map(|(d, i)| size_image(d, i, rootfs_bytes, 0));
            // With the kernel image the LZMA margin longer or shorter: does
            // the own side's verdict change?
            let own_image = find(variant, image).or(find(base, image));
            let lzma_near = match (own_image, own.lzma_margin) {
                (Some((d, i)), Some(m)) if m != 0 => {
                    let fits = |delta: i64| size_image(d, i, rootfs_bytes, delta).map(|c| c.fits());
                    let now = fits(0);
                    now.is_ok() && (fits(m.abs()) != now || fits(-m.abs()) != now)
                }
                _ => false,
            };
            let binding = |s: &Option<Result<SizeCheck, String>>| s.clone().and_then(Result::ok);
            let (bc, vc) = (binding(&b), binding(&v));
            let limit = vc.as_ref().or(bc.as_ref());
            let own_size = match (&v, &vc) {
                (Some(_), v) => v.as_ref(),
                (None, _) => bc.as_ref(),
            };
            let headroom = own_size.map(|c| device_fit::headroom(c.limit_bytes, c.size));
            DeviceRow {
                device: own.device.clone(),
                image: Some(image.to_string()),
                only_in: match (b.is_some(), v.is_some()) {
                    (true, false) => Some(FitSide::Base),
                    (false, true) => Some(FitSide::Variant),
                    _ => None,
                },
                limit_kind: Some(LimitKind::ImageSize),
                limit: limit.map(|c| c.limit_text.clone()),
                limit_bytes: limit.map(|c| c.limit_bytes),
                base_bytes: bc.as_ref().map(|c| c.size),
                variant_bytes: vc.as_ref().map(|c| c.size),
                headroom,
                headroom_percent: own_size
                    .zip(headroom)
                    .and_then(|(c, h)| device_fit::headroom_percent(c.limit_bytes, h)),
                base_fits: bc.as_ref().map(SizeCheck::fits),
                variant_fits: vc.as_ref().map(SizeCheck::fits),
                default_n: own.limits.default_n,
                error: v.and_then(Result::err).or_else(|| b.and_then(Result::err)),
                lzma_margin: own.lzma_margin,
                lzma_near,
            }
        })
        .collect()
}

/// `image` of `fit` with a rootfs of `rootfs_bytes` and the kernel image
/// `kernel_delta` bytes longer: its binding check (the first that fails,
/// else the one with the least headroom), or why it cannot be sized.
fn size_image(
    fit: &DeviceFit,
    image: &ImageRecipe,
    rootfs_bytes: u64,
    kernel_delta: i64,
) -> Result<SizeCheck, String> {
    if let Some(e) = &image.error {
        return Err(e.clone());
    }
    let Some(kernel) = fit.kernel_bytes else {
        return Err(fit
            .error
            .clone()
            .unwrap_or_else(|| "no kernel image size recorded".to_string()));
    };
    let vars = ImageVars {
        blocksize: fit.blocksize.as_deref(),
        image_size: fit.limits.image_size.as_ref().map(|l| l.text.as_str()),
    };
    let mut sink = Lengths {
        len: 0,
        kernel: kernel.saturating_add_signed(kernel_delta),
        rootfs: rootfs_bytes,
    };
    let checks = whole_image::size_checks(&image.recipe, &vars, &mut sink)
        .map_err(|e| format!("{}: {e:#}", image.image))?;
    let failing = checks.iter().find(|c| !c.fits());
    let tightest = checks
        .iter()
        .min_by_key(|c| i128::from(c.limit_bytes) - i128::from(c.size));
    failing
        .or(tightest)
        .cloned()
        .ok_or_else(|| format!("{}: no check-size", image.image))
}
