//! `experiments/<name>.toml`: one experiment as a file — the targets, the
//! variants, the mode, the lab and the report — read and checked before
//! anything builds (in the manner of LKP's job files and flent's batch
//! files).
//!
//! ```toml
//! description = "drop -fno-reorder-blocks"
//! targets = ["bcm53xx", "brcm47xx", "ramips/mt7621", "ath79"]
//! base = "baseline"                 # optional; else the first variant
//! variants = ["no-reorder-blocks"]
//! # openwrt = "../openwrt"          # OpenWrt mode; default: the hand-written profiles
//!
//! [lab]                             # optional: sizes only without it
//! topology = "nat-router"           # lab::topology::NAMES
//! workload = "iperf3"               # iperf3 (from, to, parallel, mss, udp) | tbench (guest, clients)
//! # parallel = 8                    # iperf3 -P, 1 to 128 (default 1)
//! # mss = 536                       # iperf3 --set-mss in bytes, 88 to 9216
//! # udp = 100                       # UDP at this rate in Mbit/s (iperf3 -u -b 100M); default TCP
//! runs = 10                         # rounds
//! duration = 10                     # seconds per run
//! gro = "both"                      # on | off | both (iperf3)
//! directions = "both"               # lan-to-wan | wan-to-lan | both (iperf3)
//! model = "none"                    # none | cache (the L1 cache model)
//! labs = "side-by-side"             # side-by-side (the targets' labs at once, within -j) | serial
//!
//! [report]
//! formats = ["mail", "text"]
//! output = "target/xtask/experiments/flags"
//! ```
//!
//! Every problem is an error naming the file, its line and the fix: an
//! unknown key (serde's `deny_unknown_fields`, with `toml_edit`'s
//! position), target, variant, topology, format, or a workload its
//! topology cannot host.

use std::ops::Range;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde::Deserialize;
use serde_spanned::Spanned;

use crate::inputs::targets::{self, Target};
use crate::inputs::variants;
use crate::lab::topology;
use crate::lab::workload::Place;
use crate::lab::{DirectionChoice, GroChoice};
use crate::report::Format;
use crate::results::lab::IperfOptions;
use crate::util::layout::Layout;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    #[serde(default)]
    description: String,
    targets: Vec<Spanned<String>>,
    base: Option<Spanned<String>>,
    variants: Spanned<Vec<Spanned<String>>>,
    openwrt: Option<Spanned<String>>,
    lab: Option<RawLab>,
    #[serde(default)]
    report: RawReport,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLab {
    topology: Option<Spanned<String>>,
    workload: Option<Spanned<String>>,
    from: Option<Spanned<String>>,
    to: Option<Spanned<String>>,
    guest: Option<Spanned<String>>,
    clients: Option<Spanned<u32>>,
    parallel: Option<Spanned<u32>>,
    mss: Option<Spanned<u32>>,
    udp: Option<Spanned<u32>>,
    targets: Option<Vec<Spanned<String>>>,
    runs: Option<Spanned<u32>>,
    duration: Option<Spanned<u32>>,
    gro: Option<Spanned<String>>,
    directions: Option<Spanned<String>>,
    control: Option<bool>,
    model: Option<Spanned<String>>,
    labs: Option<Spanned<String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawReport {
    formats: Option<Vec<Spanned<String>>>,
    output: Option<String>,
    symbols: Option<bool>,
}

/// How the kernels are configured, patched and flagged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    /// The hand-written profiles of `targets/` (`cargo xtask build`).
    Profiles,
    /// As this OpenWrt checkout does (`build --openwrt PATH`; the lab
    /// kernels as `lab --openwrt PATH` builds them).
    Openwrt(PathBuf),
}

/// What each lab run does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WorkloadSpec {
    /// iperf3 from endpoint `from` to endpoint `to` through the measured
    /// router (`-R` for the other direction), GRO switched per run.
    Iperf3 {
        /// The client's endpoint (`lan`).
        from: String,
        /// The server's endpoint (`wan`; the mesh's `far`).
        to: String,
        /// iperf3's streams and MSS (`parallel`, `mss`; `lab -P`, `-M`).
        iperf: IperfOptions,
    },
    /// tbench inside guest `guest`, over its own loopback.
    Tbench {
        /// The guest (`router`).
        guest: String,
        /// tbench's clients.
        clients: u32,
    },
}

impl WorkloadSpec {
    /// The places it runs programs in.
    pub fn places(&self) -> Vec<Place> {
        match self {
            WorkloadSpec::Iperf3 { from, to, .. } => {
                vec![Place::Endpoint(from.clone()), Place::Endpoint(to.clone())]
            }
            WorkloadSpec::Tbench { guest, .. } => vec![Place::Guest(guest.clone())],
        }
    }

