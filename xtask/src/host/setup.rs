//! `cargo xtask setup`: the Debian packages the targets need.

use anyhow::{Context, Result};
use xshell::{cmd, Shell};

use crate::inputs::kernel_source;
use crate::inputs::targets::{Artifact, Target};
use crate::kernel_build::toolchain::HOST_TOOLS;

/// Debian packages for building `targets`: host tools, each target's cross
/// compiler and binutils, `u-boot-tools` for uImages (and with
/// `device-tree-compiler` for an `openwrt_device`'s image, and with
/// `squashfs-tools` for the rootfs `size-report --rootfs` reads and
/// `lzma-alone` for the LZMA SDK encoder device fit compares with), and the
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
        // OpenWrt mode's device image (kernel_build/openwrt_image): mkimage for
        // uImage steps, dtc when the kernel build made no scripts/dtc/dtc.
        if target.openwrt_device.is_some() {
            packages.push("u-boot-tools".to_string());
            packages.push("device-tree-compiler".to_string());
            packages.push("squashfs-tools".to_string());
            // Device fit's LZMA margin: OpenWrt's own encoder, the LZMA SDK's.
            packages.push("lzma-alone".to_string());
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

/// One package for apt-get: a name, with the version to install when the
/// pin file pins one (`linux-source-6.12=6.12.117-1~deb12u1`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AptPackage {
    /// Debian package name.
    pub name: String,
    /// The exact version to install, from `patches/kernel-sources.toml`'s
    /// `[debian]`; `None`: the archive's candidate.
    pub version: Option<String>,
}

impl AptPackage {
    /// As apt-get takes it: `name` or `name=version`.
    pub fn arg(&self) -> String {
        match &self.version {
            Some(v) => format!("{}={v}", self.name),
            None => self.name.clone(),
        }
    }
}

/// The apt-get command line (after `apt-get`) that installs `packages`
/// (setup names only packages dpkg lacks, and pinned ones at another
/// version): `--allow-downgrades` lets a pinned
/// `linux-source-<kver>=<version>` replace a newer one (apt refuses a
/// downgrade under `-y` without it; and `--no-upgrade` would skip it as
/// already installed).
pub fn install_args(packages: &[AptPackage]) -> Vec<String> {
    let mut args: Vec<String> = ["install", "-y", "--no-install-recommends"]
        .map(String::from)
        .to_vec();
    if packages.iter().any(|p| p.version.is_some()) {
        args.push("--allow-downgrades".to_string());
    }
    args.extend(packages.iter().map(AptPackage::arg));
    args
}

/// The packages (name, version) an `apt-get install -s` (simulate) output
/// says apt would remove: its `Remv NAME [VERSION]` lines, as apt 2.6
/// prints them.
pub fn removals(simulation: &str) -> Vec<(String, String)> {
    simulation
        .lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("Remv ")?;
            let (name, version) = match rest.split_once(' ') {
                Some((n, v)) => (n, v.trim().trim_start_matches('[').trim_end_matches(']')),
                None => (rest, ""),
            };
            Some((name.to_string(), version.to_string()))
        })
        .collect()
}

/// The `Candidate:` version of `apt-cache policy NAME`'s output (apt
/// 2.6), `None` without one (or `(none)`).
pub fn candidate(policy: &str) -> Option<String> {
    policy
        .lines()
        .find_map(|l| l.trim().strip_prefix("Candidate:"))
        .map(str::trim)
        .filter(|v| !v.is_empty() && *v != "(none)")
        .map(str::to_string)
}

