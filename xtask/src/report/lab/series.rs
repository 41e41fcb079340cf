//! A lab run's samples as the report groups them: per family, condition
//! and arm ([`Series`]), the per-CPU families of a machine of more than
//! one CPU included ([`super::cpus::families`]).

use super::condition::{
    condition_item, condition_item_title, condition_kind, condition_kind_title,
};
use super::cpus;
use super::shown::families;
use std::collections::BTreeMap;

use crate::results::lab::{Condition, LabMetric, LabRecord};

/// Every arm's samples of one family under one condition: a direction
/// with one GRO setting, or a benchmark.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// A lab metric's name ([`families`]: `throughput`), or a CPU's share
    /// of one ([`cpus::families`]).
    pub family: String,
    /// Unit of the values: Mbit/s, ns/packet, MB/s, insns/packet or
    /// misses/packet.
    pub unit: String,
    /// Direction and GRO setting, or the benchmark.
    pub condition: Condition,
    /// (arm name, its values in run order), in the lab's arm order; an arm
    /// without runs is left out.
    pub arms: Vec<(String, Vec<f64>)>,
}

impl Series {
    /// Whether it is the series of lab metric `metric` (the whole
    /// machine's, not a CPU's share).
    pub fn is(&self, metric: LabMetric) -> bool {
        self.family == metric.name()
    }

    /// Its metrics' `kind`: `gro-on`, `clients-2`.
    pub fn kind(&self) -> String {
        condition_kind(self.condition)
    }

    /// Its metrics' `item`: `lan-to-wan`, `loopback`.
    pub fn item(&self) -> &'static str {
        condition_item(self.condition)
    }

    /// `LAN to WAN, GRO on`; `loopback, 2 clients`.
    pub fn title(&self) -> String {
        format!(
            "{}, {}",
            condition_item_title(self.condition),
            condition_kind_title(self.condition)
        )
    }
}

/// Every family's series of `record`: [`families`], then the per-CPU
/// ones of a machine of more than one CPU ([`cpus::families`]); within a
/// family by condition (the settings' order), arms in the lab's order. One
/// pass over the runs: the lab file's checks cap its arms, runs and
/// conditions, and this stays linear in its runs.
pub fn series_of(record: &LabRecord) -> Vec<Series> {
    let families: Vec<(String, &'static str)> = families()
        .map(|m| (m.name().to_string(), m.unit()))
        .chain(cpus::families(cpus::cpus_of(record)))
        .collect();
    let family_index: BTreeMap<&str, usize> = families
        .iter()
        .enumerate()
        .map(|(i, (f, _))| (f.as_str(), i))
        .collect();
    let conditions = record.settings.conditions();
    let arms: BTreeMap<&str, usize> = record
        .arms
        .iter()
        .enumerate()
        .map(|(i, a)| (a.name.as_str(), i))
        .collect();
    // (family, condition, arm) → values in run order.
    let mut values: BTreeMap<(usize, usize, usize), Vec<f64>> = BTreeMap::new();
    for run in record.runs.iter().filter(|r| !r.warmup) {
        let (Some(c), Some(&a)) = (
            conditions.iter().position(|c| *c == run.condition),
            arms.get(run.arm.as_str()),
        ) else {
            continue;
        };
        for m in &run.metrics {
            if let Some(&f) = family_index.get(m.name.as_str()) {
                values.entry((f, c, a)).or_default().push(m.value);
            }
        }
    }
    let mut out: Vec<Series> = Vec::new();
    for ((f, c, a), v) in values {
        let (family, unit) = &families[f];
        let arm = (record.arms[a].name.clone(), v);
        match out.last_mut() {
            Some(s) if s.family == *family && s.condition == conditions[c] => s.arms.push(arm),
            _ => out.push(Series {
                family: family.clone(),
                unit: unit.to_string(),
                condition: conditions[c],
                arms: vec![arm],
            }),
        }
    }
    out
}
