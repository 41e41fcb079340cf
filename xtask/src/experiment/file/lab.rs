//! The `[lab]` table of an experiment file: its topology, workload, lab
//! targets, rounds and model, each checked against the lab's registry and
//! the targets' `[lab]` tables; errors name the file's line and key.

use std::ops::Range;

use anyhow::{bail, Context, Result};
use serde_spanned::Spanned;

use super::{LabSpec, LabsAtOnce, Model, RawLab, WorkloadSpec};
use crate::inputs::targets::{self, Target};
use crate::lab::topology;
use crate::lab::{DirectionChoice, GroChoice};
use crate::results::lab::IperfOptions;

/// The checked `[lab]` table `l`, written at `table` (its span in the
/// file), of an experiment of targets `chosen`; `at` turns a span into
/// `FILE:LINE`. A problem of a key the table leaves out (a default) is
/// named at the table's line.
pub(super) fn lab_spec(
    l: RawLab,
    table: Range<usize>,
    chosen: &[Target],
    at: &dyn Fn(Range<usize>) -> String,
) -> Result<LabSpec> {
    let topology_name = l
        .topology
        .clone()
        .map_or((topology::nat_router::NAME.to_string(), None), |t| {
            (t.get_ref().clone(), Some(t.span()))
        });
    let where_topology = |what: &str| match &topology_name.1 {
        Some(s) => format!("{}: {what}", at(s.clone())),
        None => format!(
            "{}: [lab] (topology {}, the default): {what}",
            at(table.clone()),
            topology_name.0
        ),
    };
    let net = topology::named(&topology_name.0).with_context(|| {
        where_topology("topology — use a name the lab registers (lab/topology/mod.rs)")
    })?;
    let workload_name = l.workload.clone();
    let workload = match workload_name.as_ref().map(|w| w.get_ref().as_str()) {
        None | Some("iperf3") => {
            if let Some(g) = &l.guest {
                bail!("{}: guest is for workload = \"tbench\"; iperf3 runs between the endpoints from and to", at(g.span()));
            }
            if let Some(c) = &l.clients {
                bail!("{}: clients is for workload = \"tbench\"", at(c.span()));
            }
            let iperf = IperfOptions {
                parallel: l.parallel.as_ref().map_or(1, |p| *p.get_ref()),
                mss: l.mss.as_ref().map(|m| *m.get_ref()),
                udp_mbit: l.udp.as_ref().map(|u| *u.get_ref()),
            };
            if let Err(e) = iperf.check() {
                // The message begins with the flag it is about.
                let e = e.to_string();
                let span = if e.starts_with("--parallel") {
                    l.parallel.as_ref().map(|p| p.span())
                } else if e.starts_with("--udp") {
                    l.udp.as_ref().map(|u| u.span())
                } else {
                    l.mss.as_ref().map(|m| m.span())
                };
                let e = ["--parallel", "--set-mss", "--udp"]
                    .iter()
                    .zip(["parallel =", "mss =", "udp ="])
                    .fold(e, |e, (flag, k)| e.replace(flag, k));
                bail!("{}: {e}", at(span.unwrap_or_default()));
            }
            WorkloadSpec::Iperf3 {
                iperf,
                from: l
                    .from
                    .as_ref()
                    .map_or("lan".into(), |s| s.get_ref().clone()),
                to: l.to.as_ref().map_or("wan".into(), |s| s.get_ref().clone()),
            }
        }
        Some("tbench") => {
            if let Some(k) = [&l.from, &l.to, &l.gro, &l.directions]
                .into_iter()
                .flatten()
                .next()
            {
                bail!(
                    "{}: from, to, gro and directions are for workload = \"iperf3\" through a router; tbench runs inside one guest (guest, clients)",
                    at(k.span())
                );
            }
            if let Some(k) = [&l.parallel, &l.mss, &l.udp].into_iter().flatten().next() {
                bail!(
                    "{}: parallel, mss and udp are iperf3's options (workload = \"iperf3\"); tbench takes clients",
                    at(k.span())
                );
            }
            WorkloadSpec::Tbench {
                guest: l
                    .guest
                    .as_ref()
                    .map_or("router".into(), |s| s.get_ref().clone()),
                clients: l.clients.as_ref().map_or(2, |c| *c.get_ref()),
            }
        }
        Some(other) => {
            let span = workload_name.as_ref().map(|w| w.span()).unwrap_or_default();
            bail!(
                "{}: unknown workload {other:?}; use iperf3 or tbench",
                at(span)
            );
        }
    };
    let endpoints: Vec<String> = net.endpoints.iter().map(|e| e.name.clone()).collect();
    let guests: Vec<String> = net.guests.iter().map(|g| g.name.clone()).collect();
    let missing = crate::lab::workload::missing_places(workload.places(), (&endpoints, &guests));
    if !missing.is_empty() {
        let span = workload_name
            .as_ref()
            .map(|w| w.span())
            .or(topology_name.1.clone());
        let place = span.map_or_else(|| at(table.clone()), at);
        bail!(
            "{place}: the workload ({}) needs {}, which topology {} does not have (endpoints: {}; guests: {}); choose a topology that has them, or set the workload's places (from/to, guest)",
            workload.describe(),
            missing.join(", "),
            net.name,
            endpoints.join(", "),
            guests.join(", ")
        );
    }

    let mut lab_targets = Vec::new();
    match &l.targets {
        None => {
            for t in chosen {
                if t.lab.is_none() {
                    bail!(
                        "{}: [lab] has no targets key, so its lab runs every target of the experiment, but target {} has no [lab] table in targets/{}.toml; list the lab's targets in [lab] targets = [...]",
                        at(table.clone()),
                        t.name,
                        t.name
                    );
                }
                lab_targets.push(t.name.clone());
            }
        }
        Some(list) => {
            for s in list {
                let found = targets::select(chosen, std::slice::from_ref(s.get_ref()))
                    .with_context(|| {
                        format!(
                            "{}: lab.targets must be among the experiment's targets",
                            at(s.span())
                        )
                    })?;
                for t in found {
                    if t.lab.is_none() {
                        bail!("{}: target {} has no [lab] table in targets/{}.toml; the lab runs targets that have one", at(s.span()), t.name, t.name);
                    }
                    if !lab_targets.contains(&t.name) {
                        lab_targets.push(t.name.clone());
                    }
                }
            }
        }
    }
    let positive = |v: &Option<Spanned<u32>>, default: u32, key: &str, max: u32| -> Result<u32> {
        match v {
            None => Ok(default),
            Some(s) if (1..=max).contains(s.get_ref()) => Ok(*s.get_ref()),
            Some(s) => bail!("{}: {key} = {} — use 1 to {max}", at(s.span()), s.get_ref()),
        }
    };
    let runs = positive(&l.runs, 5, "runs", crate::experiment::hint::MAX_RUNS)?;
    let duration_seconds = positive(
        &l.duration,
        10,
        "duration",
        crate::experiment::hint::MAX_DURATION_SECONDS,
    )?;
    let gro = match &l.gro {
        None => GroChoice::Both,
        Some(g) => g.get_ref().parse().map_err(|_| {
            anyhow::anyhow!(
                "{}: gro = {:?} — use on, off or both",
                at(g.span()),
                g.get_ref()
            )
        })?,
    };
    let directions = match &l.directions {
        None => DirectionChoice::Both,
        Some(d) => d.get_ref().parse().map_err(|_| {
            anyhow::anyhow!(
                "{}: directions = {:?} — use lan-to-wan, wan-to-lan or both",
                at(d.span()),
                d.get_ref()
            )
        })?,
    };
    let model = match l.model.as_ref().map(|m| (m.get_ref().as_str(), m.span())) {
        None | Some(("none", _)) => Model::None,
        Some(("cache", s)) => {
            if net.name == topology::loopback::NAME {
                bail!(
                    "{}: model = \"cache\" counts per forwarded packet, but topology {} forwards nothing (tbench runs over the guest's own loopback); drop model (or set model = \"none\"), or use topology = \"{}\"",
                    at(s),
                    net.name,
                    topology::nat_router::NAME
                );
            }
            for name in &lab_targets {
                let t = chosen.iter().find(|t| &t.name == name).expect("chosen");
                if t.lab.as_ref().is_some_and(|l| l.l1.is_none()) {
                    bail!("{}: model = \"cache\", but target {name} has no [lab.l1] table (its caches' geometry)", at(s));
                }
            }
            Model::Cache
        }
        Some((other, s)) => bail!(
            "{}: model = {other:?} — use none or cache (the L1 cache model)",
            at(s)
        ),
    };
    let labs = match l.labs.as_ref().map(|m| (m.get_ref().as_str(), m.span())) {
        None | Some(("side-by-side", _)) => LabsAtOnce::SideBySide,
        Some(("serial", _)) => LabsAtOnce::Serial,
        Some((other, s)) => bail!(
            "{}: labs = {other:?} — use side-by-side (the targets' labs at once, within -j) or serial (one after another, for Mbit/s measured alone)",
            at(s)
        ),
    };
    let cpus = match &l.cpus {
        None => None,
        Some(c) => {
            crate::inputs::lab::check_cpus(*c.get_ref())
                .map_err(|e| anyhow::anyhow!("{}: cpus = {} — {e}", at(c.span()), c.get_ref()))?;
            Some(*c.get_ref())
        }
    };
    let packet_steering = l
        .packet_steering
        .as_ref()
        // Where it was asked goes into lab.json and the plan: a file name
        // with control characters is shown escaped, as lab.json's reader
        // requires.
        .map(|s| {
            let at = at(s.span());
            (
                s.get_ref().clone(),
                crate::util::text::printable(&at).into_owned(),
            )
        });
    Ok(LabSpec {
        topology: net.name,
        workload,
        targets: lab_targets,
        runs,
        duration_seconds,
        gro,
        directions,
        control: l.control.unwrap_or(true),
        model,
        labs,
        cpus,
        packet_steering,
    })
}
