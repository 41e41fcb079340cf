//! What a lab metric may hold: each metric's name, the unit the lab
//! records it in, the range of values it can take and the decimals the
//! lab rounds it to ([`MetricSpec`]), next to its name; the forwarding
//! lab's own metrics are here, the cache and core models' in [`super::cache`]
//! and [`super::core_model`], tbench's in [`super::host`]. [`super::check`]
//! checks every run's values against them on read (a negative loss, a
//! negative cycle count or a loss recorded in Mbit/s is a damaged file,
//! not a result).

/// A lab metric: its name, unit, range and recorded precision.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MetricSpec {
    /// The metric's name in `lab.json` (`throughput`).
    pub name: &'static str,
    /// The unit the lab records it in (`Mbit/s`).
    pub unit: &'static str,
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

impl MetricSpec {
    /// The smallest difference between two recorded values,
    /// `10^-decimals`, in the metric's unit.
    pub fn resolution(&self) -> f64 {
        10f64.powi(-self.decimals)
    }

    /// What is wrong with `value` in `unit` for this metric, if anything:
    /// another unit, not a finite number, or out of its range.
    pub fn problem(&self, value: f64, unit: &str) -> Option<String> {
        let name = self.name;
        if unit != self.unit {
            return Some(format!(
                "{name} is in {unit}, but the lab records it in {}",
                self.unit
            ));
        }
        if !value.is_finite() {
            return Some(format!("{name} is {value} {unit}, not a number"));
        }
        if value > self.max {
            return Some(format!(
                "{name} is {} {unit}, more than the {} {unit} it can be",
                shown(value),
                shown(self.max)
            ));
        }
        if value < self.min {
            return Some(if self.min == 0.0 {
                format!("{name} is {value} {unit}, but {name} cannot be negative")
            } else {
                format!(
                    "{name} is {value} {unit}, below its least {} {unit}",
                    self.min
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

/// Metric name of the receiver's throughput.
pub const THROUGHPUT: &str = "throughput";
/// Unit of [`THROUGHPUT`].
pub const MBIT_PER_S: &str = "Mbit/s";
/// [`THROUGHPUT`]: 0 to 1 Tbit/s, to the kbit/s.
pub const THROUGHPUT_METRIC: MetricSpec = MetricSpec {
    name: THROUGHPUT,
    unit: MBIT_PER_S,
    min: 0.0,
    max: 1e6,
    decimals: 3,
};

/// Metric name of the guest's busy time per forwarded packet.
pub const CPU_PER_PACKET: &str = "guest_cpu_per_packet";
/// Unit of [`CPU_PER_PACKET`].
pub const NS_PER_PACKET: &str = "ns/packet";
/// [`CPU_PER_PACKET`]: 0 to a second per packet, to 0.1 ns.
pub const CPU_PER_PACKET_METRIC: MetricSpec = MetricSpec {
    name: CPU_PER_PACKET,
    unit: NS_PER_PACKET,
    min: 0.0,
    max: 1e9,
    decimals: 1,
};

/// Metric name of the UDP datagrams the receiver missed (`--udp` runs):
/// iperf3's `end.sum_received.lost_percent`.
pub const UDP_LOST: &str = "udp_lost";
/// Unit of [`UDP_LOST`].
pub const PERCENT: &str = "%";
/// [`UDP_LOST`]: a share of the datagrams sent, 0 to 100 %, to 0.001 %.
pub const UDP_LOST_METRIC: MetricSpec = MetricSpec {
    name: UDP_LOST,
    unit: PERCENT,
    min: 0.0,
    max: 100.0,
    decimals: 3,
};

/// Every metric the lab records, with its unit, range and precision: a
/// run's metric that is not one of them is refused.
pub const METRICS: [MetricSpec; 15] = [
    THROUGHPUT_METRIC,
    CPU_PER_PACKET_METRIC,
    UDP_LOST_METRIC,
    super::host::TBENCH_METRIC,
    super::host::TBENCH_MAX_LATENCY_METRIC,
    super::cache::INSNS_PER_PACKET_METRIC,
    super::cache::L1I_MISSES_PER_PACKET_METRIC,
    super::cache::L1D_MISSES_PER_PACKET_METRIC,
    super::core_model::CYCLES_PER_PACKET_METRIC,
    super::core_model::PACKETS_PER_SECOND_METRIC,
    super::core_model::MODELLED_THROUGHPUT_METRIC,
    super::core_model::TAKEN_PER_PACKET_METRIC,
    super::core_model::MISPREDICTS_PER_PACKET_METRIC,
    super::core_model::L2_MISSES_PER_PACKET_METRIC,
    super::per_cpu::CYCLES_PER_PACKET_TOTAL_METRIC,
];

/// The spec of metric `name`, if the lab records one by that name; one
/// CPU's share of a per-CPU family (`l1i_misses_per_packet_cpu1`,
/// [`super::per_cpu::split_cpu_metric`]) has its family's.
pub fn spec(name: &str) -> Option<&'static MetricSpec> {
    let family = super::per_cpu::split_cpu_metric(name).map_or(name, |(f, _)| f);
    METRICS.iter().find(|m| m.name == family)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_metric_has_one_spec_and_a_range_the_statistics_can_average() {
        for (i, m) in METRICS.iter().enumerate() {
            assert!(
                METRICS[..i].iter().all(|o| o.name != m.name),
                "{} twice",
                m.name
            );
            assert!(m.min >= 0.0 && m.min < m.max, "{m:?}");
            assert!(m.max <= super::super::check::MAX_VALUE, "{m:?}");
        }
        assert_eq!(
            UDP_LOST_METRIC.problem(-50.0, "%").unwrap(),
            "udp_lost is -50 %, but udp_lost cannot be negative"
        );
        assert_eq!(
            UDP_LOST_METRIC.problem(12.0, "Mbit/s").unwrap(),
            "udp_lost is in Mbit/s, but the lab records it in %"
        );
        assert!(UDP_LOST_METRIC.problem(100.5, "%").is_some());
        assert_eq!(UDP_LOST_METRIC.problem(0.5, "%"), None);
        assert_eq!(THROUGHPUT_METRIC.resolution(), 0.001);
        // A CPU's share has its family's spec; other suffixes none.
        assert_eq!(
            spec("l1i_misses_per_packet_cpu1").map(|m| m.name),
            Some("l1i_misses_per_packet")
        );
        assert!(spec("modelled_cycles_per_packet_total").is_some());
        assert!(spec("throughput_cpu1").is_none());
    }
}
