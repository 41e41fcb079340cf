//! Every option of the lab, defined once ([`OPTIONS`]): its flag, its
//! experiment-file key, where `lab.json` records it, its help, which labs
//! and which workload take it, and for a whole-number option its range
//! and default ([`Count`]). The command line's flags (`cli/lab_options.rs`),
//! an experiment file's `[lab]` keys, [`crate::lab::LabRequest::check`], the
//! key hints of an experiment file and the book's `[lab]` reference read
//! this table; the resume check and the record compare and write the
//! request's settings, where each count lands by `LabRequest::count`.
//!
//! A new whole-number option: a [`Field`], its [`LabOption`] here, and its
//! use where the lab resolves the request (`LabRequest::count` gives
//! it; `lab.json` records it in `settings.options` under its key).

use std::collections::BTreeMap;

/// Measured runs per condition when a request does not say (`lab --runs`).
pub const DEFAULT_RUNS: u32 = 5;
/// Seconds per run when a request does not say (`lab --duration`).
pub const DEFAULT_DURATION_SECONDS: u32 = 10;

/// tbench's clients when `--clients` does not say: the host lab's
/// default too.
pub const DEFAULT_CLIENTS: u32 = 2;
/// The most tbench clients a run may start (each is a process pair in a
/// guest of 256 MB).
pub const MAX_CLIENTS: u32 = 64;

/// A field of [`crate::lab::LabRequest`] an option sets or a [`crate::lab::Problem`] is
/// about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Field {
    /// [`crate::lab::LabRequest::runs`].
    Runs,
    /// [`crate::lab::LabRequest::duration_seconds`].
    Duration,
    /// [`crate::lab::LabRequest::topology`].
    Topology,
    /// [`crate::lab::LabRequest::routers`].
    Routers,
    /// [`crate::lab::LabRequest::workload`].
    Workload,
    /// [`crate::lab::LabRequest::gro`].
    Gro,
    /// [`crate::lab::LabRequest::direction`].
    Direction,
    /// [`crate::lab::LabRequest::nic`].
    Nic,
    /// [`crate::results::lab::IperfOptions::parallel`].
    Parallel,
    /// [`crate::results::lab::IperfOptions::mss`].
    Mss,
    /// [`crate::results::lab::IperfOptions::udp_mbit`].
    Udp,
    /// [`crate::lab::LabRequest::tbench_clients`].
    Clients,
    /// [`crate::lab::LabRequest::cache_model`].
    CacheModel,
    /// [`crate::lab::LabRequest::control`] (`--no-control`).
    Control,
    /// [`crate::lab::LabRequest::build_only`].
    BuildOnly,
    /// [`crate::lab::LabRequest::openwrt`].
    Openwrt,
    /// [`crate::lab::LabRequest::cpus`].
    Cpus,
    /// [`crate::lab::LabRequest::packet_steering`].
    PacketSteering,
    /// [`crate::lab::LabRequest::resume`].
    Resume,
    /// [`crate::lab::Machine::Ssh`]'s lab file.
    LabFile,
    /// [`crate::lab::Machine::Ssh`]'s `--no-flash`.
    NoFlash,
    /// The MTU of the lab's links (`--mtu`).
    Mtu,
}

/// Which labs take an option.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Labs {
    /// The QEMU lab (`--lab qemu`).
    pub qemu: bool,
    /// A real router (`--lab ssh://…`).
    pub ssh: bool,
    /// This machine's kernel (`--lab host`).
    pub host: bool,
    /// The core model's known answers (`--known-answers`).
    pub known_answers: bool,
}

/// The QEMU lab only.
const QEMU: Labs = Labs {
    qemu: true,
    ssh: false,
    host: false,
    known_answers: false,
};
/// The forwarding labs, QEMU and SSH.
const FORWARDING: Labs = Labs { ssh: true, ..QEMU };
/// The SSH lab only.
const SSH: Labs = Labs {
    qemu: false,
    ..FORWARDING
};

impl Labs {
    /// The labs in words, for a refusal: `the QEMU lab`, `the forwarding
    /// lab (QEMU or SSH)`.
    pub fn describe(self) -> &'static str {
        match (self.qemu, self.ssh, self.host) {
            (true, true, true) => "the QEMU, SSH and host labs",
            (true, true, false) => "the forwarding lab (QEMU or SSH)",
            (true, false, true) => "the QEMU lab and --lab host",
            (true, false, false) => "the QEMU lab",
            (false, true, _) => "the SSH lab",
            (false, false, true) => "--lab host",
            (false, false, false) => "no lab",
        }
    }
}

