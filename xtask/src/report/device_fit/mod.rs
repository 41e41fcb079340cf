//! Device fit base → variant: every device of an OpenWrt-mode target, its
//! kernel image size on each side, its limit, headroom and whether it
//! stopped fitting (or started again), from each result's `device-fit.json`
//! ([`crate::results::device_fit`]).
//!
//! The limit is `KERNEL_SIZE` when the device sets one (check-size on the
//! kernel image itself, exact), else `IMAGE_SIZE` where an image recipe
//! applies it: the whole image's limit. Without a rootfs the report gives
//! the kernel's share of it (the headroom is what is left for the rootfs;
//! such rows are labelled kernel-only). With a rootfs (`--rootfs`), each
//! image whose recipe checks a size is sized as its recipe makes it
//! ([`crate::measure::whole_image`]): kernel image,
//! padding, rootfs, `pad-rootfs`, up to `check-size`, one row per device
//! and image; the kernel row stays where `KERNEL_SIZE` applies, and for
//! devices without such an image. Devices OpenWrt marks `DEFAULT := n` say
//! so; a device or image that could not be made is listed with the reason.

pub mod images;
pub mod row;

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::Path;

use anyhow::{bail, Context, Result};
use serde::Serialize;

use crate::results::device_fit::{self, DeviceFit, DeviceFitRecord, LimitKind};
use crate::results::BuildResult;
use crate::util::text::printable;
use row::{DeviceRow, FitSide, FitVerdict};

/// The device fit of one comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DeviceFitDiff {
    /// The OpenWrt target.
    pub openwrt_target: String,
    /// The `--devices` pattern applied, if any.
    pub pattern: Option<String>,
    /// The rootfs whole images were sized with (`--rootfs`), if any.
    pub rootfs: Option<images::RootfsSummary>,
    /// Why either side could not run the LZMA SDK encoder, if so.
    pub lzma_sdk_error: Option<String>,
    /// Rows in the Makefiles' order.
    pub rows: Vec<DeviceRow>,
}

/// Whether `device` matches `pattern`: a glob with `*` (any run of
/// characters) and `?` (one character) when it has one, else a substring.
/// The glob is the `wildmatch` crate's, whose matcher keeps one
/// backtracking point: time linear in the device name for any pattern
/// (`**********x` answers at once, where a recursive matcher takes
/// seconds).
pub fn matches(pattern: &str, device: &str) -> bool {
    if !pattern.contains(['*', '?']) {
        return device.contains(pattern);
    }
    wildmatch::WildMatch::new(pattern).matches(device)
}

