//! What OpenWrt's packet steering does on a router (`packet_steering =
//! "openwrt"`), read from a checkout as its images would run it.
//!
//! OpenWrt leaves `network.globals.packet_steering` unset, hence off
//! (package/base-files/files/bin/config_generate writes no such option);
//! a board turns it on in a uci-defaults script of its base files
//! (`target/linux/bcm53xx/base-files/etc/uci-defaults/05_packet_steering`,
//! `target/linux/ramips/mt7621/base-files/etc/uci-defaults/01_enable_packet_steering`).
//! With it on, netifd's `/etc/init.d/packet_steering` runs the board's
//! `/usr/libexec/platform/packet-steering.sh` when the board ships one, else
//! netifd's own `packet-steering.uc` (package/network/config/netifd):
//!
//! * **platform script** (bcm53xx): its default case (no flow offloading)
//!   writes `rps_cpus` of `br-lan` and `eth0`: `2` and `0`, so the LAN
//!   bridge's packets go up the stack on CPU1 while the WAN port's stay on
//!   the CPU that took the interrupt;
//! * **netifd** (ramips/mt7621): the Ethernet device's NAPI thread (the
//!   driver's, where OpenWrt's patches make its NAPI threaded: pending-6.12's
//!   `702-net-ethernet-mtk_eth_soc-enable-threaded-NAPI.patch`) is pinned to
//!   the least loaded CPU (CPU0), and the device's `rps_cpus` to the least
//!   loaded other one (`get_next_cpu(rx_weight, napi_cpu)`): CPU1 of two.
//!   Without a NAPI thread the RPS CPU is the least loaded one, CPU0, the
//!   interrupt's: nothing moves.
//!
//! The lab's router has a LAN and a WAN NIC where the real one has one
//! Ethernet device (a DSA conduit) carrying both: [`OpenwrtSteering`] says
//! what each side gets. The same reading of the repository's snapshot
//! (`../shared/openwrt`) is built in ([`builtin`]) for the hand-written
//! profiles, which have no checkout; a test checks that the two agree.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::{Checkout, OpenwrtTarget};
use crate::inputs::steering::CpuMask;

/// What OpenWrt's packet steering does on a board.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpenwrtSteering {
    /// Off: no uci-defaults script of the board turns it on.
    Off {
        /// Why, for the plan and `lab.json`.
        why: String,
    },
    /// The board's platform script, its default case.
    Platform {
        /// The script, relative to the checkout.
        file: String,
        /// `rps_cpus` of `br-lan`: what the LAN side's packets get.
        lan_rps: CpuMask,
        /// `rps_cpus` of `eth0`: what the WAN side's (and the conduit's)
        /// packets get.
        wan_rps: CpuMask,
    },
    /// netifd's `packet-steering.uc` on the board's one Ethernet device.
    Netifd {
        /// The uci-defaults script that turns it on, relative to the checkout.
        enabled_by: String,
        /// The patch that makes the Ethernet driver's NAPI threaded,
        /// relative to the checkout; `None`: NAPI runs in softirq.
        threaded_napi: Option<String>,
    },
}

impl OpenwrtSteering {
    /// One line for the lab's plan.
    pub fn describe(&self) -> String {
        match self {
            OpenwrtSteering::Off { why } => format!("off ({why})"),
            OpenwrtSteering::Platform {
                file,
                lan_rps,
                wan_rps,
            } => format!(
                "{file}: br-lan rps_cpus {}, eth0 {} (the LAN NIC gets br-lan's, the WAN NIC eth0's)",
                lan_rps.hex(),
                wan_rps.hex()
            ),
            OpenwrtSteering::Netifd {
                enabled_by,
                threaded_napi,
            } => match threaded_napi {
                Some(patch) => format!(
                    "netifd's packet-steering.uc (on by {enabled_by}): NAPI threads on CPU0 ({patch}), RPS on the next CPU"
                ),
                None => format!(
                    "netifd's packet-steering.uc (on by {enabled_by}): no NAPI thread, RPS on CPU0"
                ),
            },
        }
    }
}

/// The Ethernet drivers whose NAPI OpenWrt makes threaded, by the patch
/// file name that does it (under `target/linux/generic/<dir>-<kver>/`), and
/// the kernel symbol that builds the driver.
const THREADED_NAPI_PATCHES: &[(&str, &str)] = &[(
    "net-ethernet-mtk_eth_soc-enable-threaded-NAPI",
    "CONFIG_NET_MEDIATEK_SOC",
)];

