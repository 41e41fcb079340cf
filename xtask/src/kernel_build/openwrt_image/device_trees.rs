//! Device fit's device trees: every device's `DEVICE_DTS` compiled side by
//! side ([`compile_dtbs`]), the one `append-dtb` appends ([`first_dtb`]),
//! and the limit a fixed flash layout gives a device whose Makefile sets
//! none ([`firmware_limit`]).

use std::path::Path;

use anyhow::{Context, Result};
use xshell::Shell;

use super::parallel::in_parallel;
use super::tree::KernelTree;
use super::{dtb, steps};
use crate::inputs::openwrt::image::DeviceRecipe;
use crate::results::device_fit;

/// The DTB `append-dtb` appends: the first of `DEVICE_DTS`.
///
/// Errors: its DTS did not compile (the reason), or it has none.
pub(super) fn first_dtb<'a>(
    recipe: &DeviceRecipe,
    dtbs: &'a Result<Vec<Vec<u8>>, String>,
) -> Result<&'a [u8]> {
    let dtbs = dtbs.as_ref().map_err(|e| anyhow::anyhow!("{e}"))?;
    dtbs.first().map(Vec::as_slice).with_context(|| {
        format!(
            "append-dtb, but DEVICE_DTS is empty ({})",
            recipe.origin_text()
        )
    })
}

/// Each recipe's `DEVICE_DTS` compiled (all of them, as image.mk's
/// image_prepare does), `jobs` at a time; per device the DTBs in order or
/// the first error.
pub(super) fn compile_dtbs(
    recipes: &[Option<&DeviceRecipe>],
    tree: &KernelTree<'_>,
    kdir: &Path,
    jobs: usize,
) -> Vec<Result<Vec<Vec<u8>>, String>> {
    in_parallel(recipes.to_vec(), jobs, |sh, r| match r {
        Some(r) => compile_one(sh, r, tree, kdir),
        None => Ok(Vec::new()),
    })
    .into_iter()
    .map(|r| r.map_err(|e| format!("{e:#}")))
    .collect()
}

/// The size of the `firmware` partition of the first of `dtbs` with a
/// fixed flash layout, as a limit in hex bytes, when `limits` has neither
/// `KERNEL_SIZE` nor `IMAGE_SIZE` ([`crate::measure::flash_layout`]); a
/// DTB the layout cannot be read from counts as none.
pub(super) fn firmware_limit(
    limits: &device_fit::DeviceLimits,
    dtbs: &Result<Vec<Vec<u8>>, String>,
) -> Option<device_fit::Limit> {
    if limits.kernel_size.is_some() || limits.image_size.is_some() {
        return None;
    }
    let found = dtbs.as_ref().ok()?.iter().find_map(|dtb| {
        crate::measure::flash_layout::firmware_partition(dtb)
            .ok()
            .flatten()
    })?;
    Some(device_fit::Limit {
        text: format!("{:#x}", found.bytes),
        bytes: found.bytes,
    })
}

fn compile_one(
    sh: &Shell,
    r: &DeviceRecipe,
    tree: &KernelTree<'_>,
    kdir: &Path,
) -> Result<Vec<Vec<u8>>> {
    let dir = kdir.join("devices").join(&r.device);
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut out = Vec::new();
    for dts in &r.device_dts {
        let output = dir.join(steps::dtb_file_name(dts));
        dtb::build(
            sh,
            &dtb::DtbJob {
                source: r.dtb_source_dir.join(format!("{dts}.dts")),
                output: output.clone(),
                dts_dir: &r.dts_dir,
                linux_dir: tree.linux_dir,
                cross_compile: tree.cross_compile,
            },
        )
        .context("building its device tree")?;
        out.push(crate::util::fs::read_bytes_limited(
            &output,
            crate::util::fs::FileLimit::binary("image"),
            "",
        )?);
    }
    Ok(out)
}