    /// `iperf3 lan → wan`, `iperf3 -P8 -M 536 lan → far`, `tbench in
    /// guest router, 2 clients`.
    pub fn describe(&self) -> String {
        match self {
            WorkloadSpec::Iperf3 { from, to, iperf } => match iperf.describe() {
                o if o.is_empty() => format!("iperf3 {from} → {to}"),
                o => format!("iperf3 {o} {from} → {to}"),
            },
            WorkloadSpec::Tbench { guest, clients } => {
                format!("tbench in guest {guest}, {clients} clients")
            }
        }
    }
}

/// Which model counts alongside the runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Model {
    /// None: Mbit/s and ns/packet only.
    None,
    /// The L1 cache model (`lab --cache-model`): instructions and L1
    /// misses per packet, independent of host load.
    Cache,
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
#[derive(Debug, Clone, PartialEq)]
pub struct LabSpec {
    /// A name of [`topology::NAMES`].
    pub topology: String,
    /// What each run does.
    pub workload: WorkloadSpec,
    /// The targets whose lab runs (a subset of the experiment's, each with
    /// a `[lab]` table), in order.
    pub targets: Vec<String>,
    /// Rounds (`lab --runs`).
    pub runs: u32,
    /// Seconds per run.
    pub duration_seconds: u32,
    /// GRO settings (iperf3).
    pub gro: GroChoice,
    /// Directions (iperf3).
    pub directions: DirectionChoice,
    /// The base booted twice, as an A/A control arm.
    pub control: bool,
    /// The model counted alongside.
    pub model: Model,
    /// Whether the targets' labs run side by side (`labs`; default
    /// side by side).
    pub labs: LabsAtOnce,
}

/// Where and how the report is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportSpec {
    /// Its formats, each written as `<output>/<name>.<ext>`.
    pub formats: Vec<Format>,
    /// The directory (relative paths: to the workspace root).
    pub output: PathBuf,
    /// bloat-o-meter symbol diffs in the report.
    pub symbols: bool,
}

/// A checked experiment file.
#[derive(Debug, Clone, PartialEq)]
pub struct Experiment {
    /// The file's stem (`flags`): the state and report directory's name.
    pub name: String,
    /// The file.
    pub file: PathBuf,
    /// One line for the plan and the report.
    pub description: String,
    /// Target names (`targets/<name>.toml`), in order, without repeats.
    pub targets: Vec<String>,
    /// The variants, the base first.
    pub variants: Vec<String>,
    /// Hand-written profiles or OpenWrt's.
    pub mode: Mode,
    /// The lab, if any.
    pub lab: Option<LabSpec>,
    /// The report.
    pub report: ReportSpec,
}

/// Reads and checks `file` against `layout`'s targets and variants and the
/// lab's topology registry.
///
/// Errors: `FILE:LINE: what — fix` for an unreadable file, a TOML error,
/// an unknown key, target, variant, topology, workload, format; a lab
/// target without `[lab]`; a workload the topology cannot host.
pub fn load(layout: &Layout, file: &Path) -> Result<Experiment> {
    // A regular file of UTF-8 text, at most 1 MiB: a FIFO or a device
    // (/dev/zero) is refused before it is read, not waited on or read
    // until memory runs out.
    let limit = crate::util::fs::FileLimit {
        what: "TOML experiment file",
        max_bytes: MAX_FILE_BYTES,
    };
    let text = crate::util::fs::read_limited(
        file,
        limit,
        "give a regular file of UTF-8 TOML text, at most 1 MiB (docs/experiments.md)",
    )?;
    parse(layout, file, &text)
}

/// The largest experiment file read, in bytes (the project's are under
/// 2 KB).
pub const MAX_FILE_BYTES: u64 = 1 << 20;

