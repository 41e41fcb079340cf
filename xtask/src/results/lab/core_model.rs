//! The core model's part of `lab.json` (`cargo xtask lab --cache-model`
//! on a target with `[lab.timing]`): the timing table the run used
//! ([`CoreTiming`], in `cache_model.timing`), the plugin's branch and L2
//! counters ([`CoreCounters`], in each snapshot's `core`), and what each
//! run makes of them ([`CoreWork`], in each run's `cache_model.core`):
//! modelled cycles per forwarded packet, and from them packets/s and
//! Mbit/s at the SoC's clock.
//!
//! # The formula
//!
//! Over a run, with `N` the packets both NICs received:
//!
//! ```text
//! cycles = base_cpi            × instructions
//!        + taken_branch_cycles × (conditional branches taken + jumps)
//!        + mispredict_cycles   × mispredictions
//!        + l2_hit_cycles       × (L1I misses + L1D load misses)
//!        + (dram_cycles − l2_hit_cycles) × (L2 misses of fetches and loads)
//! cycles/packet = cycles / N
//! packets/s     = clock_mhz × 10⁶ / (cycles/packet)
//! Mbit/s        = packets/s × frame bytes × 8 / 10⁶
//! ```
//!
//! where mispredictions are those of direction, return address, indirect
//! target and (Cortex-A9) BTAC; the frame bytes are the run's mean
//! received frame (both NICs' `rx_bytes` over `rx_packets`, Ethernet
//! header included, no FCS). Without an L2, `l2_hit_cycles` is 0 and every
//! L1 miss is an L2 miss, so each costs `dram_cycles`. It is the cost of a
//! single-issue, in-order core that stalls on every fetch or load miss for
//! the whole latency: store misses (written through the cores' store and
//! fill buffers), write-backs, uncached (NIC register) accesses and
//! unaligned accesses are counted, not costed; out-of-order and dual
//! issue, prefetch, TLB refills beyond their instructions, DMA, the other
//! cores and the NIC hardware are left out.

use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};

pub use super::counters::CoreCounters;
use super::counters::{CacheCounters, CacheGeometry};
use super::guest::GuestSample;
use super::metric::{LabMetric, MetricValue};

/// The costs of the formula (see the module docs), from `[lab.timing]`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CoreCosts {
    /// The SoC's CPU clock, MHz.
    pub clock_mhz: f64,
    /// Cycles per instruction without branch or miss costs.
    pub base_cpi: f64,
    /// Cycles per taken branch or jump.
    pub taken_branch_cycles: f64,
    /// Cycles per misprediction.
    pub mispredict_cycles: f64,
    /// Cycles of an L1 miss the L2 serves (0: no L2).
    pub l2_hit_cycles: f64,
    /// Cycles of an L1 miss DRAM serves.
    pub dram_cycles: f64,
}

/// The modelled branch predictor, as the plugin ran it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PredictorInfo {
    /// `bimodal`, `gshare` or `majority`.
    pub kind: String,
    /// 2-bit counters per table.
    pub entries: u64,
    /// Global history bits.
    pub history_bits: u64,
    /// Return stack entries.
    pub return_stack: u64,
    /// BTAC entries (0: none).
    pub btac: u64,
}

/// One value of the timing table and its source, as the target file
/// gives them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ValueSource {
    /// The key (`dram_cycles`).
    pub name: String,
    /// Its value, rendered.
    pub value: String,
    /// The document, or `no source: …`.
    pub source: String,
}

/// The timing table a lab ran with (`cache_model.timing` in `lab.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CoreTiming {
    /// The modelled core (`MIPS 74Kc`).
    pub core: String,
    /// Where the table comes from (`targets/brcm47xx.toml [lab.timing]`).
    pub from: String,
    /// The formula's costs.
    pub costs: CoreCosts,
    /// The L2 (`None`: the SoC has none).
    pub l2: Option<CacheGeometry>,
    /// The branch predictor.
    pub predictor: PredictorInfo,
    /// Every value with its source, in file order.
    pub sources: Vec<ValueSource>,
}

impl CoreTiming {
    /// The names of the values without a source.
    pub fn unsourced(&self) -> Vec<&str> {
        self.sources
            .iter()
            .filter(|v| {
                v.source
                    .trim_start()
                    .to_ascii_lowercase()
                    .starts_with("no source")
            })
            .map(|v| v.name.as_str())
            .collect()
    }
}

/// Modelled cycles by cause: each term of the formula.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Cycles {
    /// `base_cpi × instructions`.
    pub base: f64,
    /// Taken branches' bubbles.
    pub taken: f64,
    /// Mispredictions' penalties.
    pub mispredicts: f64,
    /// L1 misses served by the L2 (all L1 fetch and load misses pay it).
    pub l2: f64,
    /// L2 misses' extra to DRAM.
    pub dram: f64,
    /// Their sum.
    pub total: f64,
}

