//! The QEMU router lab: `cargo xtask lab --target T --variant V...`.
//!
//! Each variant's router kernel is built for a QEMU machine of the target's
//! ISA ([`kernel`]), booted with a Debian initramfs ([`rootfs`]) between two
//! network namespaces (`lan` — tap — guest — tap — `wan`, [`topology`]),
//! and measured with iperf3 through the guest's nftables masquerade.

pub mod cpio;
pub mod guest;
pub mod kernel;
pub mod process;
pub mod rootfs;
pub mod spec;

use anyhow::{bail, Result};

use crate::toolchain::find_in_path;

pub use spec::LabSpec;

/// Host programs the lab runs, with their Debian packages (the target's
/// QEMU comes from its `[lab]` table).
pub const HOST_TOOLS: &[(&str, &str)] = &[
    ("iperf3", "iperf3"),
    ("ip", "iproute2"),
    ("ethtool", "ethtool"),
    ("apt-get", "apt"),
    ("dpkg-deb", "dpkg"),
];

/// Debian packages the lab needs on the host for `spec` (QEMU, iperf3,
/// iproute2, ethtool, nftables).
pub fn host_packages(spec: &LabSpec) -> Vec<String> {
    let mut p: Vec<String> = HOST_TOOLS.iter().map(|(_, p)| p.to_string()).collect();
    p.push("nftables".to_string());
    p.push(spec.qemu_package.clone());
    p
}

/// Fails naming every missing host program and the packages to install.
pub fn check_host_tools(spec: &LabSpec) -> Result<()> {
    let mut tools: Vec<(&str, &str)> = HOST_TOOLS.to_vec();
    tools.push((&spec.qemu, &spec.qemu_package));
    let missing: Vec<(&str, &str)> = tools
        .into_iter()
        .filter(|(t, _)| find_in_path(t).is_none())
        .collect();
    if !missing.is_empty() {
        let names: Vec<&str> = missing.iter().map(|(t, _)| *t).collect();
        let packages: Vec<&str> = missing.iter().map(|(_, p)| *p).collect();
        bail!(
            "the lab needs {} on the host: run `apt-get install {}` (or `cargo xtask setup`)",
            names.join(", "),
            packages.join(" ")
        );
    }
    Ok(())
}
