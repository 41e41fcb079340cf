//! The `bench` subcommands' command line: the build benchmark, the lab
//! benchmark, the lab verdict's calibration, and the patch-engine
//! benchmark.

use std::path::PathBuf;

use clap::Subcommand;
use xtask::bench::build::{BenchStep, BuildBenchRequest, DEFAULT_PATCH_VARIANT};
use xtask::bench::lab::LabBenchRequest;
use xtask::bench::symbols::SymbolsBenchRequest;

use super::build::default_jobs;
use xtask::bench::patches::BenchOptions;

/// The `bench` subcommands.
#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Time the build pipeline on one target, in target/xtask/bench/ (never
    /// your results or build directories): overhead against the same raw
    /// make, ccache cold vs warm, a patch-only variant's cost against a full
    /// build, and distcc through a distccd on 127.0.0.1; prints a table
    /// with the goals (overhead at most 2 %, the same vmlinux as raw make,
    /// a patch-only variant at most 15 % of a full build, distcc compiling
    /// remotely to the same vmlinux).
    Build(BuildBenchArgs),
    /// Time `size-report --symbols` (this workbench's whole process)
    /// against the kernel's scripts/bloat-o-meter on one target's base →
    /// variant vmlinux pair, building the pair first when its results are
    /// missing; prints the medians and the ratio (the goal: ≥ 10× faster).
    Symbols(SymbolsBenchArgs),
    /// Time pushing a generated series of real-sized patches with this
    /// engine, a GNU patch loop and quilt push -a on identical copies of a
    /// kernel tree.
    Patches(PatchesBenchArgs),
    /// Time the QEMU router lab on one target, in target/xtask/bench/lab/
    /// (never your lab runs): boot to ready and each run's wall time
    /// beyond its iperf3 duration, step by step, with the machine's load
    /// average; prints a table with the goals (boot to ready within 20 s,
    /// at most 1 s per run beyond its iperf3 duration). Boots the lab
    /// kernel an earlier `lab` built (it builds nothing).
    Lab(LabBenchArgs),
    /// The lab verdict's calibration: how often A/A comparisons (both
    /// sides from one distribution) are called significant at 4, 10 and
    /// 20 runs per side, from known distributions and from the A/A runs
    /// of `--lab-run` directories, and how often a known shift is found.
    /// Seeded: the same request prints the same table.
    Verdicts(VerdictBenchArgs),
}

/// `bench verdicts`.
#[derive(Debug, clap::Args)]
pub struct VerdictBenchArgs {
    /// Comparisons drawn per cell of the tables.
    #[arg(long, default_value_t = 2000, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub trials: u32,
    /// A lab run (its directory or lab.json) whose base and A/A control
    /// runs are resampled too; repeatable.
    #[arg(long = "lab-run", value_name = "DIR")]
    pub lab_runs: Vec<PathBuf>,
}

impl VerdictBenchArgs {
    /// The library's request.
    pub fn request(self) -> xtask::report::lab::calibrate::VerdictBenchRequest {
        xtask::report::lab::calibrate::VerdictBenchRequest {
            trials: self.trials as usize,
            lab_runs: self.lab_runs,
        }
    }
}

