//! The QEMU lab's network by name ([`TopologyName`]), as `lab.json` records
//! it in `topology` (the lab's) and in an arm's `topology` (the mesh's
//! reference arm). The lab builds each one (`lab/topology/`); the
//! report reads which one ran (the mesh adds its per-run table).

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A lab network by name, written as the name (`"nat-router"`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum TopologyName {
    /// `nat-router`: one router between a LAN and a WAN, masquerading out
    /// of its WAN; the lab's default.
    NatRouter,
    /// `loopback`: one guest without a NIC; tbench runs over its own
    /// loopback.
    Loopback,
    /// `mesh`: routers in a chain over batman-adv (`--topology mesh`),
    /// which adds the reference arm on [`TopologyName::MeshBridged`].
    Mesh,
    /// `mesh-bridged`: the mesh's routers bridged without batman-adv,
    /// the mesh's reference arm.
    MeshBridged,
    /// A name this xtask does not know: read from a newer `lab.json` as
    /// written, or asked for (`--topology ring`), which the lab refuses
    /// naming [`TopologyName::KNOWN`].
    Other(String),
}

impl TopologyName {
    /// The topologies the lab builds, in the order it lists them.
    pub const KNOWN: [TopologyName; 4] = [
        TopologyName::NatRouter,
        TopologyName::Loopback,
        TopologyName::Mesh,
        TopologyName::MeshBridged,
    ];

    /// Its name, as `lab.json` and `--topology` spell it.
    pub fn name(&self) -> &str {
        match self {
            TopologyName::NatRouter => "nat-router",
            TopologyName::Loopback => "loopback",
            TopologyName::Mesh => "mesh",
            TopologyName::MeshBridged => "mesh-bridged",
            TopologyName::Other(name) => name,
        }
    }

    /// The topology called `name`; [`TopologyName::Other`] for a name this
    /// xtask does not know.
    pub fn named(name: &str) -> TopologyName {
        TopologyName::KNOWN
            .into_iter()
            .find(|t| t.name() == name)
            .unwrap_or_else(|| TopologyName::Other(name.to_string()))
    }

    /// Whether the lab builds it (not [`TopologyName::Other`]).
    pub fn is_known(&self) -> bool {
        !matches!(self, TopologyName::Other(_))
    }

    /// The known names, comma-separated: `nat-router, loopback, …`.
    pub fn known_names() -> String {
        TopologyName::KNOWN.map(|t| t.name().to_string()).join(", ")
    }
}

impl From<&str> for TopologyName {
    fn from(name: &str) -> TopologyName {
        TopologyName::named(name)
    }
}

impl fmt::Display for TopologyName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for TopologyName {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for TopologyName {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<TopologyName, D::Error> {
        Ok(TopologyName::named(&String::deserialize(d)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_topology_reads_and_writes_as_its_name_an_unknown_one_as_written() {
        for t in TopologyName::KNOWN {
            let json = serde_json::to_string(&t).unwrap();
            assert_eq!(json, format!("\"{}\"", t.name()));
            assert_eq!(serde_json::from_str::<TopologyName>(&json).unwrap(), t);
        }
        let ring: TopologyName = serde_json::from_str("\"ring\"").unwrap();
        assert_eq!(ring, TopologyName::Other("ring".to_string()));
        assert!(!ring.is_known());
        assert_eq!(serde_json::to_string(&ring).unwrap(), "\"ring\"");
        assert_eq!(
            TopologyName::from("mesh-bridged"),
            TopologyName::MeshBridged
        );
        assert_eq!(
            TopologyName::known_names(),
            "nat-router, loopback, mesh, mesh-bridged"
        );
    }
}
