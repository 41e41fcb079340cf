//! What `bench lab` measured, as numbers (`--json`) and as the Markdown
//! table it prints, with the lab's two speed goals (boot to ready within
//! [`BOOT_GOAL_SECONDS`], a run's time beyond its iperf3 duration within
//! [`OVERHEAD_GOAL_SECONDS`]) marked pass or fail. The figures come from `lab.json` alone ([`LabFigures::from_record`]),
//! so any lab run written since runs record their wall time can be read
//! the same way.

use anyhow::{ensure, Result};
use serde::Serialize;

use super::spread::Spread;
use crate::bench::build::report::with_goals;
use crate::results::lab::timing;
use crate::results::lab::{LabRecord, WallStep};

/// The version of the `--json` layout.
pub const SCHEMA: u32 = 1;

/// Most wall seconds from starting QEMU to the router's READY (the
/// median boot).
pub const BOOT_GOAL_SECONDS: f64 = 20.0;

/// Most wall seconds a run may take beyond its iperf3 duration (the
/// median run).
pub const OVERHEAD_GOAL_SECONDS: f64 = 1.0;

/// One part of the per-run overhead or of the boot, averaged over the
/// runs or boots.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Part {
    /// A [`timing`] step (`iperf3_client` counts only its time beyond the
    /// run's duration), or `other` (the wall time not in any step: for a
    /// run reading the reports, for a boot the network set up before
    /// QEMU starts is not in `boot_seconds` at all).
    pub step: String,
    /// Mean seconds per run or boot.
    pub mean_seconds: f64,
    /// Greatest seconds in one run or boot.
    pub max_seconds: f64,
}

/// The parts of `items` (each its steps and its total wall seconds, the
/// time not spent in a step counted as `other`), each step's seconds
/// less `less(step)`; means over every item, so that they add up to the
/// mean total less the sum of `less`. Empty when no item has steps.
fn parts<'a>(
    items: impl Iterator<Item = (&'a [WallStep], f64)> + Clone,
    less: impl Fn(&str) -> f64,
) -> Vec<Part> {
    if items.clone().all(|(steps, _)| steps.is_empty()) {
        return Vec::new();
    }
    let mut by_step: Vec<(String, Vec<f64>)> = Vec::new();
    let mut other = Vec::new();
    for (steps, total) in items {
        for s in steps {
            let seconds = s.seconds - less(&s.step);
            match by_step.iter_mut().find(|(name, _)| *name == s.step) {
                Some((_, v)) => v.push(seconds),
                None => by_step.push((s.step.clone(), vec![seconds])),
            }
        }
        other.push(total - steps.iter().map(|s| s.seconds).sum::<f64>());
    }
    let n = other.len() as f64;
    by_step.push(("other".to_string(), other));
    by_step
        .into_iter()
        .map(|(step, v)| Part {
            step,
            mean_seconds: v.iter().sum::<f64>() / n,
            max_seconds: v.iter().copied().fold(f64::MIN, f64::max),
        })
        .collect()
}

/// The figures of one lab run, from its `lab.json`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LabFigures {
    /// Seconds of iperf3 traffic per run (`--duration`).
    pub duration_seconds: u32,
    /// Wall seconds from starting QEMU to READY, per boot.
    pub boot: Spread,
    /// The guest's own uptime at READY (virtual seconds under `-icount`),
    /// per boot: the part of `boot` the guest itself counted.
    pub guest_uptime_at_ready: Option<Spread>,
    /// Wall seconds per run (warm-ups included: every run costs its wall
    /// time).
    pub run_wall: Spread,
    /// Wall seconds per run beyond its duration.
    pub overhead: Spread,
    /// Runs whose overhead exceeded [`OVERHEAD_GOAL_SECONDS`].
    pub overhead_over_goal: usize,
    /// Boots slower than [`BOOT_GOAL_SECONDS`].
    pub boots_over_goal: usize,
    /// The boot step by step, in the order the steps run; the means add
    /// up to `boot.mean`. Empty for boots that recorded no steps.
    pub boot_parts: Vec<Part>,
    /// The overhead step by step, in the order the steps run; the means
    /// add up to `overhead.mean`. Empty for runs that recorded no steps.
    pub run_parts: Vec<Part>,
}

