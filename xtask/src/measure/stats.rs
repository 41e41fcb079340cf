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
//! * [`welch_interval`]: Welch's t interval of the difference of the
//!   means, in percent of the base's mean;
//! * [`t_test_power`] and [`runs_for_change`]: how many runs per side a
//!   two-sample t-test needs to find a change of a given size (80 % power
//!   at [`ALPHA`]), as `scipy.stats.nct` computes the power;
//! * [`compare`]: all of it, and the verdict: a change is significant only
//!   when Welch's interval excludes 0, Mann–Whitney agrees (p < [`ALPHA`])
//!   and |%change| exceeds the noise floor an A/A run measured.
//!
//! Why Welch's t interval and not a bootstrap: a percentile bootstrap of
//! 4 values per side is too narrow (a resample of 4 values has less
//! spread than the population), and so called 14 % of A/A comparisons
//! significant at n = 4 and still 7.5 % at n = 20 (normal runs;
//! `tests/it/stats_calibration.rs`). Welch's interval holds its 95 %
//! coverage at any n for normal runs and stays close for the skewed and
//! outlier-hit runs the calibration draws; the rank test's agreement
//! guards against a single outlier making a t-test significant.
//!
//! The distributions come from `statrs`; the tests check every number
//! against SciPy.

use statrs::distribution::{ContinuousCDF, Normal, StudentsT};

/// The two-sided level every test and interval here uses: p must be below
/// it, intervals are at `1 - ALPHA` (95 %).
pub const ALPHA: f64 = 0.05;

/// The power [`runs_for_change`] plans for: a change of the given size is
/// found in 80 % of labs (the usual planning figure, Cohen 1988).
pub const POWER: f64 = 0.8;

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

