//! Times the attribution of a vmlinux pair (issue 28 §5: ≤ 0.5 s for a
//! bcm53xx pair) and prints the ratio to that goal, step by step:
//!
//! 1. the link map of each side: the final link run again with `-Map` in
//!    the build tree (or the kernel's own `vmlinux.map`), as the build
//!    does once ([`xtask::kernel_build::link_map::map_text`]);
//! 2. parsing each map and attributing every allocated section of its
//!    vmlinux ([`xtask::measure::linkmap`]);
//! 3. the report's part, `size-report --by file` and `--by dir` on the two
//!    records: roll-up, diff, sort, render
//!    ([`xtask::report::attribution::AttributionDiff`]).
//!
//! ```text
//! cargo bench --bench attribution -- [OLD_OBJTREE NEW_OBJTREE]
//! ```
//!
//! The object trees (each holding the `vmlinux` a build linked there)
//! default to `$ATTRIBUTION_OLD`/`$ATTRIBUTION_NEW`, then to
//! `target/xtask/build/arm-tiny/{baseline,no-reorder-blocks}`;
//! `$ATTRIBUTION_RUNS` is the runs per step (default 5; medians reported).
//! Every side's sections are checked to add up to their sizes.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use xtask::kernel_build::link_map::map_text;
use xtask::measure::linkmap::{self, Grouping};
use xtask::measure::sections::alloc_sections;
use xtask::report::attribution::AttributionDiff;
use xtask::results::attribution::{AttributionRecord, SCHEMA};
use xtask::util::layout::Layout;

/// Issue 28 §5's goal for the whole attribution of a pair, seconds.
const GOAL_SECONDS: f64 = 0.5;

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

/// `runs` timings of `step`, and its last result.
fn time<T>(runs: usize, mut step: impl FnMut() -> T) -> (Duration, T) {
    let mut times = Vec::new();
    let mut last = None;
    for _ in 0..runs {
        let start = Instant::now();
        last = Some(step());
        times.push(start.elapsed());
    }
    (median(times), last.expect("at least one run"))
}

fn record(map: &str, vmlinux: &Path) -> AttributionRecord {
    let parsed = linkmap::parse(map).expect("parsing the link map");
    let sections = alloc_sections(vmlinux).expect("reading vmlinux's sections");
    let attribution = linkmap::attribute(&parsed, &sections).expect("attributing");
    for s in &attribution.sections {
        assert_eq!(s.objects.values().sum::<u64>(), s.size, "{}", s.name);
    }
    AttributionRecord {
        schema: SCHEMA,
        vmlinux_sha256: String::new(),
        map: String::new(),
        sections: attribution.sections,
    }
}

fn main() {
    // `cargo bench` passes `--bench`; anything starting with '-' is not a path.
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let layout = Layout::from_manifest_dir();
    let pick = |i: usize, var: &str, variant: &str| -> PathBuf {
        args.get(i)
            .map(PathBuf::from)
            .or_else(|| std::env::var_os(var).map(PathBuf::from))
            .unwrap_or_else(|| layout.build_dir("arm-tiny", variant))
    };
    let trees = [
        pick(0, "ATTRIBUTION_OLD", "baseline"),
        pick(1, "ATTRIBUTION_NEW", "no-reorder-blocks"),
    ];
    for tree in &trees {
        if !tree.join("vmlinux").is_file() {
            eprintln!(
                "attribution bench: no {}; pass OLD_OBJTREE NEW_OBJTREE or build arm-tiny's \
                 baseline and no-reorder-blocks",
                tree.join("vmlinux").display()
            );
            return;
        }
    }
    let runs: usize = std::env::var("ATTRIBUTION_RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(5)
        .max(1);

    let (maps_time, maps) = time(runs, || {
        trees
            .iter()
            .map(|t| map_text(t).expect("the link map").0)
            .collect::<Vec<String>>()
    });
    let (attribute_time, records) = time(runs, || {
        trees
            .iter()
            .zip(&maps)
            .map(|(t, m)| record(m, &t.join("vmlinux")))
            .collect::<Vec<AttributionRecord>>()
    });
    let (report_time, lines) = time(runs, || {
        [Grouping::File, Grouping::Dir]
            .into_iter()
            .map(|g| {
                AttributionDiff::new(&records[0], &records[1], g)
                    .render(None)
                    .lines()
                    .count()
            })
            .sum::<usize>()
    });
    let total = maps_time + attribute_time + report_time;
    println!("pair: {} → {}", trees[0].display(), trees[1].display());
    println!(
        "{runs} runs per step, medians; map sizes {} and {} bytes:",
        maps[0].len(),
        maps[1].len()
    );
    println!("  1. link maps (ld -Map, both sides): {maps_time:?}");
    println!("  2. parse + attribute (both sides): {attribute_time:?}");
    println!("  3. --by file and --by dir diff + render ({lines} lines): {report_time:?}");
    println!(
        "  total {:.3} s; goal ≤ {GOAL_SECONDS} s: {:.1}× under it (ratio total/goal {:.3})",
        total.as_secs_f64(),
        GOAL_SECONDS / total.as_secs_f64(),
        total.as_secs_f64() / GOAL_SECONDS
    );
}
