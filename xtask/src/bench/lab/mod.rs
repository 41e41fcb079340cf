//! `cargo xtask bench lab`: how fast the runtime lab is on this machine,
//! from one short lab run, against the lab's speed goals:
//!
//! * **boot to ready**: wall seconds from starting QEMU to the router's
//!   READY line, per boot (`boot_seconds` in `lab.json`'s boots), against
//!   [`report::BOOT_GOAL_SECONDS`];
//! * **per-run overhead**: each run's wall time (`wall_seconds`, the
//!   runner's clock around the whole run: GRO switch, iperf3 server start,
//!   the guest's samples before and after, the cache model's reads with
//!   `--cache-model`, the iperf3 client, the server's exit, the reports)
//!   minus its iperf3 duration, against
//!   [`report::OVERHEAD_GOAL_SECONDS`], and step by step (`wall_steps`).
//!
//! It runs the lab's own flow ([`super::orchestrate::run`] with the QEMU
//! lab's backend, [`super::qemu_lab::QemuBackend`]) on the variant's
//! lab kernel as an earlier `lab` built it ([`super::kernel::built`]; it
//! builds nothing), with the cached initramfs, one boot per round, the
//! lab's default plan in each (a warm-up, then each direction with GRO on
//! and off, so that every run switches GRO) and no A/A control. Its lab directory is
//! `target/xtask/bench/lab/<target>/<started>-<pid>/` (emptied at the next
//! start, and by `bench build`, which shares `target/xtask/bench/`), never
//! the lab's own `target/xtask/lab/`, so the size report never reads it.
//! The machine's load average is read before and after and printed with
//! the figures.
//!
//! With `--cache-model` it runs the same plan twice, first without the
//! model, then with it, and prints what the plugin costs ([`slowdown`]);
//! the figures and goals are those of the run with the model.
//!
//! With `--cpus N` it then runs the plan again on N CPUs (multi-threaded
//! TCG, the target's packet steering) and prints the two side by side
//! with the goal on a multi-CPU run's wall time ([`slowdown::MultiCore`]).

pub mod report;
pub mod slowdown;
pub mod spread;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use xshell::Shell;

use crate::inputs::{targets, variants};
use crate::kernel_build::BuildOptions;
use crate::lab::host_tools::check_host_tools;
use crate::lab::orchestrate::{self, Control, LabPlan, Mode};
use crate::lab::qemu_lab::{CacheModelChoice, Kernels, QemuBackend};
use crate::lab::request::LabRequest;
use crate::lab::{forwarding, kernel, net, rootfs, topology};
use crate::results;
use crate::util::fs::write_atomic;
use crate::util::hash::sha256_file;
use crate::util::layout::Layout;
use crate::util::lock::{Lock, Wait};
use report::{LabBenchReport, LabFigures, Load};
use slowdown::{MultiCore, Slowdown};

/// What `bench lab` was asked for.
#[derive(Debug, Clone)]
pub struct LabBenchRequest {
    /// `--target`: a target with a `[lab]` table.
    pub target: String,
    /// `--variant`: the lab kernel booted (built earlier).
    pub variant: String,
    /// `--runs`: boots; each boot runs a warm-up and one run per direction
    /// and GRO setting (the lab's default plan, `--gro both`).
    pub runs: u32,
    /// `--duration`: iperf3 seconds per run.
    pub duration_seconds: u32,
    /// `--cache-model`: load the cache model into every boot, after the
    /// same plan without it ([`slowdown`]).
    pub cache_model: bool,
    /// `--cpus N` (2 to 4): after the plan on one CPU, run it on N CPUs
    /// with the target's packet steering and print the two side by side
    /// ([`slowdown::MultiCore`]); the figures and goals are the one-CPU
    /// run's.
    pub cpus: Option<u32>,
    /// `--json FILE`: the numbers, written atomically.
    pub json: Option<PathBuf>,
}

/// The benchmark's lab directories: `target/xtask/bench/lab/`.
pub fn work_dir(layout: &Layout) -> PathBuf {
    crate::bench::build::work_dir(layout).join("lab")
}