/// Installs `packages` with apt-get when running as root; otherwise prints
/// the command to run. Returns whether it installed.
///
/// A pinned version the archive no longer has (`apt-cache show NAME=VERSION`
/// finds none) is installed at the archive's candidate instead, with a
/// warning that `build` will refuse its tarball. Before installing it prints
/// the packages apt-get will remove to make room (e.g. a newer
/// `qemu-utils` that conflicts with Debian 12's QEMU), from a simulated run.
pub fn install(sh: &Shell, packages: &[AptPackage]) -> Result<bool> {
    let is_root = cmd!(sh, "id -u")
        .quiet()
        .read()
        .is_ok_and(|uid| uid.trim() == "0");
    if !is_root {
        println!(
            "run as root:\n  apt-get update && apt-get {}",
            install_args(packages).join(" ")
        );
        return Ok(false);
    }
    cmd!(sh, "apt-get update")
        .env("DEBIAN_FRONTEND", "noninteractive")
        .run()
        .context("apt-get update")?;
    let mut packages = packages.to_vec();
    for p in &mut packages {
        let Some(version) = p.version.clone() else {
            continue;
        };
        let arg = p.arg();
        let found = cmd!(sh, "apt-cache show --no-all-versions {arg}")
            .quiet()
            .ignore_stdout()
            .ignore_stderr()
            .run()
            .is_ok();
        if found {
            // Say what is chosen over Debian's candidate, and what an
            // upgrade will do to it.
            let name = &p.name;
            let policy = cmd!(sh, "apt-cache policy {name}")
                .quiet()
                .read()
                .unwrap_or_default();
            if let Some(newer) = candidate(&policy).filter(|c| *c != version) {
                println!(
                    "{name}: installing {version}, the version patches/kernel-sources.toml pins \
                     (builds accept only its tarball's sha256), not Debian's candidate {newer}. \
                     An `apt-get upgrade` moves it to {newer}; `build` then refuses the tarball \
                     until `cargo xtask setup` installs {version} again"
                );
            }
        }
        if !found {
            let installed = kernel_source::installed_debian_version(sh, &p.name);
            eprintln!(
                "warning: the archive no longer has {} {version}, which patches/kernel-sources.toml \
                 pins; {}. `build` refuses another version's tarball until its sha256 is added to \
                 the pin file; or build another source with --kernel-src PATH",
                p.name,
                match &installed {
                    Some(v) => format!("keeping the installed {v}"),
                    None => "installing the archive's newest instead".to_string(),
                }
            );
            p.version = None;
            if installed.is_some() {
                p.name.clear();
            }
        }
    }
    packages.retain(|p| !p.name.is_empty());
    if packages.is_empty() {
        return Ok(true);
    }
    let args = install_args(&packages);
    let mut simulate = args.clone();
    simulate.insert(1, "-s".to_string());
    let plan = cmd!(sh, "apt-get {simulate...}")
        .env("DEBIAN_FRONTEND", "noninteractive")
        .quiet()
        .ignore_stderr()
        .read()
        .context("apt-get install -s (simulating the install)")?;
    let removed = removals(&plan);
    if !removed.is_empty() {
        let list: Vec<String> = removed.iter().map(|(n, v)| format!("{n} {v}")).collect();
        eprintln!(
            "apt-get removes {} package(s) to install these: {} (a package setup installs \
             conflicts with it; reinstall it afterwards if you need it, which may remove that one)",
            removed.len(),
            list.join(", ")
        );
    }
    cmd!(sh, "apt-get {args...}")
        .env("DEBIAN_FRONTEND", "noninteractive")
        .run()
        .context("apt-get install")?;
    if !removed.is_empty() {
        let names: Vec<&str> = removed.iter().map(|(n, _)| n.as_str()).collect();
        println!("removed by apt-get: {}", names.join(" "));
    }
    Ok(true)
}

