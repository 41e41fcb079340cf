//! A made-up topology, written as a new one would be: two routers in a
//! chain, joined by a link of their own (a bridge in its own namespace,
//! as a mesh's routers will be), routing, no NAT. Test-only: it shows
//! what a topology takes (this file and a line in `mod.rs`), and its
//! test runs the real data path — the plan's namespaces, taps, bridge
//! and addresses, each guest's generated network setup, QEMU's NICs from
//! the brcm47xx target's `[lab]` table, and the forwarding workload's
//! places.
//!
//! ```text
//! lan 192.168.1.2 — [lan r1 mid] — bridge "mid" — [mid r2 wan] — wan 203.0.113.2
//!                    192.168.1.1  10.0.0.1         10.0.0.2  203.0.113.1
//! ```

use std::net::IpAddr;

use super::{Endpoint, Guest, Link, Nic, Port, Route, Topology};
use crate::lab::net::{Cidr, Mac};

fn cidr(s: &str) -> Cidr {
    Cidr::parse(s).expect("a literal address")
}

fn ip(s: &str) -> IpAddr {
    s.parse().expect("a literal address")
}

/// The chain (see the module docs).
pub fn topology() -> Topology {
    let nic = |name: &str, last: u8, address: &str| Nic {
        name: name.to_string(),
        mac: Mac::qemu(0x12, 0x35, last),
        addresses: vec![cidr(address)],
        mtu: None,
    };
    let router = |name: &str, nics: Vec<Nic>, route: Route| Guest {
        name: name.to_string(),
        counted: [nics[0].name.clone(), nics[1].name.clone()],
        gro: nics.iter().map(|n| n.name.clone()).collect(),
        nics,
        routes: vec![route],
        ip_forward: true,
        ruleset: None,
        batman: None,
        bridges: Vec::new(),
        steering: None,
    };
    let port = |guest: &str, nic: &str| Port::Nic {
        guest: guest.to_string(),
        nic: nic.to_string(),
    };
    Topology {
        name: "chain".into(),
        summary: "two routers in a chain, routing".to_string(),
        guests: vec![
            router(
                "r1",
                vec![
                    nic("lan", 1, "192.168.1.1/24"),
                    nic("mid", 2, "10.0.0.1/30"),
                ],
                Route {
                    to: None,
                    via: ip("10.0.0.2"),
                },
            ),
            router(
                "r2",
                vec![
                    nic("mid", 3, "10.0.0.2/30"),
                    nic("wan", 4, "203.0.113.1/24"),
                ],
                Route {
                    to: Some(cidr("192.168.1.0/24")),
                    via: ip("10.0.0.1"),
                },
            ),
        ],
        endpoints: vec![
            Endpoint {
                name: "lan".to_string(),
                address: cidr("192.168.1.2/24"),
                gateway: Some(ip("192.168.1.1")),
            },
            Endpoint {
                name: "wan".to_string(),
                address: cidr("203.0.113.2/24"),
                gateway: Some(ip("203.0.113.1")),
            },
        ],
        links: vec![
            Link {
                name: "lan".to_string(),
                ports: vec![Port::Endpoint("lan".to_string()), port("r1", "lan")],
                mtu: None,
            },
            Link {
                name: "mid".to_string(),
                ports: vec![port("r1", "mid"), port("r2", "mid")],
                mtu: None,
            },
            Link {
                name: "wan".to_string(),
                ports: vec![port("r2", "wan"), Port::Endpoint("wan".to_string())],
                mtu: None,
            },
        ],
        measured: "r1".to_string(),
        masquerade: None,
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::inputs::targets;
    use crate::lab::forwarding::Forwarding;
    use crate::lab::net::{Names, Step};
    use crate::lab::workload::check_places;
    use crate::lab::{guest, kernel, qemu, topology::plan};
    use crate::util::layout::Layout;

    #[test]
    fn two_routers_in_a_chain_are_planned_set_up_and_booted_with_their_nics() {
        let t = topology();
        t.check().unwrap();
        let p = plan::plan(&t, Names { pid: 7, serial: 1 }).unwrap();

        // This machine: three namespaces (two endpoints, the bridged
        // link), a tap per guest NIC.
        let namespaces: Vec<&str> = p
            .create
            .iter()
            .filter_map(|s| match s {
                Step::Namespace { name } => Some(name.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(
            namespaces,
            ["xlab-7-1-lan", "xlab-7-1-wan", "xlab-7-1-mid-link"]
        );
        assert_eq!(p.taps, ["xl7_1a", "xl7_1b", "xl7_1c", "xl7_1d"]);
        let commands = p.commands();
        for want in [
            // The endpoints get their taps, addresses and routes…
            "ip link set xl7_1a netns xlab-7-1-lan",
            "ip -n xlab-7-1-lan addr add 192.168.1.2/24 dev xl7_1a",
            "ip -n xlab-7-1-wan addr add 203.0.113.2/24 dev xl7_1d",
            "ip -n xlab-7-1-lan route add default via 192.168.1.1",
            "ip -n xlab-7-1-wan route add default via 203.0.113.1",
            // …and the routers' link of their own is a bridge.
            "ip -n xlab-7-1-mid-link link add br0 type bridge",
            "ip link set xl7_1b netns xlab-7-1-mid-link",
            "ip -n xlab-7-1-mid-link link set xl7_1b master br0",
            "ip -n xlab-7-1-mid-link link set xl7_1c master br0",
            "ip netns exec xlab-7-1-mid-link ethtool -K xl7_1c tx off sg off tso off gso off gro off",
        ] {
            assert!(commands.iter().any(|c| c == want), "{want:?} not in {commands:#?}");
        }
        assert!(!commands
            .iter()
            .any(|c| c.contains("xl7_1b") && c.contains("addr add")));

        // Each guest: its network setup, generated from its data.
        let r2 = guest::setup_script(&t.name, &t.guests[1]);
        for want in [
            "xl_nic mid 52:54:00:12:35:03\nxl_nic wan 52:54:00:12:35:04\n",
            "ip addr add 10.0.0.2/30 dev mid || fail \"addressing mid\"\n",
            "ip route add 192.168.1.0/24 via 10.0.0.1 || fail \"route to 192.168.1.0/24\"\n",
            "echo 1 > /proc/sys/net/ipv4/ip_forward",
        ] {
            assert!(r2.contains(want), "{want:?} not in\n{r2}");
        }
        assert!(!r2.contains("nft"), "{r2}");
        let r1 = guest::setup_script(&t.name, &t.guests[0]);
        assert!(
            r1.contains("ip route add default via 10.0.0.2 || fail"),
            "{r1}"
        );

        // Each guest's QEMU: its taps and MACs on brcm47xx's PCI slots.
        let layout = Layout::from_manifest_dir();
        let all = targets::load_all(&layout.targets_dir()).unwrap();
        let brcm47xx = targets::select(&all, &["brcm47xx".to_string()]).unwrap();
        let spec = kernel::spec_of(&brcm47xx[0]).unwrap();
        let boot = qemu::Boot {
            kernel: Path::new("/k/vmlinux"),
            initramfs: Path::new("/i/r2.cpio"),
            console_socket: Path::new("/s/r2.sock"),
            dtb: None,
            plugin: None,
        };
        let argv = qemu::argv(spec, boot, p.nics("r2").unwrap())
            .unwrap()
            .join(" ");
        for want in [
            "-netdev tap,id=mid,ifname=xl7_1c,script=no,downscript=no",
            "-device e1000,netdev=mid,mac=52:54:00:12:35:03,addr=0x12,romfile=",
            "-netdev tap,id=wan,ifname=xl7_1d,script=no,downscript=no",
            "-device e1000,netdev=wan,mac=52:54:00:12:35:04,addr=0x14,romfile=",
        ] {
            assert!(argv.contains(want), "{want:?} not in {argv}");
        }

        // The lab's forwarding workload runs on it unchanged; one inside a
        // guest it does not have is refused.
        let endpoints: Vec<String> = p.endpoints.iter().map(|e| e.name.clone()).collect();
        let guests: Vec<String> = t.guests.iter().map(|g| g.name.clone()).collect();
        check_places(&Forwarding::lan_to_wan(), (&endpoints, &guests), "chain").unwrap();
        let to_r3 = Forwarding::between("lan", "r3");
        assert!(check_places(&to_r3, (&endpoints, &guests), "chain").is_err());
    }
}
