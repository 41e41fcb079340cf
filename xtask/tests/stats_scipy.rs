//! The statistics of `measure::stats` against SciPy (Debian's
//! python3-scipy), on generated samples: small and large, with and without
//! ties, equal and unequal sizes and spreads.

use serde_json::{json, Value};
use xshell::{cmd, Shell};
use xtask::measure::stats;

/// A small deterministic generator (the samples only need to differ).
struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn cases() -> Vec<(Vec<f64>, Vec<f64>)> {
    let mut rng = Lcg(7);
    let mut out = Vec::new();
    for &(m, n) in &[
        (2, 2),
        (3, 3),
        (4, 5),
        (5, 5),
        (8, 8),
        (8, 3),
        (9, 9),
        (10, 10),
        (13, 13),
        (20, 7),
    ] {
        for shift in [0.0, 0.5, 3.0] {
            for rounded in [false, true] {
                let mut side = |k: usize, mean: f64, sd: f64| -> Vec<f64> {
                    (0..k)
                        .map(|_| {
                            let x = mean + sd * (rng.next() + rng.next() + rng.next() - 1.5);
                            if rounded {
                                x.round()
                            } else {
                                x
                            }
                        })
                        .collect()
                };
                let a = side(m, 100.0, 4.0);
                let b = side(n, 100.0 + shift, 9.0);
                out.push((a, b));
            }
        }
    }
    out
}

/// Debian's Python, which python3-scipy installs into (a `python3` earlier
/// on PATH, e.g. pyenv's, does not see it).
const PYTHON: &str = "/usr/bin/python3";

const SCIPY: &str = r#"
import json, sys
from scipy import stats
out = []
for a, b in json.load(sys.stdin):
    w = stats.ttest_ind(a, b, equal_var=False)
    u = stats.mannwhitneyu(a, b, alternative="two-sided")
    out.append({"welch_t": float(w.statistic), "welch_p": float(w.pvalue),
                "u": float(u.statistic), "u_p": float(u.pvalue)})
print(json.dumps(out))
"#;

fn close(ours: f64, theirs: f64, what: &str, case: &(Vec<f64>, Vec<f64>)) {
    let tolerance = 1e-9 + 1e-7 * theirs.abs();
    assert!(
        (ours - theirs).abs() <= tolerance,
        "{what}: ours {ours}, SciPy {theirs}, samples {case:?}"
    );
}

#[test]
fn welch_and_mann_whitney_equal_scipy() {
    let cases = cases();
    let sh = Shell::new().unwrap();
    let input = serde_json::to_string(&cases).unwrap();
    let out = cmd!(sh, "{PYTHON} -c {SCIPY}")
        .stdin(input)
        .read()
        .expect("python3 with scipy (apt-get install python3-scipy; `cargo xtask setup --tests` installs it)");
    let reference: Vec<Value> = serde_json::from_str(&out).unwrap();
    let (mut exact, mut asymptotic, mut welch) = (0, 0, 0);
    for (case, r) in cases.iter().zip(&reference) {
        match stats::welch(&case.0, &case.1) {
            Some((t, _, p)) => {
                close(t, r["welch_t"].as_f64().unwrap(), "Welch t", case);
                close(p, r["welch_p"].as_f64().unwrap(), "Welch p", case);
                welch += 1;
            }
            None => assert!(r["welch_p"].is_null() || r["welch_p"].as_f64().unwrap().is_nan()),
        }
        let (u, p, method) = stats::mann_whitney(&case.0, &case.1).unwrap();
        close(u, r["u"].as_f64().unwrap(), "U", case);
        close(p, r["u_p"].as_f64().unwrap(), "Mann-Whitney p", case);
        match method {
            stats::UMethod::Exact => exact += 1,
            stats::UMethod::Asymptotic => asymptotic += 1,
        }
    }
    eprintln!(
        "{welch} Welch, {exact} exact and {asymptotic} asymptotic Mann-Whitney cases equal SciPy"
    );
    assert!(exact > 10 && asymptotic > 10 && welch > 50);
}

const SCIPY_BOOTSTRAP: &str = r#"
import json, sys
import numpy as np
from scipy import stats
a, b = json.load(sys.stdin)
def change(x, y):
    return (np.mean(y) - np.mean(x)) * 100 / np.mean(x)
r = stats.bootstrap((a, b), change, vectorized=False, paired=False,
                    n_resamples=10000, method="percentile", random_state=3,
                    confidence_level=0.95)
print(json.dumps([r.confidence_interval.low, r.confidence_interval.high]))
"#;

#[test]
fn bootstrap_interval_agrees_with_scipy_percentile_bootstrap() {
    let mut rng = Lcg(11);
    let a: Vec<f64> = (0..10).map(|_| 800.0 + 40.0 * rng.next()).collect();
    let b: Vec<f64> = (0..10).map(|_| 850.0 + 40.0 * rng.next()).collect();
    let sh = Shell::new().unwrap();
    let out = cmd!(sh, "{PYTHON} -c {SCIPY_BOOTSTRAP}")
        .stdin(json!([a, b]).to_string())
        .read()
        .expect("python3 with scipy");
    let theirs: Vec<f64> = serde_json::from_str(&out).unwrap();
    let ours = stats::bootstrap_percent_change(&a, &b, 0.95, 1).unwrap();
    // Different random resamples: the bounds agree to a tenth of the width.
    let width = theirs[1] - theirs[0];
    assert!(
        (ours.low - theirs[0]).abs() < width / 10.0,
        "{ours:?} vs {theirs:?}"
    );
    assert!(
        (ours.high - theirs[1]).abs() < width / 10.0,
        "{ours:?} vs {theirs:?}"
    );
    let point = stats::percent_change(
        stats::summary(&a).unwrap().mean,
        stats::summary(&b).unwrap().mean,
    )
    .unwrap();
    assert!(ours.low < point && point < ours.high);
    assert!(ours.excludes_zero());
}

#[test]
fn verdicts_need_an_interval_away_from_zero_and_above_the_noise_floor() {
    let base = [100.0, 101.0, 99.0, 100.5, 99.5];
    let faster = [110.0, 111.0, 109.0, 110.5, 109.5];
    let c = stats::compare(&base, &faster, 1.0).unwrap();
    assert_eq!(c.verdict, stats::Verdict::Significant);
    let c = stats::compare(&base, &faster, 15.0).unwrap();
    assert_eq!(c.verdict, stats::Verdict::WithinNoise);
    let same = [100.2, 100.8, 99.1, 100.4, 99.6];
    let c = stats::compare(&base, &same, 0.0).unwrap();
    assert_eq!(c.verdict, stats::Verdict::IntervalContainsZero);
    let c = stats::compare(&base[..1], &faster[..1], 0.0).unwrap();
    assert_eq!(c.verdict, stats::Verdict::TooFewSamples);
    // 3 runs a side: Mann-Whitney's smallest p is 0.1, above 0.05.
    assert!((stats::mann_whitney_min_p(3, 3) - 0.1).abs() < 1e-12);
    assert!(stats::mann_whitney_min_p(4, 4) < 0.05);
}
