//! `cargo xtask experiment`'s flags.

use std::path::PathBuf;

use super::build::default_jobs;

/// `cargo xtask experiment FILE`.
#[derive(Debug, clap::Args)]
pub struct ExperimentArgs {
    /// The experiment file (experiments/flags.toml).
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// Print the plan (builds and which are up to date, labs, report) and
    /// an estimate of the time; build and run nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Start every lab anew instead of continuing the labs an interrupted
    /// run of this experiment left (they stay on disk).
    #[arg(long)]
    pub fresh: bool,
    /// Parallel compile jobs shared by all builds; default: number of CPUs.
    #[arg(long, short = 'j', value_name = "N", value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub jobs: Option<usize>,
}

impl ExperimentArgs {
    /// The library's request.
    pub fn request(self) -> xtask::experiment::ExperimentRequest {
        use xtask::experiment::{EarlierLabs, ExperimentRequest, Run};
        ExperimentRequest {
            file: self.file,
            jobs: self.jobs.unwrap_or_else(default_jobs),
            run: if self.dry_run { Run::DryRun } else { Run::All },
            labs: if self.fresh {
                EarlierLabs::Fresh
            } else {
                EarlierLabs::Resume
            },
        }
    }
}
