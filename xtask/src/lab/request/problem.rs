//! Why [`super::LabRequest::check`] refuses a request: a [`Problem`]
//! naming the request's [`Field`], worded for the command line by its
//! `Display` (an experiment file words it with its keys). The fields are
//! declared here, the problems' vocabulary, so that this file does not
//! import the request.

/// Why [`super::LabRequest::check`] refuses a request, naming the field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// The field boots or shapes QEMU guests; the request's machine is a
    /// real router over SSH.
    QemuOnly(Field),
    /// A real router over SSH without its lab file.
    NeedsLabFile,
    /// An unknown topology, or `--routers` off the mesh: the registry's
    /// message ([`crate::lab::topology::named_with`]).
    Topology(Field, String),
    /// A forwarding option (GRO, directions, NIC, iperf3's) on tbench,
    /// which runs inside one guest.
    ForwardingOnly(Field),
    /// tbench's option on iperf3.
    TbenchOnly(Field),
    /// The cache model, which counts per forwarded packet, on a workload
    /// that forwards nothing (tbench on `topology`).
    ForwardsNothing {
        /// The topology.
        topology: crate::results::lab::Topology,
    },
    /// An iperf3 option out of range or contradicting another:
    /// [`crate::results::lab::IperfOptions::check`]'s message, in flags.
    Iperf(Field, String),
    /// The workload needs places the topology does not have.
    MissingPlaces {
        /// The workload in words.
        workload: String,
        /// The places missing, described (`endpoint far`).
        missing: Vec<String>,
        /// The topology.
        topology: crate::results::lab::Topology,
        /// Its endpoints.
        endpoints: Vec<String>,
        /// Its guests.
        guests: Vec<String>,
    },
    /// A workload the QEMU lab does not run on this topology yet.
    NotRunnable {
        /// The topology.
        topology: crate::results::lab::Topology,
        /// The workload in words.
        workload: String,
    },
}

impl Problem {
    /// The field it is about.
    pub fn field(&self) -> Field {
        match self {
            Problem::QemuOnly(f)
            | Problem::Topology(f, _)
            | Problem::ForwardingOnly(f)
            | Problem::TbenchOnly(f)
            | Problem::Iperf(f, _) => *f,
            Problem::NeedsLabFile => Field::LabFile,
            Problem::ForwardsNothing { .. } => Field::CacheModel,
            Problem::MissingPlaces { .. } | Problem::NotRunnable { .. } => Field::Workload,
        }
    }

    /// `the workload (…) needs …, which topology T does not have
    /// (endpoints: …; guests: …)`: the same in every front end.
    pub fn missing_places(&self) -> Option<String> {
        let Problem::MissingPlaces {
            workload,
            missing,
            topology,
            endpoints,
            guests,
        } = self
        else {
            return None;
        };
        let list = |l: &[String]| {
            if l.is_empty() {
                "none".to_string()
            } else {
                l.join(", ")
            }
        };
        Some(format!(
            "the workload ({workload}) needs {}, which topology {topology} does not have (endpoints: {}; guests: {})",
            missing.join(", "),
            list(endpoints),
            list(guests)
        ))
    }
}

impl std::fmt::Display for Problem {
    /// The command line's wording, naming the flag and the fix.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Problem::QemuOnly(field) => write!(
                f,
                "{} is for the QEMU lab: a real router over SSH is the lab file's network and its own hardware (use --lab qemu)",
                field.flag()
            ),
            Problem::NeedsLabFile => write!(
                f,
                "--lab ssh needs --lab-file FILE (the router's interfaces, the endpoints, the images)"
            ),
            Problem::Topology(_, why) | Problem::Iperf(_, why) => write!(f, "{why}"),
            Problem::ForwardingOnly(field) => write!(
                f,
                "{} is for forwarding through the router; --topology loopback runs tbench inside the guest, which has no NIC",
                field.flag()
            ),
            Problem::TbenchOnly(field) => write!(
                f,
                "{} is for --lab host and --topology loopback (tbench)",
                field.flag()
            ),
            Problem::ForwardsNothing { topology } => write!(
                f,
                "--cache-model counts per forwarded packet; the {topology} topology forwards nothing (drop --cache-model or use --topology nat-router)"
            ),
            Problem::MissingPlaces { .. } => {
                write!(f, "{}", self.missing_places().unwrap_or_default())
            }
            Problem::NotRunnable { topology, workload } => write!(
                f,
                "the QEMU lab does not run {workload} on topology {topology} yet: it runs iperf3 lan → wan on nat-router, lan → far on mesh and mesh-bridged, and tbench in loopback's guest"
            ),
        }
    }
}

impl std::error::Error for Problem {}

/// A field of [`super::LabRequest`] a [`Problem`] is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    /// [`super::LabRequest::topology`].
    Topology,
    /// [`super::LabRequest::routers`].
    Routers,
    /// [`super::LabRequest::workload`].
    Workload,
    /// [`super::LabRequest::gro`].
    Gro,
    /// [`super::LabRequest::direction`].
    Direction,
    /// [`super::LabRequest::nic`].
    Nic,
    /// [`crate::results::lab::IperfOptions::parallel`].
    Parallel,
    /// [`crate::results::lab::IperfOptions::mss`].
    Mss,
    /// [`crate::results::lab::IperfOptions::udp_mbit`].
    Udp,
    /// [`super::LabRequest::tbench_clients`].
    Clients,
    /// [`super::LabRequest::cache_model`].
    CacheModel,
    /// [`super::LabRequest::build_only`].
    BuildOnly,
    /// [`super::LabRequest::openwrt`].
    Openwrt,
    /// [`super::LabRequest::cpus`].
    Cpus,
    /// [`super::LabRequest::packet_steering`].
    PacketSteering,
    /// [`super::Machine::Ssh`]'s lab file.
    LabFile,
}

impl Field {
    /// The command line's flag: `--gro`.
    pub fn flag(self) -> &'static str {
        match self {
            Field::Topology | Field::Workload => "--topology",
            Field::Routers => "--routers",
            Field::Gro => "--gro",
            Field::Direction => "--direction",
            Field::Nic => "--nic",
            Field::Parallel => "--parallel",
            Field::Mss => "--set-mss",
            Field::Udp => "--udp",
            Field::Clients => "--clients",
            Field::CacheModel => "--cache-model",
            Field::BuildOnly => "--build-only",
            Field::Openwrt => "--openwrt",
            Field::Cpus => "--cpus",
            Field::PacketSteering => "--packet-steering",
            Field::LabFile => "--lab-file",
        }
    }
}
