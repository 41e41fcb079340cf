//! `device-fit.json`: every device of an OpenWrt-mode result's target, its
//! kernel image made from the result's vmlinux with the device's own recipe
//! (kernel_build/openwrt_image/fit.rs) and its limits as OpenWrt's check-size
//! applies them (inputs/openwrt/image/limits.rs, whose module docs say
//! which limit applies to what).
//!
//! Schema 2 (schema 1 had no `images`, `blocksize`, `lzma_margin` and
//! `lzma_sdk_error`):
//!
//! ```text
//! { "schema": 1, "vmlinux_sha256": "<hex>", "openwrt_target": "ramips/mt7621",
//!   "seconds": 9.8,
//!   "devices": [ { "device": "ubnt_edgerouter-x",
//!                  "recipe": "kernel-bin | append-dtb | lzma | uImage lzma" | null,
//!                  "kernel_bytes": 2269859 | null,       // <device>-kernel.bin
//!                  "error": null | "why it could not be made",
//!                  "limits": { "kernel_size": {"text": "3072k", "bytes": 3145728} | null,
//!                              "image_size": {…} | null,
//!                              "image_size_checks": ["sysupgrade.bin"],
//!                              "firmware_partition": {…},  // only without both: the DT's
//!                              "default_n": false, "broken": false },
//!                  "blocksize": "64k" | null,            // $(BLOCKSIZE)
//!                  "images": [ { "image": "sysupgrade.bin",
//!                                "recipe": "append-kernel | pad-to 64k | append-rootfs | …",
//!                                "error": null | "why it cannot be sized" } ],
//!                  "lzma_margin": -3028 | null } ],          // LZMA SDK − liblzma, bytes
//!   "lzma_sdk_error": null | "why lzma_alone could not run" }
//! ```
//!
//! `images` lists each image of the device's `IMAGES` whose recipe has a
//! `check-size`, with its recipe as make expanded it and `$(BLOCKSIZE)`
//! replaced; `error` says when the checkout defines one of its steps
//! otherwise than xtask makes it. The whole image's size needs a rootfs,
//! which the report is given (report/device_fit.rs).
//!
//! A device whose recipe could not be evaluated or made has `error` set and
//! no `kernel_bytes`; it is listed, never left out. Reading checks what the
//! report relies on ([`DeviceFitRecord::read`]); the report checks the
//! vmlinux and target against the record's `result.json`.

use std::path::Path;

use anyhow::Result;
use serde::{Deserialize, Serialize};

use crate::util::fs::{write_atomic, FileLimit};
use crate::util::text::printable;

/// File name in a results directory.
pub const FILE_NAME: &str = "device-fit.json";

/// Layout version of the file.
pub const SCHEMA: u32 = 2;

/// The largest file read: a target has a few hundred devices.
pub const LIMIT: FileLimit = FileLimit {
    what: FILE_NAME,
    max_bytes: 16 << 20,
};

/// One size limit as the Makefile writes it and in bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limit {
    /// As written after make's expansion (`3072k`, `0xf60000`).
    pub text: String,
    /// In bytes (`exp_units`, then the shell's `$(( ))`).
    pub bytes: u64,
}

/// What limits a device's images.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct DeviceLimits {
    /// `KERNEL_SIZE`: the kernel image's limit.
    pub kernel_size: Option<Limit>,
    /// `IMAGE_SIZE`, when an image recipe applies it (`check-size` without
    /// an argument): the whole image's limit, kernel and rootfs.
    pub image_size: Option<Limit>,
    /// The images whose recipe applies `IMAGE_SIZE` (`sysupgrade.bin`, …).
    pub image_size_checks: Vec<String>,
    /// Without `KERNEL_SIZE` and `IMAGE_SIZE`: the size of the `firmware`
    /// partition of the device tree's fixed flash layout
    /// ([`crate::measure::flash_layout`]), written in hex (`0x7cc0000`),
    /// the room kernel and rootfs share; absent from records made before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub firmware_partition: Option<Limit>,
    /// `DEFAULT := n`: not built by default (the buildbot skips it).
    pub default_n: bool,
    /// `BROKEN` set: hidden from menuconfig.
    pub broken: bool,
}

