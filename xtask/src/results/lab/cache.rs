//! The cache model's part of `lab.json` (`cargo xtask lab --cache-model`):
//! what was modelled ([`CacheModelInfo`]: the target's L1 geometry, the
//! plugin and the QEMU source it was built against), the counters read
//! from the plugin right before and right after each run
//! ([`CacheCounters`]), and the three metrics derived from them
//! ([`CacheWork`]):
//!
//! * `guest_insns_per_packet` ([`super::LabMetric::InsnsPerPacket`]): guest
//!   instructions executed during the run over the packets both NICs
//!   received;
//! * `l1i_misses_per_packet` and `l1d_misses_per_packet`: misses of the
//!   modelled L1 instruction and data caches over the same packets.
//!
//! A model of an L1 cache fed by TCG's instruction stream: set-associative,
//! LRU, no timing, no prefetch, no TLB (lab/plugin/xtask-cache.c). On a
//! target with `[lab.timing]` the same plugin also models the branch
//! predictor and the L2 and the lab costs every run in cycles
//! ([`super::core_model`]: `timing` here, `core` in the counters and runs).
//! Runs of a lab without the model have no `cache_model`, and files
//! written before it existed read unchanged.

use anyhow::Result;
use serde::{Deserialize, Serialize};

use super::core_model::{CoreTiming, CoreWork};
pub use super::counters::{CacheCounters, CacheGeometry, SNAPSHOT_MAGIC, SNAPSHOT_VERSION};
use super::per_cpu::{bottleneck, CpuWork, Snapshot};

/// What the lab's cache model was, for a whole lab run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CacheModelInfo {
    /// The modelled L1 instruction cache (the target's `[lab.l1]`).
    pub icache: CacheGeometry,
    /// The modelled L1 data cache.
    pub dcache: CacheGeometry,
    /// Where the geometry comes from: the target file.
    pub geometry_from: String,
    /// The plugin's C source, relative to the workspace root
    /// (`lab/plugin/xtask-cache.c`).
    pub plugin_source: String,
    /// sha256 of the plugin's C source.
    pub plugin_source_sha256: String,
    /// sha256 of the built plugin (`.so`).
    pub plugin_sha256: String,
    /// The compiler that built it (`gcc --version`, first line).
    pub compiler: String,
    /// The QEMU source package whose `qemu-plugin.h` it was built against
    /// (`qemu 1:7.2+dfsg-7+deb12u18`): the installed QEMU's.
    pub qemu_source: String,
    /// sha256 of that `qemu-plugin.h`.
    pub plugin_header_sha256: String,
    /// The core model's timing table (`[lab.timing]`), when the target
    /// has one; absent in files written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timing: Option<CoreTiming>,
}

/// The model's work during one run: counter deltas and, with packets,
/// their values per forwarded packet.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CacheWork {
    /// Counter differences over the run.
    pub during: CacheCounters,
    /// Packets both NICs received over the guest's sampling window, which
    /// encloses the counters' (read after the guest's first sample and
    /// before its second).
    pub packets: u64,
    /// Instructions per packet; `None` without packets.
    pub insns_per_packet: Option<f64>,
    /// L1I misses per packet.
    pub l1i_misses_per_packet: Option<f64>,
    /// L1D misses per packet.
    pub l1d_misses_per_packet: Option<f64>,
}

/// What one run read from the cache model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CacheRun {
    /// Counters right before the traffic.
    pub before: CacheCounters,
    /// Counters right after it.
    pub after: CacheCounters,
    /// Their difference, per packet.
    pub work: CacheWork,
    /// What the core model made of the run (a target with
    /// `[lab.timing]`); absent in older files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub core: Option<CoreWork>,
    /// Each CPU's share, on a machine of more than one
    /// ([`super::per_cpu`]); empty on one CPU and in older files.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cpus: Vec<CpuWork>,
}

impl CacheRun {
    /// The run between `before` and `after`, over `packets` forwarded.
    pub fn new(before: CacheCounters, after: CacheCounters, packets: u64) -> Result<CacheRun> {
        let during = after.since(&before)?;
        let per = |n: u64| (packets > 0).then(|| n as f64 / packets as f64);
        Ok(CacheRun {
            before,
            after,
            work: CacheWork {
                during,
                packets,
                insns_per_packet: per(during.insns),
                l1i_misses_per_packet: per(during.l1i_misses),
                l1d_misses_per_packet: per(during.l1d_misses),
            },
            core: None,
            cpus: Vec::new(),
        })
    }