/// `bench lab`.
#[derive(Debug, clap::Args)]
pub struct LabBenchArgs {
    /// A target with a [lab] table (brcm47xx: Malta, 74Kf).
    #[arg(long, short = 't', value_name = "TARGET")]
    pub target: String,
    /// The variant whose lab kernel boots (built earlier, e.g. by
    /// `cargo xtask lab --target T --build-only`).
    #[arg(long, value_name = "NAME", default_value = xtask::inputs::variants::BASELINE)]
    pub variant: String,
    /// Boots; each runs a warm-up, then each direction with GRO on and
    /// off (the lab's default plan).
    #[arg(long, default_value_t = 3, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub runs: u32,
    /// iperf3 seconds per run.
    #[arg(long, default_value_t = 2, value_name = "SECONDS", value_parser = clap::value_parser!(u32).range(1..=3600))]
    pub duration: u32,
    /// Load the cache model into every boot (its reads then count in the
    /// overhead), after running the same plan without it: prints the
    /// model's slowdown (boot, run wall time, Mbit/s, packets forwarded
    /// per second) beside the figures.
    #[arg(long)]
    pub cache_model: bool,
    /// Then run the same plan on N CPUs (multi-threaded TCG, the target's
    /// packet steering) and print one CPU beside N, with the goal that a
    /// run's wall time grows at most 1.5× (docs/lab-multicore.md).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(2..=4))]
    pub cpus: Option<u32>,
    /// Also write the numbers and goals as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

impl LabBenchArgs {
    /// The library's request.
    pub fn request(self) -> LabBenchRequest {
        LabBenchRequest {
            target: self.target,
            variant: self.variant,
            runs: self.runs,
            duration_seconds: self.duration,
            cache_model: self.cache_model,
            cpus: self.cpus,
            json: self.json,
        }
    }
}

/// `bench build`.
#[derive(Debug, clap::Args)]
pub struct BuildBenchArgs {
    /// The target (one; arm-tiny for a quick run, a router target for the
    /// real numbers).
    #[arg(long, short = 't', value_name = "TARGET")]
    pub target: String,
    /// The base variant.
    #[arg(long, value_name = "NAME", default_value = xtask::inputs::variants::BASELINE)]
    pub variant: String,
    /// The patch-only variant: the base's flags and kconfig plus patches.
    #[arg(long, value_name = "NAME", default_value = DEFAULT_PATCH_VARIANT)]
    pub patch_variant: String,
    /// Parallel compile jobs of every build, raw make included; default:
    /// number of CPUs.
    #[arg(long, short = 'j', value_name = "N", value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub jobs: Option<usize>,
    /// Stream make's output instead of progress lines.
    #[arg(long, short = 'v')]
    pub verbose: bool,
    /// Also write the numbers and goals as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Leave out steps (comma-separated or repeated): `ccache` (cold and
    /// warm), `distcc`. The overhead and patch-only steps always run.
    #[arg(long, value_name = "STEP", value_delimiter = ',')]
    pub skip: Vec<BenchStep>,
}

impl BuildBenchArgs {
    /// The library's request.
    pub fn request(self) -> BuildBenchRequest {
        BuildBenchRequest {
            target: self.target,
            base: self.variant,
            patch_variant: self.patch_variant,
            jobs: self.jobs.unwrap_or_else(default_jobs),
            verbose: self.verbose,
            json: self.json,
            skip: self.skip,
        }
    }
}

/// `bench symbols`.
#[derive(Debug, clap::Args)]
pub struct SymbolsBenchArgs {
    /// The target whose pair is diffed.
    #[arg(long, short = 't', value_name = "TARGET", default_value = "bcm53xx")]
    pub target: String,
    /// The old side.
    #[arg(long, value_name = "NAME", default_value = xtask::inputs::variants::BASELINE)]
    pub base: String,
    /// The new side.
    #[arg(long, value_name = "NAME", default_value = "no-reorder-blocks")]
    pub variant: String,
    /// Timed rounds, each one run of either command, after one untimed
    /// round (the medians count).
    #[arg(long, default_value_t = 15, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub runs: u32,
    /// Parallel compile jobs if the pair must be built first; default:
    /// number of CPUs.
    #[arg(long, short = 'j', value_name = "N", value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub jobs: Option<usize>,
}

impl SymbolsBenchArgs {
    /// The library's request.
    pub fn request(self) -> SymbolsBenchRequest {
        SymbolsBenchRequest {
            target: self.target,
            base: self.base,
            variant: self.variant,
            runs: self.runs as usize,
            jobs: self.jobs.unwrap_or_else(default_jobs),
        }
    }
}

/// `bench patches` options.
#[derive(Debug, Clone, clap::Args)]
pub struct PatchesBenchArgs {
    /// An unpacked kernel tree (never written; copied with hard links).
    /// Default: the unpacked linux-source-6.12 under target/xtask/pristine/.
    #[arg(long, value_name = "DIR")]
    pub kernel_src: Option<PathBuf>,
    /// Patches in the series.
    #[arg(long, default_value_t = 300)]
    pub patches: usize,
    /// Seed of the generator.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Skip the quilt run.
    #[arg(long)]
    pub no_quilt: bool,
    /// Skip the rebase run.
    #[arg(long)]
    pub no_rebase: bool,
}

impl PatchesBenchArgs {
    /// The library's options.
    pub fn options(self) -> BenchOptions {
        BenchOptions {
            kernel_src: self.kernel_src,
            patches: self.patches,
            seed: self.seed,
            no_quilt: self.no_quilt,
            no_rebase: self.no_rebase,
        }
    }
}
