//! Every metric the lab records, as one type ([`LabMetric`]): its name in
//! `lab.json`, the unit the lab records it in, its title in reports, its
//! family (who measures it: the workload, the guest, the cache model,
//! the core model), whether the mail lists its every run ([`Headline`]),
//! and the range of values it can take with the decimals the lab rounds
//! it to ([`Range`]). [`super::check`] checks every run's values against
//! them on read (a negative loss, a negative cycle count or a loss
//! recorded in Mbit/s is a damaged file, not a result); the report makes
//! one family of each ([`LabMetric::ALL`]).
//!
//! A run records each metric as its name (a string, [`MetricValue`]),
//! so a `lab.json` of any version reads: a name this xtask does not know
//! reads as it was written ([`LabMetric::named`] is `None`), and the check
//! refuses it with the names it knows. On a machine of more than one CPU
//! the models' metrics of [`LabMetric::PER_CPU`] are also recorded per CPU
//! (`l1i_misses_per_packet_cpu1`, [`LabMetric::cpu_name`], [`LabMetric::parse`]).
//!
//! A new metric is a variant here (its name, unit, title, family and
//! range) and the line of the lab that records it
//! ([`MetricValue::new`]); the report and the checks find it here.

use serde::{Deserialize, Serialize};

/// A metric the lab records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LabMetric {
    /// tbench's throughput in MB/s (10^6 bytes per second, tbench's
    /// `MB/sec`).
    Tbench,
    /// The receiver's iperf3 throughput in Mbit/s.
    Throughput,
    /// The UDP datagrams the receiver missed in `--udp` runs, in %:
    /// iperf3's `end.sum_received.lost_percent`.
    UdpLost,
    /// The guest's busy time per forwarded packet, in ns/packet.
    CpuPerPacket,
    /// The guest's instructions per forwarded packet (the cache model).
    InsnsPerPacket,
    /// The modelled L1 I-cache's misses per forwarded packet.
    L1iMissesPerPacket,
    /// The modelled L1 D-cache's misses per forwarded packet.
    L1dMissesPerPacket,
    /// The modelled core cycles per forwarded packet (the busiest CPU's
    /// on a machine of several).
    CyclesPerPacket,
    /// The modelled forwarding rate at the SoC's clock, in packets/s.
    PacketsPerSecond,
    /// The modelled forwarding rate in Mbit/s at the run's mean frame size.
    ModelledThroughput,
    /// Taken branches and jumps per forwarded packet.
    TakenBranchesPerPacket,
    /// The modelled predictor's mispredictions per forwarded packet.
    MispredictsPerPacket,
    /// The modelled L2's misses (fetches and loads) per packet; every L1
    /// miss without an L2.
    L2MissesPerPacket,
    /// tbench's `max_latency` in ms: the slowest operation any client saw
    /// during the run (a tbench lab in a guest keeps it).
    TbenchMaxLatency,
    /// The modelled cycles per packet summed over the CPUs of a machine of
    /// several: the work of a packet, wherever it ran.
    CyclesPerPacketTotal,
    /// A real router's CPU cycles per forwarded packet, every CPU
    /// (`perf stat -a -e cycles` over the run).
    RouterCyclesPerPacket,
    /// A real router's instructions per forwarded packet (`perf stat -a
    /// -e instructions`).
    RouterInsnsPerPacket,
    /// A real router's branch mispredictions per forwarded packet (`perf
    /// stat -a -e branch-misses`).
    RouterBranchMissesPerPacket,
    /// A real router's L1 I-cache misses per forwarded packet (`perf stat
    /// -a -e L1-icache-load-misses`), where its core exposes the event.
    RouterL1iMissesPerPacket,
}

/// Who measures a metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MeasuredBy {
    /// The workload itself: iperf3's Mbit/s and UDP loss, tbench's MB/s
    /// and latency.
    Workload,
    /// The guest's (or a real router's) CPU time.
    Guest,
    /// The L1 cache model (`lab --cache-model`).
    CacheModel,
    /// The core model of a target with `[lab.timing]`: a model of an
    /// in-order core, whose report titles say what it leaves out.
    CoreModel,
    /// A real router's own performance counters (`perf stat -a`, OpenWrt's
    /// `perf` package).
    RouterCounters,
}

