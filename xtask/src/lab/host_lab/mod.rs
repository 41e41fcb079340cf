//! The host lab: `cargo xtask lab --lab host --variant baseline --variant
//! lo-no-tso-gso`. It measures **this machine's kernel**, not a router's:
//! each arm is a runtime variant of `lab/runtime.toml`
//! ([`crate::inputs::runtime`]) applied in a fresh private network
//! namespace ([`crate::lab::net`], [`features`]), and each run a benchmark over that
//! namespace's loopback ([`bench`]: tbench in MB/s, iperf3 in Mbit/s).
//!
//! Scheduling, warm-ups, the A/A control and `lab.json` are the QEMU
//! lab's (the one flow of [`crate::lab::orchestrate`], this lab's part
//! being [`resolve`], [`HostBackend`] and the [`LoopbackBench`]
//! workload): rounds interleave the arms (A B A B …),
//! every session (arm and round) discards one warm-up run, and the base
//! runs twice per round (`baseline~control`) unless `--no-control`.
//! Results go to `target/xtask/lab/host/<started>-<pid>/`, target `host`,
//! where `size-report` finds them.

pub mod features;
pub mod programs;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use super::backend::{Backend, EndpointUp, Endpoints, Prepared, Testbed, Up};
use super::net::{Namespace, Net};
use super::orchestrate::{self, Control, LabPlan, Mode};
use super::runner::{self, RunSpec};
use super::workload::{Place, Workload};
use crate::inputs::runtime::{self, RuntimeVariant};
use crate::results::lab::{Arm, Condition, MachineInfo, MetricValue, RunRecord, Settings};
use crate::results::lab::{Benchmark, HostInfo, HostRun};
use crate::results::now_rfc3339;
use crate::util::layout::Layout;

/// The `target` and `lab_target` of a host lab's `lab.json`, and its
/// directory under `target/xtask/lab/`.
pub const TARGET: &str = "host";

/// The devices of the host lab's namespace, which runtime variants may
/// name.
pub const DEVICES: &[&str] = &["lo"];

/// Host programs the host lab runs, with their Debian packages.
pub const HOST_TOOLS: &[(&str, &str)] = &[
    ("tbench", "dbench"),
    ("tbench_srv", "dbench"),
    ("iperf3", "iperf3"),
    ("ethtool", "ethtool"),
    ("ip", "iproute2"),
];

/// Debian packages the host lab needs (dbench for tbench, iperf3,
/// ethtool, iproute2), sorted, without duplicates.
pub fn host_packages() -> Vec<String> {
    let mut p: Vec<String> = HOST_TOOLS.iter().map(|(_, p)| p.to_string()).collect();
    p.sort();
    p.dedup();
    p
}

/// A benchmark named on the command line (`--bench tbench,iperf3`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BenchName {
    /// dbench's tbench (MB/s).
    Tbench,
    /// iperf3, one TCP stream (Mbit/s).
    Iperf3,
}

impl std::str::FromStr for BenchName {
    type Err = anyhow::Error;

    /// `tbench` or `iperf3`.
    fn from_str(s: &str) -> Result<BenchName> {
        match s {
            "tbench" => Ok(BenchName::Tbench),
            "iperf3" => Ok(BenchName::Iperf3),
            _ => bail!("--bench {s:?}: use tbench or iperf3"),
        }
    }
}

/// What `cargo xtask lab --lab host` was asked to do.
#[derive(Debug, Clone)]
pub struct HostRequest {
    /// Runtime variant names; empty means baseline. The first is the base.
    pub variants: Vec<String>,
    /// Measured runs per (arm, benchmark).
    pub runs: u32,
    /// Length of one run, in seconds.
    pub duration_seconds: u32,
    /// The benchmarks, run in this order in every session.
    pub benches: Vec<BenchName>,
    /// tbench's client processes.
    pub tbench_clients: u32,
    /// Whether the base runs a second time as an A/A control arm.
    pub control: bool,
}

impl HostRequest {
    /// The benchmarks with their settings.
    pub fn benches(&self) -> Vec<Benchmark> {
        self.benches
            .iter()
            .map(|b| match b {
                BenchName::Tbench => Benchmark::Tbench {
                    clients: self.tbench_clients,
                },
                BenchName::Iperf3 => Benchmark::Iperf3,
            })
            .collect()
    }
}

/// Fails naming every missing host program and the packages to install.
pub fn check_host_tools() -> Result<()> {
    crate::lab::host_tools::require_tools("the host lab", HOST_TOOLS)
}

