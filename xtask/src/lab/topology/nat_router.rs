//! `nat-router`: one router between a LAN and a WAN, as an OpenWrt router
//! with its default firewall stands. The LAN endpoint (the iperf3 client)
//! routes through the guest; the guest masquerades out of its WAN NIC, and
//! the WAN endpoint (the iperf3 server, TEST-NET-3) has no route back, so
//! only the masquerade makes replies arrive.
//!
//! ```text
//! namespace lan 192.168.1.2 — tap — [lan 192.168.1.1  router  wan 203.0.113.1] — tap — namespace wan 203.0.113.2
//! ```

use std::net::{IpAddr, Ipv4Addr};

use super::model::{Endpoint, Guest, Link, Name, Nic, Port, Ruleset, Topology};
use crate::lab::net::{Cidr, Mac};

/// MAC of the guest's LAN NIC.
pub const LAN_MAC: Mac = Mac::qemu(0x12, 0x34, 0x01);
/// MAC of the guest's WAN NIC.
pub const WAN_MAC: Mac = Mac::qemu(0x12, 0x34, 0x02);
/// The guest's LAN address (the LAN endpoint's gateway).
pub const GUEST_LAN_IP: Ipv4Addr = Ipv4Addr::new(192, 168, 1, 1);
/// The LAN endpoint, the iperf3 client.
pub const LAN_HOST_IP: Ipv4Addr = Ipv4Addr::new(192, 168, 1, 2);
/// The guest's WAN address: what the WAN side sees after masquerade.
pub const GUEST_WAN_IP: Ipv4Addr = Ipv4Addr::new(203, 0, 113, 1);
/// The WAN endpoint (TEST-NET-3), the iperf3 server.
pub const WAN_HOST_IP: Ipv4Addr = Ipv4Addr::new(203, 0, 113, 2);
/// Prefix length of both links.
pub const PREFIX: u8 = 24;

fn cidr(ip: Ipv4Addr) -> Cidr {
    Cidr {
        addr: IpAddr::V4(ip),
        prefix: PREFIX,
    }
}

/// The topology (see the module docs).
pub fn topology() -> Topology {
    let nic = |name: &str, mac, ip| Nic {
        name: name.to_string(),
        mac,
        addresses: vec![cidr(ip)],
        mtu: None,
    };
    let link = |name: &str| Link {
        name: name.to_string(),
        ports: vec![
            Port::Endpoint(name.to_string()),
            Port::Nic {
                guest: "router".to_string(),
                nic: name.to_string(),
            },
        ],
        mtu: None,
    };
    Topology {
        name: Name::NatRouter,
        summary: "one router between a LAN and a WAN, masquerading out of its WAN".to_string(),
        guests: vec![Guest {
            name: "router".to_string(),
            nics: vec![
                nic("lan", LAN_MAC, GUEST_LAN_IP),
                nic("wan", WAN_MAC, GUEST_WAN_IP),
            ],
            routes: Vec::new(),
            ip_forward: true,
            ruleset: Some(Ruleset::NatRouter),
            counted: ["lan".to_string(), "wan".to_string()],
            gro: vec!["lan".to_string(), "wan".to_string()],
            batman: None,
            bridges: Vec::new(),
            steering: None,
        }],
        endpoints: vec![
            Endpoint {
                name: "lan".to_string(),
                address: cidr(LAN_HOST_IP),
                gateway: Some(IpAddr::V4(GUEST_LAN_IP)),
            },
            Endpoint {
                name: "wan".to_string(),
                address: cidr(WAN_HOST_IP),
                gateway: None,
            },
        ],
        links: vec![link("lan"), link("wan")],
        measured: "router".to_string(),
        masquerade: Some(IpAddr::V4(GUEST_WAN_IP)),
    }
}