/// Why the mail lists every run of a metric: what the user's question is
/// about, or the core model's answer to it at the SoC's clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Headline {
    /// Measured on the lab machine: Mbit/s, UDP loss, tbench MB/s.
    Measured,
    /// Modelled for the real CPU: packets/s at the SoC's clock.
    Modelled,
}

/// Where the report shows a metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shown {
    /// As a family of its own, in [`LabMetric::ALL`]'s order.
    Family,
    /// With the per-CPU families of a machine of several CPUs.
    PerCpu,
    /// Only in `lab.json` and the lab's log.
    Recorded,
}

/// The values a metric can take and the decimals the lab keeps.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Range {
    /// The smallest value it can take (0: rates, times, counts and
    /// shares are never negative).
    pub min: f64,
    /// The largest value it can take: a bound no real run comes near
    /// (1 Tbit/s, a second per packet), which keeps the statistics of a
    /// damaged file finite.
    pub max: f64,
    /// The decimals the lab rounds it to: two runs' values differ by at
    /// least `10^-decimals` or not at all.
    pub decimals: i32,
}

/// The most CPUs a per-CPU metric may name (`_cpu63`).
pub const MAX_CPUS: u32 = 64;

impl LabMetric {
    /// Every metric, in report order: the families a report shows
    /// ([`Shown::Family`]), then the others.
    pub const ALL: [LabMetric; 19] = [
        LabMetric::Tbench,
        LabMetric::Throughput,
        LabMetric::UdpLost,
        LabMetric::CpuPerPacket,
        LabMetric::InsnsPerPacket,
        LabMetric::L1iMissesPerPacket,
        LabMetric::L1dMissesPerPacket,
        LabMetric::CyclesPerPacket,
        LabMetric::PacketsPerSecond,
        LabMetric::ModelledThroughput,
        LabMetric::TakenBranchesPerPacket,
        LabMetric::MispredictsPerPacket,
        LabMetric::L2MissesPerPacket,
        LabMetric::RouterCyclesPerPacket,
        LabMetric::RouterInsnsPerPacket,
        LabMetric::RouterBranchMissesPerPacket,
        LabMetric::RouterL1iMissesPerPacket,
        LabMetric::TbenchMaxLatency,
        LabMetric::CyclesPerPacketTotal,
    ];

    /// The metrics a run on more than one CPU records per CPU as
    /// `<name>_cpu<N>` ([`LabMetric::cpu_name`]).
    pub const PER_CPU: [LabMetric; 4] = [
        LabMetric::CyclesPerPacket,
        LabMetric::InsnsPerPacket,
        LabMetric::L1iMissesPerPacket,
        LabMetric::L1dMissesPerPacket,
    ];

