//! A rebase's record (`state.json`, [`RebaseState`]): each patch's
//! [`Class`] on the new kernel and what became of it ([`PatchResult`]).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// How a patch fared on the new kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Class {
    /// Applies exactly where it says.
    Clean,
    /// Applies at an offset, no fuzz.
    Offset,
    /// Applies with fuzz.
    Fuzz,
    /// Already in the new kernel (reverse-applies).
    Upstream,
    /// Does not apply either way.
    Conflict,
}

impl Class {
    /// Lowercase name, as in the table and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Class::Clean => "clean",
            Class::Offset => "offset",
            Class::Fuzz => "fuzz",
            Class::Upstream => "upstream",
            Class::Conflict => "conflict",
        }
    }
}

/// One patch's outcome.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PatchResult {
    /// Name in the new series, relative to `patches/`.
    pub name: String,
    /// Its class.
    pub class: Class,
    /// The patch file was rewritten by a refresh.
    pub refreshed: bool,
    /// The patch file was removed from the new series (upstream, skipped).
    pub removed: bool,
    /// Reject files (relative to the work tree, or saved copies).
    pub rejects: Vec<String>,
    /// Free text: GNU-style hunk messages, "resolved by hand", "skipped".
    pub note: String,
}

/// Everything needed to resume a rebase.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RebaseState {
    /// Old kernel series (`6.6`).
    pub from: String,
    /// New kernel series (`6.12`).
    pub to: String,
    /// Target file name, if any.
    pub target: Option<String>,
    /// Fuzz allowed.
    pub fuzz: usize,
    /// Classify everything without stopping.
    pub keep_going: bool,
    /// The new series directories and whether each existed at the start.
    pub dirs: Vec<(PathBuf, bool)>,
    /// Patches still to process, in order.
    pub pending: Vec<String>,
    /// Results so far, in order.
    pub results: Vec<PatchResult>,
    /// The conflicting patch the rebase stopped at.
    pub stopped_at: Option<String>,
    /// Patches copied that already existed in the new directories (kept).
    pub kept_existing: Vec<String>,
}
