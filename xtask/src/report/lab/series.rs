//! A lab run's samples as the report groups them: per family, condition
//! and arm ([`Series`]), the per-CPU families of a machine of more than
//! one CPU included ([`super::cpus::families`]).

use super::{
    condition_item, condition_item_title, condition_kind, condition_kind_title, cpus, FAMILIES,
};
use crate::results::lab::{Condition, LabRecord};

/// Every arm's samples of one family under one condition: a direction
/// with one GRO setting, or a benchmark.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// A name of [`FAMILIES`]: [`THROUGHPUT`], [`CPU_PER_PACKET`],
    /// [`TBENCH`] or one of the cache model's.
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

/// Every family's series of `record`: [`FAMILIES`], then the per-CPU
/// ones of a machine of more than one CPU ([`cpus::families`]).
pub fn series_of(record: &LabRecord) -> Vec<Series> {
    let per_cpu = cpus::families(cpus::cpus_of(record));
    let families = FAMILIES
        .iter()
        .map(|(f, u, _)| (f.to_string(), *u))
        .chain(per_cpu);
    let mut out = Vec::new();
    for (family, unit) in families {
        for condition in record.settings.conditions() {
            let arms: Vec<(String, Vec<f64>)> = record
                .arms
                .iter()
                .map(|a| (a.name.clone(), record.samples(&a.name, condition, &family)))
                .filter(|(_, v)| !v.is_empty())
                .collect();
            if !arms.is_empty() {
                out.push(Series {
                    family: family.clone(),
                    unit: unit.to_string(),
                    condition,
                    arms,
                });
            }
        }
    }
    out
}
