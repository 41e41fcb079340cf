//! A workload: what each run does on a [`Testbed`], where, and what it
//! measures. The schedule ([`super::runner`]) decides when and under
//! which [`crate::results::lab::Condition`]; a workload turns one run of it
//! into a [`RunRecord`] with its metrics.
//!
//! * [`super::forwarding::Forwarding`]: iperf3 from one endpoint to
//!   another through the router, GRO switched per run, the router's
//!   counters around it (Mbit/s, ns/packet; the cache model's counts).
//! * [`super::host_lab::LoopbackBench`]: tbench or iperf3 inside one
//!   endpoint's namespace, over its loopback (the host lab).
//!
//! A workload names the places it needs ([`Workload::places`]): the
//! orchestrator checks them against the topology or the backend before
//! anything runs ([`check_places`]), so that a workload a topology
//! cannot host is an error up front. Adding one: a type implementing
//! [`Workload`] in a file of its own, the conditions it runs under, and
//! where a lab kind chooses it (`docs/lab-architecture.md`).

use std::path::Path;

use anyhow::{bail, Result};

use super::backend::Testbed;
use super::runner::RunSpec;
use crate::results::lab::RunRecord;

/// Where a workload runs a program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Place {
    /// In an endpoint's namespace on this machine (`lan`, `host`).
    Endpoint(String),
    /// Inside a guest, over its console (`router`).
    Guest(String),
}

impl Place {
    /// `endpoint lan`, `guest router`.
    pub fn describe(&self) -> String {
        match self {
            Place::Endpoint(e) => format!("endpoint {e}"),
            Place::Guest(g) => format!("guest {g}"),
        }
    }
}

/// What each run does (see the module docs); `Send`, as an experiment
/// runs its labs' plans on threads of their own.
pub trait Workload: Send {
    /// One line for the printed plan: `iperf3 from endpoint lan to
    /// endpoint wan through the router, GRO switched per run`.
    fn describe(&self) -> String;

    /// The endpoints and guests it runs programs in.
    fn places(&self) -> Vec<Place>;

    /// Runs `run` on `bed`, its raw output (reports, logs) kept in `dir`;
    /// the run's record with its metrics.
    fn run(&self, bed: &mut dyn Testbed, run: RunSpec<'_>, dir: &Path) -> Result<RunRecord>;
}

/// Fails naming every place of `workload` that is not among `endpoints`
/// and `guests` (what a topology or a backend offers, `what` in words).
pub fn check_places(
    workload: &dyn Workload,
    (endpoints, guests): (&[String], &[String]),
    what: &str,
) -> Result<()> {
    let missing = missing_places(workload.places(), (endpoints, guests));
    if !missing.is_empty() {
        bail!(
            "the workload ({}) needs {}, which {what} does not have (endpoints: {}; guests: {})",
            workload.describe(),
            missing.join(", "),
            list(endpoints),
            list(guests)
        );
    }
    Ok(())
}

/// The `places` a workload needs (described) that are not among
/// `endpoints` and `guests`, in order; empty when all are there.
pub fn missing_places(
    places: Vec<Place>,
    (endpoints, guests): (&[String], &[String]),
) -> Vec<String> {
    places
        .into_iter()
        .filter(|p| match p {
            Place::Endpoint(e) => !endpoints.contains(e),
            Place::Guest(g) => !guests.contains(g),
        })
        .map(|p| p.describe())
        .collect()
}

fn list(names: &[String]) -> String {
    if names.is_empty() {
        "none".to_string()
    } else {
        names.join(", ")
    }
}