/// The chosen runtime variants, checked against the namespace's devices.
pub fn variants(layout: &Layout, names: &[String]) -> Result<Vec<RuntimeVariant>> {
    let file = layout.runtime_variants_file();
    let all = runtime::load(&file)?;
    let names = if names.is_empty() {
        vec![runtime::BASELINE.to_string()]
    } else {
        names.to_vec()
    };
    let chosen = runtime::select(&all, &names, &file)?;
    for v in &chosen {
        if let Some(c) = v
            .ethtool
            .iter()
            .find(|c| !DEVICES.contains(&c.dev.as_str()))
        {
            bail!(
                "runtime variant {} sets {} in {}, but the host lab's namespace has only {}",
                v.name,
                c.dev,
                file.display(),
                DEVICES.join(", ")
            );
        }
    }
    Ok(chosen)
}

/// `cargo xtask lab --lab host`: [`run`], then the path of the results.
pub fn command(layout: &Layout, request: &HostRequest) -> Result<()> {
    let dir = run(layout, request)?;
    println!(
        "lab results: {}",
        dir.join(crate::results::lab::FILE_NAME).display()
    );
    Ok(())
}

/// Runs the host lab as `request` says ([`crate::lab::orchestrate::run`]
/// of [`resolve`]'s plan and backend); returns its directory (with
/// `lab.json`). Everything is checked before anything runs.
pub fn run(layout: &Layout, request: &HostRequest) -> Result<PathBuf> {
    let (plan, mut backend) = resolve(layout, request)?;
    orchestrate::run(layout, &plan, &mut backend, Mode::Run)?.context("the host lab ran nothing")
}

/// The host lab's plan of `request` and its backend: the benchmarks, the
/// runtime variants (their devices checked against the namespace's) and
/// the host tools.
pub fn resolve(layout: &Layout, request: &HostRequest) -> Result<(LabPlan, HostBackend)> {
    anyhow::ensure!(
        request.runs >= 1 && request.duration_seconds >= 1 && request.tbench_clients >= 1,
        "--runs, --duration and --clients must be at least 1"
    );
    let benches = request.benches();
    if benches.is_empty() {
        bail!("--bench names no benchmark; use tbench, iperf3 or both");
    }
    for (i, b) in benches.iter().enumerate() {
        if benches[..i].contains(b) {
            bail!("--bench {} is given twice", b.name());
        }
    }
    let chosen = variants(layout, &request.variants)?;
    check_host_tools()?;
    let plan = LabPlan {
        target: TARGET.to_string(),
        machine: "this machine's kernel, runtime settings in a fresh private namespace per session"
            .to_string(),
        topology: None,
        places: (vec![ENDPOINT.to_string()], Vec::new()),
        workload: Box::new(LoopbackBench {
            endpoint: ENDPOINT.to_string(),
        }),
        reference: None,
        variants: chosen.iter().map(|v| v.name.clone()).collect(),
        control: if request.control {
            Control::Twin
        } else {
            Control::Without
        },
        schedule: runner::Plan {
            runs: request.runs,
            duration_seconds: request.duration_seconds,
            warmup: Condition::Bench { bench: benches[0] },
            conditions: benches
                .iter()
                .map(|&bench| Condition::Bench { bench })
                .collect(),
        },
        settings: Settings {
            runs: request.runs,
            duration_seconds: request.duration_seconds,
            gro: Vec::new(),
            directions: Vec::new(),
            warmup_runs_per_boot: 1,
            base: chosen[0].name.clone(),
            control: request.control,
            benches,
            iperf3: Default::default(),
            labs_at_once: None,
            options: Default::default(),
        },
    };
    let backend = HostBackend {
        watched: features::watched(&chosen),
        variants: chosen,
    };
    Ok((plan, backend))
}

/// This machine's kernel and the tools' versions.
pub fn host_info() -> Result<HostInfo> {
    let read = |p: &str| {
        std::fs::read_to_string(p)
            .map(|s| s.trim().to_string())
            .with_context(|| format!("reading {p}"))
    };
    let first_line = |program: &str, args: &[&str]| -> String {
        std::process::Command::new(program)
            .args(args)
            .output()
            .map(|o| {
                let text = [o.stdout, o.stderr].concat();
                String::from_utf8_lossy(&text)
                    .lines()
                    .find(|l| !l.trim().is_empty())
                    .unwrap_or_default()
                    .trim()
                    .to_string()
            })
            .unwrap_or_default()
    };
    Ok(HostInfo {
        kernel_release: read("/proc/sys/kernel/osrelease")?,
        proc_version: read("/proc/version")?,
        machine: first_line("uname", &["-m"]),
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get() as u32),
        tools: vec![
            // tbench prints its version first, also with --help (exit 1).
            first_line("tbench", &["--help"]),
            first_line("iperf3", &["--version"]),
            first_line("ethtool", &["--version"]),
        ],
        network:
            "a fresh private network namespace per variant and round, loopback only (127.0.0.1)"
                .to_string(),
    })
}

