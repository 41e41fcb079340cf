//! The models per CPU of a lab machine with more than one (`[lab] cpus`,
//! `lab --cpus 2`; `lab.json` schema 3): the plugin's counters of each
//! vCPU ([`Snapshot`]), what each CPU did per forwarded packet
//! ([`CpuWork`], in a run's `cache_model.cpus`), and the bottleneck.
//!
//! With receive processing spread over the CPUs (packet steering), a
//! packet's work is split: the NIC's interrupt, NAPI and GRO on one CPU,
//! the forwarding path on another. Each CPU's work per packet is costed
//! with the same formula as the whole ([`super::core_model`]) and its own
//! counts (its L1s, its branches; the L2 is shared). The CPUs work on
//! different packets at once, so the router forwards at the rate of the
//! busiest one: `packets/s = clock ÷ max over CPUs of cycles/packet`
//! ([`bottleneck`]). A run's `modelled_cycles_per_packet` and
//! `modelled_packets_per_second` are that CPU's; per-CPU metrics
//! ([`LabMetric::cpu_name`]: `modelled_cycles_per_packet_cpu1`) and the sum
//! ([`LabMetric::CyclesPerPacketTotal`]) come with them. One-CPU runs have no
//! per-CPU part, and their files read as before.

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use super::core_model::{CoreCosts, Cycles};
use super::counters::{CacheCounters, CacheGeometry, CoreCounters};
use super::metric::{LabMetric, MetricValue};

/// One snapshot of the plugin: the sums and each vCPU's counters.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    /// The sums over the vCPUs (what a one-CPU lab records).
    pub total: CacheCounters,
    /// Each vCPU's, in index order, with the L1 D-cache lines other
    /// vCPUs' stores took from it.
    pub cpus: Vec<(CacheCounters, u64)>,
    /// Each vCPU's instructions in user mode (blocks below the kernel's
    /// base: MIPS32's kuseg, ARM Linux's 3 GiB), in index order: the
    /// plugin's `user_insns=` on several vCPUs with the core model; empty
    /// otherwise.
    pub user_insns: Vec<u64>,
}

impl Snapshot {
    /// Parses the plugin's line (format 3: the sums as
    /// [`CacheCounters::parse`] reads them, then `cpuN=` fields: instructions,
    /// L1I misses, L1D accesses, L1D misses, invalidations, and with the
    /// core model its sixteen counters, comma-separated; then, on several
    /// vCPUs with the core model, `user_insns=` one per vCPU; see
    /// lab/plugin/xtask-cache.c). Errors when a vCPU's field is missing or
    /// malformed, or the vCPUs' instructions do not add up to the sum.
    pub fn parse(line: &str, expect: Option<(&CacheGeometry, &CacheGeometry)>) -> Result<Snapshot> {
        let total = CacheCounters::parse(line, expect)?;
        let field = |key: &str| {
            line.split_whitespace()
                .find_map(|w| w.strip_prefix(key).and_then(|v| v.strip_prefix('=')))
        };
        let cores: usize = field("cores")
            .context("the cache-model snapshot has no cores")?
            .parse()
            .context("cores in the cache-model snapshot")?;
        // The plugin models at most 64 cores (lab/plugin/xtask-cache.c).
        if !(1..=64).contains(&cores) {
            bail!("the cache-model snapshot has cores={cores}; the plugin models 1 to 64");
        }
        let mut cpus = Vec::with_capacity(cores);
        for i in 0..cores {
            let key = format!("cpu{i}");
            let text = field(&key)
                .with_context(|| format!("the cache-model snapshot has no {key}: {line:?}"))?;
            let n: Vec<u64> = text
                .split(',')
                .map(|v| v.parse::<u64>())
                .collect::<std::result::Result<_, _>>()
                .with_context(|| format!("{key}={text} in the cache-model snapshot"))?;
            let core = match (n.len(), total.core.is_some()) {
                (5, false) => None,
                (21, true) => {
                    let mut a = [0u64; 16];
                    a.copy_from_slice(&n[5..]);
                    Some(CoreCounters::from_values(a))
                }
                (len, _) => bail!(
                    "{key} in the cache-model snapshot has {len} values, not {}",
                    if total.core.is_some() { 21 } else { 5 }
                ),
            };
            cpus.push((
                CacheCounters {
                    insns: n[0],
                    l1i_misses: n[1],
                    l1d_accesses: n[2],
                    l1d_misses: n[3],
                    core,
                },
                n[4],
            ));
        }
        let sum = cpus
            .iter()
            .try_fold(0u64, |a, (c, _)| a.checked_add(c.insns))
            .context("the cache-model snapshot's vCPU instruction counts overflow")?;
        if sum != total.insns {
            bail!(
                "the cache-model snapshot's vCPUs executed {sum} instructions in all, its sum says {}: {line:?}",
                total.insns
            );
        }
        if line.matches(" user_insns=").count() > 1 {
            bail!("the cache-model snapshot has user_insns twice");
        }
        let user_insns: Vec<u64> = match field("user_insns") {
            None => Vec::new(),
            Some(text) => text
                .split(',')
                .map(|v| v.parse::<u64>())
                .collect::<std::result::Result<_, _>>()
                .with_context(|| format!("user_insns={text} in the cache-model snapshot"))?,
        };
        if !user_insns.is_empty() && user_insns.len() != cores {
            bail!(
                "the cache-model snapshot has user_insns of {} vCPUs, not {cores}: {line:?}",
                user_insns.len()
            );
        }
        if let Some(i) = (0..user_insns.len()).find(|&i| user_insns[i] > cpus[i].0.insns) {
            bail!(
                "the cache-model snapshot's cpu{i} ran more user-mode instructions than instructions: {line:?}"
            );
        }
        Ok(Snapshot {
            total,
            cpus,
            user_insns,
        })
    }
}

