//! The whole report, as every renderer reads it: a [`Report`] holds one
//! [`TargetReport`] per target, each with one [`Comparison`] per variant,
//! whose numbers are the model's families ([`super::model`]).

use std::path::{Path, PathBuf};

use super::model::{Family, Metric};
use super::request::SymbolOptions;
use crate::measure::bloat::BloatDiff;
use crate::results::BuildResult;

/// One base → variant comparison of one target.
#[derive(Debug, Clone)]
pub struct Comparison {
    /// The variant's `result.json`.
    pub variant: BuildResult,
    /// The variant's results directory.
    pub dir: PathBuf,
    /// The numbers compared, by family; sizes ([`super::sizes`]) first.
    pub families: Vec<Family>,
    /// Artifacts only one side has: (file name, variant that has it).
    pub unpaired_artifacts: Vec<(String, String)>,
    /// Differences that make the builds not comparable, reported because
    /// `allow_mismatch` was set (otherwise loading fails). Each is a
    /// sentence naming both values.
    pub warnings: Vec<String>,
    /// Expected differences worth a line (a config changed by the
    /// variant's kconfig lines).
    pub notes: Vec<String>,
    /// The symbol diff base vmlinux → variant vmlinux, when requested.
    pub symbols: Option<BloatDiff>,
    /// Bytes by object file or directory, with `--by`.
    pub attribution: Option<super::attribution::AttributionDiff>,
    /// Every device's image against its limit, with `--devices`.
    pub device_fit: Option<super::device_fit::DeviceFitDiff>,
}

impl Comparison {
    /// The family called `name`, if this comparison has it.
    pub fn family(&self, name: &str) -> Option<&Family> {
        self.families.iter().find(|f| f.name == name)
    }
}

/// One table row of a target: a metric as the first comparison that has
/// it describes it (its base samples are every comparison's), and the same
/// metric in each comparison, `None` where a comparison lacks it.
#[derive(Debug, Clone)]
pub struct Row<'a> {
    /// The metric's family.
    pub family: &'a Family,
    /// The metric where first seen: label, base value.
    pub metric: &'a Metric,
    /// One per comparison, in order.
    pub cells: Vec<Option<&'a Metric>>,
}

/// All comparisons of one target against its base build.
#[derive(Debug, Clone)]
pub struct TargetReport {
    /// Target name (its results directory under `target/xtask/results/`).
    pub name: String,
    /// The base build's `result.json`.
    pub base: BuildResult,
    /// The base build's results directory.
    pub base_dir: PathBuf,
    /// One per variant, in the order asked for (default: by name).
    pub comparisons: Vec<Comparison>,
}

impl TargetReport {
    /// Every metric of any comparison once, as table rows: families in
    /// first-seen order, within a family the kinds in first-seen order,
    /// within a kind the items in first-seen order.
    pub fn rows(&self) -> Vec<Row<'_>> {
        let mut keys: Vec<(&str, &str, &str)> = Vec::new();
        let mut families: Vec<&str> = Vec::new();
        for c in &self.comparisons {
            for f in &c.families {
                if !families.contains(&f.name.as_str()) {
                    families.push(&f.name);
                }
            }
        }
        for family in families {
            let mut kinds: Vec<&str> = Vec::new();
            for f in self.comparisons.iter().filter_map(|c| c.family(family)) {
                for m in &f.metrics {
                    if !kinds.contains(&m.kind.as_str()) {
                        kinds.push(&m.kind);
                    }
                }
            }
            for kind in kinds {
                for f in self.comparisons.iter().filter_map(|c| c.family(family)) {
                    for m in f.metrics.iter().filter(|m| m.kind == kind) {
                        if !keys.contains(&(family, kind, m.item.as_str())) {
                            keys.push((family, kind, &m.item));
                        }
                    }
                }
            }
        }
        fn find<'c>(
            c: &'c Comparison,
            (family, kind, item): (&str, &str, &str),
        ) -> Option<(&'c Family, &'c Metric)> {
            let f = c.family(family)?;
            let m = f
                .metrics
                .iter()
                .find(|m| m.kind == kind && m.item == item)?;
            Some((f, m))
        }
        let mut rows = Vec::new();
        for key in keys {
            let cells: Vec<Option<(&Family, &Metric)>> =
                self.comparisons.iter().map(|c| find(c, key)).collect();
            if let Some((family, metric)) = cells.iter().flatten().next().copied() {
                rows.push(Row {
                    family,
                    metric,
                    cells: cells.iter().map(|c| c.map(|(_, m)| m)).collect(),
                });
            }
        }
        rows
    }
}

/// Everything a report shows.
#[derive(Debug, Clone)]
pub struct Report {
    /// The base variant's name.
    pub base: String,
    /// Workspace root; results paths are shown relative to it.
    pub root: PathBuf,
    /// One per target, in the order asked for (`all`: by name).
    pub targets: Vec<TargetReport>,
    /// Under `all`: targets or variants left out for lack of results, each a
    /// sentence with the command that builds them.
    pub skipped: Vec<String>,
    /// Whether (and how) symbol diffs were computed.
    pub symbols: Option<SymbolOptions>,
    /// `--by`'s grouping, when asked for.
    pub by: Option<crate::measure::linkmap::Grouping>,
    /// The runtime lab's runs ([`super::lab`]), after the size targets.
    pub labs: Vec<super::lab::LabReport>,
    /// `--agreement`: the two lab runs cell by cell, after them.
    pub agreement: Option<super::lab::agreement::Agreement>,
}

impl Report {
    /// `path` relative to the workspace root when it is inside it.
    pub fn display_path(&self, path: &Path) -> String {
        super::style::display_path(&self.root, path)
    }
}