/// The host lab's one endpoint: each session's private namespace.
pub const ENDPOINT: &str = "host";

/// This machine's kernel as the lab's [`Backend`]: each arm's runtime
/// settings applied in a fresh namespace per session.
pub struct HostBackend {
    variants: Vec<RuntimeVariant>,
    watched: BTreeMap<String, Vec<String>>,
}

impl Backend for HostBackend {
    fn prepare(&mut self) -> Result<Prepared> {
        let host = host_info()?;
        eprintln!(
            "lab: host kernel {} ({}, {} CPUs): this machine's kernel, not a router's",
            host.kernel_release, host.machine, host.cpus
        );
        Ok(Prepared {
            lab_target: TARGET.to_string(),
            machine: MachineInfo::Host { host },
            arms: self
                .variants
                .iter()
                .map(|v| Arm {
                    name: v.name.clone(),
                    variant: v.name.clone(),
                    control: false,
                    kernel: None,
                    runtime: Some(features::record(v)),
                    topology: None,
                })
                .collect(),
            cache_model: None,
        })
    }

    fn bring_up(&mut self, arm: &Arm, _round: u32, _tag: &str, _dir: &Path) -> Result<Up> {
        let variant = self
            .variants
            .iter()
            .find(|v| v.name == arm.variant)
            .with_context(|| format!("no runtime variant for arm {}", arm.name))?
            .clone();
        let mut net = Net::new();
        let ns = net.namespace(ENDPOINT)?;
        features::apply(&ns, &variant)?;
        let endpoints = Endpoints {
            list: vec![EndpointUp {
                name: ENDPOINT.to_string(),
                netns: ns.name.clone(),
                address: Some(std::net::IpAddr::from([127, 0, 0, 1])),
            }],
            masquerade: None,
        };
        Ok(Up {
            bed: Box::new(HostTestbed {
                ns,
                variant,
                watched: self.watched.clone(),
                endpoints,
                _net: net,
            }),
            boot: None,
        })
    }
}

/// One arm's settings applied in its own namespace.
struct HostTestbed {
    ns: Namespace,
    variant: RuntimeVariant,
    watched: BTreeMap<String, Vec<String>>,
    endpoints: Endpoints,
    // Held for its Drop: kills what runs in the namespace and removes it.
    _net: Net,
}

impl Testbed for HostTestbed {
    fn endpoints(&self) -> &Endpoints {
        &self.endpoints
    }

    fn settings_read_back(&mut self) -> Result<BTreeMap<String, BTreeMap<String, String>>> {
        features::snapshot(&self.ns, &self.watched, &self.variant)
    }
}

/// tbench or iperf3 (the run's [`Benchmark`]) inside endpoint `endpoint`'s
/// namespace, over its loopback, then the arm's settings read back there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoopbackBench {
    /// The endpoint it runs in.
    pub endpoint: String,
}

impl Workload for LoopbackBench {
    fn describe(&self) -> String {
        format!(
            "the run's benchmark (tbench in MB/s, iperf3 in Mbit/s) over endpoint {}'s loopback",
            self.endpoint
        )
    }

    fn places(&self) -> Vec<Place> {
        vec![Place::Endpoint(self.endpoint.clone())]
    }

    fn run(&self, bed: &mut dyn Testbed, run: RunSpec<'_>, dir: &Path) -> Result<RunRecord> {
        let Condition::Bench { bench } = run.condition else {
            bail!(
                "a loopback benchmark runs benchmarks, not {}",
                run.condition.describe()
            );
        };
        let ns = Namespace {
            name: bed.endpoints().get(&self.endpoint)?.netns.clone(),
        };
        let started = now_rfc3339();
        let prefix = format!("run{:03}", run.index);
        let outcome = match bench {
            Benchmark::Tbench { clients } => {
                programs::tbench(&ns, clients, run.seconds, dir, &prefix)?
            }
            Benchmark::Iperf3 => programs::iperf3(&ns, run.seconds, dir, &prefix)?,
        };
        let features = bed.settings_read_back()?;
        let metrics = vec![MetricValue::new(bench.metric(), outcome.value)];
        Ok(RunRecord {
            iperf3_client: outcome.iperf3_client,
            host: Some(HostRun {
                netns: ns.name,
                features,
                summary: outcome.summary,
                log: outcome.log,
            }),
            ..run.record(started, metrics)
        })
    }
}
