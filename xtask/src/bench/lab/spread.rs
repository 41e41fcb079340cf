//! Least, median and greatest of some samples ([`Spread`]), as `bench
//! lab` reports its boots, runs and overheads and the model's slowdown.

use serde::Serialize;

/// Least, median and greatest of some samples, and how many.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Spread {
    /// Number of samples.
    pub n: usize,
    /// The smallest.
    pub min: f64,
    /// The median (the mean of the middle two for an even count).
    pub median: f64,
    /// The greatest.
    pub max: f64,
    /// The mean.
    pub mean: f64,
}

impl Spread {
    /// The spread of `samples`; `None` when there are none.
    pub fn of(samples: &[f64]) -> Option<Spread> {
        if samples.is_empty() {
            return None;
        }
        let mut s = samples.to_vec();
        s.sort_by(f64::total_cmp);
        let n = s.len();
        let median = if n % 2 == 1 {
            s[n / 2]
        } else {
            (s[n / 2 - 1] + s[n / 2]) / 2.0
        };
        Some(Spread {
            n,
            min: s[0],
            median,
            max: s[n - 1],
            mean: s.iter().sum::<f64>() / n as f64,
        })
    }

    /// `4.81 / 4.90 / 5.32 s (n = 3)`: min / median / max.
    pub fn describe(&self) -> String {
        format!(
            "{:.2} / {:.2} / {:.2} s (n = {})",
            self.min, self.median, self.max, self.n
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_of_odd_and_even_counts() {
        let s = Spread::of(&[3.0, 1.0, 2.0]).unwrap();
        assert_eq!(
            (s.n, s.min, s.median, s.max, s.mean),
            (3, 1.0, 2.0, 3.0, 2.0)
        );
        assert_eq!(Spread::of(&[4.0, 1.0, 2.0, 3.0]).unwrap().median, 2.5);
        assert!(Spread::of(&[]).is_none());
    }
}
