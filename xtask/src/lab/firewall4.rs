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

/// firewall4's ruleset for OpenWrt's default firewall configuration, its
/// zones `lan` and `wan` the guest's NICs of those names and their IPv4
/// networks (see the module docs). Errors: `guest` lacks either NIC or its
/// IPv4 address ([`super::topology::Topology::check`] refuses that first).
pub fn ruleset(guest: &Guest) -> Result<String> {
    let (lan, wan) = ("\"lan\"", "\"wan\"");
    let lan_net = zone_subnet(guest, "lan")?;
    let wan_net = zone_subnet(guest, "wan")?;
    Ok(format!(
        r#"table inet fw4
flush table inet fw4

table inet fw4 {{
	#
	# Defines
	#

	define lan_devices = {{ {lan} }}
	define lan_subnets = {{ {lan_net} }}

	define wan_devices = {{ {wan} }}
	define wan_subnets = {{ {wan_net} }}


	#
	# Filter rules
	#

	chain input {{
		type filter hook input priority filter; policy drop;
		iif "lo" accept comment "!fw4: Accept traffic from loopback"

		ct state vmap {{ established : accept, related : accept }} comment "!fw4: Handle inbound flows"
		tcp flags & (fin | syn | rst | ack) == syn jump syn_flood comment "!fw4: Rate limit TCP syn packets"
		iifname {lan} jump input_lan comment "!fw4: Handle lan IPv4/IPv6 input traffic"
		iifname {wan} jump input_wan comment "!fw4: Handle wan IPv4/IPv6 input traffic"
		jump handle_reject
	}}

	chain forward {{
		type filter hook forward priority filter; policy drop;
		ct state vmap {{ established : accept, related : accept }} comment "!fw4: Handle forwarded flows"
		iifname {lan} jump forward_lan comment "!fw4: Handle lan IPv4/IPv6 forward traffic"
		iifname {wan} jump forward_wan comment "!fw4: Handle wan IPv4/IPv6 forward traffic"
		jump handle_reject
	}}

	chain output {{
		type filter hook output priority filter; policy accept;
		oif "lo" accept comment "!fw4: Accept traffic towards loopback"

		ct state vmap {{ established : accept, related : accept }} comment "!fw4: Handle outbound flows"
		oifname {lan} jump output_lan comment "!fw4: Handle lan IPv4/IPv6 output traffic"
		oifname {wan} jump output_wan comment "!fw4: Handle wan IPv4/IPv6 output traffic"
	}}

	chain prerouting {{
		type filter hook prerouting priority filter; policy accept;
	}}

	chain handle_reject {{
		meta l4proto tcp reject with tcp reset comment "!fw4: Reject TCP traffic"
		reject with icmpx type port-unreachable comment "!fw4: Reject any other traffic"
	}}

	chain syn_flood {{
		limit rate 25/second burst 50 packets return comment "!fw4: Accept SYN packets below rate-limit"
		drop comment "!fw4: Drop excess packets"
	}}

	chain input_lan {{
		jump accept_from_lan
	}}

	chain output_lan {{
		jump accept_to_lan
	}}

	chain forward_lan {{
		jump accept_to_wan comment "!fw4: Accept lan to wan forwarding"
		jump accept_to_lan
	}}

	chain accept_from_lan {{
		iifname {lan} counter accept comment "!fw4: accept lan IPv4/IPv6 traffic"
	}}

	chain accept_to_lan {{
		oifname {lan} counter accept comment "!fw4: accept lan IPv4/IPv6 traffic"
	}}

	chain input_wan {{
		meta nfproto ipv4 udp dport 68 counter accept comment "!fw4: Allow-DHCP-Renew"
		meta nfproto ipv4 icmp type 8 counter accept comment "!fw4: Allow-Ping"
		meta nfproto ipv4 meta l4proto igmp counter accept comment "!fw4: Allow-IGMP"
		ip6 saddr fc00::/6 ip6 daddr fc00::/6 udp dport 546 counter accept comment "!fw4: Allow-DHCPv6"
		ip6 saddr fe80::/10 icmpv6 type . icmpv6 code {{ 130 . 0, 131 . 0, 132 . 0, 143 . 0 }} counter accept comment "!fw4: Allow-MLD"
		meta nfproto ipv6 icmpv6 type {{ 128, 129, 1, 3, 133, 134 }} limit rate 1000/second counter accept comment "!fw4: Allow-ICMPv6-Input"
		meta nfproto ipv6 icmpv6 type . icmpv6 code {{ 2 . 0, 4 . 0, 4 . 1, 135 . 0, 136 . 0 }} limit rate 1000/second counter accept comment "!fw4: Allow-ICMPv6-Input"
		jump reject_from_wan
	}}

	chain output_wan {{
		jump accept_to_wan
	}}

	chain forward_wan {{
		meta nfproto ipv6 icmpv6 type {{ 128, 129, 1, 3 }} limit rate 1000/second counter accept comment "!fw4: Allow-ICMPv6-Forward"
		meta nfproto ipv6 icmpv6 type . icmpv6 code {{ 2 . 0, 4 . 0, 4 . 1 }} limit rate 1000/second counter accept comment "!fw4: Allow-ICMPv6-Forward"
		meta l4proto esp counter jump accept_to_lan comment "!fw4: Allow-IPSec-ESP"
		udp dport 500 counter jump accept_to_lan comment "!fw4: Allow-ISAKMP"
		jump reject_to_wan
	}}

	chain accept_to_wan {{
		meta nfproto ipv4 oifname {wan} ct state invalid counter drop comment "!fw4: Prevent NAT leakage"
		oifname {wan} counter accept comment "!fw4: accept wan IPv4/IPv6 traffic"
	}}

	chain reject_from_wan {{
		iifname {wan} counter jump handle_reject comment "!fw4: reject wan IPv4/IPv6 traffic"
	}}

	chain reject_to_wan {{
		oifname {wan} counter jump handle_reject comment "!fw4: reject wan IPv4/IPv6 traffic"
	}}


	#
	# NAT rules
	#

	chain dstnat {{
		type nat hook prerouting priority dstnat; policy accept;
	}}

	chain srcnat {{
		type nat hook postrouting priority srcnat; policy accept;
		oifname {wan} jump srcnat_wan comment "!fw4: Handle wan IPv4/IPv6 srcnat traffic"
	}}

	chain srcnat_wan {{
		meta nfproto ipv4 masquerade comment "!fw4: Masquerade IPv4 wan traffic"
	}}


	#
	# Raw rules (notrack)
	#

	chain raw_prerouting {{
		type filter hook prerouting priority raw; policy accept;
	}}

	chain raw_output {{
		type filter hook output priority raw; policy accept;
	}}


	#
	# Mangle rules
	#

	chain mangle_prerouting {{
		type filter hook prerouting priority mangle; policy accept;
	}}

	chain mangle_postrouting {{
		type filter hook postrouting priority mangle; policy accept;
		oifname {wan} tcp flags syn / syn,fin,rst tcp option maxseg size set rt mtu comment "!fw4: Zone wan IPv4/IPv6 egress MTU fixing"
	}}

	chain mangle_input {{
		type filter hook input priority mangle; policy accept;
	}}

	chain mangle_output {{
		type route hook output priority mangle; policy accept;
	}}

	chain mangle_forward {{
		type filter hook forward priority mangle; policy accept;
		iifname {wan} tcp flags syn / syn,fin,rst tcp option maxseg size set rt mtu comment "!fw4: Zone wan IPv4/IPv6 ingress MTU fixing"
	}}
}}
"#
    ))
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
