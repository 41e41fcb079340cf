//! The words of a lab run's condition: a direction with GRO on or off
//! (the QEMU lab), or a benchmark over loopback (the host lab), as a
//! metric's `kind` and `item` and as the report's titles.

use crate::results::lab::{Benchmark, Condition, Direction, LOOPBACK};

pub use crate::results::lab::gro::Gro;

/// `LAN to WAN` / `WAN to LAN`, the seed's words.
pub fn direction_title(direction: Direction) -> &'static str {
    match direction {
        Direction::LanToWan => "LAN to WAN",
        Direction::WanToLan => "WAN to LAN",
    }
}

/// A condition as a metric's `kind`: the GRO setting (`gro-on`), the
/// benchmark's setting (`clients-2`, `tcp`).
pub fn condition_kind(c: Condition) -> String {
    match c {
        Condition::Forward { gro, .. } => gro.kind().to_string(),
        Condition::Bench { bench } => bench.kind(),
    }
}

/// [`condition_kind`] in words: `GRO on`, `2 clients`, `iperf3, 1 TCP
/// stream`.
pub fn condition_kind_title(c: Condition) -> String {
    match c {
        Condition::Forward { gro, .. } => gro.title().to_string(),
        Condition::Bench {
            bench: Benchmark::Tbench { clients },
        } => format!("{clients} client{}", if clients == 1 { "" } else { "s" }),
        Condition::Bench { bench } => bench.title(),
    }
}

/// A condition as a metric's `item`: the direction (`lan-to-wan`), or
/// `loopback`.
pub fn condition_item(c: Condition) -> &'static str {
    match c {
        Condition::Forward { direction, .. } => direction.name(),
        Condition::Bench { .. } => LOOPBACK,
    }
}

/// [`condition_item`] in words: `LAN to WAN`, `loopback`.
pub fn condition_item_title(c: Condition) -> &'static str {
    match c {
        Condition::Forward { direction, .. } => direction_title(direction),
        Condition::Bench { .. } => LOOPBACK,
    }
}