impl DeviceFitDiff {
    /// Rows for the devices of `new` matching `pattern`, with `old`'s sizes,
    /// then the devices only `old` has (a device only one side has is
    /// listed with what that side says: [`DeviceRow::only_in`]).
    ///
    /// With `rootfs`, each device's images that check a size are rows of
    /// their own, sized with it; the kernel row is kept where `KERNEL_SIZE`
    /// applies or the device has no such image.
    pub fn new<'a>(
        old: &'a DeviceFitRecord,
        new: &'a DeviceFitRecord,
        pattern: Option<&str>,
        rootfs: Option<&images::RootfsSummary>,
    ) -> Self {
        let wanted = |d: &&DeviceFit| pattern.is_none_or(|p| matches(p, &d.device));
        // By name, in one pass each (a record holds up to ~140,000
        // devices within its size cap; a search per device was quadratic).
        let by_name = |r: &'a DeviceFitRecord| -> HashMap<&'a str, &'a DeviceFit> {
            r.devices.iter().map(|d| (d.device.as_str(), d)).collect()
        };
        let (old_by_name, new_by_name) = (by_name(old), by_name(new));
        let pairs = new
            .devices
            .iter()
            .filter(wanted)
            .map(|v| (old_by_name.get(v.device.as_str()).copied(), Some(v)))
            .chain(
                old.devices
                    .iter()
                    .filter(wanted)
                    .filter(|b| !new_by_name.contains_key(b.device.as_str()))
                    .map(|b| (Some(b), None)),
            );
        let mut rows = Vec::new();
        for (base, variant) in pairs {
            let images = match rootfs {
                Some(r) => images::image_rows(base, variant, r.bytes),
                None => Vec::new(),
            };
            let own = variant.or(base).expect("a row of a device one side lists");
            let kernel = row(base, variant);
            let with_rootfs = rootfs
                .filter(|_| kernel.limit_kind == Some(LimitKind::FirmwarePartition))
                .map(|r| kernel_and_rootfs(&kernel, r.bytes));
            if images.is_empty() || own.limits.kernel_size.is_some() {
                rows.push(kernel);
            }
            rows.extend(with_rootfs);
            rows.extend(images);
        }
        DeviceFitDiff {
            openwrt_target: new.openwrt_target.clone(),
            pattern: pattern.map(str::to_string),
            rootfs: rootfs.cloned(),
            lzma_sdk_error: new.lzma_sdk_error.clone().or(old.lzma_sdk_error.clone()),
            rows,
        }
    }

    /// The devices that stop fitting.
    pub fn stop_fitting(&self) -> usize {
        self.rows
            .iter()
            .filter(|r| r.verdict() == FitVerdict::StopsFitting)
            .count()
    }

    /// A plain-text table, the devices closest to their limit first, then
    /// those without a limit, then those that could not be made.
    pub fn render(&self, top: Option<usize>) -> String {
        let mut rows: Vec<&DeviceRow> = self.rows.iter().collect();
        rows.sort_by_key(|r| (r.error.is_some(), r.headroom.is_none(), r.headroom));
        let mut out = String::new();
        self.write_header(&mut out);
        let n = top.unwrap_or(rows.len());
        for r in rows.iter().take(n) {
            write_row(&mut out, r);
        }
        if rows.len() > n {
            let _ = writeln!(out, "… {} more devices", rows.len() - n);
        }
        self.write_notes(&mut out);
        out
    }

    /// The lines of [`Self::render`] above its rows, appended to `out`:
    /// the rootfs whole images are sized with (if any), how many devices
    /// were made, stop fitting and fit again, and the column headings.
    fn write_header(&self, out: &mut String) {
        let made = self.rows.iter().filter(|r| r.error.is_none()).count();
        if let Some(r) = &self.rootfs {
            let _ = writeln!(
                out,
                "Whole images with the rootfs {} ({}, {} bytes, sha256 {}{}):",
                printable(&r.source),
                printable(&r.origin),
                r.bytes,
                &r.sha256[..r.sha256.len().min(12)],
                r.arch
                    .as_ref()
                    .map_or(String::new(), |(k, p)| format!(", {k}, from {p}"))
            );
        }
        let devices: std::collections::HashSet<&str> =
            self.rows.iter().map(|r| r.device.as_str()).collect();
        let counted = if devices.len() == self.rows.len() {
            format!("{} devices", devices.len())
        } else {
            format!("{} devices in {} rows", devices.len(), self.rows.len())
        };
        let _ = writeln!(
            out,
            "{counted} ({} made, {} could not be), {} stop fitting, {} fit again",
            made,
            self.rows.len() - made,
            self.stop_fitting(),
            self.rows
                .iter()
                .filter(|r| r.verdict() == FitVerdict::FitsAgain)
                .count()
        );
        let _ = writeln!(
            out,
            "{:<40} {:>10} {:>10} {:>13} {:>11} {:>7}  verdict",
            "device [image]", "base", "variant", "limit", "headroom", "%"
        );
    }

    /// The notes of [`Self::render`] below its rows, appended to `out`:
    /// which LZMA encoder the sizes are from, and what each kind of limit
    /// or row that the table shows means.
    fn write_notes(&self, out: &mut String) {
        if let Some(m) = self.rows.iter().find_map(|r| r.lzma_margin) {
            let _ = writeln!(
                out,
                "Sizes are liblzma's; OpenWrt's lzma (the LZMA SDK encoder) made {m:+} bytes on \
                 this kernel: a row within that of its limit says so."
            );
        }
        if let Some(e) = &self.lzma_sdk_error {
            let _ = writeln!(
                out,
                "Sizes are liblzma's; the LZMA SDK encoder could not be run: {}",
                printable(e)
            );
        }
        if self
            .rows
            .iter()
            .any(|r| r.image.as_deref() == Some(KERNEL_AND_ROOTFS))
        {
            out.push_str(
                "kernel + rootfs: the kernel image and the rootfs together against the DT's \
                 firmware partition, the least an image there holds (no header, no padding): \
                 over the limit, no image of the device fits.\n",
            );
        }
        if self
            .rows
            .iter()
            .any(|r| r.limit_kind == Some(LimitKind::FirmwarePartition))
        {
            out.push_str(
                "DT: no check-size applies KERNEL_SIZE or IMAGE_SIZE to the device, so the limit \
                 is the firmware partition of the device tree's fixed flash layout, which kernel \
                 and rootfs share.\n",
            );
        }
        if self.rows.iter().any(|r| r.verdict() == FitVerdict::NoLimit) {
            out.push_str(
                "no limit: no check-size applies KERNEL_SIZE or IMAGE_SIZE to it (a vendor step \
                 xtask does not make, such as tplink-v1-image, may check its own), and its record \
                 has no fixed firmware partition from the device tree (its partitions are found \
                 at boot, it compiles no DTS, or its device-fit.json was made before xtask read \
                 device trees: build it again with --force).\n",
            );
        }
        if self.rows.iter().any(|r| {
            r.image.is_none()
                && matches!(
                    r.limit_kind,
                    Some(LimitKind::ImageSize | LimitKind::FirmwarePartition)
                )
        }) {
            out.push_str(if self.rootfs.is_some() {
                "(kernel only): the kernel image against IMAGE_SIZE or the DT's firmware \
                 partition, the whole image's limit, where no recipe of the device checks the \
                 whole image with it (a vendor step, or a flash layout no recipe applies); the \
                 headroom is what is left for the rootfs, which the row does not count.\n"
            } else {
                "(kernel only): the kernel image against IMAGE_SIZE (or the DT's firmware \
                 partition), the whole image's limit; the headroom is what is left for the \
                 rootfs. Give --rootfs FILE to size the whole images.\n"
            });
        }
    }
}

