//! The QEMU lab's network by name ([`Topology`]), as `lab.json` records
//! it in `topology` (the lab's) and in an arm's `topology` (the mesh's
//! reference arm). The lab builds each one (`lab/topology/`); the
//! report reads which one ran (the mesh adds its per-run table).

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A lab network by name, written as the name (`"nat-router"`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Topology {
    /// `nat-router`: one router between a LAN and a WAN, masquerading out
    /// of its WAN; the lab's default.
    NatRouter,
    /// `loopback`: one guest without a NIC; tbench runs over its own
    /// loopback.
    Loopback,
    /// `mesh`: routers in a chain over batman-adv (`--topology mesh`),
    /// which adds the reference arm on [`Topology::MeshBridged`].
    Mesh,
    /// `mesh-bridged`: the mesh's routers bridged without batman-adv,
    /// the mesh's reference arm.
    MeshBridged,
    /// A name this xtask does not know: read from a newer `lab.json` as
    /// written, or asked for (`--topology ring`), which the lab refuses
    /// naming [`Topology::KNOWN`].
    Other(String),
}

impl Topology {
    /// The topologies the lab builds, in the order it lists them.
    pub const KNOWN: [Topology; 4] = [
        Topology::NatRouter,
        Topology::Loopback,
        Topology::Mesh,
        Topology::MeshBridged,
    ];

    /// Its name, as `lab.json` and `--topology` spell it.
    pub fn name(&self) -> &str {
        match self {
            Topology::NatRouter => "nat-router",
            Topology::Loopback => "loopback",
            Topology::Mesh => "mesh",
            Topology::MeshBridged => "mesh-bridged",
            Topology::Other(name) => name,
        }
    }

    /// The topology called `name`; [`Topology::Other`] for a name this
    /// xtask does not know.
    pub fn named(name: &str) -> Topology {
        Topology::KNOWN
            .into_iter()
            .find(|t| t.name() == name)
            .unwrap_or_else(|| Topology::Other(name.to_string()))
    }

    /// Whether the lab builds it (not [`Topology::Other`]).
    pub fn is_known(&self) -> bool {
        !matches!(self, Topology::Other(_))
    }

    /// The known names, comma-separated: `nat-router, loopback, …`.
    pub fn known_names() -> String {
        Topology::KNOWN.map(|t| t.name().to_string()).join(", ")
    }
}

impl From<&str> for Topology {
    fn from(name: &str) -> Topology {
        Topology::named(name)
    }
}

impl fmt::Display for Topology {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for Topology {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for Topology {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Topology, D::Error> {
        Ok(Topology::named(&String::deserialize(d)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_topology_reads_and_writes_as_its_name_an_unknown_one_as_written() {
        for t in Topology::KNOWN {
            let json = serde_json::to_string(&t).unwrap();
            assert_eq!(json, format!("\"{}\"", t.name()));
            assert_eq!(serde_json::from_str::<Topology>(&json).unwrap(), t);
        }
        let ring: Topology = serde_json::from_str("\"ring\"").unwrap();
        assert_eq!(ring, Topology::Other("ring".to_string()));
        assert!(!ring.is_known());
        assert_eq!(serde_json::to_string(&ring).unwrap(), "\"ring\"");
        assert_eq!(Topology::from("mesh-bridged"), Topology::MeshBridged);
        assert_eq!(
            Topology::known_names(),
            "nat-router, loopback, mesh, mesh-bridged"
        );
    }
}