/// One CPU's share of a run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CpuWork {
    /// The vCPU (`CPU1` in the guest).
    pub cpu: u32,
    /// Its counters' differences over the run.
    pub during: CacheCounters,
    /// L1 D-cache lines other CPUs' stores took from it during the run.
    pub invalidations: u64,
    /// Its instructions per forwarded packet; `None` without packets.
    pub insns_per_packet: Option<f64>,
    /// Its L1I misses per packet.
    pub l1i_misses_per_packet: Option<f64>,
    /// Its L1D misses per packet.
    pub l1d_misses_per_packet: Option<f64>,
    /// Its modelled cycles per packet, by cause (a target with
    /// `[lab.timing]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cycles_per_packet: Option<Cycles>,
}

impl CpuWork {
    /// Each CPU's work between snapshots `before` and `after` over
    /// `packets` forwarded. Errors when the two have other vCPU counts or
    /// a counter went backwards.
    pub fn between(before: &Snapshot, after: &Snapshot, packets: u64) -> Result<Vec<CpuWork>> {
        if before.cpus.len() != after.cpus.len() {
            bail!(
                "the cache-model snapshots have {} and {} vCPUs",
                before.cpus.len(),
                after.cpus.len()
            );
        }
        let per = |n: u64| (packets > 0).then(|| n as f64 / packets as f64);
        before
            .cpus
            .iter()
            .zip(&after.cpus)
            .enumerate()
            .map(|(i, ((b, bi), (a, ai)))| {
                let during = a.since(b).with_context(|| format!("vCPU {i}"))?;
                Ok(CpuWork {
                    cpu: i as u32,
                    during,
                    invalidations: ai
                        .checked_sub(*bi)
                        .with_context(|| format!("vCPU {i}'s invalidations went backwards"))?,
                    insns_per_packet: per(during.insns),
                    l1i_misses_per_packet: per(during.l1i_misses),
                    l1d_misses_per_packet: per(during.l1d_misses),
                    cycles_per_packet: None,
                })
            })
            .collect()
    }

    /// This CPU costed with `costs` over `packets` (at least one); as it
    /// was without the core model's counters.
    pub fn costed(self, costs: &CoreCosts, packets: u64) -> CpuWork {
        let cycles = match (self.during.core, packets) {
            (Some(core), n) if n > 0 => Some(Cycles::of(&self.during, &core, costs).per(n as f64)),
            _ => None,
        };
        CpuWork {
            cycles_per_packet: cycles,
            ..self
        }
    }
}

/// The CPU with the most modelled cycles per packet, and those cycles;
/// `None` when no CPU was costed.
pub fn bottleneck(cpus: &[CpuWork]) -> Option<(u32, Cycles)> {
    cpus.iter()
        .filter_map(|c| Some((c.cpu, c.cycles_per_packet?)))
        .max_by(|a, b| a.1.total.total_cmp(&b.1.total))
}

