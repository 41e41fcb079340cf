//! The batman-adv mesh of the original deinline experiment: routers in a chain, each pair joined
//! by a mesh link of its own, batman-adv (`bat0`) over the mesh ports
//! with their MTU at 1532, and `bat0` bridged with the LAN port
//! (`br-lan` = `lan` + `bat0`, no NAT), as the original experiment's two
//! OM5P-AC routers were set up. A LAN endpoint behind the first router,
//! the far endpoint behind the last, both on one layer-2 LAN
//! (192.168.1.0/24), so iperf3's server sees its client's own address.
//!
//! ```text
//! lan 192.168.1.100 — [lan r1 mesh1] ═ mesh1 (MTU 1532) ═ [mesh1 r2 lan] — far 192.168.1.200
//!                       br-lan = lan + bat0                 br-lan = lan + bat0
//!                       192.168.1.1                         192.168.1.2
//! ```
//!
//! [`Mesh::Bridged`] is the reference arm "without batman-adv": the same
//! guests, NICs and links, each router bridging its LAN and mesh ports
//! directly (the original's third column).
//!
//! With more than two routers the middle ones have two mesh ports (one
//! per neighbour's link) and no LAN port, so frames cross every hop.

use std::net::{IpAddr, Ipv4Addr};

use super::model::{Batman, Bridge, Endpoint, Guest, Link, Name, Nic, Port, Topology};
use crate::lab::net::{Cidr, Mac};

/// The routers of the mesh and of its reference by name.
pub const ROUTERS: usize = 2;
/// The most routers a chain has (`lab --routers`): the MACs and LAN
/// addresses number routers with one digit.
pub const MAX_ROUTERS: usize = 9;
/// The mesh ports' MTU: batman-adv's 32 bytes of headers on a full
/// 1500-byte frame (the original's `eth1` setting; batman-adv's wiki).
pub const MESH_MTU: u32 = 1532;
/// The bridge inside each router (OpenWrt's LAN bridge).
pub const BR_LAN: &str = "br-lan";
/// The LAN endpoint's address (behind the first router).
pub const LAN_HOST_IP: Ipv4Addr = Ipv4Addr::new(192, 168, 1, 100);
/// The far endpoint's address (behind the last router).
pub const FAR_HOST_IP: Ipv4Addr = Ipv4Addr::new(192, 168, 1, 200);
/// The endpoint behind the last router.
pub const FAR: &str = "far";

/// How the routers join their LAN across the mesh links.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mesh {
    /// batman-adv over the mesh ports, `bat0` in `br-lan`.
    Batman,
    /// No batman-adv: the mesh ports in `br-lan` directly.
    Bridged,
}

fn lan_cidr(last: u8) -> Cidr {
    Cidr {
        addr: IpAddr::V4(Ipv4Addr::new(192, 168, 1, last)),
        prefix: 24,
    }
}

