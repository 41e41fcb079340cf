//! A [`Topology`] made concrete for one boot: the [`Step`]s that make its
//! network on this machine, each guest's QEMU NICs, and where each
//! endpoint ends up. Pure data, so the plan is what a test checks; the
//! lab's one owner of the network ([`crate::lab::net::Net`]) runs it.
//!
//! Two phases, because QEMU opens its taps by name in the host's
//! namespace: [`NetPlan::create`] (namespaces, taps) before QEMU starts,
//! [`NetPlan::attach`] (taps moved into their namespaces, bridges, veths,
//! addresses, offloads off, routes) once every tap of [`NetPlan::taps`]
//! has its carrier.

use std::net::IpAddr;

use anyhow::{Context, Result};

use super::model::{Link, Port, Topology};
use crate::lab::net::{Cidr, Mac, Names, Step};

/// The bridge in a bridged link's namespace.
pub const BRIDGE: &str = "br0";

/// One guest NIC as QEMU gets it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QemuNic {
    /// The `-netdev` id: the NIC's name in the guest (`lan`).
    pub id: String,
    /// The tap on this machine.
    pub tap: String,
    /// Its MAC.
    pub mac: Mac,
}

/// Where an endpoint is once the network is up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedEndpoint {
    /// The topology's name for it (`lan`).
    pub name: String,
    /// Its namespace.
    pub netns: String,
    /// Its device there (the tap, or a veth named after the link).
    pub dev: String,
    /// Its address.
    pub address: IpAddr,
}

/// The network of one boot of a topology.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetPlan {
    /// Made before QEMU starts: namespaces (endpoints', bridged links'),
    /// taps in the host's namespace.
    pub create: Vec<Step>,
    /// The taps QEMU must have opened before [`NetPlan::attach`].
    pub taps: Vec<String>,
    /// Made once QEMU holds the taps.
    pub attach: Vec<Step>,
    /// Each guest's NICs in its QEMU's order, by guest name.
    pub guests: Vec<(String, Vec<QemuNic>)>,
    /// Every endpoint.
    pub endpoints: Vec<PlannedEndpoint>,
}

impl NetPlan {
    /// The QEMU NICs of guest `name`.
    pub fn nics(&self, guest: &str) -> Result<&[QemuNic]> {
        self.guests
            .iter()
            .find(|(g, _)| g == guest)
            .map(|(_, nics)| nics.as_slice())
            .with_context(|| format!("the plan has no guest {guest}"))
    }

    /// Every step in the order they run, one `ip`/`ethtool` command a
    /// line: what the printed plan and the tests show.
    pub fn commands(&self) -> Vec<String> {
        self.create
            .iter()
            .chain(&self.attach)
            .flat_map(Step::argv)
            .map(|argv| argv.join(" "))
            .collect()
    }
}

/// Plans `topology` (checked) with `names` for its namespaces and taps.
pub fn plan(topology: &Topology, names: Names) -> Result<NetPlan> {
    topology.check()?;
    let mut out = NetPlan {
        create: Vec::new(),
        taps: Vec::new(),
        attach: Vec::new(),
        guests: topology
            .guests
            .iter()
            .map(|g| (g.name.clone(), Vec::new()))
            .collect(),
        endpoints: Vec::new(),
    };
    for e in &topology.endpoints {
        out.create.push(Step::Namespace {
            name: names.netns(&e.name),
        });
    }
    for link in &topology.links {
        plan_link(topology, link, &names, &mut out)?;
    }
    // QEMU's NIC order is the guest's, whatever order the links list them in.
    for (name, nics) in &mut out.guests {
        let g = topology
            .guest(name)
            .with_context(|| format!("no guest {name}"))?;
        nics.sort_by_key(|q| g.nics.iter().position(|n| n.name == q.id));
    }
    for e in &topology.endpoints {
        if let Some(via) = e.gateway {
            out.attach.push(Step::Route {
                netns: names.netns(&e.name),
                to: None,
                via,
            });
        }
    }
    out.endpoints
        .sort_by_key(|up| topology.endpoints.iter().position(|e| e.name == up.name));
    Ok(out)
}