/// Which workload an option shapes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shapes {
    /// Any workload.
    Any,
    /// Forwarding through routers (iperf3 between endpoints): refused on
    /// tbench, which runs inside one guest with no NIC.
    Forwarding,
    /// tbench: refused on iperf3.
    Tbench,
}

/// A whole-number option's values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Count {
    /// The smallest value.
    pub min: u32,
    /// The largest value.
    pub max: u32,
    /// The value when the option is not given, if the request has one.
    pub default: Option<u32>,
    /// What one unit is, for hints: `rounds`, `bytes`.
    pub unit: &'static str,
    /// Where the range comes from, for a refusal.
    pub limit: &'static str,
}

/// One lab option (see the module docs).
#[derive(Debug, Clone, Copy)]
pub struct LabOption {
    /// The field it sets.
    pub field: Field,
    /// The long flag without `--` (`set-mss`).
    pub flag: &'static str,
    /// The short flag, if any.
    pub short: Option<char>,
    /// The experiment file's `[lab]` key, if an experiment can set it.
    pub key: Option<&'static str>,
    /// Where `lab.json` records it, as a JSON pointer (`/settings/iperf3/mss`);
    /// empty for an option recorded only through what it changes (the
    /// mesh's routers are its boots) or not at all (`--build-only`).
    pub record: &'static str,
    /// The flag's value in `--help` (`BYTES`).
    pub value_name: &'static str,
    /// What it does, for `--help` and the book.
    pub help: &'static str,
    /// A whole-number option's range and default; `None` for the others
    /// (a switch or a name), whose flags `cli/lab.rs` declares.
    pub count: Option<Count>,
    /// The labs that take it.
    pub labs: Labs,
    /// The workload it shapes.
    pub shapes: Shapes,
}