/// The per-CPU metrics of a run (each of [`LabMetric::PER_CPU`] per CPU,
/// and [`LabMetric::CyclesPerPacketTotal`]), rounded as `lab.json` keeps them.
pub fn metrics(cpus: &[CpuWork]) -> Vec<MetricValue> {
    let mut out = Vec::new();
    let costed: Vec<f64> = cpus
        .iter()
        .filter_map(|c| c.cycles_per_packet.map(|y| y.total))
        .collect();
    if !costed.is_empty() && costed.len() == cpus.len() {
        out.push(MetricValue::new(
            LabMetric::CyclesPerPacketTotal,
            costed.iter().sum(),
        ));
    }
    for c in cpus {
        for (metric, value) in [
            (
                LabMetric::CyclesPerPacket,
                c.cycles_per_packet.map(|y| y.total),
            ),
            (LabMetric::InsnsPerPacket, c.insns_per_packet),
            (LabMetric::L1iMissesPerPacket, c.l1i_misses_per_packet),
            (LabMetric::L1dMissesPerPacket, c.l1d_misses_per_packet),
        ] {
            if let Some(v) = value {
                out.push(MetricValue::of_cpu(metric, c.cpu, v));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO: &str = "xtask-cache 3 insns=1500 l1i_misses=30 l1d_accesses=400 \
        l1d_misses=12 l1d_invalidations=3 icache=32768/4/32 dcache=32768/4/32 cores=2 \
        cpu0=1000,20,300,10,1 cpu1=500,10,100,2,2\n";

    #[test]
    fn a_two_cpu_snapshot_parses_and_adds_up() {
        let s = Snapshot::parse(TWO, None).unwrap();
        assert_eq!(s.total.insns, 1500);
        assert_eq!(s.cpus.len(), 2);
        assert_eq!(
            (s.cpus[1].0.insns, s.cpus[1].0.l1d_misses, s.cpus[1].1),
            (500, 2, 2)
        );
        let off = TWO.replace("cpu1=500", "cpu1=501");
        let err = Snapshot::parse(&off, None).unwrap_err().to_string();
        assert!(err.contains("1501 instructions in all"), "{err}");
        let short = TWO.replace("cpu1=500,10,100,2,2", "cpu1=500,10,100,2");
        assert!(Snapshot::parse(&short, None).is_err());
        let missing = TWO.replace(" cpu1=500,10,100,2,2", "");
        let err = Snapshot::parse(&missing, None).unwrap_err().to_string();
        assert!(err.contains("no cpu1"), "{err}");
        assert!(s.user_insns.is_empty());
        for cores in ["cores=0", "cores=65", "cores=18446744073709551615"] {
            assert!(
                Snapshot::parse(&TWO.replace("cores=2", cores), None).is_err(),
                "{cores}"
            );
        }
        let huge = TWO
            .replace("cpu0=1000", "cpu0=18446744073709551615")
            .replace("insns=1500", "insns=1");
        assert!(Snapshot::parse(&huge, None).is_err());
        let user = Snapshot::parse(&format!("{TWO} user_insns=400,300"), None).unwrap();
        assert_eq!(user.user_insns, [400, 300]);
        for bad in [
            "user_insns=400",
            "user_insns=400,501",
            "user_insns=4x,3",
            "user_insns=1,1 user_insns=2,2",
        ] {
            assert!(
                Snapshot::parse(&format!("{TWO} {bad}"), None).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn the_bottleneck_is_the_busiest_cpu() {
        let before = Snapshot::parse(TWO, None).unwrap();
        let after = Snapshot::parse(
            &TWO.replace("insns=1500", "insns=3500")
                .replace("cpu0=1000,20", "cpu0=1500,20")
                .replace("cpu1=500,10", "cpu1=2000,30"),
            None,
        )
        .unwrap();
        let costs = CoreCosts {
            clock_mhz: 1000.0,
            base_cpi: 1.0,
            taken_branch_cycles: 0.0,
            mispredict_cycles: 0.0,
            l2_hit_cycles: 10.0,
            dram_cycles: 10.0,
        };
        let cpus = CpuWork::between(&before, &after, 10).unwrap();
        assert_eq!(cpus[1].insns_per_packet, Some(150.0));
        assert_eq!(cpus[1].l1i_misses_per_packet, Some(2.0));
        // Without the core model's counters nothing is costed.
        assert_eq!(bottleneck(&cpus), None);
        let names: Vec<String> = metrics(&cpus).into_iter().map(|m| m.name).collect();
        assert!(
            names.contains(&"guest_insns_per_packet_cpu1".to_string()),
            "{names:?}"
        );
        assert!(
            !names.contains(&LabMetric::CyclesPerPacketTotal.name().to_string()),
            "{names:?}"
        );
        let costed: Vec<CpuWork> = cpus
            .iter()
            .map(|c| CpuWork {
                during: CacheCounters {
                    core: Some(CoreCounters::default()),
                    ..c.during
                },
                ..*c
            })
            .map(|c| c.costed(&costs, 10))
            .collect();
        // CPU1: 150 instructions and 2 L1I misses of 10 cycles a packet.
        let (cpu, cycles) = bottleneck(&costed).unwrap();
        assert_eq!((cpu, cycles.total), (1, 170.0));
    }
}