/// The mesh of `routers` routers (2 to 9) in a chain, joined as `mesh`
/// says; [`super::Topology::check`] holds for every such value.
pub fn topology(routers: usize, mesh: Mesh) -> Topology {
    let routers = routers.clamp(2, MAX_ROUTERS);
    let name = |i: usize| format!("r{i}");
    let link_name = |k: usize| format!("mesh{k}");
    let mut guests = Vec::new();
    let mut links = Vec::new();
    for i in 1..=routers {
        let mut nics: Vec<String> = Vec::new();
        if i > 1 {
            nics.push(link_name(i - 1));
        }
        if i < routers {
            nics.push(link_name(i));
        }
        let mesh_ports = nics.clone();
        // The LAN port: the first router's first NIC, the last's last.
        if i == 1 {
            nics.insert(0, "lan".to_string());
        } else if i == routers {
            nics.push("lan".to_string());
        }
        let bridge_ports = match mesh {
            Mesh::Batman => {
                let mut p: Vec<String> = nics.iter().filter(|n| *n == "lan").cloned().collect();
                p.push(super::model::BATMAN_IF.to_string());
                p
            }
            Mesh::Bridged => nics.clone(),
        };
        guests.push(Guest {
            name: name(i),
            nics: nics
                .iter()
                .enumerate()
                .map(|(k, n)| Nic {
                    name: n.clone(),
                    mac: Mac::qemu(0x12, 0x36, (i as u8) << 4 | k as u8),
                    addresses: Vec::new(),
                    mtu: None,
                })
                .collect(),
            routes: Vec::new(),
            ip_forward: false,
            ruleset: None,
            counted: [nics[0].clone(), nics[1].clone()],
            gro: nics.clone(),
            batman: (mesh == Mesh::Batman).then_some(Batman {
                ports: mesh_ports,
                port_mtu: MESH_MTU,
            }),
            bridges: vec![Bridge {
                name: BR_LAN.to_string(),
                ports: bridge_ports,
                addresses: vec![lan_cidr(i as u8)],
            }],
            steering: None,
        });
        if i < routers {
            links.push(Link {
                name: link_name(i),
                ports: vec![
                    Port::Nic {
                        guest: name(i),
                        nic: link_name(i),
                    },
                    Port::Nic {
                        guest: name(i + 1),
                        nic: link_name(i),
                    },
                ],
                mtu: (mesh == Mesh::Batman).then_some(MESH_MTU),
            });
        }
    }
    let endpoint_link = |endpoint: &str, router: usize| Link {
        name: endpoint.to_string(),
        ports: vec![
            Port::Endpoint(endpoint.to_string()),
            Port::Nic {
                guest: name(router),
                nic: "lan".to_string(),
            },
        ],
        mtu: None,
    };
    links.insert(0, endpoint_link("lan", 1));
    links.push(endpoint_link(FAR, routers));
    let endpoint = |n: &str, ip: Ipv4Addr| Endpoint {
        name: n.to_string(),
        address: Cidr {
            addr: IpAddr::V4(ip),
            prefix: 24,
        },
        gateway: None,
    };
    let (topology_name, summary) = match mesh {
        Mesh::Batman => (
            Name::Mesh,
            format!("{routers} routers in a chain, batman-adv over their mesh links (32 bytes above the LAN's MTU: {MESH_MTU} for 1500), bat0 bridged with the LAN port in br-lan, no NAT"),
        ),
        Mesh::Bridged => (
            Name::MeshBridged,
            format!("{routers} routers in a chain without batman-adv: each bridges its LAN and mesh ports in br-lan, no NAT"),
        ),
    };
    Topology {
        name: topology_name,
        summary,
        guests,
        endpoints: vec![endpoint("lan", LAN_HOST_IP), endpoint(FAR, FAR_HOST_IP)],
        links,
        measured: name(1),
        masquerade: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::forwarding::Forwarding;
    use crate::lab::guest;
    use crate::lab::net::{Names, Step};
    use crate::lab::topology::plan;
    use crate::lab::workload::check_places;

    #[test]
    fn two_routers_mesh_over_batman_adv_with_bat0_in_br_lan() {
        let t = topology(ROUTERS, Mesh::Batman);
        t.check().unwrap();
        let p = plan::plan(&t, Names { pid: 9, serial: 2 }).unwrap();
        let commands = p.commands();
        for want in [
            // The mesh link is a bridge of its own whose ports pass 1532.
            "ip netns add xlab-9-2-mesh1-link",
            "ip -n xlab-9-2-mesh1-link link add br0 type bridge",
            "ip -n xlab-9-2-mesh1-link link set xl9_2b mtu 1532",
            "ip -n xlab-9-2-mesh1-link link set xl9_2c mtu 1532",
            // The endpoints on one LAN, no gateway, no NAT.
            "ip -n xlab-9-2-lan addr add 192.168.1.100/24 dev xl9_2a",
            "ip -n xlab-9-2-far addr add 192.168.1.200/24 dev xl9_2d",
        ] {
            assert!(
                commands.iter().any(|c| c == want),
                "{want:?} not in {commands:#?}"
            );
        }
        assert!(!commands.iter().any(|c| c.contains("route add")));
        assert_eq!(
            p.nics("r2")
                .unwrap()
                .iter()
                .map(|n| n.id.as_str())
                .collect::<Vec<_>>(),
            ["mesh1", "lan"]
        );

        let r1 = guest::setup_script(&t.name, &t.guests[0]);
        let lines: Vec<&str> = r1.lines().skip(1).collect();
        assert_eq!(
            lines,
            [
                "xl_nic lan 52:54:00:12:36:10",
                "xl_nic mesh1 52:54:00:12:36:11",
                "ip link set lan up || fail \"lan up\"",
                "ip link set mesh1 mtu 1532 || fail \"MTU 1532 on mesh1\"",
                "ip link set mesh1 up || fail \"mesh1 up\"",
                "ip link add bat0 type batadv || fail \"batman-adv: bat0\"",
                "ip link set mesh1 master bat0 || fail \"mesh1 into bat0\"",
                "ip link set bat0 up || fail \"bat0 up\"",
                "ip link add br-lan type bridge || fail \"bridge br-lan\"",
                "ip link set lan master br-lan || fail \"lan into br-lan\"",
                "ip link set bat0 master br-lan || fail \"bat0 into br-lan\"",
                "ip addr add 192.168.1.1/24 dev br-lan || fail \"addressing br-lan\"",
                "ip link set br-lan up || fail \"br-lan up\"",
            ]
        );

        let endpoints: Vec<String> = p.endpoints.iter().map(|e| e.name.clone()).collect();
        let guests: Vec<String> = t.guests.iter().map(|g| g.name.clone()).collect();
        let to_far = Forwarding::between("lan", FAR);
        check_places(&to_far, (&endpoints, &guests), "mesh").unwrap();
        assert!(check_places(&Forwarding::lan_to_wan(), (&endpoints, &guests), "mesh").is_err());
    }

    #[test]
    fn the_reference_arm_bridges_the_mesh_ports_without_batman_adv() {
        let t = topology(ROUTERS, Mesh::Bridged);
        t.check().unwrap();
        assert_eq!(t.name, Name::MeshBridged);
        let r2 = guest::setup_script(&t.name, &t.guests[1]);
        assert!(!r2.contains("batadv") && !r2.contains("mtu"), "{r2}");
        for want in [
            "ip link set mesh1 master br-lan",
            "ip link set lan master br-lan",
            "ip addr add 192.168.1.2/24 dev br-lan",
        ] {
            assert!(r2.contains(want), "{want:?} not in\n{r2}");
        }
        let p = plan::plan(&t, Names { pid: 9, serial: 3 }).unwrap();
        assert!(!p.attach.iter().any(|s| matches!(s, Step::Mtu { .. })));
        // Same guests, NICs and links as the mesh: only the joining differs.
        let m = topology(ROUTERS, Mesh::Batman);
        let shape = |t: &Topology| {
            t.guests
                .iter()
                .map(|g| (g.name.clone(), g.nics.clone()))
                .collect::<Vec<_>>()
        };
        assert_eq!(shape(&t), shape(&m));
        assert_eq!(t.endpoints, m.endpoints);
    }

    #[test]
    fn three_routers_chain_their_mesh_links_through_the_middle_one() {
        let t = topology(3, Mesh::Batman);
        t.check().unwrap();
        let r2 = &t.guests[1];
        let nics: Vec<&str> = r2.nics.iter().map(|n| n.name.as_str()).collect();
        assert_eq!(nics, ["mesh1", "mesh2"]);
        assert_eq!(r2.batman.as_ref().unwrap().ports, ["mesh1", "mesh2"]);
        assert_eq!(r2.bridges[0].ports, ["bat0"]);
        let links: Vec<&str> = t.links.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(links, ["lan", "mesh1", "mesh2", "far"]);
        assert_eq!(t.guests[2].nics.last().unwrap().name, "lan");
    }

    #[test]
    fn a_bridge_port_or_mtu_the_guest_lacks_is_refused() {
        let mut t = topology(ROUTERS, Mesh::Batman);
        t.guests[0].bridges[0].ports.push("wan".into());
        let err = format!("{:#}", t.check().unwrap_err());
        assert!(err.contains("bridge br-lan names \"wan\""), "{err}");
        let mut t = topology(ROUTERS, Mesh::Batman);
        t.guests[1].batman.as_mut().unwrap().port_mtu = 1400;
        let err = format!("{:#}", t.check().unwrap_err());
        assert!(err.contains("MTU 1400"), "{err}");
        let mut t = topology(ROUTERS, Mesh::Bridged);
        t.guests[0].bridges[0].ports.push("bat0".into());
        let err = format!("{:#}", t.check().unwrap_err());
        assert!(err.contains("names \"bat0\""), "{err}");
    }

    #[test]
    fn the_mesh_takes_a_router_count_and_nothing_else_does() {
        let three = super::super::named_with(&Name::Mesh, Some(3)).unwrap();
        let names: Vec<&str> = three.guests.iter().map(|g| g.name.as_str()).collect();
        assert_eq!(names, ["r1", "r2", "r3"]);
        let reference = crate::lab::qemu_lab::reference(&three).unwrap().unwrap();
        assert_eq!(reference.name, Name::MeshBridged);
        assert_eq!(
            reference.guests.len(),
            3,
            "the reference arm has as many routers"
        );
        assert_eq!(
            super::super::named(&Name::Mesh).unwrap().guests.len(),
            ROUTERS
        );
        for (name, n, says) in [
            (Name::NatRouter, 3, "only the mesh chains routers"),
            (Name::Loopback, 2, "only the mesh chains routers"),
            (Name::Mesh, 1, "2 to 9 routers"),
            (Name::MeshBridged, 10, "2 to 9 routers"),
        ] {
            let err = super::super::named_with(&name, Some(n))
                .unwrap_err()
                .to_string();
            assert!(err.contains(says), "{name} {n}: {err}");
        }
    }
}