    /// Its name in `lab.json` (`throughput`), as every version wrote it.
    pub fn name(self) -> &'static str {
        match self {
            LabMetric::Tbench => "tbench",
            LabMetric::Throughput => "throughput",
            LabMetric::UdpLost => "udp_lost",
            LabMetric::CpuPerPacket => "guest_cpu_per_packet",
            LabMetric::InsnsPerPacket => "guest_insns_per_packet",
            LabMetric::L1iMissesPerPacket => "l1i_misses_per_packet",
            LabMetric::L1dMissesPerPacket => "l1d_misses_per_packet",
            LabMetric::CyclesPerPacket => "modelled_cycles_per_packet",
            LabMetric::PacketsPerSecond => "modelled_packets_per_second",
            LabMetric::ModelledThroughput => "modelled_throughput",
            LabMetric::TakenBranchesPerPacket => "taken_branches_per_packet",
            LabMetric::MispredictsPerPacket => "mispredicts_per_packet",
            LabMetric::L2MissesPerPacket => "l2_misses_per_packet",
            LabMetric::TbenchMaxLatency => "tbench_max_latency",
            LabMetric::CyclesPerPacketTotal => "modelled_cycles_per_packet_total",
            LabMetric::RouterCyclesPerPacket => "router_cycles_per_packet",
            LabMetric::RouterInsnsPerPacket => "router_insns_per_packet",
            LabMetric::RouterBranchMissesPerPacket => "router_branch_misses_per_packet",
            LabMetric::RouterL1iMissesPerPacket => "router_l1i_misses_per_packet",
        }
    }

    /// The unit the lab records it in (`Mbit/s`).
    pub fn unit(self) -> &'static str {
        match self {
            LabMetric::Tbench => "MB/s",
            LabMetric::Throughput | LabMetric::ModelledThroughput => "Mbit/s",
            LabMetric::UdpLost => "%",
            LabMetric::CpuPerPacket => "ns/packet",
            LabMetric::InsnsPerPacket | LabMetric::RouterInsnsPerPacket => "insns/packet",
            LabMetric::L1iMissesPerPacket
            | LabMetric::L1dMissesPerPacket
            | LabMetric::L2MissesPerPacket
            | LabMetric::RouterBranchMissesPerPacket
            | LabMetric::RouterL1iMissesPerPacket => "misses/packet",
            LabMetric::CyclesPerPacket
            | LabMetric::CyclesPerPacketTotal
            | LabMetric::RouterCyclesPerPacket => "cycles/packet",
            LabMetric::PacketsPerSecond => "packets/s",
            LabMetric::TakenBranchesPerPacket => "branches/packet",
            LabMetric::MispredictsPerPacket => "mispredicts/packet",
            LabMetric::TbenchMaxLatency => "ms",
        }
    }

    /// Its title in reports, in sentences (`Throughput`).
    pub fn title(self) -> &'static str {
        match self {
            LabMetric::Tbench => "tbench",
            LabMetric::Throughput => "Throughput",
            LabMetric::UdpLost => "UDP datagrams lost",
            LabMetric::CpuPerPacket => "Guest CPU per packet",
            LabMetric::InsnsPerPacket => "Guest instructions per packet",
            LabMetric::L1iMissesPerPacket => "Modelled L1I misses per packet",
            LabMetric::L1dMissesPerPacket => "Modelled L1D misses per packet",
            LabMetric::CyclesPerPacket => "Modelled cycles per packet",
            LabMetric::PacketsPerSecond => "Modelled packets/s at the SoC's clock",
            LabMetric::ModelledThroughput => "Modelled Mbit/s at the SoC's clock",
            LabMetric::TakenBranchesPerPacket => "Modelled taken branches per packet",
            LabMetric::MispredictsPerPacket => "Modelled mispredictions per packet",
            LabMetric::L2MissesPerPacket => "Modelled L2 misses per packet",
            LabMetric::TbenchMaxLatency => "tbench's slowest operation",
            LabMetric::CyclesPerPacketTotal => "Modelled cycles per packet, all CPUs",
            LabMetric::RouterCyclesPerPacket => "Router's cycles per packet (perf stat -a)",
            LabMetric::RouterInsnsPerPacket => "Router's instructions per packet (perf stat -a)",
            LabMetric::RouterBranchMissesPerPacket => {
                "Router's branch misses per packet (perf stat -a)"
            }
            LabMetric::RouterL1iMissesPerPacket => "Router's L1I misses per packet (perf stat -a)",
        }
    }

    /// Who measures it.
    pub fn family(self) -> MeasuredBy {
        match self {
            LabMetric::Tbench
            | LabMetric::Throughput
            | LabMetric::UdpLost
            | LabMetric::TbenchMaxLatency => MeasuredBy::Workload,
            LabMetric::CpuPerPacket => MeasuredBy::Guest,
            LabMetric::InsnsPerPacket
            | LabMetric::L1iMissesPerPacket
            | LabMetric::L1dMissesPerPacket => MeasuredBy::CacheModel,
            LabMetric::CyclesPerPacket
            | LabMetric::PacketsPerSecond
            | LabMetric::ModelledThroughput
            | LabMetric::TakenBranchesPerPacket
            | LabMetric::MispredictsPerPacket
            | LabMetric::L2MissesPerPacket
            | LabMetric::CyclesPerPacketTotal => MeasuredBy::CoreModel,
            LabMetric::RouterCyclesPerPacket
            | LabMetric::RouterInsnsPerPacket
            | LabMetric::RouterBranchMissesPerPacket
            | LabMetric::RouterL1iMissesPerPacket => MeasuredBy::RouterCounters,
        }
    }

    /// Why the mail lists its every run, if it does.
    pub fn headline(self) -> Option<Headline> {
        match self {
            LabMetric::Throughput | LabMetric::UdpLost | LabMetric::Tbench => {
                Some(Headline::Measured)
            }
            LabMetric::PacketsPerSecond => Some(Headline::Modelled),
            _ => None,
        }
    }

    /// Where the report shows it.
    pub fn shown(self) -> Shown {
        match self {
            LabMetric::TbenchMaxLatency => Shown::Recorded,
            LabMetric::CyclesPerPacketTotal => Shown::PerCpu,
            _ => Shown::Family,
        }
    }

    /// The values it can take and the decimals the lab keeps.
    pub fn range(self) -> Range {
        let (max, decimals) = match self {
            // 1 Tbit/s, 1 TB/s, to the kbit/s or kB/s.
            LabMetric::Throughput | LabMetric::Tbench => (1e6, 3),
            // 10^10 packets/s of 1250 bytes, to the kbit/s.
            LabMetric::ModelledThroughput => (1e8, 3),
            // A share of the datagrams sent, to 0.001 %.
            LabMetric::UdpLost => (100.0, 3),
            // A second per packet, to 0.1 ns.
            LabMetric::CpuPerPacket
            | LabMetric::InsnsPerPacket
            | LabMetric::RouterInsnsPerPacket => (1e9, 1),
            LabMetric::RouterCyclesPerPacket => (1e12, 1),
            LabMetric::RouterBranchMissesPerPacket | LabMetric::RouterL1iMissesPerPacket => {
                (1e9, 3)
            }
            LabMetric::L1iMissesPerPacket
            | LabMetric::L1dMissesPerPacket
            | LabMetric::L2MissesPerPacket
            | LabMetric::TakenBranchesPerPacket
            | LabMetric::MispredictsPerPacket => (1e9, 3),
            LabMetric::CyclesPerPacket | LabMetric::CyclesPerPacketTotal => (1e12, 1),
            // A packet a cycle at 10 GHz.
            LabMetric::PacketsPerSecond => (1e10, 1),
            // A day, to the microsecond.
            LabMetric::TbenchMaxLatency => (86_400_000.0, 3),
        };
        Range {
            min: 0.0,
            max,
            decimals,
        }
    }

    /// The smallest difference between two recorded values,
    /// `10^-decimals`, in its unit.
    pub fn resolution(self) -> f64 {
        10f64.powi(-self.range().decimals)
    }

    /// `value` rounded to the decimals the lab keeps.
    pub fn round(self, value: f64) -> f64 {
        let scale = 10f64.powi(self.range().decimals);
        (value * scale).round() / scale
    }

    /// The metric named `name` in `lab.json`; `None` for a name this
    /// xtask does not know (a per-CPU name included: [`LabMetric::parse`]).
    pub fn named(name: &str) -> Option<LabMetric> {
        LabMetric::ALL.into_iter().find(|m| m.name() == name)
    }

    /// The metric and CPU of a recorded name: `throughput` → (Throughput,
    /// `None`), `l1i_misses_per_packet_cpu1` → (L1iMissesPerPacket,
    /// `Some(1)`); `None` for a name this xtask does not know, a CPU's
    /// share of a metric not in [`LabMetric::PER_CPU`] included.
    pub fn parse(name: &str) -> Option<(LabMetric, Option<u32>)> {
        if let Some(m) = LabMetric::named(name) {
            return Some((m, None));
        }
        let (family, digits) = name.rsplit_once("_cpu")?;
        // As `cpu_name` writes it: `_cpu1`, not `_cpu01` or `_cpu+1`.
        let cpu: u32 = digits.parse().ok().filter(|c| *c < MAX_CPUS)?;
        if cpu.to_string() != digits {
            return None;
        }
        let m = LabMetric::PER_CPU
            .into_iter()
            .find(|m| m.name() == family)?;
        Some((m, Some(cpu)))
    }

    /// `<name>_cpu<cpu>`: its name for one CPU's share.
    pub fn cpu_name(self, cpu: u32) -> String {
        format!("{}_cpu{cpu}", self.name())
    }

    /// What is wrong with `value` in `unit` for this metric, if anything:
    /// another unit, not a finite number, or out of its range.
    pub fn problem(self, value: f64, unit: &str) -> Option<String> {
        let (name, range) = (self.name(), self.range());
        if unit != self.unit() {
            return Some(format!(
                "{name} is in {unit}, but the lab records it in {}",
                self.unit()
            ));
        }
        if !value.is_finite() {
            return Some(format!("{name} is {value} {unit}, not a number"));
        }
        if value > range.max {
            return Some(format!(
                "{name} is {} {unit}, more than the {} {unit} it can be",
                shown(value),
                shown(range.max)
            ));
        }
        if value < range.min {
            return Some(if range.min == 0.0 {
                format!("{name} is {value} {unit}, but {name} cannot be negative")
            } else {
                format!(
                    "{name} is {value} {unit}, below its least {} {unit}",
                    range.min
                )
            });
        }
        None
    }
}