    /// The run between snapshots `before` and `after` over `packets`: on
    /// a machine of more than one vCPU with each CPU's share
    /// ([`CpuWork::between`]).
    pub fn of_snapshots(before: &Snapshot, after: &Snapshot, packets: u64) -> Result<CacheRun> {
        let run = CacheRun::new(before.total, after.total, packets)?;
        if after.cpus.len() < 2 {
            return Ok(run);
        }
        Ok(CacheRun {
            cpus: CpuWork::between(before, after, packets)?,
            ..run
        })
    }

    /// This run costed with `timing` ([`CoreWork`]) over frames of
    /// `frame_bytes` on average; unchanged when the counters have no core
    /// model or the run no packets.
    pub fn with_timing(self, timing: &CoreTiming, frame_bytes: Option<f64>) -> Result<CacheRun> {
        let w = &self.work;
        let Some(core) = w.during.core else {
            return Ok(self);
        };
        if w.packets == 0 {
            return Ok(self);
        }
        let mut core = CoreWork::new(&w.during, &core, w.packets, frame_bytes, &timing.costs)?;
        let cpus: Vec<CpuWork> = self
            .cpus
            .iter()
            .map(|c| c.costed(&timing.costs, w.packets))
            .collect();
        if let Some((cpu, cycles)) = bottleneck(&cpus) {
            core = core.limited_by(cpu, cycles, &timing.costs);
        }
        Ok(CacheRun {
            core: Some(core),
            cpus,
            ..self
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LINE: &str = "xtask-cache 3 insns=1000 l1i_misses=30 l1d_accesses=400 \
        l1d_misses=12 icache=32768/4/32 dcache=32768/4/32 cores=1\n";

    fn g() -> CacheGeometry {
        CacheGeometry {
            size_bytes: 32768,
            ways: 4,
            line_bytes: 32,
        }
    }

    #[test]
    fn a_snapshot_parses_and_checks_its_geometry() {
        let c = CacheCounters::parse(LINE, Some((&g(), &g()))).unwrap();
        assert_eq!(
            (c.insns, c.l1i_misses, c.l1d_accesses, c.l1d_misses),
            (1000, 30, 400, 12)
        );
        let other = CacheGeometry { ways: 8, ..g() };
        let err = CacheCounters::parse(LINE, Some((&other, &g()))).unwrap_err();
        assert!(err.to_string().contains("icache=32768/4/32"), "{err}");
        for bad in [
            "xtask-cache 9 insns=1 l1i_misses=1 l1d_accesses=1 l1d_misses=1",
            "cache 3 insns=1",
            "xtask-cache 3 insns=x l1i_misses=1 l1d_accesses=1 l1d_misses=1",
            "xtask-cache 3 insns=1 l1d_accesses=1 l1d_misses=1",
            "xtask-cache 3 insns=1 l1i_misses=1 l1d_accesses=1 l1d_misses=1 jumps=3",
        ] {
            assert!(CacheCounters::parse(bad, None).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_run_divides_its_deltas_by_the_packets() {
        let before = CacheCounters::parse(LINE, None).unwrap();
        let after = CacheCounters {
            insns: 51_000,
            l1i_misses: 1030,
            l1d_accesses: 10_400,
            l1d_misses: 512,
            core: None,
        };
        let run = CacheRun::new(before, after, 100).unwrap();
        assert_eq!(run.work.insns_per_packet, Some(500.0));
        assert_eq!(run.work.l1i_misses_per_packet, Some(10.0));
        assert_eq!(run.work.l1d_misses_per_packet, Some(5.0));
        assert_eq!(
            CacheRun::new(before, after, 0)
                .unwrap()
                .work
                .insns_per_packet,
            None
        );
        assert!(CacheRun::new(after, before, 100).is_err());
        assert_eq!(g().describe(), "32 KiB, 4-way, 32-byte lines");
    }
}
