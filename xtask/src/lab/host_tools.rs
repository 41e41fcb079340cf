//! The host programs the lab runs and the check that they are on `PATH`,
//! naming the Debian packages that add the missing ones.

use anyhow::{bail, Result};

use crate::inputs::lab::LabSpec;
use crate::kernel_build::toolchain::find_in_path;

/// Host programs the lab runs, with their Debian packages (the target's
/// QEMU comes from its `[lab]` table).
pub const HOST_TOOLS: &[(&str, &str)] = &[
    ("iperf3", "iperf3"),
    ("ip", "iproute2"),
    ("ethtool", "ethtool"),
    ("apt-get", "apt"),
    ("dpkg-deb", "dpkg"),
];

/// Fails naming every missing host program and the packages to install.
pub fn check_host_tools(spec: &LabSpec) -> Result<()> {
    let mut tools: Vec<(&str, &str)> = HOST_TOOLS.to_vec();
    tools.push((&spec.qemu, &spec.qemu_package));
    require_tools("the lab", &tools)
}

/// Fails when a program of `tools` (program, Debian package) is not on
/// `PATH`, naming every missing one and the `apt-get install` that adds
/// them; `who` begins the message ("the SSH lab").
pub fn require_tools(who: &str, tools: &[(&str, &str)]) -> Result<()> {
    let missing: Vec<&(&str, &str)> = tools
        .iter()
        .filter(|(t, _)| find_in_path(t).is_none())
        .collect();
    if !missing.is_empty() {
        let names: Vec<&str> = missing.iter().map(|(t, _)| *t).collect();
        let mut packages: Vec<&str> = missing.iter().map(|(_, p)| *p).collect();
        packages.sort_unstable();
        packages.dedup();
        bail!(
            "{who} needs {} on this machine: run `apt-get install {}` (or `cargo xtask setup`)",
            names.join(", "),
            packages.join(" ")
        );
    }
    Ok(())
}
