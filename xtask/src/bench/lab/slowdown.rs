//! What the cache and core model's plugin costs the lab (`bench lab
//! --cache-model`): the same short lab run once without the
//! model and once with it, one after the other on this machine, compared
//! as ratios. Under `-icount` a run's iperf3 duration is fixed in wall
//! time, so the plugin shows as fewer packets forwarded in it (QEMU
//! executes fewer guest instructions per second), a slower boot and
//! longer reads around each run; no goal is set, the ratio is reported.
//!
//! `bench lab --cpus N` compares one CPU with N the same way
//! ([`MultiCore`]), with a goal on the run wall time
//! ([`MULTICORE_GOAL_RATIO`]).

use anyhow::{ensure, Result};
use serde::Serialize;

use super::spread::Spread;
use crate::results::lab::{LabMetric, LabRecord};

/// One side's medians.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Side {
    /// Boot to READY, wall seconds (median).
    pub boot_seconds: f64,
    /// A run's wall seconds, warm-ups included (median).
    pub run_wall_seconds: f64,
    /// iperf3's Mbit/s of the measured runs (median).
    pub mbit_per_s: f64,
    /// Packets both NICs received per second of traffic (median): how
    /// fast QEMU forwards.
    pub packets_per_second: f64,
}

impl Side {
    /// The medians of `record`'s boots and runs.
    pub fn of(record: &LabRecord) -> Result<Side> {
        let duration = f64::from(record.settings.duration_seconds);
        let median = |v: Vec<f64>, what: &str| -> Result<f64> {
            Spread::of(&v)
                .map(|s| s.median)
                .ok_or_else(|| anyhow::anyhow!("the lab has no {what}"))
        };
        let measured = || record.runs.iter().filter(|r| !r.warmup);
        Ok(Side {
            boot_seconds: median(
                record.boots.iter().map(|b| b.boot_seconds).collect(),
                "boot",
            )?,
            run_wall_seconds: median(
                record.runs.iter().filter_map(|r| r.wall_seconds).collect(),
                "run with its wall time",
            )?,
            mbit_per_s: median(
                measured()
                    .flat_map(|r| r.metrics.iter().filter(|m| m.is(LabMetric::Throughput)))
                    .map(|m| m.value)
                    .collect(),
                "throughput",
            )?,
            packets_per_second: median(
                measured()
                    .filter_map(|r| r.guest.as_ref())
                    .map(|g| g.guest_work.packets as f64 / duration)
                    .collect(),
                "guest counters",
            )?,
        })
    }
}

/// Without the model against with it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Slowdown {
    /// The lab without the plugin.
    pub without: Side,
    /// The same lab with it.
    pub with: Side,
}

impl Slowdown {
    /// The two runs' comparison; both must have booted and run.
    pub fn new(without: &LabRecord, with: &LabRecord) -> Result<Slowdown> {
        ensure!(
            without.cache_model.is_none() && with.cache_model.is_some(),
            "compare a lab run without the cache model with one that had it"
        );
        Ok(Slowdown {
            without: Side::of(without)?,
            with: Side::of(with)?,
        })
    }

    /// How many times fewer packets per second QEMU forwards with the
    /// model.
    pub fn forwarding_slowdown(&self) -> f64 {
        self.without.packets_per_second / self.with.packets_per_second
    }

    /// The Markdown table `bench lab --cache-model` prints.
    pub fn render(&self) -> String {
        let (a, b) = (&self.without, &self.with);
        let row = |what: &str, x: f64, y: f64, unit: &str, slower: f64| {
            format!("| {what} | {x:.2} {unit} | {y:.2} {unit} | ×{slower:.2} |\n")
        };
        let mut out = String::from(
            "\nThe model's cost (the same plan without and with the plugin, medians; no goal, the ratio is the figure):\n\n\
             | measurement | without the model | with it | slowdown |\n|---|---|---|---|\n",
        );
        out.push_str(&row(
            "boot to ready (wall)",
            a.boot_seconds,
            b.boot_seconds,
            "s",
            b.boot_seconds / a.boot_seconds,
        ));
        out.push_str(&row(
            "run wall time",
            a.run_wall_seconds,
            b.run_wall_seconds,
            "s",
            b.run_wall_seconds / a.run_wall_seconds,
        ));
        out.push_str(&row(
            "iperf3 through the guest",
            a.mbit_per_s,
            b.mbit_per_s,
            "Mbit/s",
            a.mbit_per_s / b.mbit_per_s,
        ));
        out.push_str(&row(
            "packets forwarded per second of traffic",
            a.packets_per_second,
            b.packets_per_second,
            "packets/s",
            self.forwarding_slowdown(),
        ));
        out
    }
}

/// One CPU against several (`bench lab --cpus N`):
/// the same plan on the same lab kernel, first on one CPU under
/// `-icount`, then on `cpus` CPUs on multi-threaded TCG with the target's
/// packet steering. The goal: a run's wall time on `cpus` CPUs at most
/// [`MULTICORE_GOAL_RATIO`] times one CPU's.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MultiCore {
    /// The CPUs of the second lab.
    pub cpus: u32,
    /// The lab on one CPU.
    pub one: Side,
    /// The lab on `cpus` CPUs.
    pub many: Side,
}

/// The most a multi-CPU run's wall time may be, as a multiple of a
/// one-CPU run's: what more CPUs may cost before the multi-CPU lab is
/// too slow to use.
pub const MULTICORE_GOAL_RATIO: f64 = 1.5;

