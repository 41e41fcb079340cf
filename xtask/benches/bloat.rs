//! Times our symbol read + diff + render against `python3 scripts/bloat-o-meter
//! -p PREFIX` on the same vmlinux pair, and prints the ratio.
//!
//! ```text
//! cargo bench --bench bloat -- [OLD NEW]
//! ```
//!
//! OLD and NEW default to `$BLOAT_OLD`/`$BLOAT_NEW`, then to
//! `target/xtask/results/arm-tiny/{baseline,no-reorder-blocks}/vmlinux`.
//! `$BLOAT_PREFIX` is the cross prefix (default `arm-linux-gnueabi-`),
//! `$BLOAT_MODE` one of `-c`, `-d`, `-t` (default: none), `$BLOAT_RUNS` the
//! runs per side (default 5; the median is reported). The script comes from
//! `$BLOAT_O_METER`, else it is extracted from the kernel source tarball and
//! cached like the tests do.

/// The integration tests' helpers this bench shares, at the paths they
/// have there (`crate::common::…`).
#[path = "../tests/it/common"]
mod common {
    pub mod elf_tools;
    pub mod gate;
}

use common::elf_tools;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use xtask::measure::bloat::{self, BloatMode};
use xtask::measure::symbols::read_symbols;
use xtask::util::layout::Layout;

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
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
            .unwrap_or_else(|| layout.results_dir("arm-tiny", variant).join("vmlinux"))
    };
    let old = pick(0, "BLOAT_OLD", "baseline");
    let new = pick(1, "BLOAT_NEW", "no-reorder-blocks");
    for file in [&old, &new] {
        if !file.is_file() {
            eprintln!(
                "bloat bench: {} does not exist; pass OLD NEW or build arm-tiny's baseline and no-reorder-blocks",
                file.display()
            );
            return;
        }
    }
    let prefix = std::env::var("BLOAT_PREFIX").unwrap_or_else(|_| "arm-linux-gnueabi-".into());
    let mode = match std::env::var("BLOAT_MODE").as_deref() {
        Ok("-c") => BloatMode::Categorized,
        Ok("-d") => BloatMode::Data,
        Ok("-t") => BloatMode::Text,
        _ => BloatMode::All,
    };
    let runs: usize = std::env::var("BLOAT_RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(5)
        .max(1);
    let script = std::env::var_os("BLOAT_O_METER")
        .map(PathBuf::from)
        .unwrap_or_else(elf_tools::bloat_o_meter);

    let mut ours_times = Vec::new();
    let mut ours_text = String::new();
    for _ in 0..runs {
        let start = Instant::now();
        let a = read_symbols(&old).expect("reading OLD");
        let b = read_symbols(&new).expect("reading NEW");
        ours_text = bloat::diff(&a.symbols, &b.symbols, mode).render();
        ours_times.push(start.elapsed());
    }
    let mut theirs_times = Vec::new();
    let mut theirs_text = String::new();
    for _ in 0..runs {
        let start = Instant::now();
        theirs_text = elf_tools::run_bloat_o_meter(&script, &prefix, mode, &old, &new);
        theirs_times.push(start.elapsed());
    }

    let ours = median(ours_times);
    let theirs = median(theirs_times);
    println!("pair: {} → {}", old.display(), new.display());
    println!(
        "mode: {}, {runs} runs each, medians:",
        mode.flag().unwrap_or("(default)")
    );
    println!("  xtask::measure::symbols + xtask::measure::bloat: {ours:?}");
    println!("  python3 bloat-o-meter -p {prefix}: {theirs:?}");
    println!(
        "  ratio: bloat-o-meter takes {:.1}× as long",
        theirs.as_secs_f64() / ours.as_secs_f64()
    );
    println!(
        "  outputs {} ({} lines)",
        if ours_text == theirs_text {
            "identical"
        } else {
            "DIFFER"
        },
        ours_text.lines().count()
    );
}
