//! Statistics that separate a variant's effect from run-to-run noise, for
//! metrics measured N times per side (throughput in Mbit/s, ns/packet).
//!
//! * [`summary`]: mean and sample standard deviation;
//! * [`welch`]: Welch's unequal-variance t-test, two-sided, as
//!   `scipy.stats.ttest_ind(a, b, equal_var=False)`;
//! * [`mann_whitney`]: the Mann–Whitney U test, two-sided, as
//!   `scipy.stats.mannwhitneyu(a, b)` (SciPy 1.10, `method="auto"`: exact
//!   when a side has at most 8 samples and no value is tied, else the
//!   normal approximation with tie and continuity corrections);
//! * [`bootstrap_percent_change`]: a percentile bootstrap interval of the
//!   %change of the means, resampling each side independently;
//! * [`compare`]: all of it, and the verdict: a change is significant only
//!   when the interval excludes 0 and |%change| exceeds the noise floor an
//!   A/A run measured.
//!
//! The distributions come from `statrs`; the tests check every number
//! against SciPy.

use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use statrs::distribution::{ContinuousCDF, Normal, StudentsT};

/// Mean and spread of one side's samples.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    /// Number of samples.
    pub n: usize,
    /// Arithmetic mean, in the samples' unit.
    pub mean: f64,
    /// Sample standard deviation (n − 1 in the denominator), in the
    /// samples' unit; 0 for a single sample.
    pub sd: f64,
}

impl Summary {
    /// `sd` as a percentage of `mean` (the LKP tables' `± %sd`); 0 when the
    /// mean is 0.
    pub fn relative_sd_percent(&self) -> f64 {
        if self.mean == 0.0 {
            0.0
        } else {
            self.sd * 100.0 / self.mean.abs()
        }
    }
}

/// [`Summary`] of `samples`; `None` when there are none.
pub fn summary(samples: &[f64]) -> Option<Summary> {
    let n = samples.len();
    if n == 0 {
        return None;
    }
    let mean = samples.iter().sum::<f64>() / n as f64;
    let sd = if n < 2 {
        0.0
    } else {
        (samples.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt()
    };
    Some(Summary { n, mean, sd })
}

/// `(variant - base) * 100 / base`, in percent; `None` when `base` is 0.
pub fn percent_change(base: f64, variant: f64) -> Option<f64> {
    (base != 0.0).then(|| (variant - base) * 100.0 / base.abs())
}

/// Welch's t-test of `a` against `b`: (t, degrees of freedom, two-sided p).
/// `None` with fewer than 2 samples on a side, or no variance on either.
pub fn welch(a: &[f64], b: &[f64]) -> Option<(f64, f64, f64)> {
    let (sa, sb) = (summary(a)?, summary(b)?);
    if sa.n < 2 || sb.n < 2 {
        return None;
    }
    let (va, vb) = (sa.sd.powi(2) / sa.n as f64, sb.sd.powi(2) / sb.n as f64);
    if va + vb == 0.0 {
        return None;
    }
    let t = (sa.mean - sb.mean) / (va + vb).sqrt();
    let df = (va + vb).powi(2) / (va.powi(2) / (sa.n - 1) as f64 + vb.powi(2) / (sb.n - 1) as f64);
    let dist = StudentsT::new(0.0, 1.0, df).ok()?;
    let p = (2.0 * dist.sf(t.abs())).min(1.0);
    Some((t, df, p))
}

/// Ranks of `values` (1-based), ties getting their average rank, and the
/// tie-correction sum Σ(t³ − t) over groups of t equal values.
fn ranks(values: &[f64]) -> (Vec<f64>, f64) {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&i, &j| values[i].total_cmp(&values[j]));
    let mut ranks = vec![0.0; values.len()];
    let mut ties = 0.0;
    let mut i = 0;
    while i < order.len() {
        let mut j = i;
        while j + 1 < order.len() && values[order[j + 1]] == values[order[i]] {
            j += 1;
        }
        let rank = (i + j) as f64 / 2.0 + 1.0;
        for &k in &order[i..=j] {
            ranks[k] = rank;
        }
        let t = (j - i + 1) as f64;
        ties += t * t * t - t;
        i = j + 1;
    }
    (ranks, ties)
}