/// Reads what OpenWrt's packet steering does for `target` on kernel series
/// `kver` in `checkout` (see the module docs).
///
/// Errors when a platform script's default case cannot be read (the file
/// and what was missing are named; set `packet_steering` explicitly then).
pub fn read(checkout: &Checkout, target: &OpenwrtTarget, kver: &str) -> Result<OpenwrtSteering> {
    let root = checkout.root();
    let board_dir = checkout.board_dir(&target.board);
    let mut base_dirs: Vec<PathBuf> = Vec::new();
    if let Some(sub) = &target.subtarget {
        base_dirs.push(board_dir.join(sub).join("base-files"));
    }
    base_dirs.push(board_dir.join("base-files"));
    let rel = |p: &Path| p.strip_prefix(root).unwrap_or(p).display().to_string();

    let mut enabled_by = None;
    for dir in &base_dirs {
        let defaults = dir.join("etc/uci-defaults");
        let Ok(entries) = std::fs::read_dir(&defaults) else {
            continue;
        };
        let mut files: Vec<PathBuf> = entries.filter_map(|e| Some(e.ok()?.path())).collect();
        files.sort();
        for f in files {
            let text = read_small(&f)?;
            if enables_steering(&text) {
                enabled_by = Some(rel(&f));
                break;
            }
        }
        if enabled_by.is_some() {
            break;
        }
    }
    let Some(enabled_by) = enabled_by else {
        return Ok(OpenwrtSteering::Off {
            why: format!(
                "no uci-defaults script under {} sets network.globals.packet_steering, which OpenWrt leaves unset",
                rel(&board_dir)
            ),
        });
    };
    for dir in &base_dirs {
        let script = dir.join("usr/libexec/platform/packet-steering.sh");
        if script.is_file() {
            let (lan_rps, wan_rps) = platform_default(&read_small(&script)?)
                .with_context(|| {
                    format!(
                        "{}: cannot read the default case of this platform packet-steering script; \
                         set [lab] packet_steering explicitly (e.g. {{ rps_cpus = {{ lan = \"2\", wan = \"0\" }} }})",
                        script.display()
                    )
                })?;
            return Ok(OpenwrtSteering::Platform {
                file: rel(&script),
                lan_rps,
                wan_rps,
            });
        }
    }
    Ok(OpenwrtSteering::Netifd {
        enabled_by,
        threaded_napi: threaded_napi_patch(checkout, target, kver)?,
    })
}

/// Whether a uci-defaults script sets `packet_steering` to 1
/// (`uci set network.globals.packet_steering=1`, `…="1"`, `…='1'`).
fn enables_steering(text: &str) -> bool {
    text.lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .any(|l| {
            l.split_whitespace().any(|w| {
                w.split_once("packet_steering=")
                    .is_some_and(|(_, v)| v.trim_matches(|c| c == '"' || c == '\'') == "1")
            })
        })
}

/// The default case of a platform `packet-steering.sh`: the `rps_cpus`
/// its `# Default` branch writes to `br-lan` and `eth0` (as bcm53xx's:
/// `echo 2 > /sys/class/net/br-lan/queues/rx-0/rps_cpus`). Errors when the
/// branch or either write is missing.
fn platform_default(text: &str) -> Result<(CpuMask, CpuMask)> {
    let start = text
        .lines()
        .position(|l| l.trim() == "# Default")
        .context("no `# Default` branch")?;
    let mut lan = None;
    let mut wan = None;
    for line in text.lines().skip(start + 1) {
        let line = line.trim();
        if line == "fi" || line.starts_with("elif") || line.starts_with("else") {
            break;
        }
        let Some(rest) = line.strip_prefix("echo ") else {
            continue;
        };
        let Some((value, file)) = rest.split_once('>') else {
            continue;
        };
        let dev = file
            .trim()
            .strip_prefix("/sys/class/net/")
            .and_then(|f| f.strip_suffix("/queues/rx-0/rps_cpus"));
        let mask = || CpuMask::parse(value.trim(), "rps_cpus");
        match dev {
            Some("br-lan") => lan = Some(mask()?),
            Some("eth0") => wan = Some(mask()?),
            _ => {}
        }
    }
    Ok((
        lan.context("the default case writes no rps_cpus of br-lan")?,
        wan.context("the default case writes no rps_cpus of eth0")?,
    ))
}