/// What `device-fit.json` holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceFitRecord {
    /// [`SCHEMA`].
    pub schema: u32,
    /// sha256 of the vmlinux the images were made from.
    pub vmlinux_sha256: String,
    /// The OpenWrt target (`ramips/mt7621`).
    pub openwrt_target: String,
    /// Wall time of making every device's image, seconds.
    pub seconds: f64,
    /// Every device of `TARGET_DEVICES`, in the Makefiles' order.
    pub devices: Vec<DeviceFit>,
    /// Why the LZMA SDK encoder could not be run for
    /// [`DeviceFit::lzma_margin`] (not installed, failed), if it could not.
    pub lzma_sdk_error: Option<String>,
}

/// One device's kernel image and limits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceFit {
    /// The device (`ubnt_edgerouter-x`).
    pub device: String,
    /// Its `KERNEL` recipe, when make evaluated it.
    pub recipe: Option<String>,
    /// The size of `<device>-kernel.bin`, bytes; `None` with `error`.
    pub kernel_bytes: Option<u64>,
    /// Why the image could not be made (an unsupported step, a DTS that
    /// does not compile, …).
    pub error: Option<String>,
    /// Its limits (empty when the recipe could not be evaluated).
    pub limits: DeviceLimits,
    /// `$(BLOCKSIZE)`, the flash's erase block (`64k`), when set: what
    /// `pad-rootfs` pads to.
    pub blocksize: Option<String>,
    /// Its images whose recipe checks a size.
    pub images: Vec<ImageRecipe>,
    /// For a kernel image with an LZMA step: the LZMA SDK encoder's stream
    /// (OpenWrt's `lzma`) minus liblzma's, bytes, measured on one device
    /// of the same kernel and LZMA parameters
    /// (kernel_build/openwrt_image/lzma_sdk.rs): how far `kernel_bytes`
    /// may be from OpenWrt's.
    pub lzma_margin: Option<i64>,
}

/// One image of a device (`IMAGE/<image>`) whose recipe has a `check-size`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImageRecipe {
    /// The image (`sysupgrade.bin`, `factory.bin`).
    pub image: String,
    /// Its recipe as make expanded it, `$(BLOCKSIZE)` replaced.
    pub recipe: String,
    /// Why it cannot be sized whatever the rootfs (a step the checkout
    /// defines otherwise than xtask makes it).
    pub error: Option<String>,
}

/// The most images a device may list (OpenWrt's have up to about 6).
pub const MAX_IMAGES: usize = 64;

/// The longest image recipe or error a record may hold, characters.
pub const MAX_RECIPE_CHARS: usize = 4096;

/// Which limit a verdict is against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LimitKind {
    /// `KERNEL_SIZE`, checked on the kernel image itself.
    KernelSize,
    /// `IMAGE_SIZE`, checked on the whole image: the kernel's share.
    ImageSize,
    /// Neither in the Makefile: the device tree's `firmware` partition,
    /// which kernel and rootfs share (the kernel's share, as `IMAGE_SIZE`).
    FirmwarePartition,
}

impl DeviceFit {
    /// The limit the kernel image is judged by: `KERNEL_SIZE` when set
    /// (check-size on the kernel image, exact), else `IMAGE_SIZE` (the whole
    /// image's limit: the kernel alone against it, the rest is the room
    /// for the rootfs), else the device tree's firmware partition (the
    /// same room, from the flash layout).
    pub fn limit(&self) -> Option<(LimitKind, &Limit)> {
        let l = &self.limits;
        match (&l.kernel_size, &l.image_size, &l.firmware_partition) {
            (Some(k), _, _) => Some((LimitKind::KernelSize, k)),
            (None, Some(i), _) => Some((LimitKind::ImageSize, i)),
            (None, None, Some(f)) => Some((LimitKind::FirmwarePartition, f)),
            (None, None, None) => None,
        }
    }

    /// Limit minus size, bytes (negative: over the limit); exact for every
    /// pair of `u64`s, saturating at `i64`'s ends (a record read with
    /// [`DeviceFitRecord::read`] has sizes far inside them).
    pub fn headroom(&self) -> Option<i64> {
        let (_, limit) = self.limit()?;
        Some(headroom(limit.bytes, self.kernel_bytes?))
    }

