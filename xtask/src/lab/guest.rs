//! What runs inside the guest: `/init`, the nftables ruleset, and the
//! sampling script the host calls over the console, plus the addresses and
//! MACs both sides agree on.
//!
//! `/init` mounts the pseudo file systems, names the NICs `lan` and `wan`
//! by their MAC (virtio-mmio machines enumerate them in reverse), addresses
//! them, enables forwarding, loads the masquerade ruleset and prints
//! [`READY`] (or [`FAILED`] with the reason), then runs a shell on the
//! console that the host drives ([`super::console`]).

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use anyhow::{Context, Result};

/// MAC of the guest's LAN NIC.
pub const LAN_MAC: &str = "52:54:00:12:34:01";
/// MAC of the guest's WAN NIC.
pub const WAN_MAC: &str = "52:54:00:12:34:02";
/// The guest's LAN address (the LAN hosts' gateway).
pub const GUEST_LAN_IP: &str = "192.168.1.1";
/// The LAN host (namespace `lan`), the iperf3 client.
pub const LAN_HOST_IP: &str = "192.168.1.2";
/// The guest's WAN address: what the WAN side sees after masquerade.
pub const GUEST_WAN_IP: &str = "203.0.113.1";
/// The WAN host (namespace `wan`, TEST-NET-3), the iperf3 server.
pub const WAN_HOST_IP: &str = "203.0.113.2";
/// Prefix length of both links.
pub const PREFIX: u8 = 24;
/// Printed by `/init` once the router forwards and masquerades.
pub const READY: &str = "XL-ROUTER-READY";
/// Printed by `/init` when a setup step fails, followed by the step.
pub const FAILED: &str = "XL-ROUTER-FAILED";
/// Path of the sampling script in the guest.
pub const SAMPLE: &str = "/bin/xl-sample";

/// The `/init` script (busybox sh).
pub fn init_script() -> String {
    format!(
        r#"#!/bin/busybox sh
/bin/busybox mkdir -p /proc /sys /dev /tmp /run /sbin /usr/bin /usr/sbin
/bin/busybox mount -t proc proc /proc
/bin/busybox --install -s
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
exec </dev/console >/dev/console 2>&1
fail() {{ echo "{FAILED} $*"; exec sh; }}
# Only errors and worse on the console from now on: it carries the host's commands.
echo 4 4 1 7 > /proc/sys/kernel/printk
ip link set lo up
lan= wan=
for d in /sys/class/net/*; do
  case "$(cat $d/address)" in
    {LAN_MAC}) lan=${{d##*/}} ;;
    {WAN_MAC}) wan=${{d##*/}} ;;
  esac
done
[ -n "$lan" ] && [ -n "$wan" ] || fail "NICs: no interface with MAC {LAN_MAC} and {WAN_MAC}: $(ls /sys/class/net)"
ip link set "$lan" name lan || fail "renaming $lan"
ip link set "$wan" name wan || fail "renaming $wan"
ip addr add {GUEST_LAN_IP}/{PREFIX} dev lan || fail "addressing lan"
ip addr add {GUEST_WAN_IP}/{PREFIX} dev wan || fail "addressing wan"
ip link set lan up || fail "lan up"
ip link set wan up || fail "wan up"
echo 1 > /proc/sys/net/ipv4/ip_forward || fail "ip_forward"
nft -f /etc/xl-router.nft || fail "nft -f /etc/xl-router.nft"
echo "{READY} $(cut -d' ' -f1 /proc/uptime)"
exec sh
"#
    )
}

/// The router's ruleset: masquerade LAN→WAN, forward only LAN→WAN and
/// replies, as an OpenWrt firewall does. Multi-line: nft 1.0.6 rejects
/// some one-line forms.
pub fn ruleset() -> String {
    r#"flush ruleset

table ip xl {
	chain forward {
		type filter hook forward priority filter; policy drop;
		ct state established,related accept
		iifname "lan" oifname "wan" accept
	}

	chain postrouting {
		type nat hook postrouting priority srcnat; policy accept;
		oifname "wan" masquerade
	}
}
"#
    .to_string()
}

/// The sampling script: one `XL <key> <values>` line per counter the host
/// reads before and after each run ([`super::sample::GuestSample`]).
///
/// Its argument is the [`SamplePoint`] (`before` or `after`): the busy
/// time (`/proc/stat`) is read last before a run and first after it, so
/// the script's own work stays out of the window that ns/packet divides.
/// It forks nothing but `awk`, outside that window: with a `cat` per
/// counter, its work inside the window was about 120 ms of guest time per
/// run (brcm47xx, `-icount shift=3`), which lifted ns/packet by 120 ms over
/// the run's packets — 7 % at 17,000 packets, 48 % at 3,000 when host load
/// slowed QEMU.
pub fn sample_script() -> String {
    r#"#!/bin/sh
busy_time() { read -r l < /proc/stat; echo "XL stat $l"; }
[ "$1" = after ] && busy_time
for n in lan wan; do
  s=/sys/class/net/$n/statistics
  read -r a < $s/rx_packets; read -r b < $s/tx_packets
  read -r c < $s/rx_bytes; read -r d < $s/tx_bytes
  read -r e < $s/rx_dropped; read -r f < $s/tx_dropped
  echo "XL net $n $a $b $c $d $e $f"
done
awk '$NF=="lan"||$NF=="wan"{for(i=2;i<=NF&&$i~/^[0-9]+$/;i++)t+=$i}END{print "XL irq",t+0}' /proc/interrupts
read -r up idle < /proc/uptime; echo "XL uptime $up"
[ "$1" = after ] || busy_time
"#
    .to_string()
}

/// Where a sample is taken: it orders the sampling script's reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SamplePoint {
    /// Before a run's traffic: the busy time is read last.
    Before,
    /// After a run's traffic: the busy time is read first.
    After,
}

impl SamplePoint {
    /// The sampling script's argument.
    pub fn word(self) -> &'static str {
        match self {
            SamplePoint::Before => "before",
            SamplePoint::After => "after",
        }
    }
}

/// Writes `/init`, the ruleset and the sampling script into `root`.
pub fn install(root: &Path) -> Result<()> {
    install_with(root, &ruleset())
}

/// [`install`] with the ruleset `ruleset` (text for `nft -f`) in place of
/// the lab's ([`super::firewall4`]).
pub fn install_with(root: &Path, ruleset: &str) -> Result<()> {
    for (rel, text, mode) in [
        ("init", init_script(), 0o755),
        ("etc/xl-router.nft", ruleset.to_string(), 0o644),
        (&SAMPLE[1..], sample_script(), 0o755),
    ] {
        let path = root.join(rel);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode))
            .with_context(|| format!("setting the mode of {}", path.display()))?;
    }
    Ok(())
}