/// `150`, `0.5`; `1e308` for magnitudes from a million up.
fn shown(value: f64) -> String {
    if value.abs() >= 1e6 {
        format!("{value:e}")
    } else {
        format!("{value}")
    }
}

/// One number of a run with its unit, as `lab.json` holds it: `{"name":
/// "throughput", "value": 180.5, "unit": "Mbit/s"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricValue {
    /// A [`LabMetric`]'s name ([`LabMetric::name`]), or one CPU's share of one
    /// ([`LabMetric::cpu_name`]). Kept as written, so that a file with a name
    /// this xtask does not know reads ([`MetricValue::metric`] is `None`,
    /// and [`super::check`] refuses it).
    pub name: String,
    /// The value.
    pub value: f64,
    /// The metric's unit ([`LabMetric::unit`]).
    pub unit: String,
}

impl MetricValue {
    /// `value` of `metric`, rounded as `lab.json` keeps it, in its unit.
    pub fn new(metric: LabMetric, value: f64) -> MetricValue {
        MetricValue {
            name: metric.name().to_string(),
            value: metric.round(value),
            unit: metric.unit().to_string(),
        }
    }

    /// CPU `cpu`'s share of `metric` (`l1i_misses_per_packet_cpu1`), as
    /// [`MetricValue::new`].
    pub fn of_cpu(metric: LabMetric, cpu: u32, value: f64) -> MetricValue {
        MetricValue {
            name: metric.cpu_name(cpu),
            ..MetricValue::new(metric, value)
        }
    }