/// [`load`] of `text`, as if read from `file`.
pub fn parse(layout: &Layout, file: &Path, text: &str) -> Result<Experiment> {
    let raw: RawFile = toml_edit::de::from_str(text).map_err(|e| {
        let at = e
            .span()
            .map_or(String::new(), |s| format!(":{}", line_of(text, &s)));
        let takes = e
            .span()
            .filter(|_| {
                let m = e.message();
                m.starts_with("invalid type") || m.starts_with("invalid value")
            })
            .and_then(|s| super::hint::for_span(text, &s))
            .map_or(String::new(), |t| format!("; {t}"));
        anyhow::anyhow!(
            "{}{at}: {}{takes} (the file's keys: docs/experiments.md)",
            file.display(),
            e.message().trim_end()
        )
    })?;
    let at = |span: Range<usize>| format!("{}:{}", file.display(), line_of(text, &span));
    let name = file
        .file_stem()
        .and_then(|s| s.to_str())
        .context("the experiment file needs a name (experiments/<name>.toml)")?
        .to_string();

    let all_targets = targets::load_all(&layout.targets_dir())?;
    let mut chosen: Vec<Target> = Vec::new();
    if raw.targets.is_empty() {
        bail!(
            "{}: targets is empty — name at least one, e.g. targets = [\"brcm47xx\"]",
            file.display()
        );
    }
    for t in &raw.targets {
        let found = targets::select(&all_targets, std::slice::from_ref(t.get_ref()))
            .with_context(|| format!("{}: targets", at(t.span())))?;
        for f in found {
            if !chosen.iter().any(|c| c.name == f.name) {
                chosen.push(f);
            }
        }
    }

    let all_variants = variants::load(&layout.variants_file(), &layout.patches_dir())?;
    let mut names: Vec<Spanned<String>> = raw.base.iter().cloned().collect();
    names.extend(raw.variants.get_ref().iter().cloned());
    let mut variants: Vec<String> = Vec::new();
    for v in &names {
        variants::select(&all_variants, std::slice::from_ref(v.get_ref()))
            .with_context(|| format!("{}: variant", at(v.span())))?;
        if !variants.contains(v.get_ref()) {
            variants.push(v.get_ref().clone());
        }
    }
    if variants.len() < 2 {
        bail!(
            "{}: an experiment compares a base with at least one other variant; add one to variants (patches/variants.toml lists them)",
            at(raw.variants.span())
        );
    }

    let mode = match &raw.openwrt {
        None => Mode::Profiles,
        Some(p) => {
            let base = file.parent().unwrap_or(Path::new("."));
            let path = base.join(p.get_ref());
            if !path.join("include/target.mk").is_file() {
                bail!(
                    "{}: openwrt = {:?}: {} is not an OpenWrt checkout (no include/target.mk); a relative path is taken from the experiment file's directory",
                    at(p.span()),
                    p.get_ref(),
                    path.display()
                );
            }
            Mode::Openwrt(path)
        }
    };

    let lab = match raw.lab {
        None => None,
        Some(l) => Some(lab_spec(l, &chosen, &at)?),
    };

    let formats = match raw.report.formats {
        None => vec![Format::Mail],
        Some(list) => list
            .iter()
            .map(|f| {
                f.get_ref()
                    .parse::<Format>()
                    .with_context(|| format!("{}: report.formats", at(f.span())))
            })
            .collect::<Result<Vec<_>>>()?,
    };
    let output = raw.report.output.map_or_else(
        || {
            layout
                .work_dir()
                .join("experiments")
                .join(&name)
                .join("report")
        },
        |o| layout.root().join(o),
    );
    Ok(Experiment {
        name,
        file: file.to_path_buf(),
        description: raw.description,
        targets: chosen.iter().map(|t| t.name.clone()).collect(),
        variants,
        mode,
        lab,
        report: ReportSpec {
            formats,
            output,
            symbols: raw.report.symbols.unwrap_or(false),
        },
    })
}

fn lab_spec(l: RawLab, chosen: &[Target], at: &dyn Fn(Range<usize>) -> String) -> Result<LabSpec> {
    let topology_name = l
        .topology
        .clone()
        .map_or((topology::nat_router::NAME.to_string(), None), |t| {
            (t.get_ref().clone(), Some(t.span()))
        });
    let where_topology = |what: &str| match &topology_name.1 {
        Some(s) => format!("{}: {what}", at(s.clone())),
        None => format!("[lab] (topology {}): {what}", topology_name.0),
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
    let missing: Vec<String> = workload
        .places()
        .into_iter()
        .filter(|p| match p {
            Place::Endpoint(e) => !endpoints.contains(e),
            Place::Guest(g) => !guests.contains(g),
        })
        .map(|p| p.describe())
        .collect();
    if !missing.is_empty() {
        let span = workload_name
            .as_ref()
            .map(|w| w.span())
            .or(topology_name.1.clone());
        let place = span.map_or("[lab]".to_string(), at);
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
                    bail!("[lab]: target {} has no [lab] table in targets/{}.toml; list the lab's targets in [lab] targets = [...]", t.name, t.name);
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
    let runs = positive(&l.runs, 5, "runs", super::hint::MAX_RUNS)?;
    let duration_seconds = positive(
        &l.duration,
        10,
        "duration",
        super::hint::MAX_DURATION_SECONDS,
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
    })
}

/// The 1-based line of byte `span.start` in `text`.
fn line_of(text: &str, span: &Range<usize>) -> usize {
    text[..span.start.min(text.len())].matches('\n').count() + 1
}
