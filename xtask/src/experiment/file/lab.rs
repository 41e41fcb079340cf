//! The `[lab]` table of an experiment file: its topology, workload, lab
//! targets, rounds and model, each checked against the lab's registry and
//! the targets' `[lab]` tables; errors name the file's line and key.

use std::ops::Range;

use anyhow::{bail, Context, Result};
use serde::Deserialize;
use serde_spanned::Spanned;

use crate::inputs::targets::{self, Target};
use crate::lab::request::{Words, OPTIONS};
use crate::lab::topology;
use crate::lab::{DirectionChoice, Field, GroChoice, LabRequest, Problem, WorkloadSpec};

/// The `[lab]` table as read: its keys that are not whole-number lab
/// options by name, and the rest in [`RawLab::counts`], which
/// [`lab_spec`] checks against the lab's options
/// ([`crate::lab::OPTIONS`]): an unknown key is refused there, at its line.
#[derive(Debug, Deserialize)]
pub(super) struct RawLab {
    pub(super) topology: Option<Spanned<String>>,
    pub(super) workload: Option<Spanned<String>>,
    pub(super) from: Option<Spanned<String>>,
    pub(super) to: Option<Spanned<String>>,
    pub(super) guest: Option<Spanned<String>>,
    pub(super) targets: Option<Vec<Spanned<String>>>,
    pub(super) gro: Option<Spanned<String>>,
    pub(super) directions: Option<Spanned<String>>,
    pub(super) control: Option<bool>,
    pub(super) model: Option<Spanned<String>>,
    pub(super) labs: Option<Spanned<String>>,
    pub(super) packet_steering: Option<Spanned<crate::inputs::steering::SteeringSpec>>,
    /// Every other key: the whole-number options (`runs`, `mss`, …).
    #[serde(flatten)]
    pub(super) counts: std::collections::BTreeMap<String, serde_json::Value>,
}

/// How the targets' labs share the machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LabsAtOnce {
    /// Side by side within `-j` (a guest per CPU): instruction counts and
    /// the models' figures do not depend on host load; Mbit/s does, and
    /// is recorded as measured under that concurrency.
    SideBySide,
    /// One lab after another: Mbit/s as a lab run alone measures it.
    Serial,
}

/// The lab of an experiment.
#[derive(Debug, Clone)]
pub struct ExperimentLab {
    /// The targets whose lab runs (a subset of the experiment's, each with
    /// a `[lab]` table), in order.
    pub targets: Vec<String>,
    /// Whether the targets' labs run side by side (`labs`; default
    /// side by side).
    pub labs: LabsAtOnce,
    /// What each target's lab is asked: the table's keys over
    /// [`LabRequest::qemu`]'s defaults (`topology`, `workload` with its
    /// places and options, `runs`, `duration`, `gro`, `directions`,
    /// `control`, `model`, `cpus`, `packet_steering`), checked by
    /// [`LabRequest::check`]; the plan sets the target, the variants, the
    /// build jobs, the OpenWrt checkout and the labs at once.
    pub request: LabRequest,
}

