//! A topology as data ([`Topology`]: guests, endpoints, links) and its
//! check and description: what each topology's file builds and what
//! [`super::plan`] turns into steps, in a file of its own so that those
//! files and the registry (`mod.rs`, which calls them) do not import each
//! other.

use std::collections::BTreeSet;
use std::net::IpAddr;

use anyhow::{bail, Result};

use crate::lab::net::{Cidr, Mac};

/// A topology's name ([`Topology::name`]), as `lab.json` records it.
pub use crate::results::lab::TopologyName as Name;

/// A lab network (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Topology {
    /// Its name, as `lab.json` records it (`nat-router`).
    pub name: Name,
    /// One line on what it is, for the printed plan.
    pub summary: String,
    /// The QEMU machines, each booting the arm's kernel.
    pub guests: Vec<Guest>,
    /// The namespaces on this machine where workloads run.
    pub endpoints: Vec<Endpoint>,
    /// What joins guest NICs and endpoints.
    pub links: Vec<Link>,
    /// The guest whose counters each run samples (busy time, packets,
    /// interrupts: ns/packet) and whose QEMU loads the cache model.
    pub measured: String,
    /// The address the far side sees a client as when the path
    /// translates it (the nat-router's WAN address); `None` when nothing
    /// translates, so the server must see the client's own address.
    pub masquerade: Option<IpAddr>,
}

/// One QEMU machine of a topology.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Guest {
    /// Its name (`router`, `r1`): short, lowercase.
    pub name: String,
    /// Its NICs, in QEMU's order (PCI slots, virtio-mmio transports).
    pub nics: Vec<Nic>,
    /// Routes besides its NICs' own networks.
    pub routes: Vec<Route>,
    /// Whether it forwards IPv4 (`/proc/sys/net/ipv4/ip_forward`).
    pub ip_forward: bool,
    /// The ruleset it loads, if any.
    pub ruleset: Option<Ruleset>,
    /// The two NICs its samples count, in [`crate::results::lab::GuestSample`]'s
    /// `lan` and `wan` places: a forwarded packet is received on one
    /// (`lo` in a guest that forwards nothing).
    pub counted: [String; 2],
    /// The NICs `--gro on|off` switches.
    pub gro: Vec<String>,
    /// batman-adv in the guest, if it meshes.
    pub batman: Option<Batman>,
    /// Bridges inside the guest (`br-lan`), made after [`Guest::batman`]
    /// so that `bat0` can be a port.
    pub bridges: Vec<Bridge>,
    /// Its packet steering ([`crate::lab::steering`]), set on the measured
    /// guest by the lab; `None`: nothing steered.
    pub steering: Option<crate::results::lab::steering::Steering>,
}

/// batman-adv's soft interface: the mesh as one Ethernet device.
pub const BATMAN_IF: &str = "bat0";

/// batman-adv in a guest, as an OpenWrt mesh node runs it: its hard
/// interfaces (the mesh ports) join [`BATMAN_IF`], each with an MTU that
/// carries batman-adv's header on a full 1500-byte frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Batman {
    /// The guest's NICs that are batman-adv hard interfaces.
    pub ports: Vec<String>,
    /// Their MTU in bytes: 1532, as batman-adv's documentation asks of a
    /// mesh link (1500 plus its 32-byte unicast and Ethernet headers, so
    /// that nothing fragments; batman-adv's wiki, "Fragmentation").
    pub port_mtu: u32,
}

/// A bridge inside a guest (`br-lan` of OpenWrt's `network` config).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bridge {
    /// Its name (`br-lan`).
    pub name: String,
    /// Its ports: the guest's NICs, or [`BATMAN_IF`].
    pub ports: Vec<String>,
    /// Its addresses (the router's own on the LAN).
    pub addresses: Vec<Cidr>,
}

/// A guest NIC.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Nic {
    /// Its name in the guest (`lan`): `/init` renames the NIC with
    /// [`Nic::mac`] to it. Not `ethN` or `lo` (the kernel's own names).
    pub name: String,
    /// Its MAC, which QEMU gives it and `/init` finds it by.
    pub mac: Mac,
    /// Its addresses.
    pub addresses: Vec<Cidr>,
    /// Its MTU in bytes when not the kernel's (1500): its link's
    /// ([`Link::mtu`]); a batman-adv port's is [`Batman::port_mtu`].
    pub mtu: Option<u32>,
}

/// A route in a guest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Route {
    /// The destination; `None`: the default route.
    pub to: Option<Cidr>,
    /// The gateway.
    pub via: IpAddr,
}

