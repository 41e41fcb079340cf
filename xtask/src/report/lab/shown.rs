//! Which lab metrics the report shows as families of their own, and
//! their titles and LKP-style names.

use super::cpus;
use crate::report::model::{Family, Metric};
use crate::results::lab::metric::Shown;
use crate::results::lab::LabMetric;

/// The lab metrics a report shows as families of their own, in report
/// order ([`LabMetric::ALL`]): tbench, throughput, UDP loss (`--udp` labs),
/// guest CPU, then the cache model's (`lab --cache-model`) and the core
/// model's (a target with `[lab.timing]`).
pub fn families() -> impl Iterator<Item = LabMetric> {
    LabMetric::ALL
        .into_iter()
        .filter(|m| m.shown() == Shown::Family)
}

/// Appended to the SVG titles of the core model's families
/// ([`crate::results::lab::metric::MeasuredBy::CoreModel`]): the plot says it is a model, and what it
/// leaves out, as the notes do.
pub const CORE_MODEL_CAPTION: &str =
    " (a model: in-order core; no out-of-order issue, prefetch, DMA, other cores or NIC)";

/// The title of family `name` (`Throughput`; a per-CPU one's
/// [`cpus::title`]), or the name itself.
pub fn family_title(name: &str) -> String {
    LabMetric::named(name)
        .map(|m| m.title().to_string())
        .or_else(|| cpus::title(name))
        .unwrap_or_else(|| name.to_string())
}

/// The LKP-style name of a lab metric: `throughput.lan-to-wan.gro-on`.
pub fn lkp_name(family: &Family, m: &Metric) -> String {
    format!("{}.{}.{}", family.name, m.item, m.kind)
}