    /// The headroom in percent of the limit; `None` without a size, a
    /// limit, or for a limit of 0 bytes.
    pub fn headroom_percent(&self) -> Option<f64> {
        let (_, limit) = self.limit()?;
        headroom_percent(limit.bytes, self.headroom()?)
    }

    /// check-size's verdict: size ≤ limit (`[ $limitsize -ge $imagesize ]`);
    /// `None` without a size or limit.
    pub fn fits(&self) -> Option<bool> {
        let (_, limit) = self.limit()?;
        Some(self.kernel_bytes? <= limit.bytes)
    }
}

/// `limit - size`, bytes (negative: over the limit); exact for every pair
/// of `u64`s, saturating at `i64`'s ends.
pub fn headroom(limit: u64, size: u64) -> i64 {
    (i128::from(limit) - i128::from(size)).clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
}

/// `headroom` in percent of `limit`; `None` for a limit of 0 bytes.
pub fn headroom_percent(limit: u64, headroom: i64) -> Option<f64> {
    (limit > 0).then(|| headroom as f64 * 100.0 / limit as f64)
}

/// The largest size or limit a record may hold, bytes (1 TiB): more than
/// any router's flash, and small enough that sums and differences of
/// sizes stay exact in `i64` and `f64`.
pub const MAX_BYTES: u64 = 1 << 40;

/// The longest device name a record may hold (OpenWrt's are under 64
/// characters).
pub const MAX_NAME_CHARS: usize = 256;

/// The longest limit text a record may hold (`(16 * 1024k) - 2048k` and
/// the like are under 40).
pub const MAX_LIMIT_CHARS: usize = 128;

impl DeviceFitRecord {
    /// Reads `dir/device-fit.json`; `None` when there is none.
    ///
    /// Errors: not a regular file of at most [`LIMIT`], not JSON of this
    /// layout, or another schema (each naming the file and `fix`).
    pub fn read(dir: &Path, fix: &str) -> Result<Option<DeviceFitRecord>> {
        let Some(record) = super::read_json_record::<DeviceFitRecord>(
            dir,
            (FILE_NAME, "a device fit", LIMIT),
            (SCHEMA, |r| r.schema),
            fix,
        )?
        else {
            return Ok(None);
        };
        record
            .check()
            .map_err(|why| anyhow::anyhow!("{}: {why}; {fix}", dir.join(FILE_NAME).display()))?;
        Ok(Some(record))
    }

    /// [`DeviceFitRecord::read`], then that the record describes
    /// `result`'s vmlinux (its sha256) and OpenWrt target: what the report
    /// and a merge accept.
    ///
    /// Errors: those of `read`, another vmlinux or target (naming the file
    /// and `fix`).
    pub fn read_for(
        dir: &Path,
        result: &super::BuildResult,
        fix: &str,
    ) -> Result<Option<DeviceFitRecord>> {
        let Some(record) = Self::read(dir, fix)? else {
            return Ok(None);
        };
        let file = dir.join(FILE_NAME);
        super::check_vmlinux(&file, result, &record.vmlinux_sha256, fix)?;
        let target = result.openwrt.as_ref().map(|o| o.target.as_str());
        if target != Some(record.openwrt_target.as_str()) {
            anyhow::bail!(
                "{} is of OpenWrt target {}, but {}/{} was built for {}; {fix}",
                file.display(),
                record.openwrt_target,
                result.target.name,
                result.variant.name,
                target.unwrap_or("no OpenWrt target (not an OpenWrt-mode build)")
            );
        }
        Ok(Some(record))
    }

