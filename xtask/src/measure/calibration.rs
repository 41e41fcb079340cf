//! The verdict's calibration: how often [`stats::compare`] calls a change
//! significant when there is none (A/A: both sides drawn from one
//! distribution), and how often it finds a change that is there (power).
//!
//! A verdict is only as strong as this shows (the developers' guide).
//! Each case draws `trials` pairs of samples of `n` runs per side from a
//! [`Source`] with a fixed seed, so the same request gives the same
//! figures. Two procedures:
//!
//! * [`Floor::None`]: the variant against the base alone, as with
//!   `lab --no-control` and as the A/A control is judged itself (noise
//!   floor 0: the strictest case);
//! * [`Floor::Control`]: as a lab with its A/A control runs it: a third
//!   sample from the base's distribution is the control, and its
//!   |%change| is the noise floor the variant must exceed.
//!
//! A shift multiplies the variant's draws by `1 + shift / 100`, so a
//! shift is a %change of the mean, as the report prints it.

use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use statrs::distribution::{ContinuousCDF, Normal};

use super::stats::{self, Verdict};

/// Where a calibration's samples come from. Every source has mean near
/// 100 (a %change of it reads as the same number of units).
#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    /// Normal, mean 100, standard deviation `sd` (so `sd` is also the
    /// coefficient of variation, in percent).
    Normal {
        /// Standard deviation, in percent of the mean.
        sd: f64,
    },
    /// Log-normal: `100 · exp(N(0, sigma²))`, skewed to the right as
    /// run times are.
    LogNormal {
        /// Standard deviation of the logarithm.
        sigma: f64,
    },
    /// Normal (mean 100, `sd`), but a run hit by host load (probability
    /// `p`) loses `loss` percent: the low outliers Mbit/s shows on a
    /// shared machine.
    Outliers {
        /// Standard deviation, in percent of the mean.
        sd: f64,
        /// Probability that a run is hit.
        p: f64,
        /// What a hit run loses, in percent.
        loss: f64,
    },
    /// Drawn with replacement from measured values (e.g. a lab's base and
    /// A/A control runs of one metric, which measure the same kernel).
    Resampled {
        /// What they are (`lab.json throughput.lan-to-wan.gro-on`).
        name: String,
        /// The values, in their unit.
        values: Vec<f64>,
    },
}

impl Source {
    /// A short description for tables: `normal, sd 1%`.
    pub fn describe(&self) -> String {
        match self {
            Source::Normal { sd } => format!("normal, sd {sd}%"),
            Source::LogNormal { sigma } => format!("log-normal, sigma {sigma}"),
            Source::Outliers { sd, p, loss } => {
                format!("normal sd {sd}%, {:.0}% of runs -{loss}%", p * 100.0)
            }
            Source::Resampled { name, values } => {
                format!("resampled from {name} ({} values)", values.len())
            }
        }
    }

    fn draw(&self, rng: &mut StdRng, n: usize, factor: f64) -> Vec<f64> {
        let z = Normal::new(0.0, 1.0).expect("the standard normal");
        let normal = |rng: &mut StdRng| {
            // Inverse-CDF sampling; (0, 1) excludes the infinite ends.
            let u: f64 = rng.random_range(f64::EPSILON..1.0);
            z.inverse_cdf(u)
        };
        (0..n)
            .map(|_| {
                let x = match self {
                    Source::Normal { sd } => 100.0 + sd * normal(rng),
                    Source::LogNormal { sigma } => 100.0 * (sigma * normal(rng)).exp(),
                    Source::Outliers { sd, p, loss } => {
                        let x = 100.0 + sd * normal(rng);
                        if rng.random_range(0.0..1.0) < *p {
                            x * (1.0 - loss / 100.0)
                        } else {
                            x
                        }
                    }
                    Source::Resampled { values, .. } => values[rng.random_range(0..values.len())],
                };
                x * factor
            })
            .collect()
    }
}

/// Which noise floor the variant must exceed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Floor {
    /// None (floor 0), as without an A/A control.
    None,
    /// The |%change| of an A/A control drawn from the base's distribution.
    Control,
}

/// How many of `trials` comparisons were called significant.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rate {
    /// Runs per side.
    pub n: usize,
    /// Comparisons drawn.
    pub trials: usize,
    /// Of them, called [`Verdict::Significant`].
    pub significant: usize,
}

impl Rate {
    /// `significant / trials`.
    pub fn fraction(&self) -> f64 {
        self.significant as f64 / self.trials.max(1) as f64
    }
}

/// Draws `trials` (base, variant) pairs of `n` runs each from `source`,
/// the variant's shifted by `shift` percent (0: an A/A comparison), and
/// counts the [`stats::compare`] verdicts that are
/// [`Verdict::Significant`] against `floor`. Seeded by `seed`; the
/// controls come from a stream of their own, so that both floors judge
/// the same (base, variant) pairs.
pub fn rate(source: &Source, n: usize, shift: f64, floor: Floor, trials: usize, seed: u64) -> Rate {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut controls = StdRng::seed_from_u64(seed ^ 0xC0117);
    let factor = 1.0 + shift / 100.0;
    let mut significant = 0;
    for _ in 0..trials {
        let base = source.draw(&mut rng, n, 1.0);
        let variant = source.draw(&mut rng, n, factor);
        let noise = match floor {
            Floor::None => 0.0,
            Floor::Control => {
                let control = source.draw(&mut controls, n, 1.0);
                stats::compare(&base, &control, 0.0)
                    .and_then(|c| c.percent)
                    .map_or(0.0, f64::abs)
            }
        };
        if stats::compare(&base, &variant, noise).is_some_and(|c| c.verdict == Verdict::Significant)
        {
            significant += 1;
        }
    }
    Rate {
        n,
        trials,
        significant,
    }
}

/// The sources [`rate`]'s A/A figures are printed for besides measured
/// values: normal, skewed, and with host-load outliers.
pub fn known_sources() -> Vec<Source> {
    vec![
        Source::Normal { sd: 1.0 },
        Source::LogNormal { sigma: 0.1 },
        Source::Outliers {
            sd: 1.0,
            p: 0.1,
            loss: 20.0,
        },
    ]
}