/// The checked `[lab]` table `l`, written at `table` (its span in the
/// file), of an experiment of targets `chosen`; `at` turns a span into
/// `FILE:LINE`. A problem of a key the table leaves out (a default) is
/// named at the table's line.
pub(super) fn lab_spec(
    l: RawLab,
    table: Range<usize>,
    chosen: &[Target],
    (at, key_at): (&dyn Fn(Range<usize>) -> String, &KeyAt<'_>),
) -> Result<ExperimentLab> {
    let topology_name = l
        .topology
        .clone()
        .map_or((topology::Name::NatRouter, None), |t| {
            (topology::Name::named(t.get_ref()), Some(t.span()))
        });
    let workload_name = l.workload.clone();
    let default = LabRequest::qemu("").on_topology(topology_name.0.clone());
    let workload = workload_of(&l, &default.workload, at)?;

    let lab_targets = lab_targets(&l, (table.clone(), chosen), at)?;
    let gro = match &l.gro {
        None => None,
        Some(g) => Some(g.get_ref().parse::<GroChoice>().map_err(|_| {
            anyhow::anyhow!(
                "{}: gro = {:?} — use on, off or both",
                at(g.span()),
                g.get_ref()
            )
        })?),
    };
    let direction = match &l.directions {
        None => None,
        Some(d) => Some(d.get_ref().parse::<DirectionChoice>().map_err(|_| {
            anyhow::anyhow!(
                "{}: directions = {:?} — use lan-to-wan, wan-to-lan or both",
                at(d.span()),
                d.get_ref()
            )
        })?),
    };
    let cache_model = match l.model.as_ref().map(|m| (m.get_ref().as_str(), m.span())) {
        None | Some(("none", _)) => false,
        Some(("cache", _)) => true,
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
    let mut request = default;
    let counts = counts(&l.counts, &mut request, (at, key_at))?;
    request.gro = gro;
    request.direction = direction;
    request.control = l.control.unwrap_or(true);
    request.cache_model = cache_model;
    request.workload = workload;
    request.packet_steering = packet_steering;
    match request.check() {
        // The plan shows it, and the real run refuses it before building.
        Ok(()) | Err(Problem::NotRunnable { .. }) => {}
        Err(p) => {
            let span = match p.field() {
                f if f.count().is_some() => counts.get(&f).cloned(),
                Field::Gro => l.gro.as_ref().map(|s| s.span()),
                Field::Direction => l.directions.as_ref().map(|s| s.span()),
                Field::CacheModel => l.model.as_ref().map(|s| s.span()),
                Field::PacketSteering => l.packet_steering.as_ref().map(|s| s.span()),
                Field::Workload => workload_name
                    .as_ref()
                    .map(|w| w.span())
                    .or(topology_name.1.clone()),
                _ => topology_name.1.clone(),
            };
            let place = span.map_or_else(|| at(table.clone()), at);
            bail!("{place}: {}", wording(&p));
        }
    }
    check_targets(
        &l,
        (&request, counts.get(&Field::Cpus)),
        (&lab_targets, chosen),
        at,
    )?;
    Ok(ExperimentLab {
        targets: lab_targets,
        labs,
        request,
    })
}

/// The workload the table asks for (iperf3 `from` → `to`, or tbench in
/// `guest`), what it leaves out from the topology's own workload `own`
/// (as `lab --topology` takes it: tbench in loopback's guest, iperf3 `lan`
/// → `far` on the mesh). Errors: an unknown workload, or a place key of
/// the other one.
fn workload_of(
    l: &RawLab,
    own: &WorkloadSpec,
    at: &dyn Fn(Range<usize>) -> String,
) -> Result<WorkloadSpec> {
    let (own_from, own_to, own_guest) = match own {
        WorkloadSpec::Iperf3 { from, to } => (from.as_str(), to.as_str(), "router"),
        WorkloadSpec::Tbench { guest } => ("lan", "wan", guest.as_str()),
    };
    let places = [&l.from, &l.to, &l.guest].into_iter().flatten().count();
    if l.workload.is_none() && places == 0 {
        return Ok(own.clone());
    }
    Ok(match l.workload.as_ref().map(|w| w.get_ref().as_str()) {
        None | Some("iperf3") => {
            if let Some(g) = &l.guest {
                bail!("{}: guest is for workload = \"tbench\"; iperf3 runs between the endpoints from and to", at(g.span()));
            }
            WorkloadSpec::Iperf3 {
                from: l
                    .from
                    .as_ref()
                    .map_or(own_from.into(), |s| s.get_ref().clone()),
                to: l.to.as_ref().map_or(own_to.into(), |s| s.get_ref().clone()),
            }
        }
        Some("tbench") => {
            if let Some(k) = [&l.from, &l.to].into_iter().flatten().next() {
                bail!("{}: {TBENCH_NOT_FORWARDING}", at(k.span()));
            }
            WorkloadSpec::Tbench {
                guest: l
                    .guest
                    .as_ref()
                    .map_or(own_guest.into(), |s| s.get_ref().clone()),
            }
        }
        Some(other) => {
            let span = l.workload.as_ref().map(|w| w.span()).unwrap_or_default();
            bail!(
                "{}: unknown workload {other:?}; use iperf3 or tbench",
                at(span)
            );
        }
    })
}

/// The lab's targets: `targets`, each among the experiment's `chosen` and
/// with a `[lab]` table, or every chosen target when the key is left out
/// (then each needs a `[lab]` table, named at `table`).
fn lab_targets(
    l: &RawLab,
    (table, chosen): (Range<usize>, &[Target]),
    at: &dyn Fn(Range<usize>) -> String,
) -> Result<Vec<String>> {
    let mut lab_targets = Vec::new();
    match &l.targets {
        None => {
            for t in chosen {
                if t.lab.is_none() {
                    bail!(
                        "{}: [lab] has no targets key, so its lab runs every target of the experiment, but target {} has no [lab] table in targets/{}.toml; list the lab's targets in [lab] targets = [...]",
                        at(table),
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
    Ok(lab_targets)
}

/// What the lab targets' own tables must allow of `request`: at most
/// their `max_cpus` (`cpus_at` is where the file asks for CPUs), and a
/// `[lab.l1]` table for the cache model.
fn check_targets(
    l: &RawLab,
    (request, cpus_at): (&LabRequest, Option<&Range<usize>>),
    (lab_targets, chosen): (&[String], &[Target]),
    at: &dyn Fn(Range<usize>) -> String,
) -> Result<()> {
    if let (Some(c), Some(span)) = (request.cpus, cpus_at) {
        for name in lab_targets {
            let t = chosen.iter().find(|t| &t.name == name).expect("chosen");
            if let Some(spec) = t.lab.as_ref().filter(|s| c > s.max_cpus) {
                bail!(
                    "{}: cpus = {c} — target {name}'s lab kernel boots at most {} CPU(s) ([lab] \
                     max_cpus in {}, its CONFIG_NR_CPUS); ask for at most that",
                    at(span.clone()),
                    spec.max_cpus,
                    t.file.display()
                );
            }
        }
    }
    if request.cache_model {
        for name in lab_targets {
            let t = chosen.iter().find(|t| &t.name == name).expect("chosen");
            if t.lab.as_ref().is_some_and(|l| l.l1.is_none()) {
                let s = l.model.as_ref().map(|m| m.span()).unwrap_or_default();
                bail!("{}: model = \"cache\", but target {name} has no [lab.l1] table (its caches' geometry)", at(s));
            }
        }
    }
    Ok(())
}

/// Why tbench takes no forwarding key.
const TBENCH_NOT_FORWARDING: &str = "from, to, gro and directions are for workload = \"iperf3\" through a router; tbench runs inside one guest (guest, clients)";

/// `p` in the file's words: its keys, not the command line's flags.
fn wording(p: &Problem) -> String {
    match p {
        Problem::Topology(Field::Topology, why) => {
            format!("topology — use a name the lab registers (lab/topology/mod.rs): {why}")
        }
        Problem::ForwardingOnly(f @ (Field::Parallel | Field::Mss | Field::Udp)) => format!(
            "{} is iperf3's option (workload = \"iperf3\"); tbench takes clients",
            f.key()
        ),
        Problem::ForwardingOnly(f) if f.count().is_some() => format!(
            "{} is for forwarding through routers (workload = \"iperf3\"); tbench runs inside one guest, which has no NIC",
            f.key()
        ),
        Problem::ForwardingOnly(_) => TBENCH_NOT_FORWARDING.to_string(),
        Problem::TbenchOnly(_) => "clients is for workload = \"tbench\"".to_string(),
        Problem::ForwardsNothing { topology: t } => format!(
            "model = \"cache\" counts per forwarded packet, but topology {t} forwards nothing (tbench runs over the guest's own loopback); drop model (or set model = \"none\"), or use topology = \"{}\"",
            topology::Name::NatRouter
        ),
        Problem::OutOfRange(..) | Problem::Conflict(..) => p.words(Words::Keys),
        Problem::MissingPlaces { .. } => format!(
            "{}; choose a topology that has them, or set the workload's places (from/to, guest)",
            p.missing_places().unwrap_or_default()
        ),
        other => other.to_string(),
    }
}

/// Where the value of `[lab]` key `key` is in the file, if it is there.
pub(super) type KeyAt<'a> = dyn Fn(&str) -> Option<Range<usize>> + 'a;

/// Sets `request`'s whole-number options from the table's other keys
/// `raw`, each by its definition ([`crate::lab::OPTIONS`]); returns where
/// each one is, for refusals. Errors: a key that is no lab option, or a
/// value that is no whole number, at the key's line.
fn counts(
    raw: &std::collections::BTreeMap<String, serde_json::Value>,
    request: &mut LabRequest,
    (at, key_at): (&dyn Fn(Range<usize>) -> String, &KeyAt<'_>),
) -> Result<std::collections::BTreeMap<Field, Range<usize>>> {
    let mut spans = std::collections::BTreeMap::new();
    // In the file's order, so that the first wrong key is the one named.
    let mut keys: Vec<(Range<usize>, &String, &serde_json::Value)> = raw
        .iter()
        .map(|(k, v)| (key_at(k).unwrap_or_default(), k, v))
        .collect();
    keys.sort_by_key(|(span, ..)| span.start);
    for (span, key, value) in keys {
        let Some(option) = crate::lab::request::option::by_key(key).filter(|o| o.count.is_some())
        else {
            let mut keys: Vec<&str> =
                ["workload", "from", "to", "guest", "targets", "labs"].to_vec();
            keys.extend(OPTIONS.iter().filter_map(|o| o.key));
            let keys: Vec<String> = keys.iter().map(|k| format!("`{k}`")).collect();
            bail!(
                "{}: [lab] has no key \"{}\"; it takes {} (docs/experiments.md)",
                at(span.clone()),
                crate::util::text::printable(key),
                keys.join(", ")
            );
        };
        let Some(v) = value.as_u64().and_then(|v| u32::try_from(v).ok()) else {
            bail!(
                "{}: {key} = {value} — {key} takes {}",
                at(span.clone()),
                option.takes().unwrap_or_default()
            );
        };
        request.set_count(option.field, v);
        spans.insert(option.field, span);
    }
    Ok(spans)
}