/// The patch of `kver`'s generic series that makes the target's Ethernet
/// driver's NAPI threaded ([`THREADED_NAPI_PATCHES`]), when the target's
/// kernel config builds that driver.
fn threaded_napi_patch(
    checkout: &Checkout,
    target: &OpenwrtTarget,
    kver: &str,
) -> Result<Option<String>> {
    let generic = checkout.generic_dir();
    let board_dir = checkout.board_dir(&target.board);
    let mut configs = vec![board_dir.join(format!("config-{kver}"))];
    if let Some(sub) = &target.subtarget {
        configs.push(board_dir.join(sub).join(format!("config-{kver}")));
    }
    let config_text: String = configs
        .iter()
        .filter(|c| c.is_file())
        .map(|c| read_small(c))
        .collect::<Result<Vec<_>>>()?
        .join("\n");
    for (patch_name, symbol) in THREADED_NAPI_PATCHES {
        if !config_text
            .lines()
            .any(|l| l.trim() == format!("{symbol}=y"))
        {
            continue;
        }
        for dir in ["backport", "pending", "hack"] {
            let dir = generic.join(format!("{dir}-{kver}"));
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for e in entries.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                if name.contains(patch_name) && name.ends_with(".patch") {
                    let rel = e.path();
                    let rel = rel.strip_prefix(checkout.root()).unwrap_or(&rel);
                    return Ok(Some(rel.display().to_string()));
                }
            }
        }
    }
    Ok(None)
}

fn read_small(path: &Path) -> Result<String> {
    let limit = crate::util::fs::FileLimit {
        what: "OpenWrt base file",
        max_bytes: crate::util::fs::MAX_INPUT_BYTES,
    };
    crate::util::fs::read_limited(path, limit, "")
}

/// What [`read`] gives for OpenWrt `target` (`bcm53xx/generic`,
/// `ramips/mt7621`) in the repository's snapshot of OpenWrt's main branch
/// (`../shared/openwrt`, commit 9736d42141, 2025-08-15; Linux 6.12), for the
/// hand-written profiles, which have no checkout; `None` for a target it
/// does not cover. `xtask/tests/it/openwrt_steering.rs` checks it against the
/// snapshot.
pub fn builtin(target: &str) -> Option<OpenwrtSteering> {
    let board = target.split('/').next().unwrap_or(target);
    Some(match board {
        "bcm53xx" => OpenwrtSteering::Platform {
            file: "target/linux/bcm53xx/base-files/usr/libexec/platform/packet-steering.sh"
                .to_string(),
            lan_rps: CpuMask(2),
            wan_rps: CpuMask(0),
        },
        "ramips" if target == "ramips/mt7621" => OpenwrtSteering::Netifd {
            enabled_by: "target/linux/ramips/mt7621/base-files/etc/uci-defaults/01_enable_packet_steering"
                .to_string(),
            threaded_napi: Some(
                "target/linux/generic/pending-6.12/702-net-ethernet-mtk_eth_soc-enable-threaded-NAPI.patch"
                    .to_string(),
            ),
        },
        "ath79" | "bcm47xx" | "brcm47xx" => OpenwrtSteering::Off {
            why: format!(
                "no uci-defaults script under target/linux/{board} sets network.globals.packet_steering, which OpenWrt leaves unset"
            ),
        },
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_platform_script_s_default_case_is_read_and_others_refused() {
        // As bcm53xx's script lays it out (offloading cases first).
        let script = "#!/bin/sh\n[ \"$packet_steering\" != 1 ] && {\n\techo 0 > /sys/class/net/br-lan/queues/rx-0/rps_cpus\n}\n\
            if [ ${flow_offloading_hw:-0} -gt 0 ]; then\n\t# HW offloading\n\techo 0 > /sys/class/net/eth0/queues/rx-0/rps_cpus\n\
            else\n\t# Default\n\techo 2 > /sys/class/net/br-lan/queues/rx-0/rps_cpus\n\techo 0 > /sys/class/net/eth0/queues/rx-0/rps_cpus\nfi\n";
        assert_eq!(platform_default(script).unwrap(), (CpuMask(2), CpuMask(0)));
        assert!(platform_default("echo 2 > /sys/class/net/br-lan/queues/rx-0/rps_cpus\n").is_err());
        let no_eth0 = "# Default\necho 2 > /sys/class/net/br-lan/queues/rx-0/rps_cpus\nfi\n";
        let err = platform_default(no_eth0).unwrap_err().to_string();
        assert!(err.contains("eth0"), "{err}");
    }

    #[test]
    fn uci_defaults_turn_steering_on_in_any_quoting() {
        for on in [
            "uci set network.@globals[0].packet_steering=\"1\"",
            "\tuci set network.globals.packet_steering=1",
            "uci set network.globals.packet_steering='1'",
        ] {
            assert!(enables_steering(on), "{on}");
        }
        for off in [
            "# uci set network.globals.packet_steering=1",
            "uci set network.globals.packet_steering=0",
            "uci -q get network.globals.packet_steering",
        ] {
            assert!(!enables_steering(off), "{off}");
        }
    }
}