impl LabFigures {
    /// The figures of `record`: every boot, and every run (warm-ups
    /// included) with its `wall_seconds`. Fails when the record has no
    /// boot or a run without `wall_seconds` (written before runs
    /// recorded their wall time).
    pub fn from_record(record: &LabRecord) -> Result<LabFigures> {
        let duration = f64::from(record.settings.duration_seconds);
        let boots: Vec<f64> = record.boots.iter().map(|b| b.boot_seconds).collect();
        let boot = Spread::of(&boots).ok_or_else(|| anyhow::anyhow!("the lab booted nothing"))?;
        let uptimes: Vec<f64> = record
            .boots
            .iter()
            .filter_map(|b| b.guest_uptime_at_ready)
            .collect();
        ensure!(!record.runs.is_empty(), "the lab ran nothing");
        let mut walls = Vec::new();
        for run in &record.runs {
            let wall = run.wall_seconds.ok_or_else(|| {
                anyhow::anyhow!(
                    "run {} has no wall_seconds: its lab.json was written before runs recorded their wall time",
                    run.index
                )
            })?;
            walls.push(wall);
        }
        let overheads: Vec<f64> = walls.iter().map(|w| w - duration).collect();
        let run_parts = parts(
            record
                .runs
                .iter()
                .zip(&walls)
                .map(|(r, &w)| (r.wall_steps.as_slice(), w)),
            |step| {
                if step == timing::CLIENT {
                    duration
                } else {
                    0.0
                }
            },
        );
        let boot_parts = parts(
            record
                .boots
                .iter()
                .map(|b| (b.wall_steps.as_slice(), b.boot_seconds)),
            |_| 0.0,
        );
        Ok(LabFigures {
            duration_seconds: record.settings.duration_seconds,
            boot,
            guest_uptime_at_ready: Spread::of(&uptimes),
            run_wall: Spread::of(&walls).expect("runs checked above"),
            overhead: Spread::of(&overheads).expect("runs checked above"),
            overhead_over_goal: overheads
                .iter()
                .filter(|&&o| o > OVERHEAD_GOAL_SECONDS)
                .count(),
            boots_over_goal: boots.iter().filter(|&&b| b > BOOT_GOAL_SECONDS).count(),
            boot_parts,
            run_parts,
        })
    }

    /// Every goal with its verdict: (what, goal, pass). Each is judged on
    /// the median.
    pub fn goals(&self) -> Vec<(&'static str, String, bool)> {
        vec![
            (
                "boot to ready (median)",
                format!("≤ {BOOT_GOAL_SECONDS} s"),
                self.boot.median <= BOOT_GOAL_SECONDS,
            ),
            (
                "per-run overhead beyond the iperf3 duration (median)",
                format!("≤ {OVERHEAD_GOAL_SECONDS} s"),
                self.overhead.median <= OVERHEAD_GOAL_SECONDS,
            ),
        ]
    }
}

/// The machine's load while the benchmark ran.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Load {
    /// Logical CPUs.
    pub cpus: usize,
    /// `/proc/loadavg`'s 1, 5 and 15 minute averages at the start.
    pub before: [f64; 3],
    /// The same at the end.
    pub after: [f64; 3],
}

impl Load {
    /// The 1, 5 and 15 minute load averages of `/proc/loadavg`'s text.
    pub fn parse(loadavg: &str) -> Option<[f64; 3]> {
        let mut it = loadavg.split_whitespace().map(|f| f.parse::<f64>().ok());
        Some([it.next()??, it.next()??, it.next()??])
    }

    /// `1.73 1.48 1.78`.
    fn averages(a: &[f64; 3]) -> String {
        format!("{:.2} {:.2} {:.2}", a[0], a[1], a[2])
    }
}

/// Everything one `bench lab` run measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LabBenchReport {
    /// [`SCHEMA`].
    pub schema: u32,
    /// The target.
    pub target: String,
    /// The variant booted.
    pub variant: String,
    /// QEMU's machine and CPU (`malta 74Kf`).
    pub machine: String,
    /// sha256 of the booted image.
    pub image_sha256: String,
    /// When the run started (RFC 3339, UTC).
    pub started: String,
    /// The lab directory (its `lab.json` and logs).
    pub lab_dir: std::path::PathBuf,
    /// The machine's load.
    pub load: Load,
    /// The figures.
    pub figures: LabFigures,
    /// With `--cache-model`: the same plan without the model against with
    /// it ([`super::slowdown`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_slowdown: Option<super::slowdown::Slowdown>,
    /// With `--cpus N`: the same plan on one CPU against N
    /// ([`super::slowdown::MultiCore`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub multicore: Option<super::slowdown::MultiCore>,
}

impl LabBenchReport {
    /// The numbers as `--json` writes them: every field, and `goals`
    /// (`what`, `goal`, `pass`).
    pub fn to_json(&self) -> serde_json::Value {
        with_goals(self, self.figures.goals())
    }

