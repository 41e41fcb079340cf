//! The words and numbers of a lab comparison as every format prints
//! them: p values, %changes and intervals, the verdict in words and for
//! machines, the runs a change of the A/A floor's size needs, and the
//! note on how many calls chance allows.

use super::comparison::{LabComparison, Role, ALPHA};
use crate::measure::stats::{self, runs_for_mann_whitney, Interval, Verdict};
use crate::report::model::{Decimal, Stats};

/// A p value as printed: four decimals, `<0.0001` below; `n/a` without.
pub fn p_text(p: Option<f64>, decimal: Decimal) -> String {
    match p {
        None => "n/a".to_string(),
        Some(p) if p < 0.0001 => decimal.apply("<0.0001".to_string()),
        Some(p) => decimal.apply(format!("{p:.4}")),
    }
}

/// A percentage with its sign and two decimals: `+1.68%`.
pub fn percent_text(p: f64, decimal: Decimal) -> String {
    decimal.apply(format!("{p:+.2}%"))
}

/// An interval of the %change: `+1.10% … +6.02%`; `n/a` without.
pub fn interval_text(i: Option<Interval>, decimal: Decimal) -> String {
    match i {
        Some(i) => format!(
            "{} … {}",
            percent_text(i.low, decimal),
            percent_text(i.high, decimal)
        ),
        None => "n/a".to_string(),
    }
}

/// The verdict in words: `significant`, `interval contains 0`, `Welch
/// and Mann–Whitney disagree`, `within A/A noise (±0.90%)`, `too few
/// runs`, `too few runs for Mann–Whitney (4 per side)`, `no change the
/// recorded values can hold` (a difference below the metric's recorded
/// precision); for the control itself, `A/A noise floor` and the runs a
/// change of its size needs.
pub fn verdict_text(stats: &Stats, role: Role, decimal: Decimal) -> String {
    if role == Role::Control {
        return match runs_needed_text(&stats.comparison) {
            Some(runs) => format!("A/A noise floor; {runs}"),
            None => "A/A noise floor".to_string(),
        };
    }
    let c = &stats.comparison;
    match c.verdict {
        Verdict::Significant => "significant".to_string(),
        Verdict::IntervalContainsZero => "interval contains 0".to_string(),
        Verdict::TestsDisagree => "Welch and Mann–Whitney disagree".to_string(),
        Verdict::WithinNoise => format!(
            "within A/A noise (±{})",
            decimal.apply(format!("{:.2}%", stats.noise_floor.unwrap_or(0.0)))
        ),
        Verdict::TooFewSamples if c.base.n < 2 || c.variant.n < 2 => "too few runs".to_string(),
        Verdict::TooFewSamples => format!(
            "too few runs for Mann–Whitney ({} per side)",
            runs_for_mann_whitney()
        ),
        Verdict::BelowResolution => "no change the recorded values can hold".to_string(),
    }
}

/// `seeing a change this size takes 61 runs per side (80 % power)`: what an A/A control's
/// comparison says of the runs needed to see a change of its own size
/// (80 % power, [`stats::runs_for_change`]); `None` for no change or
/// fewer than 2 runs a side.
pub fn runs_needed_text(c: &stats::SampleComparison) -> Option<String> {
    if c.base.n < 2 || c.variant.n < 2 || c.percent.is_none_or(|p| p == 0.0) {
        return None;
    }
    Some(match c.runs_for_change() {
        Some(n) => format!("seeing a change this size takes {n} runs per side (80 % power)"),
        None => format!(
            "seeing a change this size takes more than {} runs per side",
            stats::MAX_RUNS
        ),
    })
}

/// A note when variants' changes are called significant: how many of the
/// compared metrics, and how many calls chance alone allows (at most
/// [`ALPHA`] of metrics without a real change, as the A/A calibration
/// shows: `cargo xtask bench verdicts`).
pub(super) fn chance_note(comparisons: &[LabComparison]) -> Option<String> {
    let verdicts: Vec<Verdict> = comparisons
        .iter()
        .filter(|c| c.role == Role::Variant)
        .flat_map(|c| &c.families)
        .flat_map(|f| &f.metrics)
        .filter_map(|m| m.stats().map(|s| s.comparison.verdict))
        .collect();
    let called = verdicts
        .iter()
        .filter(|v| **v == Verdict::Significant)
        .count();
    (called > 0).then(|| {
        format!(
            "{called} of {} changes are called significant; were none real, chance would call at most {:.1} of them (5 % each, as the A/A calibration `cargo xtask bench verdicts` measures)",
            verdicts.len(),
            verdicts.len() as f64 * ALPHA
        )
    })
}

/// The verdict for machines: `significant`, `interval-contains-zero`,
/// `tests-disagree`, `within-noise`, `too-few-samples`,
/// `below-resolution`, or `control` for the A/A control.
pub fn verdict_name(stats: &Stats, role: Role) -> &'static str {
    if role == Role::Control {
        return "control";
    }
    match stats.comparison.verdict {
        Verdict::Significant => "significant",
        Verdict::IntervalContainsZero => "interval-contains-zero",
        Verdict::TestsDisagree => "tests-disagree",
        Verdict::WithinNoise => "within-noise",
        Verdict::TooFewSamples => "too-few-samples",
        Verdict::BelowResolution => "below-resolution",
    }
}