/// Number of ways to reach each U with `m` and `n` samples: the exact null
/// distribution of U (no ties), index = U, from 0 to m·n.
fn u_counts(m: usize, n: usize) -> Vec<f64> {
    // f(m, n, u) = f(m - 1, n, u - n) + f(m, n - 1, u), by dynamic programming
    // over n for each m.
    let mut table: Vec<Vec<Vec<f64>>> = vec![vec![Vec::new(); n + 1]; m + 1];
    for (i, row) in table.iter_mut().enumerate() {
        for (j, cell) in row.iter_mut().enumerate() {
            if i == 0 || j == 0 {
                *cell = vec![1.0];
            }
        }
    }
    for i in 1..=m {
        for j in 1..=n {
            let mut counts = vec![0.0; i * j + 1];
            for (u, c) in table[i][j - 1].iter().enumerate() {
                counts[u] += c;
            }
            for (u, c) in table[i - 1][j].iter().enumerate() {
                counts[u + j] += c;
            }
            table[i][j] = counts;
        }
    }
    std::mem::take(&mut table[m][n])
}

/// Which computation [`mann_whitney`] used, as SciPy's `method="auto"` picks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UMethod {
    /// The exact distribution of U (a side with ≤ 8 samples, no ties).
    Exact,
    /// The normal approximation with tie and continuity corrections.
    Asymptotic,
}

/// The Mann–Whitney U test of `a` against `b`, two-sided: (U of `a`, p,
/// method). `None` when a side is empty.
pub fn mann_whitney(a: &[f64], b: &[f64]) -> Option<(f64, f64, UMethod)> {
    let (m, n) = (a.len(), b.len());
    if m == 0 || n == 0 {
        return None;
    }
    let all: Vec<f64> = a.iter().chain(b).copied().collect();
    let (r, ties) = ranks(&all);
    let r1: f64 = r[..m].iter().sum();
    let u1 = r1 - (m * (m + 1)) as f64 / 2.0;
    let u2 = (m * n) as f64 - u1;
    let big_u = u1.max(u2);
    if (m <= 8 || n <= 8) && ties == 0.0 {
        let counts = u_counts(m, n);
        let total: f64 = counts.iter().sum();
        // P(U >= big_u), doubled.
        let k = big_u.round() as usize;
        let sf: f64 = counts[k..].iter().sum::<f64>() / total;
        return Some((u1, (2.0 * sf).min(1.0), UMethod::Exact));
    }
    let (mf, nf) = (m as f64, n as f64);
    let mu = mf * nf / 2.0;
    let nn = mf + nf;
    let sigma = (mf * nf / 12.0 * ((nn + 1.0) - ties / (nn * (nn - 1.0)))).sqrt();
    if sigma == 0.0 {
        return Some((u1, 1.0, UMethod::Asymptotic));
    }
    let z = (big_u - mu - 0.5) / sigma;
    let normal = Normal::new(0.0, 1.0).ok()?;
    Some((u1, (2.0 * normal.sf(z)).min(1.0), UMethod::Asymptotic))
}

/// The smallest two-sided p the exact Mann–Whitney test can give with `m`
/// and `n` samples: 2 / C(m + n, m). With 3 runs per side it is 0.1, so the
/// test can never call a change significant at 0.05.
pub fn mann_whitney_min_p(m: usize, n: usize) -> f64 {
    let mut c = 1.0;
    for i in 0..m {
        c = c * (n + m - i) as f64 / (i + 1) as f64;
    }
    (2.0 / c).min(1.0)
}

/// A confidence interval, in percent.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Interval {
    /// Lower bound, percent.
    pub low: f64,
    /// Upper bound, percent.
    pub high: f64,
}

impl Interval {
    /// Whether 0 lies outside the interval.
    pub fn excludes_zero(&self) -> bool {
        self.low > 0.0 || self.high < 0.0
    }
}