/// A ruleset the guest's initramfs carries and `/init` loads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ruleset {
    /// [`crate::lab::guest::ruleset`]: masquerade out of `wan`, forward
    /// only `lan` → `wan` and replies, as an OpenWrt firewall does (`nft
    /// -f /etc/xl-router.nft`; the static guest's loader has it built in).
    NatRouter,
    /// [`crate::lab::firewall4::ruleset`]: the shape OpenWrt's firewall4
    /// renders from its default `/etc/config/firewall` (`table inet fw4`,
    /// zones `lan` and `wan`, masquerade on `wan`), for `lab --openwrt`;
    /// carried in the guest's overlay (`nft -f /etc/xl-fw4.nft`). Debian's
    /// `nft` only: a static guest's loader knows the lab's ruleset alone.
    Firewall4,
}

impl Ruleset {
    /// What the lab records of it: `nat-router (table ip xl: …)`,
    /// `firewall4 (table inet fw4: …)`.
    pub fn describe(self) -> &'static str {
        match self {
            Ruleset::NatRouter => {
                "nat-router (table ip xl: forward lan to wan and replies, masquerade on wan)"
            }
            Ruleset::Firewall4 => {
                "firewall4 (table inet fw4: OpenWrt's default zones, rules and masquerade, as fw4 renders /etc/config/firewall)"
            }
        }
    }
}

/// A namespace on this machine where a workload's host runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// Its name (`lan`): the workload names it, the namespace is called
    /// after it.
    pub name: String,
    /// Its address on its link.
    pub address: Cidr,
    /// Its default route, if any.
    pub gateway: Option<IpAddr>,
}

/// What one link joins.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    /// Its name (`lan`); a bridged link's namespace is called after it
    /// (`<name>-link`).
    pub name: String,
    /// Its ports, at least two.
    pub ports: Vec<Port>,
    /// The MTU of its ports on this machine (taps, veths), when frames
    /// bigger than 1500 bytes cross it (a batman-adv mesh link: 1532).
    pub mtu: Option<u32>,
}

/// One end of a link.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Port {
    /// A guest's NIC.
    Nic {
        /// The guest.
        guest: String,
        /// The NIC.
        nic: String,
    },
    /// An endpoint.
    Endpoint(String),
}

impl Port {
    /// `router.lan`, `endpoint lan`.
    pub fn describe(&self) -> String {
        match self {
            Port::Nic { guest, nic } => format!("{guest}.{nic}"),
            Port::Endpoint(e) => format!("endpoint {e}"),
        }
    }
}

/// A name that goes into namespace and device names and the guest's
/// generated shell script: a lowercase letter, then lowercase letters,
/// digits or `-`, 8 bytes at most.
fn check_name(what: &str, name: &str) -> Result<()> {
    let ok = (1..=8).contains(&name.len())
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if !ok {
        bail!(
            "{what} {name:?}: a lowercase letter, then lowercase letters, digits or -, at most 8"
        );
    }
    Ok(())
}