impl Cycles {
    /// The formula (module docs) over `l1` and `core`, counter
    /// differences of one stretch of execution.
    pub fn of(l1: &CacheCounters, core: &CoreCounters, costs: &CoreCosts) -> Cycles {
        let load_misses = l1.l1d_misses.saturating_sub(core.l1d_store_misses);
        let c = Cycles {
            base: costs.base_cpi * l1.insns as f64,
            taken: costs.taken_branch_cycles * core.taken() as f64,
            mispredicts: costs.mispredict_cycles * core.mispredicts() as f64,
            l2: costs.l2_hit_cycles * (l1.l1i_misses + load_misses) as f64,
            dram: (costs.dram_cycles - costs.l2_hit_cycles) * core.demand_l2_misses() as f64,
            total: 0.0,
        };
        Cycles {
            total: c.base + c.taken + c.mispredicts + c.l2 + c.dram,
            ..c
        }
    }

    /// Every term divided by `n` (packets, loop iterations).
    pub fn per(&self, n: f64) -> Cycles {
        Cycles {
            base: self.base / n,
            taken: self.taken / n,
            mispredicts: self.mispredicts / n,
            l2: self.l2 / n,
            dram: self.dram / n,
            total: self.total / n,
        }
    }
}

/// What the core model made of one run (`cache_model.core` of a run).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CoreWork {
    /// The core counters' differences over the run.
    pub during: CoreCounters,
    /// Modelled cycles per forwarded packet, by cause.
    pub cycles_per_packet: Cycles,
    /// `clock_mhz × 10⁶ / cycles per packet`.
    pub packets_per_second: f64,
    /// The run's mean received frame, bytes; `None` without packets.
    pub frame_bytes: Option<f64>,
    /// `packets/s × frame bytes × 8 / 10⁶`.
    pub mbit_per_s: Option<f64>,
    /// Taken branches and jumps per packet.
    pub taken_per_packet: f64,
    /// Mispredictions per packet.
    pub mispredicts_per_packet: f64,
    /// L2 misses of fetches and loads per packet.
    pub l2_misses_per_packet: f64,
    /// On a machine of more than one CPU, the CPU whose cycles per packet
    /// are the most (the bottleneck): `cycles_per_packet`, packets/s and
    /// Mbit/s are then that CPU's, the counts above all CPUs'
    /// ([`super::per_cpu`]). Absent on one CPU and in older files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bottleneck_cpu: Option<u32>,
}

impl CoreWork {
    /// The run whose counter differences are `l1` and `core`, over
    /// `packets` (at least one) of mean size `frame_bytes`, costed with
    /// `costs`.
    pub fn new(
        l1: &CacheCounters,
        core: &CoreCounters,
        packets: u64,
        frame_bytes: Option<f64>,
        costs: &CoreCosts,
    ) -> Result<CoreWork> {
        if packets == 0 {
            bail!("no packets: the core model divides by the packets forwarded");
        }
        let n = packets as f64;
        let cycles = Cycles::of(l1, core, costs).per(n);
        let pps = if cycles.total > 0.0 {
            costs.clock_mhz * 1e6 / cycles.total
        } else {
            0.0
        };
        Ok(CoreWork {
            during: *core,
            cycles_per_packet: cycles,
            packets_per_second: pps,
            frame_bytes,
            mbit_per_s: frame_bytes.map(|b| pps * b * 8.0 / 1e6),
            taken_per_packet: core.taken() as f64 / n,
            mispredicts_per_packet: core.mispredicts() as f64 / n,
            l2_misses_per_packet: core.demand_l2_misses() as f64 / n,
            bottleneck_cpu: None,
        })
    }

    /// The run limited by CPU `cpu`, whose cycles per packet are `cycles`:
    /// packets/s and Mbit/s at `costs`' clock from those.
    pub fn limited_by(self, cpu: u32, cycles: Cycles, costs: &CoreCosts) -> CoreWork {
        let pps = if cycles.total > 0.0 {
            costs.clock_mhz * 1e6 / cycles.total
        } else {
            0.0
        };
        CoreWork {
            cycles_per_packet: cycles,
            packets_per_second: pps,
            mbit_per_s: self.frame_bytes.map(|b| pps * b * 8.0 / 1e6),
            bottleneck_cpu: Some(cpu),
            ..self
        }
    }

    /// The run's metrics, rounded as `lab.json` keeps them.
    pub fn metrics(&self) -> Vec<MetricValue> {
        let mut out = vec![
            (LabMetric::CyclesPerPacket, self.cycles_per_packet.total),
            (LabMetric::PacketsPerSecond, self.packets_per_second),
        ];
        if let Some(m) = self.mbit_per_s {
            out.push((LabMetric::ModelledThroughput, m));
        }
        out.extend([
            (LabMetric::TakenBranchesPerPacket, self.taken_per_packet),
            (LabMetric::MispredictsPerPacket, self.mispredicts_per_packet),
            (LabMetric::L2MissesPerPacket, self.l2_misses_per_packet),
        ]);
        out.into_iter()
            .map(|(metric, value)| MetricValue::new(metric, value))
            .collect()
    }
}

/// The mean frame both NICs received between two guest samples, bytes
/// (Linux's `rx_bytes`: from the Ethernet header, without the FCS);
/// `None` without packets.
pub fn mean_frame_bytes(before: &GuestSample, after: &GuestSample) -> Option<f64> {
    let bytes = (after.lan.rx_bytes + after.wan.rx_bytes)
        .checked_sub(before.lan.rx_bytes + before.wan.rx_bytes)?;
    let packets = after.rx_packets().checked_sub(before.rx_packets())?;
    (packets > 0).then(|| bytes as f64 / packets as f64)
}

#[cfg(test)]
#[path = "core_model_tests.rs"]
mod tests;