/// Every lab option, in `--help`'s order.
pub const OPTIONS: &[LabOption] = &[
    LabOption {
        field: Field::Runs,
        flag: "runs",
        short: None,
        key: Some("runs"),
        record: "/settings/runs",
        value_name: "N",
        help: "Measured runs per (variant, direction, GRO setting) or (variant, benchmark): the rounds",
        count: Some(Count {
            min: 1,
            max: 1000,
            default: Some(DEFAULT_RUNS),
            unit: "rounds",
            limit: "the workbench's limit",
        }),
        labs: Labs {
            host: true,
            ..FORWARDING
        },
        shapes: Shapes::Any,
    },
    LabOption {
        field: Field::Duration,
        flag: "duration",
        short: None,
        key: Some("duration"),
        record: "/settings/duration_seconds",
        value_name: "SECONDS",
        help: "Seconds per run (iperf3, tbench), at most an hour",
        count: Some(Count {
            min: 1,
            max: 3600,
            default: Some(DEFAULT_DURATION_SECONDS),
            unit: "seconds per run",
            limit: "at most an hour",
        }),
        labs: Labs {
            host: true,
            ..FORWARDING
        },
        shapes: Shapes::Any,
    },
    LabOption {
        field: Field::Clients,
        flag: "clients",
        short: None,
        key: Some("clients"),
        record: "/settings/benches",
        value_name: "N",
        help: "tbench's clients (--lab host and --topology loopback)",
        count: Some(Count {
            min: 1,
            max: MAX_CLIENTS,
            default: Some(DEFAULT_CLIENTS),
            unit: "tbench clients",
            limit: "each a process pair in a guest of 256 MB",
        }),
        labs: Labs {
            host: true,
            ..QEMU
        },
        shapes: Shapes::Tbench,
    },
    LabOption {
        field: Field::Parallel,
        flag: "parallel",
        short: Some('P'),
        key: Some("parallel"),
        record: "/settings/iperf3/parallel",
        value_name: "N",
        help: "iperf3's parallel TCP streams (iperf3 -P)",
        count: Some(Count {
            min: 1,
            max: crate::results::lab::iperf::MAX_PARALLEL,
            default: Some(1),
            unit: "iperf3 streams (-P)",
            limit: "MAX_STREAMS in iperf3's src/iperf.h",
        }),
        labs: FORWARDING,
        shapes: Shapes::Forwarding,
    },
    LabOption {
        field: Field::Mss,
        flag: "set-mss",
        short: Some('M'),
        key: Some("mss"),
        record: "/settings/iperf3/mss",
        value_name: "BYTES",
        help: "iperf3's TCP maximum segment size in bytes (iperf3 -M / --set-mss); the batman-adv experiment used -P 8 --set-mss 536",
        count: Some(Count {
            min: crate::results::lab::iperf::MIN_MSS,
            max: crate::results::lab::iperf::MAX_MSS,
            default: None,
            unit: "bytes (iperf3 -M)",
            limit: "Linux's TCP_MIN_MSS in include/net/tcp.h, iperf3's MAX_MSS in src/iperf.h",
        }),
        labs: FORWARDING,
        shapes: Shapes::Forwarding,
    },
    LabOption {
        field: Field::Udp,
        flag: "udp",
        short: None,
        key: Some("udp"),
        record: "/settings/iperf3/udp_mbit",
        value_name: "MBIT",
        help: "UDP instead of TCP, sent at this rate in Mbit/s per stream (iperf3 -u -b <MBIT>M); each run adds the datagrams lost, in percent. Not with --set-mss (a TCP option)",
        count: Some(Count {
            min: 1,
            max: crate::results::lab::iperf::MAX_UDP_MBIT,
            default: None,
            unit: "Mbit/s per stream (iperf3 -u -b)",
            limit: "10 Gbit/s, above any router port the workbench targets",
        }),
        labs: FORWARDING,
        shapes: Shapes::Forwarding,
    },
    LabOption {
        field: Field::Routers,
        flag: "routers",
        short: None,
        key: None,
        record: "",
        value_name: "N",
        help: "--topology mesh (and its reference, mesh-bridged): routers in the chain (default 2, as the batman-adv experiment had); the middle ones forward over two mesh links and have no LAN port",
        count: Some(Count {
            min: 2,
            max: 9,
            default: None,
            unit: "routers",
            limit: "the mesh topology's limit",
        }),
        labs: QEMU,
        shapes: Shapes::Forwarding,
    },
    LabOption {
        field: Field::Cpus,
        flag: "cpus",
        short: None,
        key: Some("cpus"),
        record: "/machine/qemu/smp",
        value_name: "N",
        help: "The machine's CPUs instead of the target's [lab] cpus. More than one runs without -icount, on QEMU's multi-threaded TCG, and the models count per CPU (docs/lab-multicore.md)",
        count: Some(Count {
            min: 1,
            max: crate::inputs::steering::MAX_CPUS,
            default: None,
            unit: "CPUs",
            limit: "the lab's limit",
        }),
        labs: Labs {
            known_answers: true,
            ..QEMU
        },
        shapes: Shapes::Any,
    },
    LabOption {
        field: Field::Mtu,
        flag: "mtu",
        short: None,
        key: Some("mtu"),
        record: "/settings/options/mtu",
        value_name: "BYTES",
        help: "The MTU of every link the topology makes, in bytes: this machine's taps and veths and the guests' NICs alike; batman-adv's mesh links carry its 32-byte header on top (at most 1500 on the mesh; pcnet NICs take at most 1500)",
        count: Some(Count {
            min: 576,
            max: 9000,
            default: None,
            unit: "bytes (the links' MTU)",
            limit: "576, the IPv4 datagram every host takes (RFC 791), under which TCP's segments no longer fit, to a 9000-byte jumbo frame; at most 1500 on the mesh, whose bat0 batman-adv caps at 1500",
        }),
        labs: QEMU,
        shapes: Shapes::Forwarding,
    },
    LabOption {
        field: Field::Gro,
        flag: "gro",
        short: None,
        key: Some("gro"),
        record: "/settings/gro",
        value_name: "on|off|both",
        help: "GRO settings to measure on the router's NICs (default both)",
        count: None,
        labs: FORWARDING,
        shapes: Shapes::Forwarding,
    },
    LabOption {
        field: Field::Direction,
        flag: "direction",
        short: None,
        key: Some("directions"),
        record: "/settings/directions",
        value_name: "lan-to-wan|wan-to-lan|both",
        help: "Directions to measure through the router (default both, LAN → WAN first)",
        count: None,
        labs: FORWARDING,
        shapes: Shapes::Forwarding,
    },
    LabOption {
        field: Field::Nic,
        flag: "nic",
        short: None,
        key: None,
        record: "/boots/0/qemu_argv",
        value_name: "MODEL",
        help: "Boot the guest with this NIC model instead of the target's [lab] nic, one of its [lab] other_nics (e.g. `--nic pcnet` on the Malta labs, whose driver never uses GRO, to compare with e1000)",
        count: None,
        labs: QEMU,
        shapes: Shapes::Forwarding,
    },
    LabOption {
        field: Field::Topology,
        flag: "topology",
        short: None,
        key: Some("topology"),
        record: "/topology",
        value_name: "nat-router|loopback|mesh|mesh-bridged",
        help: "The network (default nat-router)",
        count: None,
        labs: QEMU,
        shapes: Shapes::Any,
    },
    LabOption {
        field: Field::CacheModel,
        flag: "cache-model",
        short: None,
        key: Some("model"),
        record: "/cache_model",
        value_name: "",
        help: "Load the L1 cache model into every boot",
        count: None,
        labs: QEMU,
        shapes: Shapes::Forwarding,
    },
    LabOption {
        field: Field::Control,
        flag: "no-control",
        short: None,
        key: Some("control"),
        record: "/settings/control",
        value_name: "",
        help: "Leave out the A/A control",
        count: None,
        labs: Labs {
            host: true,
            ..FORWARDING
        },
        shapes: Shapes::Any,
    },
    LabOption {
        field: Field::BuildOnly,
        flag: "build-only",
        short: None,
        key: None,
        record: "",
        value_name: "",
        help: "Only build the lab kernels and the initramfs",
        count: None,
        labs: QEMU,
        shapes: Shapes::Any,
    },
    LabOption {
        field: Field::Openwrt,
        flag: "openwrt",
        short: None,
        key: None,
        record: "/arms/0/results_dir",
        value_name: "PATH",
        help: "Build the lab kernels as this OpenWrt checkout builds its target for the QEMU machine",
        count: None,
        labs: Labs {
            known_answers: true,
            ..QEMU
        },
        shapes: Shapes::Any,
    },
    LabOption {
        field: Field::PacketSteering,
        flag: "packet-steering",
        short: None,
        key: Some("packet_steering"),
        record: "/machine/qemu/steering",
        value_name: "openwrt|off|rps_cpus=MASK,…",
        help: "The router's packet steering instead of the target's [lab] packet_steering",
        count: None,
        labs: QEMU,
        shapes: Shapes::Any,
    },
    LabOption {
        field: Field::Resume,
        flag: "resume",
        short: None,
        key: None,
        record: "",
        value_name: "DIR",
        help: "Continue the lab that stopped in DIR",
        count: None,
        labs: FORWARDING,
        shapes: Shapes::Any,
    },
    LabOption {
        field: Field::LabFile,
        flag: "lab-file",
        short: None,
        key: None,
        record: "",
        value_name: "FILE",
        help: "The SSH lab's file",
        count: None,
        labs: SSH,
        shapes: Shapes::Any,
    },
    LabOption {
        field: Field::NoFlash,
        flag: "no-flash",
        short: None,
        key: None,
        record: "",
        value_name: "",
        help: "Measure the kernel the router runs now",
        count: None,
        labs: SSH,
        shapes: Shapes::Any,
    },
];