/// Runs the benchmark (see the module docs), prints the table on stdout,
/// writes `--json`, and returns the report. A goal missed is not an error.
///
/// Errors: no lab kernel of the variant built, a missing host tool,
/// another benchmark running, the lab failing.
pub fn run(sh: &Shell, layout: &Layout, request: &LabBenchRequest) -> Result<LabBenchReport> {
    anyhow::ensure!(
        request.runs >= 1 && request.duration_seconds >= 1,
        "--runs and --duration must be at least 1"
    );
    let all_targets = targets::load_all(&layout.targets_dir())?;
    let target = targets::select(&all_targets, std::slice::from_ref(&request.target))?.remove(0);
    let spec = kernel::spec_of(&target)?.clone();
    let all_variants = variants::load(&layout.variants_file(), &layout.patches_dir())?;
    let variant =
        variants::select(&all_variants, std::slice::from_ref(&request.variant))?.remove(0);
    check_host_tools(&spec)?;
    rootfs::check(&spec)?;
    let lab_kernel = kernel::built(layout, &target, &variant)?;
    let bench_root = crate::bench::build::work_dir(layout);
    std::fs::create_dir_all(&bench_root)
        .with_context(|| format!("creating {}", bench_root.display()))?;
    let _bench = Lock::acquire(
        &bench_root.join("bench.lock"),
        &format!("the benchmarks' directory {}", bench_root.display()),
        Wait::No,
    )?;
    let work = work_dir(layout);
    if work.exists() {
        std::fs::remove_dir_all(&work).with_context(|| format!("emptying {}", work.display()))?;
    }
    net::start_clean("bench")?;
    let mut lab_request = LabRequest::qemu(&target.name);
    lab_request.variants = vec![variant.name.clone()];
    lab_request.runs = request.runs;
    lab_request.duration_seconds = request.duration_seconds;
    lab_request.control = false;
    lab_request.build = BuildOptions::with_jobs(1);
    lab_request.cache_model = request.cache_model;
    let topology = topology::named(&topology::Name::NatRouter)?;
    let bench_layout = layout.with_work_dir(&bench_root);
    let image_sha256 = sha256_file(&lab_kernel.image)?;
    let load_before = load_average()?;
    if let Some(n) = request.cpus {
        anyhow::ensure!(
            n > 1,
            "--cpus {n}: give the CPUs to compare with one (2 to {})",
            crate::inputs::steering::MAX_CPUS
        );
        spec.with_cpus(Some(n)).context("--cpus")?;
    }
    let run_once = |choice: CacheModelChoice, cpus: u32| -> Result<PathBuf> {
        let lab_spec = spec.with_cpus(Some(cpus))?;
        let mut topology = topology.clone();
        let steering = if cpus > 1 {
            let s = crate::lab::steering::attach(&target, &lab_spec, None, None, &mut topology)?;
            format!(", packet steering {}", s.describe())
        } else {
            String::new()
        };
        let mut lab_request = lab_request.clone();
        lab_request.cpus = Some(cpus);
        lab_request.labs_at_once = 1;
        lab_request.routers = None;
        lab_request.cache_model = choice == CacheModelChoice::Load;
        let plan = LabPlan {
            target: target.name.clone(),
            machine: format!(
                "QEMU {} -cpu {} -smp {cpus}{steering}",
                spec.machine, spec.cpu
            ),
            topology: Some(topology.clone()),
            places: (Vec::new(), Vec::new()),
            workload: Box::new(forwarding::Forwarding::lan_to_wan()),
            reference: None,
            variants: vec![variant.name.clone()],
            control: Control::Without,
            schedule: forwarding::plan(&lab_request),
            settings: forwarding::settings(&lab_request, &variant.name),
        };
        eprintln!(
            "== bench: {} boots of {} {} ({}) on {cpus} CPU(s){steering}, {} runs of {} s each (a warm-up, then both directions with GRO on and off, as the lab runs them), {}, in {}",
            request.runs,
            target.name,
            variant.name,
            lab_kernel.image.display(),
            request.runs * 5,
            request.duration_seconds,
            match choice {
                CacheModelChoice::Load => "with the cache model",
                CacheModelChoice::Off => "without the cache model",
            },
            work_dir(layout).join(&target.name).display()
        );
        let mut backend = QemuBackend::new(
            (sh, layout),
            target.clone(),
            topology.clone(),
            Kernels::Built(vec![lab_kernel.clone()]),
            choice,
        )?
        .with_cpus(Some(cpus))?;
        orchestrate::run(&bench_layout, &plan, &mut backend, Mode::Run)?
            .context("the lab benchmark ran nothing")
    };
    let without = if request.cache_model {
        Some(results::lab::LabRecord::read(&run_once(
            CacheModelChoice::Off,
            1,
        )?)?)
    } else {
        None
    };
    let choice = if request.cache_model {
        CacheModelChoice::Load
    } else {
        CacheModelChoice::Off
    };
    let dir = run_once(choice, 1)?;
    let record = results::lab::LabRecord::read(&dir)?;
    let multicore = match request.cpus {
        Some(n) => {
            let many = results::lab::LabRecord::read(&run_once(choice, n)?)?;
            Some(MultiCore::new(&record, &many)?)
        }
        None => None,
    };
    let load_after = load_average()?;
    let slowdown = without.map(|w| Slowdown::new(&w, &record)).transpose()?;
    let report = LabBenchReport {
        schema: report::SCHEMA,
        target: target.name.clone(),
        variant: variant.name.clone(),
        machine: format!("{} {}", spec.machine, spec.cpu),
        image_sha256,
        started: record.started.clone(),
        lab_dir: dir,
        load: Load {
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
            before: load_before,
            after: load_after,
        },
        figures: LabFigures::from_record(&record)?,
        model_slowdown: slowdown,
        multicore,
    };
    print!("{}", report.render());
    if let Some(file) = &request.json {
        write_json(file, &report)?;
    }
    Ok(report)
}

/// This machine's 1, 5 and 15 minute load averages (`/proc/loadavg`).
fn load_average() -> Result<[f64; 3]> {
    let text = std::fs::read_to_string("/proc/loadavg").context("reading /proc/loadavg")?;
    Load::parse(&text).with_context(|| format!("/proc/loadavg: unexpected {text:?}"))
}

fn write_json(file: &Path, report: &LabBenchReport) -> Result<()> {
    let mut text = serde_json::to_string_pretty(&report.to_json())?;
    text.push('\n');
    write_atomic(file, text.as_bytes())?;
    eprintln!("bench: numbers in {}", file.display());
    Ok(())
}