impl MultiCore {
    /// The two runs' comparison; `one` must have run on one CPU and
    /// `many` on more.
    pub fn new(one: &LabRecord, many: &LabRecord) -> Result<MultiCore> {
        let cpus = |r: &LabRecord| match &r.machine {
            crate::results::lab::MachineInfo::Qemu { qemu, .. } => qemu.smp,
            _ => 0,
        };
        ensure!(
            cpus(one) == 1 && cpus(many) > 1,
            "compare a QEMU lab run on one CPU with one on more (these had {} and {})",
            cpus(one),
            cpus(many)
        );
        Ok(MultiCore {
            cpus: cpus(many),
            one: Side::of(one)?,
            many: Side::of(many)?,
        })
    }

    /// Median run wall time on `cpus` CPUs over one CPU's.
    pub fn wall_ratio(&self) -> f64 {
        self.many.run_wall_seconds / self.one.run_wall_seconds
    }

    /// Whether [`Self::wall_ratio`] meets [`MULTICORE_GOAL_RATIO`].
    pub fn meets_goal(&self) -> bool {
        self.wall_ratio() <= MULTICORE_GOAL_RATIO
    }

    /// The Markdown table `bench lab --cpus N` prints, one CPU beside N.
    pub fn render(&self) -> String {
        let (a, b) = (&self.one, &self.many);
        let n = self.cpus;
        let row = |what: &str, x: f64, y: f64, unit: &str| {
            format!(
                "| {what} | {x:.2} {unit} | {y:.2} {unit} | ×{:.2} |
",
                y / x
            )
        };
        let mut out = format!(
            "
One CPU beside {n} (the same plan and kernel; {n} CPUs run on multi-threaded TCG without -icount, with the target's packet steering; medians):

             | measurement | 1 CPU | {n} CPUs | {n} ÷ 1 |
|---|---|---|---|
"
        );
        out.push_str(&row(
            "boot to ready (wall)",
            a.boot_seconds,
            b.boot_seconds,
            "s",
        ));
        out.push_str(&row(
            "run wall time",
            a.run_wall_seconds,
            b.run_wall_seconds,
            "s",
        ));
        out.push_str(&row(
            "iperf3 through the guest",
            a.mbit_per_s,
            b.mbit_per_s,
            "Mbit/s",
        ));
        out.push_str(&row(
            "packets forwarded per second of traffic",
            a.packets_per_second,
            b.packets_per_second,
            "packets/s",
        ));
        out.push_str(&format!(
            "
Goal: a run's wall time on {n} CPUs at most ×{MULTICORE_GOAL_RATIO} one CPU's: ×{:.2}, {}.
",
            self.wall_ratio(),
            if self.meets_goal() {
                "✅ pass"
            } else {
                "❌ fail"
            }
        ));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lab fixture (boots, runs with guest counters), each run with a
    /// wall time.
    fn fixture() -> LabRecord {
        let file = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/lab_fixture/lab.json");
        let text = std::fs::read_to_string(file).unwrap();
        let mut r: LabRecord = serde_json::from_str(&text).unwrap();
        for run in &mut r.runs {
            run.wall_seconds = Some(f64::from(r.settings.duration_seconds) + 0.5);
        }
        r
    }

    #[test]
    fn the_slowdown_is_without_over_with() {
        let without = fixture();
        let mut with = fixture();
        with.cache_model = Some(
            serde_json::from_value(serde_json::json!({
                "icache": {"size_bytes": 32768, "ways": 4, "line_bytes": 32},
                "dcache": {"size_bytes": 32768, "ways": 4, "line_bytes": 32},
                "geometry_from": "t", "plugin_source": "p", "plugin_source_sha256": "0",
                "plugin_sha256": "1", "compiler": "gcc", "qemu_source": "qemu",
                "plugin_header_sha256": "2"
            }))
            .unwrap(),
        );
        for run in &mut with.runs {
            for m in &mut run.metrics {
                m.value /= 4.0;
            }
            if let Some(g) = &mut run.guest {
                g.guest_work.packets /= 4;
            }
        }
        for b in &mut with.boots {
            b.boot_seconds *= 2.0;
        }
        let s = Slowdown::new(&without, &with).unwrap();
        assert!((s.forwarding_slowdown() - 4.0).abs() < 0.01, "{s:?}");
        assert!((s.with.boot_seconds / s.without.boot_seconds - 2.0).abs() < 1e-9);
        let text = s.render();
        assert!(text.contains("| iperf3 through the guest |"), "{text}");
        assert!(text.contains("×2.00 |"), "{text}");
        assert!(Slowdown::new(&with, &without).is_err());
    }

    #[test]
    fn several_cpus_are_compared_with_one_by_run_wall_time() {
        let one = fixture();
        let mut two = fixture();
        if let crate::results::lab::MachineInfo::Qemu { qemu, .. } = &mut two.machine {
            qemu.smp = 2;
        }
        for run in &mut two.runs {
            run.wall_seconds = run.wall_seconds.map(|w| w * 1.6);
        }
        let m = MultiCore::new(&one, &two).unwrap();
        assert_eq!(m.cpus, 2);
        assert!((m.wall_ratio() - 1.6).abs() < 1e-9, "{m:?}");
        assert!(!m.meets_goal());
        let text = m.render();
        assert!(text.contains("| run wall time |"), "{text}");
        assert!(text.contains("×1.60, ❌ fail"), "{text}");
        assert!(MultiCore::new(&two, &one).is_err());
        assert!(MultiCore::new(&one, &one).is_err());
    }
}