/// The fewest runs per side with which Mann–Whitney can reach p <
/// [`ALPHA`] (4: its smallest p is then 2/70 ≈ 0.029).
pub fn runs_for_mann_whitney() -> usize {
    (1..)
        .find(|&n| mann_whitney_min_p(n, n) < ALPHA)
        .unwrap_or(1)
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

/// Welch's t interval at `confidence` (e.g. 0.95) of `mean(variant) -
/// mean(base)`, in percent of `|mean(base)|`: `d ± t(1 - (1 - confidence)
/// / 2, ν) · √(s²ᵥ/nᵥ + s²ᵦ/nᵦ)` with Welch–Satterthwaite's ν, as
/// `scipy.stats.ttest_ind(variant, base, equal_var=False)
/// .confidence_interval()` (SciPy ≥ 1.11) gives it in units. The base's
/// mean is taken as known when scaling to percent (its own error is the
/// base's relative standard error, a few tenths of a percent of the
/// bound for the lab's spreads). It excludes 0 exactly when Welch's p
/// is below `1 - confidence`. When neither side varies, the interval is
/// the difference itself. `None` with fewer than 2 samples on a side or
/// a base mean of 0.
pub fn welch_interval(base: &[f64], variant: &[f64], confidence: f64) -> Option<Interval> {
    let (sb, sv) = (summary(base)?, summary(variant)?);
    if sb.n < 2 || sv.n < 2 || sb.mean == 0.0 {
        return None;
    }
    let (vb, vv) = (sb.sd.powi(2) / sb.n as f64, sv.sd.powi(2) / sv.n as f64);
    let d = sv.mean - sb.mean;
    let half = if vb + vv == 0.0 {
        0.0
    } else {
        let df =
            (vb + vv).powi(2) / (vb.powi(2) / (sb.n - 1) as f64 + vv.powi(2) / (sv.n - 1) as f64);
        let t = StudentsT::new(0.0, 1.0, df).ok()?;
        t.inverse_cdf(1.0 - (1.0 - confidence) / 2.0) * (vb + vv).sqrt()
    };
    let scale = 100.0 / sb.mean.abs();
    Some(Interval {
        low: (d - half) * scale,
        high: (d + half) * scale,
    })
}

/// The largest number of runs per side [`runs_for_change`] reports.
pub const MAX_RUNS: usize = 100_000;

/// The power of a two-sided two-sample t-test at [`ALPHA`] with `n` runs
/// per side to find a change of `change` percent of the mean when runs
/// spread by `sd` percent on both sides: `P(|T| > t(1 − α/2, ν))` for
/// `T` noncentral t with ν = 2n − 2 and noncentrality `change / (sd ·
/// √(2/n))`, as `scipy.stats.nct` gives it, integrated over the
/// chi-square distribution of the pooled variance. `None` for n < 2.
pub fn t_test_power(n: usize, change: f64, sd: f64) -> Option<f64> {
    if n < 2 || !change.is_finite() || !sd.is_finite() || sd <= 0.0 {
        return None;
    }
    let df = 2.0 * n as f64 - 2.0;
    let delta = change.abs() / (sd * (2.0 / n as f64).sqrt());
    let t = StudentsT::new(0.0, 1.0, df)
        .ok()?
        .inverse_cdf(1.0 - ALPHA / 2.0);
    let z = Normal::new(0.0, 1.0).ok()?;
    let chi = statrs::distribution::ChiSquared::new(df).ok()?;
    // T = (Z + δ) / S with S = √(V/ν), V ~ χ²(ν): reject when |T| > t, i.e.
    // Z > t·S − δ or Z < −t·S − δ. Integrated over S (density
    // 2νs·f_χ²(νs²), smooth at 0 where V's is not for ν = 2) by
    // Simpson's rule up to where χ²'s tail is below 1e-12.
    let f = |s: f64| {
        // ln_pdf: statrs' pdf overflows to inf from ν ≈ 280 (x^(ν/2−1)).
        let density =
            2.0 * df * s * statrs::distribution::Continuous::ln_pdf(&chi, df * s * s).exp();
        density * (z.sf(t * s - delta) + z.cdf(-t * s - delta))
    };
    let top = (chi.inverse_cdf(1.0 - 1e-12) / df).sqrt();
    let steps = 4_000;
    let h = top / steps as f64;
    let mut sum = f(0.0) + f(top);
    for i in 1..steps {
        sum += f(i as f64 * h) * if i % 2 == 1 { 4.0 } else { 2.0 };
    }
    Some((sum * h / 3.0).clamp(0.0, 1.0))
}

/// Runs per side with which a two-sided two-sample t-test at [`ALPHA`]
/// finds a change of `change` percent of the mean with [`POWER`], when
/// runs spread by `sd` percent of the mean on both sides: the smallest n
/// whose [`t_test_power`] reaches it (searched from the normal
/// approximation `2 (z(1 − α/2) + z(POWER))² (sd / change)²`), and at
/// least the runs Mann–Whitney needs to reach [`ALPHA`] at all (4), since
/// a verdict needs both. `None` when `change` is 0 or the runs needed
/// exceed [`MAX_RUNS`].
pub fn runs_for_change(change: f64, sd: f64) -> Option<usize> {
    let (change, sd) = (change.abs(), sd.abs());
    if change == 0.0 || !change.is_finite() || !sd.is_finite() {
        return None;
    }
    let least = runs_for_mann_whitney();
    if sd == 0.0 {
        return Some(least);
    }
    let z = Normal::new(0.0, 1.0).ok()?;
    let guess = 2.0
        * (z.inverse_cdf(1.0 - ALPHA / 2.0) + z.inverse_cdf(POWER)).powi(2)
        * (sd / change).powi(2);
    if guess > MAX_RUNS as f64 {
        return None;
    }
    let enough = |n: usize| t_test_power(n, change, sd).is_some_and(|p| p >= POWER);
    let mut n = (guess.ceil() as usize).max(2);
    while !enough(n) {
        n += 1;
        if n > MAX_RUNS {
            return None;
        }
    }
    while n > 2 && enough(n - 1) {
        n -= 1;
    }
    Some(n.max(least))
}

/// Whether a change is real, and why not when it is not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Welch's interval excludes 0, Mann–Whitney agrees (p < [`ALPHA`])
    /// and |%change| exceeds the noise floor.
    Significant,
    /// Welch's interval contains 0.
    IntervalContainsZero,
    /// Welch's interval excludes 0, but Mann–Whitney's p is not below
    /// [`ALPHA`]: the tests disagree (one run far out moves a mean, not
    /// the ranks).
    TestsDisagree,
    /// Both tests agree, but the change is within the A/A noise floor.
    WithinNoise,
    /// Too few samples: fewer than 2 on a side (no interval), or so few
    /// that Mann–Whitney cannot reach [`ALPHA`] (3 or fewer per side)
    /// while Welch's interval excludes 0.
    TooFewSamples,
    /// The means differ by less than values recorded to their resolution
    /// can differ ([`compare_at`]): no change, whatever the tests say (a
    /// constant series against the same constant shifted by 1e-9 has
    /// no spread, so every test calls it).
    BelowResolution,
}

