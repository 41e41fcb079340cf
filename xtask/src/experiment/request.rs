//! What `cargo xtask experiment` is asked ([`ExperimentRequest`]): the file, the
//! `-j` budget, whether it runs or prints its plan ([`Run`]), and whether
//! labs an earlier run started are continued ([`EarlierLabs`]).

use std::path::PathBuf;

/// Whether the experiment runs or only prints its plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Run {
    /// Build, run the labs, write the report.
    All,
    /// Print the plan and an estimate of the time (`--dry-run`).
    DryRun,
}

/// Whether labs an earlier run of the experiment started are continued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EarlierLabs {
    /// Continue them: complete ones kept, interrupted ones taken over.
    Resume,
    /// Start every lab anew (`--fresh`); the old ones stay on disk.
    Fresh,
}

/// What `cargo xtask experiment` was asked.
#[derive(Debug, Clone)]
pub struct ExperimentRequest {
    /// The experiment file.
    pub file: PathBuf,
    /// The `-j` budget the builds share (and each lab kernel's make).
    pub jobs: usize,
    /// Run, or print the plan.
    pub run: Run,
    /// Resume or start the labs anew.
    pub labs: EarlierLabs,
}
