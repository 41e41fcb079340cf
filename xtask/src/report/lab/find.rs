//! Which lab runs a size report shows.
//!
//! `cargo xtask lab` writes each run to
//! `target/xtask/lab/<target>/<started>-<pid>/lab.json`. By default a
//! report shows, for each target it covers, the newest run (by `started`)
//! whose status is `complete`; newer runs that are still going, failed or
//! cannot be read are named in a note. `--lab-run DIR` (repeatable) shows
//! exactly the runs in those directories, whatever their status, each once.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::results::lab::{self, LabRecord};
use crate::util::layout::Layout;

/// Which lab runs a report shows.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum LabRuns {
    /// The newest complete run of each target the report covers.
    #[default]
    Newest,
    /// The runs in these directories (each holding `lab.json`).
    Dirs(Vec<PathBuf>),
    /// None (`--no-lab`): sizes only.
    Off,
}

/// A lab run found for a report.
#[derive(Debug, Clone)]
pub struct Found {
    /// Its directory.
    pub dir: PathBuf,
    /// Its `lab.json`.
    pub record: LabRecord,
}

impl Found {
    /// Whether this run measured `target`: its router target
    /// (`brcm47xx`) or its lab kernel's (`brcm47xx-lab`).
    pub fn covers(&self, target: &str) -> bool {
        self.record.target == target || self.record.lab_target == target
    }
}

/// `target/xtask/lab/`.
pub fn lab_root(layout: &Layout) -> PathBuf {
    layout.work_dir().join("lab")
}

/// Subdirectories of `dir` by name, hidden ones left out; none when `dir`
/// does not exist.
fn subdirectories(dir: &Path) -> Result<Vec<String>> {
    let mut names = Vec::new();
    if !dir.is_dir() {
        return Ok(names);
    }
    for entry in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let path = entry
            .with_context(|| format!("reading {}", dir.display()))?
            .path();
        if let Some(name) = path.file_name().and_then(|n| n.to_str()) {
            if path.is_dir() && !name.starts_with('.') {
                names.push(name.to_string());
            }
        }
    }
    names.sort();
    Ok(names)
}

/// The run directories of `target` (those with a `lab.json`), oldest
/// first by name (`<started>-<pid>`).
fn runs_of(layout: &Layout, target: &str) -> Result<Vec<PathBuf>> {
    let dir = lab_root(layout).join(target);
    Ok(subdirectories(&dir)?
        .into_iter()
        .map(|n| dir.join(n))
        .filter(|d| d.join(lab::FILE_NAME).is_file())
        .collect())
}

/// Targets with at least one lab run, by name (the lab's own caches under
/// `target/xtask/lab/` hold no `lab.json` and are left out).
pub fn targets_with_runs(layout: &Layout) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for name in subdirectories(&lab_root(layout))? {
        if !runs_of(layout, &name)?.is_empty() {
            out.push(name);
        }
    }
    Ok(out)
}

/// Reads `dir/lab.json` of any schema this xtask knows
/// ([`crate::results::lab::schema`]; one it does not know, a newer xtask's,
/// is an error naming the file), checking its runs ([`lab::check`]): a
/// record with problems is an error naming them.
pub fn read(dir: &Path) -> Result<LabRecord> {
    let record = LabRecord::read(dir)?;
    lab::check::check(&record).refuse(&record, &dir.join(lab::FILE_NAME))?;
    Ok(record)
}

/// The newest complete run of `target`, if any; newer runs passed over are
/// described in `notes`.
pub fn newest(layout: &Layout, target: &str, notes: &mut Vec<String>) -> Result<Option<Found>> {
    let mut candidates: Vec<(String, PathBuf, Result<LabRecord>)> = runs_of(layout, target)?
        .into_iter()
        .map(|d| {
            let r = read(&d);
            let started = r.as_ref().map_or(String::new(), |r| r.started.clone());
            (started, d, r)
        })
        .collect();
    // Newest first: by start time, then by directory name.
    candidates.sort_by(|a, b| (&b.0, &b.1).cmp(&(&a.0, &a.1)));
    for (_, dir, record) in candidates {
        let shown = layout_relative(layout, &dir);
        match record {
            Ok(r) if r.status.is_complete() => return Ok(Some(Found { dir, record: r })),
            Ok(r) => notes.push(format!(
                "{target}: lab run {shown} passed over, its status is {:?}{} (show it with --lab-run {shown})",
                r.status.to_string(),
                if r.status.lab_alive() == Some(false) {
                    ", but its lab no longer runs (killed before it finished)"
                } else {
                    ""
                }
            )),
            Err(e) => notes.push(format!("{target}: lab run {shown} passed over: {e:#}")),
        }
    }
    Ok(None)
}

/// The lab runs `runs` asks for: `Newest` of each of `targets`, or the
/// given directories, each once however often it is named. Notes go to
/// `notes`.
pub fn select(
    layout: &Layout,
    runs: &LabRuns,
    targets: &[String],
    notes: &mut Vec<String>,
) -> Result<Vec<Found>> {
    match runs {
        LabRuns::Off => Ok(Vec::new()),
        LabRuns::Newest => {
            let mut found = Vec::new();
            for t in targets {
                if let Some(f) = newest(layout, t, notes)? {
                    found.push(f);
                }
            }
            Ok(found)
        }
        LabRuns::Dirs(dirs) => {
            let mut found: Vec<Found> = Vec::new();
            let mut seen = Vec::new();
            for d in dirs {
                // The file itself names its directory too.
                let dir = match d.parent() {
                    Some(p) if d.file_name().is_some_and(|n| n == lab::FILE_NAME) => {
                        p.to_path_buf()
                    }
                    _ => d.clone(),
                };
                // A run named twice (`--lab-run X --lab-run X/lab.json`,
                // `X/.`) is shown once.
                let same = dir.canonicalize().unwrap_or_else(|_| dir.clone());
                if seen.contains(&same) {
                    continue;
                }
                seen.push(same);
                let record = read(&dir).with_context(|| format!("--lab-run {}", d.display()))?;
                found.push(Found { dir, record });
            }
            Ok(found)
        }
    }
}

/// Notes for arms whose lab kernel's results in this workspace
/// (`target/xtask/results/<target>-lab/<variant>/`) are not the image the
/// run booted (rebuilt since): their sizes do not describe the measured
/// kernel. Results that are missing or unreadable say nothing.
pub fn rebuilt_since(layout: &Layout, found: &Found) -> Vec<String> {
    let mut notes = Vec::new();
    for arm in found.record.arms.iter().filter(|a| !a.control) {
        let Some(kernel) = &arm.kernel else {
            continue;
        };
        let dir = layout.results_dir(&found.record.lab_target, &arm.variant);
        let Ok(result) = crate::results::BuildResult::read(&dir) else {
            continue;
        };
        let image = kernel
            .image
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("");
        if let Some(a) = result.artifacts.get(image) {
            if a.sha256 != kernel.image_sha256 {
                notes.push(format!(
                    "{}/{} was rebuilt after this lab run: its {image} is not the one the lab booted (sha256 {} → {}), so its sizes do not describe the measured kernel",
                    found.record.lab_target,
                    arm.variant,
                    short(&kernel.image_sha256),
                    short(&a.sha256)
                ));
            }
        }
    }
    notes
}

fn short(sha: &str) -> &str {
    crate::util::text::prefix(sha, 12)
}

/// `path` relative to the workspace root when it is inside it.
pub fn layout_relative(layout: &Layout, path: &Path) -> String {
    path.strip_prefix(layout.root())
        .unwrap_or(path)
        .display()
        .to_string()
}