/// Appends `r`'s line of [`DeviceFitDiff::render`]'s table to `out`:
/// device and image, both sizes, the limit and its kind, the headroom in
/// bytes and percent, and the verdict.
fn write_row(out: &mut String, r: &DeviceRow) {
    let num = |v: Option<u64>| v.map_or("-".into(), |v| v.to_string());
    let limit = match (&r.limit, r.limit_kind) {
        (Some(l), Some(LimitKind::ImageSize)) => format!("IMAGE {l}"),
        (Some(l), Some(LimitKind::FirmwarePartition)) => format!("DT {l}"),
        (Some(l), _) => format!("KERNEL {l}"),
        _ => "none".into(),
    };
    let verdict = verdict(r);
    let name = match &r.image {
        Some(i) => format!("{} {i}", r.device),
        None => r.device.clone(),
    };
    let _ = writeln!(
        out,
        "{:<40} {:>10} {:>10} {:>13} {:>11} {:>7}  {verdict}{}",
        name,
        num(r.base_bytes),
        num(r.variant_bytes),
        limit,
        r.headroom.map_or("-".into(), |h| h.to_string()),
        r.headroom_percent.map_or("-".into(), |p| format!("{p:.1}")),
        if r.default_n {
            " (OpenWrt: DEFAULT := n)"
        } else {
            ""
        }
    );
}

/// `r`'s verdict as the table words it: why it could not be made, or
/// whether it fits, with the side it is only in, whether only its kernel
/// was checked against a whole image's limit, and whether it is within
/// the LZMA encoders' margin.
fn verdict(r: &DeviceRow) -> String {
    let verdict = match &r.error {
        Some(e) => format!("{}: {}", FitVerdict::CannotMake.words(), printable(e)),
        None => r.verdict().words().to_string(),
    };
    let verdict = match r.only_in {
        Some(FitSide::Base) => format!("only in the base: {verdict}"),
        Some(FitSide::Variant) => format!("only in the variant: {verdict}"),
        None => verdict,
    };
    let verdict = match (&r.image, r.limit_kind) {
        (None, Some(LimitKind::ImageSize | LimitKind::FirmwarePartition)) => {
            format!("{verdict} (kernel only)")
        }
        _ => verdict,
    };
    match r.lzma_margin.filter(|_| r.lzma_near) {
        Some(m) => format!("{verdict} (within the LZMA encoders' {m:+} bytes)"),
        None => verdict,
    }
}

