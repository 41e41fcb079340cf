//! `device-fit.json`: every device of an OpenWrt-mode result's target, its
//! kernel image made from the result's vmlinux with the device's own recipe
//! (kernel_build/openwrt_image/fit.rs) and its limits as OpenWrt's check-size
//! applies them (inputs/openwrt/image/limits.rs, whose module docs say
//! which limit applies to what).
//!
//! Schema 1:
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
//!                              "default_n": false, "broken": false } } ] }
//! ```
//!
//! A device whose recipe could not be evaluated or made has `error` set and
//! no `kernel_bytes`; it is listed, never left out.

use std::path::Path;

use anyhow::Result;
use serde::{Deserialize, Serialize};

use crate::util::fs::{write_atomic, FileLimit};

/// File name in a results directory.
pub const FILE_NAME: &str = "device-fit.json";

/// Layout version of the file.
pub const SCHEMA: u32 = 1;

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
}

/// Which limit a verdict is against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LimitKind {
    /// `KERNEL_SIZE`, checked on the kernel image itself.
    KernelSize,
    /// `IMAGE_SIZE`, checked on the whole image: the kernel's share.
    ImageSize,
}

impl DeviceFit {
    /// The limit the kernel image is judged by: `KERNEL_SIZE` when set
    /// (check-size on the kernel image, exact), else `IMAGE_SIZE` (the whole
    /// image's limit: the kernel alone against it, the rest is the room
    /// for the rootfs).
    pub fn limit(&self) -> Option<(LimitKind, &Limit)> {
        match (&self.limits.kernel_size, &self.limits.image_size) {
            (Some(k), _) => Some((LimitKind::KernelSize, k)),
            (None, Some(i)) => Some((LimitKind::ImageSize, i)),
            (None, None) => None,
        }
    }

    /// Limit minus size, bytes (negative: over the limit).
    pub fn headroom(&self) -> Option<i64> {
        let (_, limit) = self.limit()?;
        Some(limit.bytes as i64 - self.kernel_bytes? as i64)
    }

    /// The headroom in percent of the limit.
    pub fn headroom_percent(&self) -> Option<f64> {
        let (_, limit) = self.limit()?;
        (limit.bytes > 0).then(|| self.headroom().unwrap_or(0) as f64 * 100.0 / limit.bytes as f64)
    }

    /// check-size's verdict: size ≤ limit; `None` without a size or limit.
    pub fn fits(&self) -> Option<bool> {
        self.headroom().map(|h| h >= 0)
    }
}

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
        Ok(Some(record))
    }

    /// Writes `dir/device-fit.json` atomically.
    pub fn write(&self, dir: &Path) -> Result<()> {
        let mut json = serde_json::to_string_pretty(self)?;
        json.push('\n');
        write_atomic(&dir.join(FILE_NAME), json.as_bytes())
    }
}
