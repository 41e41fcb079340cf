//! `cargo xtask setup`: the Debian packages the targets need.

use anyhow::{Context, Result};
use xshell::{cmd, Shell};

use crate::build::toolchain::HOST_TOOLS;
use crate::inputs::kernel_source;
use crate::inputs::targets::{Artifact, Target};

/// Debian packages for building `targets`: host tools, each target's cross
/// compiler and binutils, `u-boot-tools` for uImages (and with
/// `device-tree-compiler` for an `openwrt_device`'s image), and the
/// `linux-source-<kver>` of every kernel series the targets use, and for
/// targets with a `[lab]` table QEMU, iperf3, iproute2, ethtool,
/// nftables and openssh-client (the SSH lab), and for a static guest
/// (`[lab.static_guest]`) its cross compiler, static C library and build
/// tools. Sorted, without duplicates.
pub fn packages(targets: &[Target]) -> Vec<String> {
    let mut packages: Vec<String> = HOST_TOOLS.iter().map(|(_, p)| p.to_string()).collect();
    // The kernel's host programs (fixdep, kconfig) need the C library headers.
    packages.push("libc6-dev".to_string());
    // Builds compile through ccache unless --no-ccache.
    packages.push("ccache".to_string());
    for target in targets {
        packages.push(target.compiler_package.clone());
        packages.push(kernel_source::debian_package(&target.kernel));
        if target.artifacts.contains(&Artifact::UImage) {
            packages.push("u-boot-tools".to_string());
        }
        // OpenWrt mode's device image (build/openwrt_image): mkimage for
        // uImage steps, dtc when the kernel build made no scripts/dtc/dtc.
        if target.openwrt_device.is_some() {
            packages.push("u-boot-tools".to_string());
            packages.push("device-tree-compiler".to_string());
        }
        if let Some(lab) = &target.lab {
            packages.extend(crate::lab::host_packages(lab));
        }
    }
    packages.sort();
    packages.dedup();
    packages
}

/// Which of `packages` are not installed, as dpkg records them
/// (`dpkg-query -W`: status `ii`, installed and configured, in any
/// architecture); in `packages`' order.
///
/// Errors when dpkg-query cannot run (not a Debian system).
pub fn missing(sh: &Shell, packages: &[String]) -> Result<Vec<String>> {
    if packages.is_empty() {
        return Ok(Vec::new());
    }
    let format = "${Package} ${db:Status-Abbrev}\n";
    // dpkg-query exits 1 when a name is unknown to it; such a package is
    // missing, not an error.
    let out = cmd!(sh, "dpkg-query -W -f {format} {packages...}")
        .quiet()
        .ignore_status()
        .ignore_stderr()
        .output()
        .context("running dpkg-query (setup installs Debian packages)")?;
    Ok(not_installed(
        packages,
        &String::from_utf8_lossy(&out.stdout),
    ))
}

/// The `packages` that `dpkg-query -W -f '${Package} ${db:Status-Abbrev}\n'`
/// output `status` does not list as `ii`.
fn not_installed(packages: &[String], status: &str) -> Vec<String> {
    let installed: std::collections::BTreeSet<&str> = status
        .lines()
        .filter_map(|l| {
            let (name, abbrev) = l.split_once(' ')?;
            abbrev.starts_with("ii").then_some(name)
        })
        .collect();
    packages
        .iter()
        .filter(|p| !installed.contains(p.as_str()))
        .cloned()
        .collect()
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

/// Which packages `cargo xtask setup` installs, and how.
#[derive(Debug, Clone, Default)]
pub struct SetupRequest {
    /// Only the packages these targets need (`--target` spellings); empty:
    /// every target, and the host lab's (dbench, iperf3, ethtool).
    pub targets: Vec<String>,
    /// Also the reference tools the tests compare against ([`crate::host::selftest::TEST_PACKAGES`]).
    pub tests: bool,
    /// Print the `apt-get` command instead of running it.
    pub print_only: bool,
}

/// `cargo xtask setup`: installs (as root) or prints what `request` needs.
pub fn command(
    sh: &Shell,
    layout: &crate::util::layout::Layout,
    request: &SetupRequest,
) -> Result<()> {
    let all_targets = crate::inputs::targets::load_all(&layout.targets_dir())?;
    let chosen = if request.targets.is_empty() {
        all_targets
    } else {
        crate::inputs::targets::select(&all_targets, &request.targets)?
    };
    let mut packages = packages(&chosen);
    if request.targets.is_empty() {
        packages.extend(crate::lab::host::host_packages());
        packages.sort();
        packages.dedup();
    }
    if request.tests {
        packages.extend(
            crate::host::selftest::TEST_PACKAGES
                .iter()
                .map(|p| p.to_string()),
        );
        packages.sort();
        packages.dedup();
    }
    if request.print_only {
        println!(
            "apt-get install -y --no-install-recommends --no-upgrade {}",
            packages.join(" ")
        );
        return Ok(());
    }
    // Only what dpkg does not have: "installed: …" names what this run
    // installed, and a machine that has everything needs no apt-get (nor
    // root).
    let absent = missing(sh, &packages)?;
    if absent.is_empty() {
        println!(
            "already installed: {} ({})",
            packages.len(),
            packages.join(" ")
        );
        return Ok(());
    }
    if install(sh, &absent)? {
        let still = missing(sh, &absent)?;
        anyhow::ensure!(
            still.is_empty(),
            "apt-get install finished, but dpkg still lacks {}",
            still.join(" ")
        );
        println!("installed: {}", absent.join(" "));
        if absent.len() < packages.len() {
            println!("already installed: {} more", packages.len() - absent.len());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_target_brings_its_compiler_and_source() {
        let layout = crate::util::layout::Layout::from_manifest_dir();
        let targets = crate::inputs::targets::load_all(&layout.targets_dir()).unwrap();
        let packages = packages(&targets);
        for t in &targets {
            assert!(packages.contains(&t.compiler_package), "{}", t.name);
        }
        assert!(packages.contains(&"linux-source-6.12".to_string()));
        assert!(packages.contains(&"u-boot-tools".to_string()));
        assert!(packages.contains(&"ccache".to_string()));
        for lab in [
            "qemu-system-mips",
            "iperf3",
            "ethtool",
            "nftables",
            "openssh-client",
            // ath79's static guest: glibc for static linking, and the
            // tools that unpack and build Debian's sources.
            "libc6-dev-mips-cross",
            "dpkg-dev",
            "make",
        ] {
            assert!(packages.contains(&lab.to_string()), "{lab}");
        }
    }

    #[test]
    fn only_packages_dpkg_has_as_ii_count_as_installed() {
        let packages: Vec<String> = ["bc", "flex", "make", "perl", "tar"]
            .map(String::from)
            .to_vec();
        // As dpkg-query prints them: one line per architecture, `rc` for a
        // package removed with its configuration left, `un` for unknown.
        let status = "bc ii \nflex rc \nmake un \nperl:i386 ii \nperl ii \n";
        assert_eq!(not_installed(&packages, status), ["flex", "make", "tar"]);
    }

    #[test]
    fn the_tests_bring_the_host_lab_s_tbench() {
        // `cargo xtask setup --tests` (what .ci/run runs) installs dbench,
        // which xtask/tests/lab_host.rs needs.
        assert!(crate::host::selftest::TEST_PACKAGES.contains(&"dbench"));
        assert!(crate::lab::host::host_packages().contains(&"dbench".to_string()));
    }
}
