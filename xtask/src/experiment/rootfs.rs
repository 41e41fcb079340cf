//! `--rootfs FILE` and `[report] rootfs`: the rootfs read
//! ([`crate::inputs::rootfs::Rootfs::load`]) and handed to the report as
//! its summary, since the report reads no inputs.

use std::path::Path;

use anyhow::Result;

use crate::inputs::rootfs::Rootfs;
use crate::report::device_fit::images::RootfsSummary;

/// Reads the rootfs at `file` (a squashfs, or an OpenWrt image it is split
/// from) and its architecture, for `size-report --devices --rootfs`.
///
/// Errors: those of [`Rootfs::load`], naming the file.
pub fn rootfs_summary(file: &Path) -> Result<RootfsSummary> {
    let r = Rootfs::load(file)?;
    Ok(RootfsSummary {
        source: r.source,
        origin: r.origin.to_string(),
        bytes: r.bytes,
        sha256: r.sha256,
        arch: r.arch,
    })
}