/// `dir/device-fit.json` of `result` (the `side` of a comparison, `base`
/// or `variant`, for messages), checked as the report relies on it: its
/// own checks ([`DeviceFitRecord::read`]), then that it describes
/// `result`'s vmlinux (sha256) and OpenWrt target.
///
/// Errors: no file (naming the side and the build that writes one), or any
/// check failing (naming the file and the fix).
pub fn read(dir: &Path, result: &BuildResult, side: &str) -> Result<DeviceFitRecord> {
    let (t, v) = (&result.target.name, &result.variant.name);
    let fix = format!(
        "build the OpenWrt-mode target again: `cargo xtask build --openwrt PATH --target {t} --variant {v} --force`"
    );
    let file = dir.join(crate::results::device_fit::FILE_NAME);
    let Some(record) = DeviceFitRecord::read_for(dir, result, &fix)
        .with_context(|| format!("--devices, the {side} {t}/{v}"))?
    else {
        bail!(
            "--devices: the {side} {t}/{v} has no {} (an OpenWrt-mode build of a target with an \
             openwrt_device writes it); {fix}",
            file.display()
        );
    };
    Ok(record)
}

/// The name of the row [`kernel_and_rootfs`] makes, in the image column.
pub const KERNEL_AND_ROOTFS: &str = "kernel + rootfs";

/// A device judged by its device tree's firmware partition, with a rootfs
/// of `rootfs_bytes`: its kernel image and the rootfs together against the
/// partition. No recipe of the device checks its image against the
/// partition, so this is the least any image in it holds (no header, no
/// padding): over the limit, no image fits; within it, one still may not.
fn kernel_and_rootfs(kernel: &DeviceRow, rootfs_bytes: u64) -> DeviceRow {
    let add = |k: Option<u64>| k.map(|k| k.saturating_add(rootfs_bytes));
    let (base_bytes, variant_bytes) = (add(kernel.base_bytes), add(kernel.variant_bytes));
    let own = match kernel.only_in {
        Some(FitSide::Base) => base_bytes,
        _ => variant_bytes,
    };
    let headroom = own
        .zip(kernel.limit_bytes)
        .map(|(size, l)| device_fit::headroom(l, size));
    let fits = |b: Option<u64>| Some(b? <= kernel.limit_bytes?);
    DeviceRow {
        image: Some(KERNEL_AND_ROOTFS.to_string()),
        base_bytes,
        variant_bytes,
        headroom,
        headroom_percent: headroom
            .zip(kernel.limit_bytes)
            .and_then(|(h, l)| device_fit::headroom_percent(l, h)),
        base_fits: fits(base_bytes),
        variant_fits: fits(variant_bytes),
        lzma_near: row::within(headroom, kernel.lzma_margin),
        ..kernel.clone()
    }
}

