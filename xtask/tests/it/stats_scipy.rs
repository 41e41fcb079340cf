//! The statistics of `measure::stats` against SciPy (Debian's
//! python3-scipy), on generated samples: small and large, with and without
//! ties, equal and unequal sizes and spreads.

use serde_json::Value;
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

const SCIPY_WELCH_INTERVAL: &str = r#"
import json, sys
import numpy as np
from scipy import stats
out = []
for base, variant in json.load(sys.stdin):
    a, b = np.array(base), np.array(variant)
    va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
    if va + vb == 0:
        out.append(None)
        continue
    df = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1))
    d = b.mean() - a.mean()
    half = stats.t.ppf(0.975, df) * np.sqrt(va + vb)
    low, high = d - half, d + half
    # The interval's bounds are where SciPy's own Welch test gives p = 0.05.
    for bound in (low, high):
        p = stats.ttest_ind(b - bound, a, equal_var=False).pvalue
        assert abs(p - 0.05) < 1e-9, p
    scale = 100 / abs(a.mean())
    out.append([low * scale, high * scale])
print(json.dumps(out))
"#;

#[test]
fn welch_interval_equals_scipy_and_is_where_welch_p_is_0_05() {
    let cases = cases();
    let sh = Shell::new().unwrap();
    let out = cmd!(sh, "{PYTHON} -c {SCIPY_WELCH_INTERVAL}")
        .stdin(serde_json::to_string(&cases).unwrap())
        .read()
        .expect("python3 with scipy");
    let reference: Vec<Option<(f64, f64)>> = serde_json::from_str(&out).unwrap();
    let mut checked = 0;
    for (case, r) in cases.iter().zip(&reference) {
        let ours = stats::welch_interval(&case.0, &case.1, 0.95).unwrap();
        let Some((low, high)) = r else {
            assert_eq!(ours.low, ours.high, "{case:?}");
            continue;
        };
        close(ours.low, *low, "interval low", case);
        close(ours.high, *high, "interval high", case);
        // It excludes 0 exactly when Welch's p is below 0.05.
        let p = stats::welch(&case.1, &case.0).unwrap().2;
        assert_eq!(ours.excludes_zero(), p < 0.05, "{case:?}");
        checked += 1;
    }
    assert!(checked > 50, "{checked}");
}

/// The power of a two-sided two-sample t-test at 0.05 from SciPy's
/// noncentral t distribution, and the smallest n per side reaching 80 %.
const SCIPY_POWER: &str = r#"
import json, sys
from scipy import stats
def power(n, change, sd):
    df = 2 * n - 2
    nc = change / (sd * (2 / n) ** 0.5)
    t = stats.t.ppf(0.975, df)
    return stats.nct.sf(t, df, nc) + stats.nct.cdf(-t, df, nc)
out = []
for change, sd in json.load(sys.stdin):
    n = 2
    while power(n, change, sd) < 0.8:
        n += 1
    out.append({"n": n, "powers": [power(k, change, sd) for k in (2, 3, 5, 8, n)]})
print(json.dumps(out))
"#;

#[test]
fn t_test_power_and_runs_for_a_change_equal_scipy_s_noncentral_t() {
    let grid: Vec<(f64, f64)> = [0.1, 0.25, 0.5, 1.0, 2.0, 5.0]
        .iter()
        .flat_map(|&change| [0.05, 0.3, 1.0, 3.0].map(|sd| (change, sd)))
        .filter(|(c, sd)| sd / c < 20.0)
        .collect();
    let sh = Shell::new().unwrap();
    let out = cmd!(sh, "{PYTHON} -c {SCIPY_POWER}")
        .stdin(serde_json::to_string(&grid).unwrap())
        .read()
        .expect("python3 with scipy");
    let reference: Vec<Value> = serde_json::from_str(&out).unwrap();
    for (&(change, sd), r) in grid.iter().zip(&reference) {
        let n = r["n"].as_u64().unwrap() as usize;
        for (k, p) in [2, 3, 5, 8, n].iter().zip(r["powers"].as_array().unwrap()) {
            let ours = stats::t_test_power(*k, change, sd).unwrap();
            let theirs = p.as_f64().unwrap();
            assert!(
                (ours - theirs).abs() < 1e-5,
                "power at n = {k}, change {change}%, sd {sd}%: ours {ours}, SciPy {theirs}"
            );
        }
        // SciPy's n, or 4 where Mann-Whitney needs more.
        assert_eq!(
            stats::runs_for_change(change, sd),
            Some(n.max(4)),
            "change {change}%, sd {sd}%"
        );
        assert_eq!(stats::runs_for_change(-change, sd), Some(n.max(4)));
    }
    assert_eq!(stats::runs_for_change(0.0, 1.0), None);
    assert_eq!(stats::runs_for_change(0.001, 10.0), None, "beyond MAX_RUNS");
}

#[test]
fn verdicts_need_both_tests_an_interval_away_from_zero_and_the_noise_floor() {
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
    // 3 runs a side: Mann-Whitney's smallest p is 0.1, so it can never
    // agree, however far apart the sides are.
    assert!((stats::mann_whitney_min_p(3, 3) - 0.1).abs() < 1e-12);
    let c = stats::compare(&base[..3], &faster[..3], 0.0).unwrap();
    assert!(c.welch_p.unwrap() < 0.001);
    assert_eq!(c.verdict, stats::Verdict::TooFewSamples);
    assert!(stats::mann_whitney_min_p(4, 4) < 0.05);
    assert_eq!(stats::runs_for_mann_whitney(), 4);
    // Evenly spread runs, shifted by 2.5: Welch p 0.043 (its interval
    // leaves 0), Mann-Whitney p 0.065 (SciPy's figures): the tests
    // disagree, so no verdict of a change.
    let spread = [100.0, 101.0, 102.0, 103.0, 104.0, 105.0];
    let shifted = spread.map(|x| x + 2.5);
    let c = stats::compare(&spread, &shifted, 0.0).unwrap();
    assert!(c.interval.unwrap().excludes_zero(), "{c:?}");
    assert!((c.mann_whitney_p.unwrap() - 0.06493506493506493).abs() < 1e-12);
    assert_eq!(c.verdict, stats::Verdict::TestsDisagree);
}
