//! The guest's masquerade ruleset: the lab's own ([`super::guest::ruleset`])
//! or, for OpenWrt-mode labs (`lab --openwrt PATH`), the shape OpenWrt's
//! firewall4 renders from its default `/etc/config/firewall`
//! ([`ruleset`]), so that forwarding goes through the chains an OpenWrt
//! router's does.
//!
//! The source is firewall4's own expected output for the default
//! configuration, tests/01_configuration/01_ruleset of
//! openwrt/firewall4 (rendered by root/usr/share/firewall4/templates/
//! ruleset.uc): zones `lan` (input, output, forward accept) and `wan`
//! (input and forward reject, masquerade, MSS clamping), lan → wan
//! forwarding, SYN flood protection and the default rules (Allow-DHCP-Renew,
//! Allow-Ping, Allow-IGMP, Allow-DHCPv6, Allow-MLD, Allow-ICMPv6-Input,
//! Allow-ICMPv6-Forward, Allow-IPSec-ESP, Allow-ISAKMP). What differs, and
//! why:
//!
//! * zone devices are the guest's `lan` and `wan` (fw4 matches the
//!   interfaces of the zones' networks: `br-lan`, `pppoe-wan` in the test),
//!   and the subnets the lab's;
//! * no flowtable: flow offloading is off in OpenWrt's default config (the
//!   test's mock config turns it on);
//! * no conntrack helpers: fw4 declares only those whose kernel modules
//!   are loaded (`/sys/module/nf_conntrack_*`), and the lab kernel has none;
//! * no `include "/etc/nftables.d/*.nft"` (the guest has no such files)
//!   and not the test's own deprecated-option rule.
//!
//! ath79's static guest has only the lab's loader of its one ruleset
//! (`lab/static-guest/nft.c`), so it keeps the lab's
//! ([`crate::lab::qemu_lab::resolve`] says so).

use std::net::{IpAddr, Ipv4Addr};

use anyhow::{Context, Result};

use super::topology::Guest;

/// firewall4's ruleset as `fw4 print` writes it for OpenWrt's default
/// zones, with `@LAN@`, `@WAN@`, `@LAN_NET@` and `@WAN_NET@` for the
/// zones' devices and subnets ([`ruleset`] fills them in).
const TEMPLATE: &str = include_str!("firewall4.nft");

/// firewall4's ruleset for OpenWrt's default firewall configuration, its
/// zones `lan` and `wan` the guest's NICs of those names and their IPv4
/// networks (see the module docs). Errors: `guest` lacks either NIC or its
/// IPv4 address ([`super::topology::Topology::check`] refuses that first).
pub fn ruleset(guest: &Guest) -> Result<String> {
    let (lan, wan) = ("\"lan\"", "\"wan\"");
    let lan_net = zone_subnet(guest, "lan")?;
    let wan_net = zone_subnet(guest, "wan")?;
    Ok(TEMPLATE
        .replace("@LAN_NET@", &lan_net)
        .replace("@WAN_NET@", &wan_net)
        .replace("@LAN@", lan)
        .replace("@WAN@", wan))
}

/// The IPv4 network of `guest`'s NIC `zone` (`192.168.1.0/24`), as fw4
/// writes a zone's subnets.
fn zone_subnet(guest: &Guest, zone: &str) -> Result<String> {
    let (addr, prefix) = guest
        .nics
        .iter()
        .find(|n| n.name == zone)
        .and_then(|n| {
            n.addresses.iter().find_map(|a| match a.addr {
                IpAddr::V4(v4) => Some((v4, a.prefix)),
                IpAddr::V6(_) => None,
            })
        })
        .with_context(|| {
            format!(
                "guest {}: firewall4's zone {zone} needs a NIC {zone:?} with an IPv4 address",
                guest.name
            )
        })?;
    let mask = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
    Ok(format!(
        "{}/{prefix}",
        Ipv4Addr::from(u32::from(addr) & mask)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::topology::nat_router;

    #[test]
    fn the_ruleset_is_fw4_s_table_with_the_guest_s_zones() {
        let mut t = nat_router::topology();
        let r = ruleset(&t.guests[0]).unwrap();
        assert!(r.starts_with("table inet fw4\nflush table inet fw4\n"));
        assert!(r.contains("define lan_subnets = { 192.168.1.0/24 }"), "{r}");
        assert!(r.contains("define wan_subnets = { 203.0.113.0/24 }"), "{r}");
        assert!(r.contains(
            "chain srcnat_wan {\n\t\tmeta nfproto ipv4 masquerade comment \"!fw4: Masquerade IPv4 wan traffic\"\n\t}"
        ));
        assert_eq!(r.matches('{').count(), r.matches('}').count());
        t.guests[0].nics.retain(|n| n.name != "wan");
        let err = ruleset(&t.guests[0]).unwrap_err().to_string();
        assert!(
            err.contains("firewall4's zone wan needs a NIC \"wan\""),
            "{err}"
        );
    }
}