impl Field {
    /// Its option, if it is one (every field but [`Field::Workload`]).
    pub fn option(self) -> Option<&'static LabOption> {
        OPTIONS.iter().find(|o| o.field == self)
    }

    /// The command line's flag: `--gro`.
    pub fn flag(self) -> String {
        match self.option() {
            Some(o) => format!("--{}", o.flag),
            None => "--topology".to_string(),
        }
    }

    /// The experiment file's key: `mss`, or the flag for an option an
    /// experiment does not set (`workload` for [`Field::Workload`]).
    pub fn key(self) -> String {
        match self.option() {
            Some(LabOption { key: Some(k), .. }) => k.to_string(),
            Some(_) => self.flag(),
            None => "workload".to_string(),
        }
    }

    /// Its whole-number range, if it is a count.
    pub fn count(self) -> Option<Count> {
        self.option().and_then(|o| o.count)
    }
}

impl LabOption {
    /// What a whole-number option's key takes, for an experiment file's
    /// errors: `a whole number of bytes (iperf3 -M), 88 to 9216`; `None`
    /// for the others.
    pub fn takes(&self) -> Option<String> {
        let c = self.count?;
        let default = c
            .default
            .map_or(String::new(), |d| format!(" (default {d})"));
        Some(format!(
            "a whole number of {}, {} to {}{default}",
            c.unit, c.min, c.max
        ))
    }
}

/// The option of experiment-file key `key`.
pub fn by_key(key: &str) -> Option<&'static LabOption> {
    OPTIONS.iter().find(|o| o.key == Some(key))
}

/// The whole-number options set beyond the request's own fields, by key:
/// what `lab.json` records in `settings.options`.
pub type Extra = BTreeMap<String, u32>;
