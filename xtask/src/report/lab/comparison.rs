//! The base arm against one other ([`LabComparison`]): each series both
//! have as a report metric with its statistics, a variant's against the
//! A/A control's |%change| (its noise floor).

use super::condition::condition_item_title;
use super::series::Series;
use crate::measure::stats;
use crate::report::model::{Family, Metric, Samples, UnitLabel};
use crate::results::lab::LabMetric;

/// The smallest two-sided p a test must reach to count.
pub const ALPHA: f64 = stats::ALPHA;

/// What a lab comparison measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The base against itself booted as a second arm: the noise floor.
    Control,
    /// The base against a variant.
    Variant,
}

/// The base arm against one other arm.
#[derive(Debug, Clone, PartialEq)]
pub struct LabComparison {
    /// The other arm's name (`no-reorder-blocks`, `baseline~control`).
    pub arm: String,
    /// Control or variant.
    pub role: Role,
    /// [`super::shown::families`] that have samples on both sides, each metric with its
    /// [`crate::report::model::Stats`] (the control's against a floor of 0).
    pub families: Vec<Family>,
}

impl LabComparison {
    /// The smallest Mann–Whitney p any of its metrics can reach, with the
    /// sample counts (base, other) that give it.
    pub fn mann_whitney_floor(&self) -> Option<(f64, usize, usize)> {
        self.families
            .iter()
            .flat_map(|f| &f.metrics)
            .filter_map(Metric::stats)
            .map(|s| {
                let c = &s.comparison;
                (c.mann_whitney_min_p, c.base.n, c.variant.n)
            })
            .max_by(|a, b| a.0.total_cmp(&b.0))
    }
}

/// `base` against `other` in every series both have; a variant's noise
/// floor for each metric is the |%change| `control` measured for it.
pub fn compare(
    series: &[Series],
    base: &str,
    other: &str,
    role: Role,
    control: Option<&LabComparison>,
) -> LabComparison {
    let mut families: Vec<Family> = Vec::new();
    for s in series {
        let get = |arm: &str| s.arms.iter().find(|(a, _)| a == arm).map(|(_, v)| v);
        let (Some(b), Some(o)) = (get(base), get(other)) else {
            continue;
        };
        let (kind, item) = (s.kind(), s.item());
        let floor = control.and_then(|c| {
            c.families
                .iter()
                .find(|f| f.name == s.family)?
                .metrics
                .iter()
                .find(|m| m.kind == kind && m.item == item)?
                .percent()
                .map(f64::abs)
        });
        let Ok(metric) = Metric::new(
            &kind,
            item,
            &s.title(),
            condition_item_title(s.condition),
            Samples::Real(b.clone()),
            Samples::Real(o.clone()),
        ) else {
            continue;
        };
        let resolution = LabMetric::parse(&s.family).map_or(0.0, |(m, _)| m.resolution());
        let metric = metric.with_stats(floor, resolution);
        match families.iter_mut().find(|f| f.name == s.family) {
            Some(f) => f.metrics.push(metric),
            None => {
                let mut f = Family::new(&s.family, &s.unit, UnitLabel::Shown);
                f.metrics.push(metric);
                families.push(f);
            }
        }
    }
    LabComparison {
        arm: other.to_string(),
        role,
        families,
    }
}