/// Checks `g`'s batman-adv and bridges: their ports are its NICs (or
/// `bat0` when it meshes), each on one of them at most, their names its
/// own.
fn check_mesh(t: &str, g: &Guest, nic_names: &BTreeSet<String>) -> Result<()> {
    let mut taken = BTreeSet::new();
    let mut devices = nic_names.clone();
    if let Some(b) = &g.batman {
        if b.ports.is_empty() {
            bail!("topology {t}: guest {}'s batman-adv has no port", g.name);
        }
        // batman-adv adds 32 bytes to each frame it carries: its ports
        // must pass the largest frame of the guest's other NICs with them
        // (a router in the middle of the chain has none: Linux's smallest
        // Ethernet MTU, 68).
        let largest = g
            .nics
            .iter()
            .filter(|n| !b.ports.contains(&n.name))
            .map(|n| n.mtu.unwrap_or(1500))
            .max()
            .unwrap_or(68);
        // bat0 carries at most 1500 bytes: batman-adv caps its MTU at
        // ETH_DATA_LEN (batadv_hardif_min_mtu in
        // net/batman-adv/hard-interface.c), so a bigger LAN frame would be
        // dropped by the bridge it shares with bat0.
        if largest > 1500 {
            bail!(
                "topology {t}: guest {}'s NICs have an MTU of {largest} bytes, but batman-adv's {BATMAN_IF} carries at most 1500 (ETH_DATA_LEN, batadv_hardif_min_mtu in net/batman-adv/hard-interface.c): use an MTU of at most 1500 on the mesh",
                g.name
            );
        }
        if !(largest + 32..=1532).contains(&b.port_mtu) {
            bail!(
                "topology {t}: guest {}'s batman-adv port MTU {} is outside {}..=1532 (its other NICs' {largest} bytes and batman-adv's 32: 1532 for 1500)",
                g.name,
                b.port_mtu,
                largest + 32
            );
        }
        for p in &b.ports {
            if !nic_names.contains(p) {
                bail!(
                    "topology {t}: guest {}'s batman-adv names NIC {p:?}, which it does not have",
                    g.name
                );
            }
            if !taken.insert(p.clone()) {
                bail!("topology {t}: guest {}'s NIC {p:?} is a port twice", g.name);
            }
        }
        devices.insert(BATMAN_IF.to_string());
    }
    for br in &g.bridges {
        check_name(&format!("topology {t}: guest {} bridge", g.name), &br.name)?;
        if devices.contains(&br.name) {
            bail!(
                "topology {t}: guest {}'s bridge {:?} has a NIC's name",
                g.name,
                br.name
            );
        }
        for p in &br.ports {
            if !devices.contains(p) {
                bail!(
                    "topology {t}: guest {}'s bridge {} names {p:?}, which it does not have",
                    g.name,
                    br.name
                );
            }
            if !taken.insert(p.clone()) {
                bail!("topology {t}: guest {}'s {p:?} is a port twice", g.name);
            }
        }
        devices.insert(br.name.clone());
    }
    Ok(())
}

impl Topology {
    /// The topology with every link's MTU `mtu` bytes (`--mtu`): the
    /// link's taps and veths on this machine and the guest NICs on it;
    /// a link that carries more than 1500 bytes (a batman-adv mesh link,
    /// 1532) keeps that much on top, and so do its batman-adv ports.
    pub fn with_mtu(mut self, mtu: u32) -> Topology {
        for link in &mut self.links {
            let on_top = link.mtu.map_or(0, |m| m.saturating_sub(1500));
            let link_mtu = mtu + on_top;
            link.mtu = Some(link_mtu);
            for port in &link.ports {
                let Port::Nic { guest, nic } = port else {
                    continue;
                };
                let Some(g) = self.guests.iter_mut().find(|g| &g.name == guest) else {
                    continue;
                };
                if let Some(b) = g.batman.as_mut().filter(|b| b.ports.contains(nic)) {
                    b.port_mtu = link_mtu;
                }
                if let Some(n) = g.nics.iter_mut().find(|n| &n.name == nic) {
                    n.mtu = Some(link_mtu);
                }
            }
        }
        self
    }

    /// The guest called `name`.
    pub fn guest(&self, name: &str) -> Option<&Guest> {
        self.guests.iter().find(|g| g.name == name)
    }

    /// The endpoint called `name`.
    pub fn endpoint(&self, name: &str) -> Option<&Endpoint> {
        self.endpoints.iter().find(|e| e.name == name)
    }

