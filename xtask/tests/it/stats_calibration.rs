//! The verdict's calibration: A/A comparisons, both sides
//! drawn from one distribution, are called significant in at most 5 % of
//! cases at n = 4, 10 and 20 runs per side, from known distributions and
//! resampled from the fixtures' real A/A runs (a rate is "above 5 %"
//! when a one-sided binomial test says so at 1 %, and the rates together
//! are at most 5 %); and a known shift is found. Each case prints its figures (`--nocapture`);
//! `cargo xtask bench verdicts` prints the same table.

use statrs::distribution::{Binomial, DiscreteCDF};
use xtask::measure::calibration::{known_sources, rate, Floor, Source};
use xtask::report::lab::calibrate::a_a_sources;
use xtask::results::lab::LabRecord;

const NS: [usize; 3] = [4, 10, 20];
const TRIALS: usize = 2000;
const ALPHA: f64 = 0.05;

fn fixture(file: &str) -> LabRecord {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/lab_fixture")
        .join(file);
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Whether `significant` of `trials` is evidence of a rate above 5 %:
/// a one-sided binomial test at 1 % (SciPy's `binomtest(k, n, 0.05,
/// alternative="greater")`), so that a rate of 5 % exactly, which the
/// rule approaches at large n, does not fail by chance. With 2000 trials
/// it fails from 124 (6.2 %) up: SciPy's p is 0.0095 there, 0.0123 at
/// 123.
fn above_five_percent(significant: usize, trials: usize) -> bool {
    let b = Binomial::new(ALPHA, trials as u64).unwrap();
    significant > 0 && b.sf(significant as u64 - 1) < 0.01
}

/// Every source's A/A rate at each n; each is no evidence of more than
/// 5 %, and all of them together (tens of thousands of comparisons) are
/// at most 5 %.
fn a_a(sources: &[Source]) {
    let mut over = Vec::new();
    let (mut significant, mut trials) = (0, 0);
    for (i, source) in sources.iter().enumerate() {
        for n in NS {
            let r = rate(source, n, 0.0, Floor::None, TRIALS, 1000 + i as u64);
            eprintln!(
                "A/A {}: n = {n}: {} of {} significant ({:.2}%)",
                source.describe(),
                r.significant,
                r.trials,
                r.fraction() * 100.0
            );
            significant += r.significant;
            trials += r.trials;
            if above_five_percent(r.significant, r.trials) {
                over.push(format!(
                    "{} at n = {n}: {:.2}%",
                    source.describe(),
                    r.fraction() * 100.0
                ));
            }
        }
    }
    eprintln!(
        "A/A in all: {significant} of {trials} ({:.2}%)",
        significant as f64 * 100.0 / trials as f64
    );
    assert!(
        over.is_empty(),
        "A/A called significant in more than 5 %:\n{}",
        over.join("\n")
    );
    assert!(significant as f64 <= ALPHA * trials as f64);
}

#[test]
fn the_binomial_criterion_is_scipy_s() {
    assert!(!above_five_percent(123, 2000));
    assert!(above_five_percent(124, 2000));
    assert!(!above_five_percent(0, 2000));
}

#[test]
fn a_a_from_known_distributions_is_significant_at_most_5_percent() {
    a_a(&known_sources());
}

#[test]
fn a_a_resampled_from_real_lab_runs_is_significant_at_most_5_percent() {
    let mut sources = a_a_sources(&fixture("lab.json"), "lab.json");
    sources.extend(a_a_sources(&fixture("host-lab.json"), "host-lab.json"));
    sources.extend(a_a_sources(&fixture("bench-lab.json"), "bench-lab.json"));
    assert!(sources.len() >= 10, "{}", sources.len());
    a_a(&sources);
}

#[test]
fn a_known_shift_is_found() {
    // Normal runs with sd 1 % of the mean; the variant 2 % (2 sd) or 1 %
    // faster.
    let source = Source::Normal { sd: 1.0 };
    let power = |shift: f64, n: usize, floor: Floor| {
        let r = rate(&source, n, shift, floor, TRIALS, 7);
        eprintln!(
            "shift {shift}% ({} sd), n = {n}, floor {floor:?}: found in {:.1}%",
            shift,
            r.fraction() * 100.0
        );
        r.fraction()
    };
    let two: Vec<f64> = NS.iter().map(|&n| power(2.0, n, Floor::None)).collect();
    assert!(two[0] < two[1] && two[1] <= two[2], "{two:?}");
    assert!(two[1] >= 0.9 && two[2] >= 0.99, "{two:?}");
    assert!(power(1.0, 20, Floor::None) >= 0.75);
    // With an A/A control's floor to exceed, a little less often.
    let with_floor = power(2.0, 10, Floor::Control);
    assert!(with_floor >= 0.8 && with_floor <= two[1], "{with_floor}");
}

#[test]
fn bench_verdicts_prints_the_same_rates() {
    // `cargo xtask bench verdicts` prints these tables; a cell is the
    // rate `rate` gives with the table's seed.
    let sources = known_sources();
    let table = xtask::report::lab::calibrate::a_a_table(&sources[..1], 200);
    let r = rate(&sources[0], 10, 0.0, Floor::None, 200, 1000);
    let row = table
        .lines()
        .find(|l| l.starts_with("normal, sd 1%"))
        .unwrap_or_else(|| panic!("{table}"));
    assert_eq!(row.split_whitespace().count(), 3 + 3, "{row}");
    assert!(
        row.contains(&format!("{:.2}%", r.fraction() * 100.0)),
        "{row}"
    );
    let power = xtask::report::lab::calibrate::power_table(200);
    assert_eq!(power.lines().count(), 2 + 4, "{power}");
}