    /// The report as it is printed: the load, a Markdown table of the
    /// figures with the goals, then the overhead step by step.
    pub fn render(&self) -> String {
        let f = &self.figures;
        let mark = |ok: bool| if ok { "✅ pass" } else { "❌ fail" };
        let mut out = format!(
            "Lab benchmark: {} {} on QEMU {}, {} boots, {} runs of {} s, {}\n",
            self.target,
            self.variant,
            self.machine,
            f.boot.n,
            f.run_wall.n,
            f.duration_seconds,
            self.started
        );
        out.push_str(&format!(
            "Load average (1/5/15 min) on {} CPUs: {} at the start, {} at the end. \
             A shared, loaded machine moves these wall times; read them with the load.\n\n",
            self.load.cpus,
            Load::averages(&self.load.before),
            Load::averages(&self.load.after)
        ));
        out.push_str("| measurement | min / median / max | goal | |\n|---|---|---|---|\n");
        let goals = f.goals();
        out.push_str(&format!(
            "| boot to ready (wall, QEMU start to READY) | {} | {} | {} |\n",
            f.boot.describe(),
            goals[0].1,
            mark(goals[0].2)
        ));
        if let Some(u) = &f.guest_uptime_at_ready {
            out.push_str(&format!(
                "| guest uptime at READY (guest seconds) | {} | | |\n",
                u.describe()
            ));
        }
        out.push_str(&format!(
            "| run wall time (warm-ups included) | {} | | |\n",
            f.run_wall.describe()
        ));
        out.push_str(&format!(
            "| per-run overhead (wall − {} s) | {} | {} | {} |\n",
            f.duration_seconds,
            f.overhead.describe(),
            goals[1].1,
            mark(goals[1].2)
        ));
        out.push_str(&format!(
            "\nGoals are judged on the median; over the goal: {} of {} boots, {} of {} runs.\n",
            f.boots_over_goal, f.boot.n, f.overhead_over_goal, f.overhead.n
        ));
        for (parts, what) in [
            (&f.boot_parts, "the boot goes"),
            (&f.run_parts, "the per-run overhead goes"),
        ] {
            if parts.is_empty() {
                continue;
            }
            out.push_str(&format!(
                "\nWhere {what} (mean and max per step; the means add up to the mean):\n\n\
                 | step | mean | max |\n|---|---|---|\n"
            ));
            for p in parts {
                out.push_str(&format!(
                    "| {} | {} | {} |\n",
                    part_title(&p.step),
                    millis(p.mean_seconds),
                    millis(p.max_seconds)
                ));
            }
            out.push_str(&format!(
                "| **total** | {:.3} s | |\n",
                parts.iter().map(|p| p.mean_seconds).sum::<f64>()
            ));
        }
        if let Some(s) = &self.model_slowdown {
            out.push_str(&s.render());
        }
        if let Some(m) = &self.multicore {
            out.push_str(&m.render());
        }
        let passed = goals.iter().filter(|g| g.2).count();
        out.push_str(&format!(
            "\n{passed} of {} goals met. lab.json: {}\n",
            goals.len(),
            self.lab_dir.join(crate::results::lab::FILE_NAME).display()
        ));
        out
    }
}

/// `0.146 s`; what rounds to zero is `0.000 s`, never `-0.000 s` (a
/// step's seconds are rounded to the millisecond, so `other` can come
/// out a hair below zero).
fn millis(seconds: f64) -> String {
    let s = if seconds.abs() < 0.0005 { 0.0 } else { seconds };
    format!("{s:.3} s")
}