/// Which packages `cargo xtask setup` installs, and how.
#[derive(Debug, Clone, Default)]
pub struct SetupRequest {
    /// Only the packages these targets need (`--target` spellings); empty:
    /// every target, and the host lab's (dbench, iperf3, ethtool).
    pub targets: Vec<String>,
    /// Also the reference tools the tests compare against
    /// ([`crate::host::selftest::TEST_PACKAGES`]) and their runner,
    /// cargo-nextest ([`crate::host::selftest::NEXTEST_INSTALL`]).
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
        packages.extend(crate::lab::host_lab::host_packages());
        // `flags set` writes the 201 patch of every
        // patches/generic/pending-<kver>/ against that kernel's Makefile.
        for (kver, _) in kernel_source::pending_dirs(&layout.patches_dir())? {
            packages.push(kernel_source::debian_package(&kver));
        }
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
    let pins = kernel_source::pinned_debian_versions(layout)?;
    let with_pins = |names: &[String]| -> Vec<AptPackage> {
        names
            .iter()
            .map(|n| AptPackage {
                name: n.clone(),
                version: pins.get(n).cloned(),
            })
            .collect()
    };
    if request.print_only {
        println!("apt-get {}", install_args(&with_pins(&packages)).join(" "));
        if request.tests && !crate::host::selftest::has_nextest(sh) {
            println!("{}", crate::host::selftest::nextest_install_line());
        }
        return Ok(());
    }
    if request.tests {
        crate::host::selftest::ensure_nextest(sh)?;
    }
    // Only what dpkg does not have, and pinned kernel sources at another
    // version than the pin's: "installed: …" names what this run
    // installed, and a machine that has everything needs no apt-get (nor
    // root).
    let mut absent = missing(sh, &packages)?;
    let mut replaced = Vec::new();
    for (name, version) in &pins {
        if !packages.contains(name) || absent.contains(name) {
            continue;
        }
        if let Some(have) = kernel_source::installed_debian_version(sh, name) {
            if &have != version {
                println!(
                    "{name}: {have} is installed, but patches/kernel-sources.toml pins {version} \
                     (the tarball builds check): installing {version}"
                );
                replaced.push(name.clone());
            }
        }
    }
    absent.extend(replaced.iter().cloned());
    if absent.is_empty() {
        println!(
            "already installed: {} ({})",
            packages.len(),
            packages.join(" ")
        );
        return Ok(());
    }
    if install(sh, &with_pins(&absent))? {
        let still = missing(sh, &absent)?;
        anyhow::ensure!(
            still.is_empty(),
            "apt-get install finished, but dpkg still lacks {}",
            still.join(" ")
        );
        for name in &replaced {
            let have = kernel_source::installed_debian_version(sh, name).unwrap_or_default();
            if Some(&have) != pins.get(name) {
                eprintln!(
                    "warning: {name} is still at {have}, not the pinned {}",
                    pins[name]
                );
            }
        }
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
    fn the_candidate_of_apt_cache_policy() {
        let policy = "linux-source-6.12:\n  Installed: 6.12.117-1~deb12u1\n  \
                      Candidate: 6.12.118-1~deb12u1\n  Version table:\n";
        assert_eq!(candidate(policy).as_deref(), Some("6.12.118-1~deb12u1"));
        assert_eq!(
            candidate("x:\n  Installed: (none)\n  Candidate: (none)\n"),
            None
        );
        assert_eq!(candidate(""), None);
    }

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
    fn pinned_kernel_sources_are_installed_at_their_version() {
        let layout = crate::util::layout::Layout::from_manifest_dir();
        let pins = kernel_source::pinned_debian_versions(&layout).unwrap();
        let version = pins["linux-source-6.12"].clone();
        let args = install_args(&[
            AptPackage {
                name: "bc".into(),
                version: None,
            },
            AptPackage {
                name: "linux-source-6.12".into(),
                version: Some(version.clone()),
            },
        ]);
        // A newer installed one is replaced: a downgrade, which apt-get -y
        // refuses without --allow-downgrades.
        assert!(args.contains(&"--allow-downgrades".to_string()), "{args:?}");
        assert!(
            args.ends_with(&["bc".to_string(), format!("linux-source-6.12={version}")]),
            "{args:?}"
        );
        let plain = install_args(&[AptPackage {
            name: "bc".into(),
            version: None,
        }]);
        assert!(
            !plain.contains(&"--allow-downgrades".to_string()),
            "{plain:?}"
        );
    }

    #[test]
    fn a_simulated_install_names_what_apt_removes() {
        // apt-get install -s on a Debian 12 machine with bookworm-backports'
        // qemu-utils, installing Debian 12's qemu-system-mips, which removes
        // qemu-utils: setup names what apt would remove before it does.
        let simulation = "Reading package lists...\n\
            The following packages will be REMOVED:\n  qemu-utils\n\
            Remv qemu-utils [1:10.0.2+ds-2+deb13u1~bpo12+1]\n\
            Inst libfdt1 (1.6.1-4+b1 Debian:12.15/oldstable [amd64])\n\
            Conf libfdt1 (1.6.1-4+b1 Debian:12.15/oldstable [amd64])\n";
        assert_eq!(
            removals(simulation),
            [(
                "qemu-utils".to_string(),
                "1:10.0.2+ds-2+deb13u1~bpo12+1".to_string()
            )]
        );
        assert!(removals("Inst bc (1.07)\n").is_empty());
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
        // which xtask/tests/it/lab_host.rs needs.
        assert!(crate::host::selftest::TEST_PACKAGES.contains(&"dbench"));
        assert!(crate::lab::host_lab::host_packages().contains(&"dbench".to_string()));
    }
}
