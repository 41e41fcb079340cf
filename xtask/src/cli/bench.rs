//! The `bench` subcommands' command line: the build benchmark, and the
//! patch-engine benchmark also reachable as `patches bench`.

use std::path::PathBuf;

use clap::Subcommand;
use xtask::build::bench::{BuildBenchRequest, Step, DEFAULT_PATCH_VARIANT};

use super::default_jobs;
use super::patches::BenchArgs;

/// The `bench` subcommands.
#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Time the build pipeline on one target, in target/xtask/bench/ (never
    /// your results or build directories): overhead against the same raw
    /// make, ccache cold vs warm, a patch-only variant's cost against a full
    /// build, and distcc through a distccd on 127.0.0.1; prints a table
    /// with the goals of issue #11.
    Build(BuildBenchArgs),
    /// The patch-engine benchmark (the same as `patches bench`).
    Patches(BenchArgs),
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
    pub skip: Vec<Step>,
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