    /// Checks it is a network the lab can make: safe, unique names and
    /// MACs; every port names a guest NIC or an endpoint that exists;
    /// every NIC and endpoint on exactly one link; the measured guest,
    /// counted and GRO NICs exist. Errors name the topology and the part.
    pub fn check(&self) -> Result<()> {
        let t = &self.name;
        for (what, names) in [
            (
                "guest",
                self.guests.iter().map(|g| &g.name).collect::<Vec<_>>(),
            ),
            ("endpoint", self.endpoints.iter().map(|e| &e.name).collect()),
            ("link", self.links.iter().map(|l| &l.name).collect()),
        ] {
            let mut seen = BTreeSet::new();
            for name in names {
                check_name(&format!("topology {t}: {what}"), name)?;
                if !seen.insert(name) {
                    bail!("topology {t}: two {what}s are called {name:?}");
                }
            }
        }
        let mut macs = BTreeSet::new();
        let mut on_links: Vec<Port> = Vec::new();
        for g in &self.guests {
            let mut nic_names = BTreeSet::new();
            for n in &g.nics {
                check_name(&format!("topology {t}: guest {} NIC", g.name), &n.name)?;
                let kernel_name = n.name == "lo"
                    || n.name.starts_with("eth") && n.name[3..].bytes().all(|b| b.is_ascii_digit());
                if kernel_name {
                    bail!("topology {t}: guest {} NIC {:?}: the kernel names its NICs so; pick another", g.name, n.name);
                }
                if !nic_names.insert(n.name.clone()) {
                    bail!("topology {t}: guest {} has two NICs {:?}", g.name, n.name);
                }
                if !macs.insert(n.mac) {
                    bail!("topology {t}: MAC {} is given twice", n.mac);
                }
            }
            check_mesh(t.name(), g, &nic_names)?;
            if g.ruleset.is_some() {
                for zone in ["lan", "wan"] {
                    let v4 = g
                        .nics
                        .iter()
                        .find(|n| n.name == zone)
                        .is_some_and(|n| n.addresses.iter().any(|a| a.addr.is_ipv4()));
                    if !v4 {
                        bail!(
                            "topology {t}: guest {} loads a ruleset of zones lan and wan, but has no NIC {zone:?} with an IPv4 address",
                            g.name
                        );
                    }
                }
            }
            for nic in g.counted.iter().chain(&g.gro) {
                // `lo`: a guest that forwards nothing (a workload on its
                // own loopback) counts and switches its loopback.
                if nic != "lo" && !nic_names.contains(nic) {
                    bail!(
                        "topology {t}: guest {} has no NIC {nic:?} to count or switch GRO on",
                        g.name
                    );
                }
            }
        }
        if self.guest(&self.measured).is_none() {
            bail!(
                "topology {t}: the measured guest {:?} is not one of its guests",
                self.measured
            );
        }
        for l in &self.links {
            if l.ports.len() < 2 {
                bail!("topology {t}: link {} joins fewer than two ports", l.name);
            }
            for p in &l.ports {
                let exists = match p {
                    Port::Nic { guest, nic } => self
                        .guest(guest)
                        .is_some_and(|g| g.nics.iter().any(|n| n.name == *nic)),
                    Port::Endpoint(e) => self.endpoint(e).is_some(),
                };
                if !exists {
                    bail!(
                        "topology {t}: link {} names {}, which it does not have",
                        l.name,
                        p.describe()
                    );
                }
                if on_links.contains(p) {
                    bail!("topology {t}: {} is on two links", p.describe());
                }
                on_links.push(p.clone());
            }
        }
        let every_port = self
            .guests
            .iter()
            .flat_map(|g| {
                g.nics.iter().map(|n| Port::Nic {
                    guest: g.name.clone(),
                    nic: n.name.clone(),
                })
            })
            .chain(
                self.endpoints
                    .iter()
                    .map(|e| Port::Endpoint(e.name.clone())),
            );
        for p in every_port {
            if !on_links.contains(&p) {
                bail!("topology {t}: {} is on no link", p.describe());
            }
        }
        Ok(())
    }

    /// Its network in one line per link, for the printed plan: `lan:
    /// endpoint lan 192.168.1.2/24 — router.lan 192.168.1.1/24`.
    pub fn describe(&self) -> Vec<String> {
        let address = |p: &Port| -> String {
            let a: Vec<String> = match p {
                Port::Nic { guest, nic } => self
                    .guest(guest)
                    .and_then(|g| g.nics.iter().find(|n| n.name == *nic))
                    .map(|n| n.addresses.iter().map(Cidr::to_string).collect())
                    .unwrap_or_default(),
                Port::Endpoint(e) => self
                    .endpoint(e)
                    .map(|e| vec![e.address.to_string()])
                    .unwrap_or_default(),
            };
            format!("{} {}", p.describe(), a.join(" "))
                .trim_end()
                .to_string()
        };
        let links = self.links.iter().map(|l| {
            let ports: Vec<String> = l.ports.iter().map(address).collect();
            let mtu = l.mtu.map_or(String::new(), |m| format!(" (MTU {m})"));
            format!("{}{mtu}: {}", l.name, ports.join(" — "))
        });
        // Inside the guests: batman-adv and the bridges.
        let inside = self.guests.iter().filter_map(|g| {
            let mut parts: Vec<String> = g
                .batman
                .iter()
                .map(|b| {
                    format!(
                        "{BATMAN_IF} = batman-adv over {} (MTU {})",
                        b.ports.join(" + "),
                        b.port_mtu
                    )
                })
                .collect();
            parts.extend(g.bridges.iter().map(|br| {
                let a: Vec<String> = br.addresses.iter().map(Cidr::to_string).collect();
                format!("{} = {} {}", br.name, br.ports.join(" + "), a.join(" "))
                    .trim_end()
                    .to_string()
            }));
            (!parts.is_empty()).then(|| format!("{}: {}", g.name, parts.join("; ")))
        });
        links.chain(inside).collect()
    }
}