    /// The metric it is a value of (the whole machine's, not a CPU's
    /// share); `None` for a name this xtask does not know.
    pub fn metric(&self) -> Option<LabMetric> {
        LabMetric::named(&self.name)
    }

    /// Whether it is a value of `metric` (the whole machine's).
    pub fn is(&self, metric: LabMetric) -> bool {
        self.name == metric.name()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_metric_has_one_name_and_a_range_the_statistics_can_average() {
        for (i, m) in LabMetric::ALL.iter().enumerate() {
            assert!(
                LabMetric::ALL[..i].iter().all(|o| o.name() != m.name()),
                "{} twice",
                m.name()
            );
            let r = m.range();
            assert!(r.min >= 0.0 && r.min < r.max, "{m:?}");
            assert!(r.max <= super::super::check::MAX_VALUE, "{m:?}");
            assert_eq!(LabMetric::named(m.name()), Some(*m));
        }
        // The report's families come first.
        let shown: Vec<Shown> = LabMetric::ALL.map(LabMetric::shown).to_vec();
        assert!(shown.is_sorted_by_key(|s| *s != Shown::Family), "{shown:?}");
        let m = LabMetric::UdpLost;
        assert_eq!(
            m.problem(-50.0, "%").unwrap(),
            "udp_lost is -50 %, but udp_lost cannot be negative"
        );
        assert_eq!(
            m.problem(12.0, "Mbit/s").unwrap(),
            "udp_lost is in Mbit/s, but the lab records it in %"
        );
        assert!(m.problem(100.5, "%").is_some());
        assert_eq!(m.problem(0.5, "%"), None);
        assert_eq!(LabMetric::Throughput.resolution(), 0.001);
        assert_eq!(LabMetric::CpuPerPacket.round(12.345), 12.3);
    }

    #[test]
    fn a_cpus_share_parses_as_its_metric_and_cpu() {
        let l1i = LabMetric::L1iMissesPerPacket;
        assert_eq!(
            LabMetric::parse("l1i_misses_per_packet_cpu1"),
            Some((l1i, Some(1)))
        );
        assert_eq!(LabMetric::parse(&l1i.cpu_name(3)), Some((l1i, Some(3))));
        assert_eq!(
            LabMetric::parse("modelled_cycles_per_packet_total"),
            Some((LabMetric::CyclesPerPacketTotal, None))
        );
        for name in [
            "throughput_cpu1",
            "l1i_misses_per_packet_cpu01",
            "l1i_misses_per_packet_cpu+1",
            "l1i_misses_per_packet_cpu64",
            "latency",
        ] {
            assert_eq!(LabMetric::parse(name), None, "{name}");
        }
    }
}