/// Resamples a bootstrap interval draws.
pub const BOOTSTRAP_RESAMPLES: usize = 10_000;

/// Percentile bootstrap interval at `confidence` (e.g. 0.95) of the %change
/// of the mean from `base` to `variant`: each side resampled with
/// replacement [`BOOTSTRAP_RESAMPLES`] times from a fixed `seed`, so the
/// same samples give the same interval. `None` when a side is empty or the
/// base mean can be 0.
pub fn bootstrap_percent_change(
    base: &[f64],
    variant: &[f64],
    confidence: f64,
    seed: u64,
) -> Option<Interval> {
    if base.is_empty() || variant.is_empty() {
        return None;
    }
    let mut rng = StdRng::seed_from_u64(seed);
    let mut resample = |xs: &[f64]| -> f64 {
        (0..xs.len())
            .map(|_| xs[rng.random_range(0..xs.len())])
            .sum::<f64>()
            / xs.len() as f64
    };
    let mut changes = Vec::with_capacity(BOOTSTRAP_RESAMPLES);
    for _ in 0..BOOTSTRAP_RESAMPLES {
        let b = resample(base);
        let v = resample(variant);
        changes.push(percent_change(b, v)?);
    }
    changes.sort_by(f64::total_cmp);
    let tail = (1.0 - confidence) / 2.0;
    let at = |q: f64| -> f64 {
        // Linear interpolation between order statistics, as numpy's
        // default percentile.
        let pos = q * (changes.len() - 1) as f64;
        let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
        changes[lo] + (changes[hi] - changes[lo]) * (pos - lo as f64)
    };
    Some(Interval {
        low: at(tail),
        high: at(1.0 - tail),
    })
}

/// Whether a change is real, and why not when it is not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The interval excludes 0 and |%change| exceeds the noise floor.
    Significant,
    /// The interval contains 0.
    IntervalContainsZero,
    /// The interval excludes 0 but the change is within the A/A noise floor.
    WithinNoise,
    /// Too few samples for an interval.
    TooFewSamples,
}

/// Everything the reports print for one metric measured N times per side.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    /// The base's samples.
    pub base: Summary,
    /// The variant's samples.
    pub variant: Summary,
    /// %change of the means.
    pub percent: Option<f64>,
    /// Bootstrap 95 % interval of the %change.
    pub interval: Option<Interval>,
    /// Welch's t-test p.
    pub welch_p: Option<f64>,
    /// Mann–Whitney U p.
    pub mann_whitney_p: Option<f64>,
    /// The smallest p Mann–Whitney can reach with these sample counts; a
    /// report says so when it is above 0.05.
    pub mann_whitney_min_p: f64,
    /// The verdict against `noise_floor`.
    pub verdict: Verdict,
}

/// Compares `variant` with `base`: summaries, %change, a bootstrap 95 %
/// interval (seed 1), both tests, and the verdict against `noise_floor`
/// (|%change| of an A/A run, in percent; 0 when there was none).
pub fn compare(base: &[f64], variant: &[f64], noise_floor: f64) -> Option<Comparison> {
    let (sb, sv) = (summary(base)?, summary(variant)?);
    let percent = percent_change(sb.mean, sv.mean);
    let interval = if base.len() >= 2 && variant.len() >= 2 {
        bootstrap_percent_change(base, variant, 0.95, 1)
    } else {
        None
    };
    let verdict = match (interval, percent) {
        (Some(i), Some(p)) if i.excludes_zero() && p.abs() > noise_floor => Verdict::Significant,
        (Some(i), Some(_)) if i.excludes_zero() => Verdict::WithinNoise,
        (Some(_), _) => Verdict::IntervalContainsZero,
        (None, _) => Verdict::TooFewSamples,
    };
    Some(Comparison {
        base: sb,
        variant: sv,
        percent,
        interval,
        welch_p: welch(base, variant).map(|w| w.2),
        mann_whitney_p: mann_whitney(base, variant).map(|m| m.1),
        mann_whitney_min_p: mann_whitney_min_p(base.len(), variant.len()),
        verdict,
    })
}
