//! What `cargo xtask size-report` is asked to compare ([`ReportRequest`]), as
//! the command line gives it.

use super::lab::find::LabRuns;
use crate::measure::bloat;

/// What `--symbols` asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SymbolOptions {
    /// bloat-o-meter's mode (`-c`, `-d`, `-t` or none).
    pub mode: bloat::BloatMode,
    /// Fold `.isra.0`/`.constprop.0`/`.part.0`… clones into their base name.
    pub fold_clones: bool,
}

/// Which results to compare.
#[derive(Debug, Clone)]
pub struct ReportRequest {
    /// `--target` spellings (results directory name, or the OpenWrt
    /// `target/subtarget` or an alias its results record, or `all`); empty
    /// means `all`. `all` is every target with a results directory (tiny
    /// profiles included: a report reads what was built rather than
    /// deciding what should have been).
    pub targets: Vec<String>,
    /// The base variant, normally `baseline`.
    pub base: String,
    /// Variants to compare against the base; empty means every variant with
    /// a `result.json` for the target, other than the base, by name.
    pub variants: Vec<String>,
    /// Compute symbol diffs of the vmlinux pairs.
    pub symbols: Option<SymbolOptions>,
    /// `--by file|dir`: vmlinux's bytes by object or directory, from each
    /// result's `attribution.json`.
    pub by: Option<crate::measure::linkmap::Grouping>,
    /// `--devices PATTERN`: device fit for the devices matching it (a
    /// glob with `*`/`?`, else a substring; `*` for all).
    pub devices: Option<String>,
    /// `--rootfs FILE` as read: with `devices`, size each device's whole
    /// images with this rootfs.
    pub rootfs: Option<super::device_fit::images::RootfsSummary>,
    /// Compare builds that differ in more than the variant, with warnings.
    pub allow_mismatch: bool,
    /// `--agreement`: the two lab runs shown ([`LabRuns::Dirs`]) cell by
    /// cell ([`super::lab::agreement`]), after the report.
    pub agreement: bool,
    /// Which runtime lab runs to show (default: the newest complete one of
    /// each target the report covers).
    pub lab: LabRuns,
}
