//! A lab network as data: which guests (QEMU machines, each with its NICs,
//! addresses, routes and firewall), which endpoints (network namespaces on
//! this machine where the workload's hosts run), and which links join
//! them. A topology is a value ([`Topology`]); nothing about it is spelled
//! out in the code that boots guests or makes namespaces:
//!
//! * [`plan`] turns it into the namespaces, taps, bridges, veths,
//!   addresses and routes to make on this machine ([`crate::lab::net`]
//!   steps) and each guest's QEMU NICs ([`crate::lab::qemu::argv`]);
//! * [`crate::lab::guest::setup_script`] turns each guest into the network
//!   setup its `/init` runs (NICs named by MAC, addresses, routes,
//!   forwarding, the ruleset);
//! * [`crate::lab::session`] boots every guest of it and hands the
//!   workload its endpoints.
//!
//! A link with one guest NIC and one endpoint is a tap moved into the
//! endpoint's namespace; any other link (two guests' mesh ports, a LAN
//! with several hosts) is a bridge in a namespace of its own
//! (`xlab-<pid>-<n>-<link>-link`), each guest NIC's tap and a veth per
//! endpoint its ports.
//!
//! Adding a topology: its name ([`Name`], in `results/lab/topology.rs`,
//! which `lab.json` records), a file here with a function that returns it
//! (see [`nat_router`]), and its arm in [`named_with`]. `docs/lab-architecture.md`
//! has the walk-through.

pub mod loopback;
pub mod mesh;
pub mod model;
pub mod nat_router;
pub mod plan;

#[cfg(test)]
mod chain;

use anyhow::{bail, Result};

pub use model::{
    Batman, Bridge, Endpoint, Guest, Link, Name, Nic, Port, Route, Ruleset, Topology, BATMAN_IF,
};

/// The topology called `name`, or an error naming the known ones.
pub fn named(name: &Name) -> Result<Topology> {
    named_with(name, None)
}

/// The topology called `name` with `routers` routers in its chain
/// (`lab --routers N`; only the mesh and its bridged reference take it,
/// 2 to [`mesh::MAX_ROUTERS`]; `None`: the mesh's [`mesh::ROUTERS`]).
///
/// Errors: an unknown name (naming the known ones); a router count for
/// another topology, or out of range.
pub fn named_with(name: &Name, routers: Option<usize>) -> Result<Topology> {
    let build: fn(usize) -> Topology = match name {
        Name::NatRouter => |_| nat_router::topology(),
        Name::Loopback => |_| loopback::topology(),
        Name::Mesh => |n| mesh::topology(n, mesh::Mesh::Batman),
        Name::MeshBridged => |n| mesh::topology(n, mesh::Mesh::Bridged),
        Name::Other(other) => bail!(
            "unknown topology {other:?}; the lab knows {}",
            Name::known_names()
        ),
    };
    let mesh_routers = match routers {
        None => mesh::ROUTERS,
        Some(n) if !matches!(name, Name::Mesh | Name::MeshBridged) => {
            bail!("--routers {n}: only the mesh chains routers; topology {name} has its own guests")
        }
        Some(n) if !(2..=mesh::MAX_ROUTERS).contains(&n) => bail!(
            "--routers {n}: the mesh chains 2 to {} routers",
            mesh::MAX_ROUTERS
        ),
        Some(n) => n,
    };
    let topology = build(mesh_routers);
    topology.check()?;
    Ok(topology)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(t: &Topology) -> String {
        format!("{:#}", t.check().unwrap_err())
    }

    #[test]
    fn a_topology_the_lab_cannot_make_is_refused_naming_the_part() {
        let good = nat_router::topology();
        good.check().unwrap();
        assert_eq!(named(&Name::NatRouter).unwrap(), good);
        assert!(named(&"ring".into()).unwrap_err().to_string().contains(
            "unknown topology \"ring\"; the lab knows nat-router, loopback, mesh, mesh-bridged"
        ));

        let mut t = good.clone();
        t.guests[0].nics[1].mac = t.guests[0].nics[0].mac;
        assert!(refused(&t).contains("MAC 52:54:00:12:34:01 is given twice"));

        let mut t = good.clone();
        t.guests[0].nics[0].name = "eth0".into();
        assert!(refused(&t).contains("the kernel names its NICs so"));

        let mut t = good.clone();
        t.endpoints[0].name = "lan;reboot".into();
        assert!(refused(&t).contains("a lowercase letter"));

        let mut t = good.clone();
        t.links[1].ports.pop();
        assert!(refused(&t).contains("link wan joins fewer than two ports"));

        let mut t = good.clone();
        t.links[1].ports[0] = Port::Nic {
            guest: "router".into(),
            nic: "dmz".into(),
        };
        assert!(refused(&t).contains("link wan names router.dmz"));

        let mut t = good.clone();
        t.links.pop();
        assert!(refused(&t).contains("router.wan is on no link"));

        let mut t = good.clone();
        t.measured = "r2".into();
        assert!(refused(&t).contains("measured guest \"r2\""));

        let mut t = good.clone();
        t.guests[0].nics[1].addresses.clear();
        t.guests[0].ruleset = Some(Ruleset::Firewall4);
        assert!(refused(&t).contains("router loads a ruleset of zones lan and wan, but has no NIC \"wan\" with an IPv4 address"));
    }

    #[test]
    fn one_guest_on_its_own_loopback_is_a_topology() {
        let mut t = nat_router::topology();
        t.name = "loopback".into();
        t.endpoints.clear();
        t.links.clear();
        t.masquerade = None;
        let g = &mut t.guests[0];
        g.nics.clear();
        g.ruleset = None;
        g.counted = ["lo".into(), "lo".into()];
        g.gro = vec!["lo".into()];
        t.check().unwrap();
        let p = plan::plan(&t, crate::lab::net::Names { pid: 1, serial: 0 }).unwrap();
        assert!(p.create.is_empty() && p.attach.is_empty() && p.taps.is_empty());
        assert_eq!(p.nics("router").unwrap(), []);
    }
}
