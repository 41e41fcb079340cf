//! The kernel build a device image is made from ([`KernelTree`]).

use std::path::Path;

/// The kernel build a device image is made from.
#[derive(Debug, Clone, Copy)]
pub struct KernelTree<'a> {
    /// The kernel tree, built in place (OpenWrt's `$(LINUX_DIR)`).
    pub linux_dir: &'a Path,
    /// Its `vmlinux`.
    pub vmlinux: &'a Path,
    /// `CROSS_COMPILE` (`mipsel-linux-gnu-`), for objcopy and cpp.
    pub cross_compile: &'a str,
    /// The kernel `ARCH` (`mips`, `arm`): OpenWrt's `$(LINUX_KARCH)`.
    pub karch: &'a str,
    /// The full kernel version (`6.12.57`): OpenWrt's `$(LINUX_VERSION)`.
    pub linux_version: &'a str,
}
