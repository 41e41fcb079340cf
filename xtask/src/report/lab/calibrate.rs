//! `cargo xtask bench verdicts`: the verdict's calibration
//! ([`crate::measure::calibration`]) as a table: how often A/A
//! comparisons are called significant at n = 4, 10 and 20 runs per side
//! (known distributions, and each metric of the lab runs given, whose
//! base and A/A control runs measure the same kernel), and how often a
//! known shift is found. A verdict is only as strong as this shows.
//!
//! ```text
//! A/A comparisons called significant (2000 per cell; at most 5 % is the goal):
//! source                          n = 4    n = 10   n = 20
//! normal, sd 1%                   2.55%    4.30%    3.75%
//! ```

use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::Result;

use super::{find, series::series_of};
use crate::measure::calibration::{known_sources, rate, Floor, Source};
use crate::results::lab::LabRecord;

/// Runs per side the table shows.
pub const NS: [usize; 3] = [4, 10, 20];

/// What `bench verdicts` was asked for.
#[derive(Debug, Clone)]
pub struct VerdictBenchRequest {
    /// Comparisons drawn per cell.
    pub trials: usize,
    /// Lab run directories (or their `lab.json`) whose A/A runs are
    /// resampled too.
    pub lab_runs: Vec<PathBuf>,
}

/// One [`Source::Resampled`] per series of `record` with at least 2
/// values: the base's and the A/A control's values of that metric under
/// that condition, pooled (the base's alone without a control), named
/// `<label> <family>.<item>.<kind>`.
pub fn a_a_sources(record: &LabRecord, label: &str) -> Vec<Source> {
    let base = &record.settings.base;
    let control = record.arms.iter().find(|a| a.control).map(|a| &a.name);
    let mut out = Vec::new();
    for s in series_of(record) {
        let values: Vec<f64> = s
            .arms
            .iter()
            .filter(|(a, _)| a == base || Some(a) == control)
            .flat_map(|(_, v)| v.iter().copied())
            .collect();
        if values.len() >= 2 {
            out.push(Source::Resampled {
                name: format!("{label} {}.{}.{}", s.family, s.item(), s.kind()),
                values,
            });
        }
    }
    out
}

/// The A/A rows: each source's rate at each of [`NS`], no noise floor
/// (the strictest case).
pub fn a_a_table(sources: &[Source], trials: usize) -> String {
    let width = sources
        .iter()
        .map(|s| s.describe().chars().count())
        .max()
        .unwrap_or(0)
        .max(6);
    let mut out = format!(
        "A/A comparisons called significant ({trials} per cell, no noise floor; at most 5 % is the goal):\n{:<width$}  {}\n",
        "source",
        NS.map(|n| format!("{:>8}", format!("n = {n}"))).join(" ")
    );
    for (i, source) in sources.iter().enumerate() {
        let cells: Vec<String> = NS
            .iter()
            .map(|&n| {
                let r = rate(source, n, 0.0, Floor::None, trials, 1000 + i as u64);
                format!("{:>7.2}%", r.fraction() * 100.0)
            })
            .collect();
        let _ = writeln!(out, "{:<width$}  {}", source.describe(), cells.join(" "));
    }
    out
}

/// The power rows: normal runs with sd 1 % of the mean, the variant
/// shifted by 1 % and 2 % (1 and 2 sd), without a floor and against an
/// A/A control's.
pub fn power_table(trials: usize) -> String {
    let source = Source::Normal { sd: 1.0 };
    let mut out = format!(
        "A known shift found ({trials} per cell; {}):\n{:<32}  {}\n",
        source.describe(),
        "shift",
        NS.map(|n| format!("{:>8}", format!("n = {n}"))).join(" ")
    );
    for shift in [1.0, 2.0] {
        for (floor, words) in [
            (Floor::None, "no noise floor"),
            (Floor::Control, "above an A/A control"),
        ] {
            let cells: Vec<String> = NS
                .iter()
                .map(|&n| {
                    let r = rate(&source, n, shift, floor, trials, 7);
                    format!("{:>7.1}%", r.fraction() * 100.0)
                })
                .collect();
            let label = format!("+{shift}% ({shift} sd), {words}");
            let _ = writeln!(out, "{label:<32}  {}", cells.join(" "));
        }
    }
    out
}

/// Prints both tables on stdout: the known sources and every lab run's
/// A/A sources, then the power rows. Errors when a lab run cannot be read
/// (its checks included).
pub fn run(request: &VerdictBenchRequest) -> Result<()> {
    anyhow::ensure!(request.trials >= 1, "--trials must be at least 1");
    let mut sources = known_sources();
    for dir in &request.lab_runs {
        let dir = match dir.file_name() {
            Some(n) if n == crate::results::lab::FILE_NAME => {
                dir.parent().map_or(dir.clone(), |p| p.to_path_buf())
            }
            _ => dir.clone(),
        };
        let record = find::read(&dir)?;
        let label = dir
            .file_name()
            .map_or("lab".to_string(), |n| n.to_string_lossy().into_owned());
        sources.extend(a_a_sources(&record, &label));
    }
    println!("{}", a_a_table(&sources, request.trials));
    print!("{}", power_table(request.trials));
    Ok(())
}