/// A step's name in the table.
fn part_title(step: &str) -> String {
    match step {
        timing::GRO => "GRO switch (ethtool over the console)".to_string(),
        timing::SERVER_START => "iperf3 server start, until it listens".to_string(),
        timing::SAMPLE_BEFORE => "guest sample before (console round trip)".to_string(),
        timing::MODEL_BEFORE => "cache-model read before".to_string(),
        timing::CLIENT => "iperf3 client beyond its duration (start, end exchange)".to_string(),
        timing::MODEL_AFTER => "cache-model read after".to_string(),
        timing::SAMPLE_AFTER => "guest sample after (console round trip)".to_string(),
        timing::SERVER_EXIT => "iperf3 server exit".to_string(),
        timing::BOOT_CONSOLE => "QEMU start, until its console socket accepts".to_string(),
        timing::BOOT_TAPS => "QEMU opens its taps, attached to the namespaces".to_string(),
        timing::BOOT_READY => "guest kernel and /init, until READY".to_string(),
        timing::BOOT_REACH => "guests ping every endpoint (ARP both ways)".to_string(),
        "other" => "other (outside the steps)".to_string(),
        s => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> LabRecord {
        let file = format!("{}/tests/lab_fixture/{name}", env!("CARGO_MANIFEST_DIR"));
        serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap()
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn load_parses_proc_loadavg() {
        assert_eq!(
            Load::parse("6.33 4.27 2.92 7/150 16106\n"),
            Some([6.33, 4.27, 2.92])
        );
        assert_eq!(Load::parse("6.33"), None);
    }

    /// A real `bench lab --runs 3 --duration 2` on brcm47xx (its iperf3
    /// reports and guest counters left out): 3 boots, 9 runs.
    #[test]
    fn figures_from_a_bench_lab_json() {
        let f = LabFigures::from_record(&fixture("bench-lab.json")).unwrap();
        assert_eq!(f.duration_seconds, 2);
        assert_eq!(
            (f.boot.n, f.boot.min, f.boot.median, f.boot.max),
            (3, 7.027, 7.102, 7.501)
        );
        assert_eq!(f.guest_uptime_at_ready.unwrap().median, 0.6);
        // Overhead = wall − 2 s per run, warm-ups included.
        assert_eq!(f.overhead.n, 9);
        assert!(close(f.overhead.min, 0.513), "{:?}", f.overhead);
        assert!(close(f.overhead.median, 0.775), "{:?}", f.overhead);
        assert!(close(f.overhead.max, 0.944), "{:?}", f.overhead);
        assert!(close(f.run_wall.median, 2.775));
        assert_eq!((f.overhead_over_goal, f.boots_over_goal), (0, 0));
        let steps: Vec<&str> = f.run_parts.iter().map(|p| p.step.as_str()).collect();
        assert_eq!(
            steps,
            [
                timing::GRO,
                timing::SERVER_START,
                timing::SAMPLE_BEFORE,
                timing::CLIENT,
                timing::SAMPLE_AFTER,
                timing::SERVER_EXIT,
                "other"
            ]
        );
        let gro = &f.run_parts[0];
        assert!(close(gro.mean_seconds, 1.75 / 9.0) && gro.max_seconds == 0.252);
        // The client counts only beyond its 2 s.
        let client = &f.run_parts[3];
        assert!(close(client.mean_seconds, 0.961 / 9.0), "{client:?}");
        assert!(close(client.max_seconds, 0.278), "{client:?}");
        // The parts add up to the overhead, the boot's to the boot.
        let sum: f64 = f.run_parts.iter().map(|p| p.mean_seconds).sum();
        assert!(close(sum, f.overhead.mean), "{sum} {}", f.overhead.mean);
        let sum: f64 = f.boot_parts.iter().map(|p| p.mean_seconds).sum();
        assert!(close(sum, f.boot.mean), "{sum} {}", f.boot.mean);
        assert_eq!(f.boot_parts[2].step, timing::BOOT_READY);
        assert!(f.goals().iter().all(|g| g.2));
    }

    #[test]
    fn goals_fail_on_the_median() {
        let mut r = fixture("bench-lab.json");
        for run in r.runs.iter_mut().take(5) {
            run.wall_seconds = Some(3.5);
        }
        r.boots[0].boot_seconds = 25.0;
        let f = LabFigures::from_record(&r).unwrap();
        assert_eq!(f.overhead.median, 1.5);
        assert_eq!((f.overhead_over_goal, f.boots_over_goal), (5, 1));
        let verdicts: Vec<bool> = f.goals().iter().map(|g| g.2).collect();
        assert_eq!(verdicts, [true, false]);
        let report = LabBenchReport {
            schema: SCHEMA,
            target: "brcm47xx".into(),
            variant: "baseline".into(),
            machine: "malta 74Kf".into(),
            image_sha256: "ab".into(),
            started: "2026-11-30T16:34:50Z".into(),
            lab_dir: "/tmp/lab".into(),
            load: Load {
                cpus: 2,
                before: [6.65, 5.39, 3.61],
                after: [6.59, 5.56, 3.76],
            },
            figures: f,
            model_slowdown: None,
            multicore: None,
        };
        let text = report.render();
        assert!(text.contains("6.65 5.39 3.61 at the start"), "{text}");
        assert!(text.contains("| ≤ 1 s | ❌ fail |"), "{text}");
        assert!(
            text.contains("over the goal: 1 of 3 boots, 5 of 9 runs"),
            "{text}"
        );
        assert!(text.contains("1 of 2 goals met"), "{text}");
        assert!(!text.contains("-0.000"), "{text}");
        assert_eq!(millis(-0.0001), "0.000 s");
        assert_eq!(millis(0.1456), "0.146 s");
        let json = report.to_json();
        assert_eq!(json["goals"][1]["pass"], false);
        assert_eq!(json["figures"]["overhead"]["median"], 1.5);
    }

    #[test]
    fn an_older_lab_json_without_wall_times_is_refused() {
        let err = LabFigures::from_record(&fixture("lab.json")).unwrap_err();
        assert!(err.to_string().contains("no wall_seconds"), "{err}");
    }
}