    /// What [`DeviceFitRecord::read`] checks beyond the layout, as a
    /// sentence naming the device and field: the vmlinux sha256 is 64
    /// lowercase hex digits, the target a plain `board/subtarget`, every
    /// device name printable ASCII, at most [`MAX_NAME_CHARS`] and listed
    /// once, every size and limit at most [`MAX_BYTES`], every limit's text
    /// printable ASCII of at most [`MAX_LIMIT_CHARS`] and evaluating to its
    /// bytes as check-size evaluates it
    /// ([`crate::util::shell_arith::limit_bytes`]), the time finite and
    /// not negative.
    fn check(&self) -> std::result::Result<(), String> {
        let sha = &self.vmlinux_sha256;
        if sha.len() != 64 || !sha.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            return Err(format!(
                "vmlinux_sha256 \"{}\" is not a sha256 (64 lowercase hex digits)",
                printable(sha)
            ));
        }
        let target = &self.openwrt_target;
        if target.split('/').count() != 2
            || !target
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._-/".contains(&b))
        {
            return Err(format!(
                "openwrt_target \"{}\" is not an OpenWrt board/subtarget",
                printable(target)
            ));
        }
        if let Some(e) = &self.lzma_sdk_error {
            if e.len() > MAX_RECIPE_CHARS || !e.chars().all(|c| c == ' ' || c.is_ascii_graphic()) {
                return Err(format!(
                    "lzma_sdk_error is longer than {MAX_RECIPE_CHARS} characters or holds control \
                     characters or non-ASCII"
                ));
            }
        }
        if !self.seconds.is_finite() || self.seconds < 0.0 {
            return Err(format!("seconds is {}", self.seconds));
        }
        let mut seen = std::collections::BTreeSet::new();
        for d in &self.devices {
            let name = &d.device;
            if name.is_empty()
                || name.len() > MAX_NAME_CHARS
                || !name.bytes().all(|b| b.is_ascii_graphic())
            {
                return Err(format!(
                    "device name \"{}\" is empty, longer than {MAX_NAME_CHARS} characters or not \
                     printable ASCII (OpenWrt's device names are letters, digits, `_`, `-`, `.`)",
                    name.chars().take(64).collect::<String>().escape_default()
                ));
            }
            if !seen.insert(name.as_str()) {
                return Err(format!("device {name} is listed twice"));
            }
            if d.lzma_margin.is_some_and(|m| m.unsigned_abs() > MAX_BYTES) {
                return Err(format!(
                    "device {name}: lzma_margin is more than {MAX_BYTES} bytes"
                ));
            }
            if let Some(bytes) = d.kernel_bytes.filter(|b| *b > MAX_BYTES) {
                return Err(format!(
                    "device {name}: kernel_bytes {bytes} is more than {MAX_BYTES}"
                ));
            }
            check_images(d)?;
            if d.limits.firmware_partition.is_some()
                && (d.limits.kernel_size.is_some() || d.limits.image_size.is_some())
            {
                return Err(format!(
                    "device {name}: firmware_partition is recorded only without kernel_size and \
                     image_size, but this device has one of them"
                ));
            }
            let limits = [
                ("kernel_size", &d.limits.kernel_size),
                ("image_size", &d.limits.image_size),
                ("firmware_partition", &d.limits.firmware_partition),
            ];
            for (field, limit) in limits {
                let Some(limit) = limit else { continue };
                if limit.text.len() > MAX_LIMIT_CHARS
                    || !limit
                        .text
                        .bytes()
                        .all(|b| b.is_ascii_graphic() || b == b' ')
                {
                    return Err(format!(
                        "device {name}: {field} \"{}\" is longer than {MAX_LIMIT_CHARS} characters \
                         or holds control characters or non-ASCII",
                        limit.text.chars().take(MAX_LIMIT_CHARS).collect::<String>().escape_default()
                    ));
                }
                if limit.bytes > MAX_BYTES {
                    return Err(format!(
                        "device {name}: {field} is {} bytes, more than {MAX_BYTES}",
                        limit.bytes
                    ));
                }
                match crate::util::shell_arith::limit_bytes(&limit.text) {
                    Ok(b) if b == limit.bytes => {}
                    Ok(b) => {
                        return Err(format!(
                            "device {name}: {field} \"{}\" is {b} bytes as check-size reads it, but the record says {}",
                            printable(&limit.text),
                            limit.bytes
                        ))
                    }
                    Err(e) => return Err(format!("device {name}: {field}: {e:#}")),
                }
            }
        }
        Ok(())
    }
}

