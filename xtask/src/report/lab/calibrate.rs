//! The verdict's calibration on a lab run's own A/A runs: each metric's
//! base and A/A control samples measure the same kernel, so drawing both
//! sides of a comparison from them (with replacement) is an A/A
//! comparison with the lab's real noise ([`crate::measure::calibration`]).

use super::series_of;
use crate::measure::calibration::Source;
use crate::results::lab::LabRecord;

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