/// Everything the reports print for one metric measured N times per side.
#[derive(Debug, Clone, PartialEq)]
pub struct SampleComparison {
    /// The base's samples.
    pub base: Summary,
    /// The variant's samples.
    pub variant: Summary,
    /// %change of the means.
    pub percent: Option<f64>,
    /// Welch's t 95 % interval of the %change ([`welch_interval`]).
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

impl SampleComparison {
    /// Runs per side that would find a change of this comparison's
    /// |%change| ([`runs_for_change`]) at the two sides' pooled spread; for
    /// an A/A control, the runs needed to see a change of the noise
    /// floor's size. `None` for no change, one run a side, or more than
    /// [`MAX_RUNS`]. (Not part of [`compare`]: it integrates, and the
    /// calibration compares hundreds of thousands of samples.)
    pub fn runs_for_change(&self) -> Option<usize> {
        if self.base.n < 2 || self.variant.n < 2 {
            return None;
        }
        runs_for_change(self.percent?, self.pooled_sd_percent()?)
    }

    /// The two sides' pooled standard deviation, in percent of the base's
    /// mean; `None` with fewer than 3 samples in all or a base mean of 0.
    pub fn pooled_sd_percent(&self) -> Option<f64> {
        let (b, v) = (&self.base, &self.variant);
        let df = (b.n + v.n).checked_sub(2).filter(|&d| d > 0)?;
        if b.mean == 0.0 {
            return None;
        }
        let var = (b.sd.powi(2) * (b.n - 1) as f64 + v.sd.powi(2) * (v.n - 1) as f64) / df as f64;
        Some(var.sqrt() * 100.0 / b.mean.abs())
    }
}

/// Compares `variant` with `base`: summaries, %change, Welch's 95 %
/// interval, both tests, and the verdict against `noise_floor` (|%change| of an A/A run, in percent; 0
/// when there was none). The verdict's order: too few samples for an
/// interval, the interval contains 0, Mann–Whitney cannot reach
/// [`ALPHA`], the tests disagree, within the noise floor, significant.
pub fn compare(base: &[f64], variant: &[f64], noise_floor: f64) -> Option<SampleComparison> {
    compare_at(base, variant, noise_floor, 0.0)
}

/// [`compare`] of values recorded to `resolution` (in their unit: 0.001
/// for Mbit/s rounded to three decimals; 0 when unknown). The means of
/// `m` and `n` such values are equal or differ by at least
/// `resolution / (m·n)`, so a difference below half that is not one the
/// records can hold: the verdict is then [`Verdict::BelowResolution`],
/// before any test (their spread may be 0, which makes every test call
/// the smallest shift).
pub fn compare_at(
    base: &[f64],
    variant: &[f64],
    noise_floor: f64,
    resolution: f64,
) -> Option<SampleComparison> {
    let (sb, sv) = (summary(base)?, summary(variant)?);
    let percent = percent_change(sb.mean, sv.mean);
    let interval = welch_interval(base, variant, 1.0 - ALPHA);
    let mann_whitney_p = mann_whitney(base, variant).map(|m| m.1);
    let min_p = mann_whitney_min_p(base.len(), variant.len());
    let step = resolution / (sb.n as f64 * sv.n as f64);
    let difference = (sv.mean - sb.mean).abs();
    let verdict = match (interval, percent) {
        _ if difference > 0.0 && difference < step / 2.0 => Verdict::BelowResolution,
        (Some(i), _) if !i.excludes_zero() => Verdict::IntervalContainsZero,
        (Some(_), _) if min_p >= ALPHA => Verdict::TooFewSamples,
        (Some(_), _) if !mann_whitney_p.is_some_and(|p| p < ALPHA) => Verdict::TestsDisagree,
        (Some(_), Some(p)) if p.abs() > noise_floor => Verdict::Significant,
        (Some(_), Some(_)) => Verdict::WithinNoise,
        _ => Verdict::TooFewSamples,
    };
    Some(SampleComparison {
        base: sb,
        variant: sv,
        percent,
        interval,
        welch_p: welch(base, variant).map(|w| w.2),
        mann_whitney_p,
        mann_whitney_min_p: min_p,
        verdict,
    })
}