/// A device's `blocksize` and `images` as [`DeviceFitRecord::read`] checks
/// them: at most [`MAX_IMAGES`] images, each named once with a plain file
/// name, recipes and errors printable and at most [`MAX_RECIPE_CHARS`],
/// the block size a short printable word.
fn check_images(d: &DeviceFit) -> std::result::Result<(), String> {
    let name = &d.device;
    let plain =
        |t: &str, max: usize| t.len() <= max && t.chars().all(|c| c == ' ' || c.is_ascii_graphic());
    if let Some(b) = &d.blocksize {
        if b.is_empty() || !plain(b, 32) || b.contains(' ') {
            return Err(format!(
                "device {name}: blocksize \"{}\" is not a size",
                b.chars().take(32).collect::<String>().escape_default()
            ));
        }
    }
    if d.images.len() > MAX_IMAGES {
        return Err(format!(
            "device {name}: {} images, more than {MAX_IMAGES}",
            d.images.len()
        ));
    }
    let mut seen = std::collections::BTreeSet::new();
    for i in &d.images {
        // Printable ASCII without `/`: OpenWrt's image names are file
        // names, some with a variable make leaves for the recipe
        // (`factory-$(ZYXEL_MODEL_STRING).bin`).
        let file_name = !i.image.is_empty()
            && i.image.len() <= MAX_NAME_CHARS
            && !matches!(i.image.as_str(), "." | "..")
            && i.image.bytes().all(|b| b.is_ascii_graphic() && b != b'/');
        if !file_name {
            return Err(format!(
                "device {name}: image name \"{}\" is not a plain file name",
                i.image
                    .chars()
                    .take(64)
                    .collect::<String>()
                    .escape_default()
            ));
        }
        if !seen.insert(i.image.as_str()) {
            return Err(format!("device {name}: image {} is listed twice", i.image));
        }
        let texts = [("recipe", Some(&i.recipe)), ("error", i.error.as_ref())];
        for (field, text) in texts {
            if text.is_some_and(|t| !plain(t, MAX_RECIPE_CHARS)) {
                return Err(format!(
                    "device {name}: image {}: {field} is longer than {MAX_RECIPE_CHARS} \
                     characters or holds control characters or non-ASCII",
                    i.image
                ));
            }
        }
    }
    Ok(())
}

impl DeviceFitRecord {
    /// Writes `dir/device-fit.json` atomically.
    pub fn write(&self, dir: &Path) -> Result<()> {
        let mut json = serde_json::to_string_pretty(self)?;
        json.push('\n');
        write_atomic(&dir.join(FILE_NAME), json.as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fit(kernel_bytes: u64, limit: u64) -> DeviceFit {
        DeviceFit {
            device: "d".into(),
            recipe: None,
            kernel_bytes: Some(kernel_bytes),
            error: None,
            limits: DeviceLimits {
                kernel_size: Some(Limit {
                    text: limit.to_string(),
                    bytes: limit,
                }),
                ..Default::default()
            },
            blocksize: None,
            images: Vec::new(),
            lzma_margin: None,
        }
    }

    /// `limit as i64 - kernel_bytes as i64` panicked
    /// (overflow) for 9223372036854775813 bytes and called u64::MAX bytes
    /// `fits`. The verdict compares the sizes as check-size does.
    #[test]
    fn the_verdict_and_headroom_hold_for_every_size() {
        let limit = 3_145_728;
        for (bytes, fits) in [
            (limit, true),
            (limit + 1, false),
            (9_223_372_036_854_775_813, false),
            (u64::MAX, false),
            (0, true),
        ] {
            let d = fit(bytes, limit);
            assert_eq!(d.fits(), Some(fits), "{bytes}");
            assert_eq!(d.headroom().unwrap() >= 0, fits, "{bytes}");
            assert!(d.headroom_percent().unwrap() <= 100.0, "{bytes}");
        }
        assert_eq!(fit(u64::MAX, limit).headroom(), Some(i64::MIN));
        assert_eq!(fit(0, u64::MAX).headroom(), Some(i64::MAX));
        assert_eq!(fit(0, u64::MAX).fits(), Some(true));
    }
}
