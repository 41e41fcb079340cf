//! The GRO setting of a forwarding run, shared by the lab (which switches
//! it with ethtool) and the report (which titles and keys metrics by it).
//! `lab.json` writes it as a boolean (`"gro": true`), as schema 1 did.

use serde::{Deserialize, Serialize};

/// GRO on the router's forwarding interfaces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "bool", into = "bool")]
pub enum Gro {
    /// GRO on (the kernel's default).
    On,
    /// GRO off.
    Off,
}

impl From<bool> for Gro {
    /// `lab.json`'s `gro: true` is [`Gro::On`].
    fn from(on: bool) -> Gro {
        if on {
            Gro::On
        } else {
            Gro::Off
        }
    }
}

impl From<Gro> for bool {
    /// [`Gro::On`] is `lab.json`'s `gro: true`.
    fn from(gro: Gro) -> bool {
        gro.is_on()
    }
}

impl Gro {
    /// Both, on first: the order the lab measures them in.
    pub const BOTH: [Gro; 2] = [Gro::On, Gro::Off];

    /// Whether GRO is on, as `lab.json` records it (`gro: true`).
    pub fn is_on(self) -> bool {
        self == Gro::On
    }

    /// `on` or `off`, as ethtool spells it.
    pub fn word(self) -> &'static str {
        match self {
            Gro::On => "on",
            Gro::Off => "off",
        }
    }

    /// `gro-on` / `gro-off`: a lab metric's `kind`.
    pub fn kind(self) -> &'static str {
        match self {
            Gro::On => "gro-on",
            Gro::Off => "gro-off",
        }
    }

    /// `GRO on` / `GRO off`.
    pub fn title(self) -> &'static str {
        match self {
            Gro::On => "GRO on",
            Gro::Off => "GRO off",
        }
    }
}
