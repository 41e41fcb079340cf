//! The GRO setting of a forwarding run, shared by the lab (which switches
//! it with ethtool) and the report (which titles and keys metrics by it).

/// GRO on the router's forwarding interfaces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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

impl Gro {
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
