//! The `[lab]` table of `targets/<t>.toml`: which QEMU machine runs the
//! target's router kernel, and how the lab kernel's config differs.
//!
//! ```toml
//! [lab]
//! qemu = "qemu-system-mipsel"
//! qemu_package = "qemu-system-mips"
//! machine = "malta"
//! cpu = "74Kf"
//! guest_arch = "mipsel"
//! replace_fragments = ["kconfig/brcm47xx.config"]
//! fragments = ["kconfig/lab-malta.config", "kconfig/lab-malta-le.config"]
//! nic = "pcnet"
//! nic_pci_slots = ["0x12", "0x14"]
//! ```

use std::path::Path;

use anyhow::{bail, Context, Result};
use serde::Deserialize;

/// How the lab runs one target (see the module docs for an example).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LabSpec {
    /// The QEMU system emulator, e.g. `qemu-system-mipsel`.
    pub qemu: String,
    /// Debian package providing it, e.g. `qemu-system-mips`.
    pub qemu_package: String,
    /// `-M` value, e.g. `malta` or `vexpress-a9`.
    pub machine: String,
    /// `-cpu` value, e.g. `74Kf`.
    pub cpu: String,
    /// `-smp` value (virtual CPUs).
    #[serde(default = "one")]
    pub smp: u32,
    /// Guest RAM in MiB (`-m`).
    #[serde(default = "default_memory")]
    pub memory_mib: u32,
    /// Debian architecture of the guest userspace (`mipsel`, `armel`), or
    /// `none` when Debian has none (big-endian MIPS).
    pub guest_arch: String,
    /// The target's fragments (as written in its `[kconfig]`) that describe
    /// the real SoC and are left out of the lab kernel. Every other fragment
    /// (the router configuration) is kept.
    #[serde(default)]
    pub replace_fragments: Vec<String>,
    /// Fragments relative to `targets/` merged after the kept ones: the
    /// emulated machine, its NIC, console and initramfs support.
    pub fragments: Vec<String>,
    /// The file QEMU boots, relative to the build directory: `vmlinux` on
    /// MIPS, `arch/arm/boot/zImage` on ARM.
    #[serde(default = "default_kernel_image")]
    pub kernel_image: String,
    /// A device tree the kernel builds and QEMU passes with `-dtb`, as a
    /// `make` goal under `arch/<arch>/boot/dts/`, e.g.
    /// `arm/vexpress-v2p-ca9.dtb`; none on Malta.
    #[serde(default)]
    pub dtb: Option<String>,
    /// Serial console device in the guest, e.g. `ttyS0` or `ttyAMA0`.
    #[serde(default = "default_console")]
    pub console: String,
    /// QEMU NIC model (`-device` name), e.g. `pcnet`.
    pub nic: String,
    /// PCI slot of each NIC (LAN first), e.g. `["0x12", "0x14"]`; empty for
    /// NICs that are not on PCI (virtio-mmio).
    #[serde(default)]
    pub nic_pci_slots: Vec<String>,
    /// Extra QEMU arguments, e.g. `["-vga", "none"]`.
    #[serde(default)]
    pub qemu_args: Vec<String>,
}

fn one() -> u32 {
    1
}

fn default_memory() -> u32 {
    256
}

fn default_kernel_image() -> String {
    "vmlinux".to_string()
}

fn default_console() -> String {
    "ttyS0".to_string()
}

impl LabSpec {
    /// Checks the table against its target file: replaced fragments must be
    /// the target's, added ones must exist, two PCI slots or none.
    pub fn validate(&self, target_file: &Path, target_fragments: &[String]) -> Result<()> {
        let file = target_file.display();
        for f in &self.replace_fragments {
            if !target_fragments.contains(f) {
                bail!(
                    "{file}: [lab] replace_fragments names {f:?}, which is not in [kconfig] fragments {target_fragments:?}"
                );
            }
        }
        for f in self.fragments.iter().chain(&self.replace_fragments) {
            if let Some(why) = crate::util::path::unsafe_reason(Path::new(f)) {
                bail!("{file}: [lab] fragment {f:?} ({why}); name a file under targets/");
            }
        }
        if let Some(dtb) = &self.dtb {
            // A make goal on make's command line.
            crate::inputs::targets::check_plain("[lab] dtb", dtb, "._-/")
                .with_context(|| format!("{file}: refusing this [lab] table"))?;
        }
        let dir = target_file.parent().unwrap_or(Path::new("."));
        for f in &self.fragments {
            if !dir.join(f).is_file() {
                bail!(
                    "{file}: [lab] fragment {f:?} does not exist in {}",
                    dir.display()
                );
            }
        }
        if !(self.nic_pci_slots.is_empty() || self.nic_pci_slots.len() == 2) {
            bail!(
                "{file}: [lab] nic_pci_slots needs two slots (LAN, WAN) or none, not {:?}",
                self.nic_pci_slots
            );
        }
        if self.smp == 0 || self.memory_mib < 64 {
            bail!("{file}: [lab] needs smp >= 1 and memory_mib >= 64");
        }
        Ok(())
    }
}
