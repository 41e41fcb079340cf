//! Why [`super::LabRequest::check`] refuses a request: a [`Problem`]
//! naming the request's [`Field`], worded for the command line by its
//! `Display` and for an experiment file by [`Problem::words`] with
//! [`Words::Keys`].

use super::option::Count;
pub use super::option::Field;

/// Whose words a [`Problem`] is put in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Words {
    /// The command line's flags (`--set-mss`).
    Flags,
    /// An experiment file's `[lab]` keys (`mss`).
    Keys,
}

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
        topology: crate::results::lab::TopologyName,
    },
    /// A whole-number option outside its [`super::option::Count`] range.
    OutOfRange(Field, u32),
    /// Two options that contradict each other (`--set-mss` with `--udp`:
    /// the MSS is TCP's): the first given, the second.
    Conflict(Field, Field),

    /// The workload needs places the topology does not have.
    MissingPlaces {
        /// The workload in words.
        workload: String,
        /// The places missing, described (`endpoint far`).
        missing: Vec<String>,
        /// The topology.
        topology: crate::results::lab::TopologyName,
        /// Its endpoints.
        endpoints: Vec<String>,
        /// Its guests.
        guests: Vec<String>,
    },
    /// A workload the QEMU lab does not run on this topology yet.
    NotRunnable {
        /// The topology.
        topology: crate::results::lab::TopologyName,
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
            | Problem::OutOfRange(f, _)
            | Problem::Conflict(f, _) => *f,
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

impl Problem {
    /// The problem in `words`, naming the option and the fix.
    pub fn words(&self, words: Words) -> String {
        let name = |field: Field| match words {
            Words::Flags => field.flag(),
            Words::Keys => field.key(),
        };
        match self {
            Problem::QemuOnly(field) => format!(
                "{} is for the QEMU lab: a real router over SSH is the lab file's network and its own hardware (use --lab qemu)",
                name(*field)
            ),
            Problem::NeedsLabFile => {
                "--lab ssh needs --lab-file FILE (the router's interfaces, the endpoints, the images)"
                    .to_string()
            }
            Problem::Topology(_, why) => why.clone(),
            Problem::OutOfRange(field, value) => {
                let Count { min, max, limit, .. } = field.count().unwrap_or(Count {
                    min: 0,
                    max: 0,
                    default: None,
                    unit: "",
                    limit: "",
                });
                match words {
                    Words::Flags => {
                        format!("{} {value}: use {min} to {max} ({limit})", name(*field))
                    }
                    Words::Keys => {
                        format!("{} = {value} — use {min} to {max} ({limit})", name(*field))
                    }
                }
            }
            Problem::Conflict(field, other) => format!(
                "{} and {} contradict each other ({}): leave out one of them",
                name(*field),
                name(*other),
                match (field, other) {
                    (Field::Mss, Field::Udp) | (Field::Udp, Field::Mss) =>
                        "the MSS is TCP's, and UDP is sent instead",
                    _ => "one of them decides what the other would",
                }
            ),
            Problem::ForwardingOnly(field) => format!(
                "{} is for forwarding through the router; --topology loopback runs tbench inside the guest, which has no NIC",
                name(*field)
            ),
            Problem::TbenchOnly(field) => format!(
                "{} is for --lab host and --topology loopback (tbench)",
                name(*field)
            ),
            Problem::ForwardsNothing { topology } => format!(
                "--cache-model counts per forwarded packet; the {topology} topology forwards nothing (drop --cache-model or use --topology nat-router)"
            ),
            Problem::MissingPlaces { .. } => self.missing_places().unwrap_or_default(),
            Problem::NotRunnable { topology, workload } => format!(
                "the QEMU lab does not run {workload} on topology {topology} yet: it runs iperf3 lan → wan on nat-router, lan → far on mesh and mesh-bridged, and tbench in loopback's guest"
            ),
        }
    }
}

impl std::fmt::Display for Problem {
    /// The command line's wording ([`Words::Flags`]).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.words(Words::Flags))
    }
}

impl std::error::Error for Problem {}