/// One device's row from what each side has (at least one of them): the
/// variant's limit and headroom, or the base's for a device only the base
/// lists. A limit is the device's, not the build's: both sides are judged
/// by the variant's, or by the base's where the variant's record has none
/// (a `device-fit.json` made before xtask read device trees beside one
/// made after).
fn row(base: Option<&DeviceFit>, variant: Option<&DeviceFit>) -> DeviceRow {
    let own = variant.or(base).expect("a row of a device one side lists");
    let limit = own
        .limit()
        .or_else(|| variant.and(base).and_then(DeviceFit::limit));
    let fits = |d: Option<&DeviceFit>| Some(d?.kernel_bytes? <= limit?.1.bytes);
    let headroom = own
        .kernel_bytes
        .zip(limit)
        .map(|(size, (_, l))| device_fit::headroom(l.bytes, size));
    let headroom_percent = headroom
        .zip(limit)
        .and_then(|(h, (_, l))| device_fit::headroom_percent(l.bytes, h));
    DeviceRow {
        device: own.device.clone(),
        image: None,
        only_in: match (base, variant) {
            (Some(_), None) => Some(FitSide::Base),
            (None, Some(_)) => Some(FitSide::Variant),
            _ => None,
        },
        limit_kind: limit.map(|(k, _)| k),
        limit: limit.map(|(_, l)| l.text.clone()),
        limit_bytes: limit.map(|(_, l)| l.bytes),
        base_bytes: base.and_then(|b| b.kernel_bytes),
        variant_bytes: variant.and_then(|v| v.kernel_bytes),
        headroom,
        headroom_percent,
        base_fits: fits(base),
        variant_fits: fits(variant),
        default_n: own.limits.default_n,
        error: variant
            .and_then(|v| v.error.clone())
            .or_else(|| base.and_then(|b| b.error.clone())),
        lzma_margin: own.lzma_margin,
        lzma_near: row::within(headroom, own.lzma_margin),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::device_fit::{DeviceLimits, Limit};

    fn record(bytes: u64) -> DeviceFitRecord {
        let limits = DeviceLimits {
            kernel_size: Some(Limit {
                text: "3072k".into(),
                bytes: 3072 * 1024,
            }),
            ..Default::default()
        };
        DeviceFitRecord {
            schema: 2,
            vmlinux_sha256: String::new(),
            openwrt_target: "ramips/mt7621".into(),
            seconds: 0.0,
            lzma_sdk_error: None,
            devices: vec![
                DeviceFit {
                    device: "ubnt_edgerouter-x".into(),
                    recipe: None,
                    kernel_bytes: Some(bytes),
                    error: None,
                    limits,
                    blocksize: None,
                    images: Vec::new(),
                    lzma_margin: None,
                },
                DeviceFit {
                    device: "xiaomi_mi-router-4a-gigabit".into(),
                    recipe: None,
                    kernel_bytes: None,
                    error: Some("KERNEL step `loader-kernel` is not supported".into()),
                    limits: Default::default(),
                    blocksize: None,
                    images: Vec::new(),
                    lzma_margin: None,
                },
            ],
        }
    }

    #[test]
    fn a_device_stops_fitting_at_one_byte_over() {
        let at = 3072 * 1024;
        let d = DeviceFitDiff::new(&record(at), &record(at + 1), None, None);
        assert_eq!(d.rows[0].base_fits, Some(true), "size = limit fits (-ge)");
        assert_eq!(d.rows[0].verdict(), FitVerdict::StopsFitting);
        assert_eq!(d.rows[0].headroom, Some(-1));
        assert_eq!(d.stop_fitting(), 1);
        let back = DeviceFitDiff::new(&record(at + 1), &record(at), None, None);
        assert_eq!(back.rows[0].verdict(), FitVerdict::FitsAgain);
        let text = d.render(None);
        assert!(text.contains("fits → does not fit"), "{text}");
        assert!(
            text.contains("cannot make: KERNEL step `loader-kernel`"),
            "{text}"
        );
        // A limit without a size once read "no limit, 0.0 %".
        let mut unsized_ = record(at);
        unsized_.devices[0].kernel_bytes = None;
        let d = DeviceFitDiff::new(&unsized_, &unsized_, None, None);
        assert_eq!(d.rows[0].verdict(), FitVerdict::NoSize);
        assert_eq!(d.rows[0].headroom_percent, None);
        let text = d.render(None);
        let line = text.lines().find(|l| l.starts_with("ubnt_")).unwrap();
        assert!(
            line.ends_with("no size recorded") && !line.contains("0.0"),
            "{line}"
        );
        // A headroom within the LZMA encoders' difference is flagged.
        let mut near = record(at - 1000);
        near.devices[0].lzma_margin = Some(-3028);
        let d = DeviceFitDiff::new(&near, &near, None, None);
        assert!(d.rows[0].lzma_near);
        let text = d.render(None);
        let line = text.lines().find(|l| l.starts_with("ubnt_")).unwrap();
        assert!(
            line.ends_with("fits (within the LZMA encoders' -3028 bytes)"),
            "{line}"
        );
        assert!(text.contains("OpenWrt's lzma (the LZMA SDK encoder) made -3028 bytes"));
        near.devices[0].kernel_bytes = Some(at - 4000);
        let d = DeviceFitDiff::new(&near, &near, None, None);
        assert!(!d.rows[0].lzma_near);
        let only = DeviceFitDiff::new(&record(at), &record(at), Some("ubnt_*"), None);
        assert_eq!(only.rows.len(), 1);
        assert!(matches("xiaomi", "xiaomi_mi-router-4a-gigabit"));
        assert!(!matches("ubnt_?", "ubnt_edgerouter-x"));
    }
}
