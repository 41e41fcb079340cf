//! `cargo xtask setup`: the Debian packages the targets need.

use anyhow::{Context, Result};
use xshell::{cmd, Shell};

use crate::kernel_src;
use crate::targets::{Artifact, Target};
use crate::toolchain::HOST_TOOLS;

/// Debian packages for building `targets`: host tools, each target's cross
/// compiler and binutils, `u-boot-tools` for uImages, and the
/// `linux-source-<kver>` of every kernel series the targets use, and for
/// targets with a `[lab]` table QEMU, iperf3, iproute2, ethtool and
/// nftables. Sorted, without duplicates.
pub fn packages(targets: &[Target]) -> Vec<String> {
    let mut packages: Vec<String> = HOST_TOOLS.iter().map(|(_, p)| p.to_string()).collect();
    // The kernel's host programs (fixdep, kconfig) need the C library headers.
    packages.push("libc6-dev".to_string());
    for target in targets {
        packages.push(target.compiler_package.clone());
        packages.push(kernel_src::debian_package(&target.kernel));
        if target.artifacts.contains(&Artifact::UImage) {
            packages.push("u-boot-tools".to_string());
        }
        if let Some(lab) = &target.lab {
            packages.extend(crate::measure::lab::host_packages(lab));
        }
    }
    packages.sort();
    packages.dedup();
    packages
}

/// Installs `packages` with apt-get when running as root; otherwise prints
/// the command to run. Returns whether it installed.
pub fn install(sh: &Shell, packages: &[String]) -> Result<bool> {
    let is_root = cmd!(sh, "id -u")
        .quiet()
        .read()
        .is_ok_and(|uid| uid.trim() == "0");
    if !is_root {
        println!(
            "run as root:\n  apt-get update && apt-get install -y --no-install-recommends --no-upgrade {}",
            packages.join(" ")
        );
        return Ok(false);
    }
    cmd!(sh, "apt-get update")
        .env("DEBIAN_FRONTEND", "noninteractive")
        .run()
        .context("apt-get update")?;
    // --no-upgrade: an installed linux-source-<kver> stays at its version,
    // whose tarball sum patches/kernel-sources.toml may pin.
    cmd!(
        sh,
        "apt-get install -y --no-install-recommends --no-upgrade {packages...}"
    )
    .env("DEBIAN_FRONTEND", "noninteractive")
    .run()
    .context("apt-get install")?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_target_brings_its_compiler_and_source() {
        let layout = crate::paths::Layout::from_manifest_dir();
        let targets = crate::targets::load_all(&layout.targets_dir()).unwrap();
        let packages = packages(&targets);
        for t in &targets {
            assert!(packages.contains(&t.compiler_package), "{}", t.name);
        }
        assert!(packages.contains(&"linux-source-6.12".to_string()));
        assert!(packages.contains(&"u-boot-tools".to_string()));
        for lab in ["qemu-system-mips", "iperf3", "ethtool", "nftables"] {
            assert!(packages.contains(&lab.to_string()), "{lab}");
        }
    }
}