/// Adds `link`'s taps, namespace and bridge (unless it joins one guest NIC
/// to one endpoint, point to point), veths, addresses, MTUs, offloads and
/// the guests' QEMU NICs to `out`.
fn plan_link(topology: &Topology, link: &Link, names: &Names, out: &mut NetPlan) -> Result<()> {
    let mut link_taps = Vec::new();
    let mut link_endpoints = Vec::new();
    for port in &link.ports {
        match port {
            Port::Nic { guest, nic } => {
                let tap = names.tap(out.taps.len())?;
                out.create.push(Step::Tap { name: tap.clone() });
                out.taps.push(tap.clone());
                link_taps.push((guest.clone(), nic.clone(), tap));
            }
            Port::Endpoint(e) => link_endpoints.push(
                topology
                    .endpoint(e)
                    .with_context(|| format!("no endpoint {e}"))?,
            ),
        }
    }
    let point_to_point = link_taps.len() == 1 && link_endpoints.len() == 1;
    let bridge_ns = names.netns(&format!("{}-link", link.name));
    if !point_to_point {
        out.create.push(Step::Namespace {
            name: bridge_ns.clone(),
        });
        out.attach.push(Step::Bridge {
            netns: bridge_ns.clone(),
            name: BRIDGE.to_string(),
        });
    }
    for (_, _, tap) in &link_taps {
        let netns = if point_to_point {
            names.netns(&link_endpoints[0].name)
        } else {
            bridge_ns.clone()
        };
        out.attach.push(Step::Move {
            dev: tap.clone(),
            netns: netns.clone(),
        });
        if !point_to_point {
            out.attach.push(Step::Enslave {
                netns: netns.clone(),
                dev: tap.clone(),
                bridge: BRIDGE.to_string(),
            });
        }
        if point_to_point {
            out.attach
                .push(address(&netns, tap, link_endpoints[0].address));
        }
        out.attach.extend(mtu(&netns, tap, link.mtu));
        out.attach.push(Step::Up {
            netns: netns.clone(),
            dev: tap.clone(),
        });
        out.attach.push(Step::OffloadsOff {
            netns,
            dev: tap.clone(),
        });
    }
    for e in &link_endpoints {
        let netns = names.netns(&e.name);
        let dev = if point_to_point {
            link_taps[0].2.clone()
        } else {
            // The bridge's end is called after the endpoint, the
            // endpoint's after the link.
            out.attach.push(Step::Veth {
                netns: bridge_ns.clone(),
                name: e.name.clone(),
                peer_netns: netns.clone(),
                peer: link.name.clone(),
            });
            out.attach.push(Step::Enslave {
                netns: bridge_ns.clone(),
                dev: e.name.clone(),
                bridge: BRIDGE.to_string(),
            });
            out.attach.extend(mtu(&bridge_ns, &e.name, link.mtu));
            out.attach.push(Step::Up {
                netns: bridge_ns.clone(),
                dev: e.name.clone(),
            });
            out.attach.push(address(&netns, &link.name, e.address));
            out.attach.extend(mtu(&netns, &link.name, link.mtu));
            out.attach.push(Step::Up {
                netns: netns.clone(),
                dev: link.name.clone(),
            });
            out.attach.push(Step::OffloadsOff {
                netns: netns.clone(),
                dev: link.name.clone(),
            });
            link.name.clone()
        };
        out.endpoints.push(PlannedEndpoint {
            name: e.name.clone(),
            netns,
            dev,
            address: e.address.addr,
        });
    }
    for (guest, nic, tap) in link_taps {
        let g = topology
            .guest(&guest)
            .with_context(|| format!("no guest {guest}"))?;
        let mac = g
            .nics
            .iter()
            .find(|n| n.name == nic)
            .with_context(|| format!("no NIC {guest}.{nic}"))?
            .mac;
        let slot = out
            .guests
            .iter_mut()
            .find(|(name, _)| *name == guest)
            .with_context(|| format!("no guest {guest}"))?;
        slot.1.push(QemuNic { id: nic, tap, mac });
    }
    Ok(())
}

/// `dev`'s MTU step in `netns` when its link sets one.
fn mtu(netns: &str, dev: &str, mtu: Option<u32>) -> Option<Step> {
    mtu.map(|mtu| Step::Mtu {
        netns: netns.to_string(),
        dev: dev.to_string(),
        mtu,
    })
}

fn address(netns: &str, dev: &str, address: Cidr) -> Step {
    Step::Address {
        netns: netns.to_string(),
        dev: dev.to_string(),
        address,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nat_router_is_planned_as_the_lab_always_made_it() {
        let t = super::super::nat_router::topology();
        let p = plan(&t, Names { pid: 42, serial: 7 }).unwrap();
        let ns = |name: &str| Step::Namespace { name: name.into() };
        let tap = |name: &str| Step::Tap { name: name.into() };
        assert_eq!(
            p.create,
            [
                ns("xlab-42-7-lan"),
                ns("xlab-42-7-wan"),
                tap("xl42_7a"),
                tap("xl42_7b")
            ]
        );
        let attach: Vec<String> = p
            .attach
            .iter()
            .flat_map(Step::argv)
            .map(|a| a.join(" "))
            .collect();
        assert_eq!(
            attach,
            [
                "ip link set xl42_7a netns xlab-42-7-lan",
                "ip -n xlab-42-7-lan addr add 192.168.1.2/24 dev xl42_7a",
                "ip -n xlab-42-7-lan link set xl42_7a up",
                "ip netns exec xlab-42-7-lan ethtool -K xl42_7a tx off sg off tso off gso off gro off",
                "ip link set xl42_7b netns xlab-42-7-wan",
                "ip -n xlab-42-7-wan addr add 203.0.113.2/24 dev xl42_7b",
                "ip -n xlab-42-7-wan link set xl42_7b up",
                "ip netns exec xlab-42-7-wan ethtool -K xl42_7b tx off sg off tso off gso off gro off",
                "ip -n xlab-42-7-lan route add default via 192.168.1.1",
            ]
        );
        assert_eq!(p.commands().len(), 2 * 2 + 2 * 2 + attach.len());
        assert_eq!(p.taps, ["xl42_7a", "xl42_7b"]);
        let nics = p.nics("router").unwrap();
        assert_eq!(nics[0].id, "lan");
        assert_eq!(nics[1].tap, "xl42_7b");
        assert_eq!(nics[1].mac.to_string(), "52:54:00:12:34:02");
        assert_eq!(p.endpoints[1].netns, "xlab-42-7-wan");
        assert_eq!(p.endpoints[1].address.to_string(), "203.0.113.2");
    }
}
