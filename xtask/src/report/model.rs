//! The report model: what was compared and every number a renderer shows.
//!
//! A report ([`super::document`]) holds one target report per target, each
//! with one comparison per variant. A comparison's numbers are grouped in
//! metric [`Family`]s: a family has a name (`size`), a unit (`bytes`) and
//! [`Metric`]s, each a measured thing (`zImage`, `vmlinux text`) with
//! [`Samples`] for the base and for the variant. Sizes are one family
//! ([`super::sizes`]: one whole-number sample per side);
//! a runtime lab adds e.g. a `throughput` family (Mbit/s, N samples per
//! side). Renderers walk families and metrics ([`super::document::TargetReport::rows`]
//! for tables), so a new family needs no renderer change.
//!
//! The arithmetic: a metric's value on each side is the [`mean`] of its
//! samples ([`stddev`] for the spread); its change is `after - before` and
//! `(after - before) * 100 / before` percent. One whole-number sample per
//! side is computed exactly in integers ([`Change`], [`format_percent`]).

use serde::Serialize;

use crate::measure::stats;

/// The decimal separator of printed numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Decimal {
    /// `1.68` (C locale).
    #[default]
    Point,
    /// `1,68` (most of continental Europe).
    Comma,
}

impl Decimal {
    /// `text` with each `.` written as this separator.
    pub fn apply(self, text: String) -> String {
        match self {
            Decimal::Point => text,
            Decimal::Comma => text.replace('.', ","),
        }
    }
}

/// A size before and after, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Change {
    /// Size in the base build, bytes.
    pub before: u64,
    /// Size in the variant build, bytes.
    pub after: u64,
}

impl Change {
    /// `after - before`, in bytes (negative when the variant is smaller).
    pub fn delta(&self) -> i64 {
        (self.after as i128 - self.before as i128) as i64
    }

    /// `(after - before) * 100 / before`, in percent; `None` when `before`
    /// is 0 and `after` is not (no meaningful percentage), `Some(0.0)` when
    /// both are 0.
    pub fn percent(&self) -> Option<f64> {
        match (self.before, self.after) {
            (0, 0) => Some(0.0),
            (0, _) => None,
            (b, _) => Some(self.delta() as f64 * 100.0 / b as f64),
        }
    }

    /// [`format_percent`] of this change.
    pub fn percent_text(&self, decimal: Decimal) -> String {
        format_percent(self.before, self.after, decimal)
    }
}

/// The percent change from `before` to `after` bytes as developers post it:
/// sign always shown, two decimals, `%` appended — `+1.68%`, `-0.37%`.
///
/// Computed exactly in integers (`|after - before| * 10000 / before`
/// hundredths of a percent), rounded half away from zero, so the printed
/// digits are the decimal rounding of the true ratio (C's `%+.2f` rounds
/// the nearest binary double instead and can differ on exact ties such as
/// 0.125%). The sign is the sign of the byte change: a change too small to
/// show prints `+0.00%` or `-0.00%`, which tells growth from shrinkage; no
/// change prints `+0.00%` (as `%+.2f` prints 0.0). When `before` is 0 and
/// `after` is not, there is no percentage and the text is `n/a`.
/// [`Decimal::Comma`] writes the decimal separator as `,` (`+1,68%`).
pub fn format_percent(before: u64, after: u64, decimal: Decimal) -> String {
    if before == 0 {
        return if after == 0 {
            decimal.apply("+0.00%".to_string())
        } else {
            "n/a".to_string()
        };
    }
    let delta = after as i128 - before as i128;
    let sign = if delta < 0 { '-' } else { '+' };
    let magnitude = delta.unsigned_abs();
    let before = before as u128;
    // floor(magnitude * 10000 / before + 1/2): hundredths of a percent.
    let hundredths = (magnitude * 20_000 + before) / (2 * before);
    decimal.apply(format!(
        "{sign}{}.{:02}%",
        hundredths / 100,
        hundredths % 100
    ))
}

/// The arithmetic mean of `values`; `None` when there are none.
pub fn mean(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        None
    } else {
        Some(values.iter().sum::<f64>() / values.len() as f64)
    }
}

/// The sample standard deviation of `values` (Bessel's `n - 1`), in their
/// unit; `None` for fewer than two values.
pub fn stddev(values: &[f64]) -> Option<f64> {
    if values.len() < 2 {
        return None;
    }
    let m = mean(values)?;
    let squares: f64 = values.iter().map(|v| (v - m) * (v - m)).sum();
    Some((squares / (values.len() - 1) as f64).sqrt())
}

/// The measurements of one metric on one side (base or variant), in the
/// family's unit. Serialised as a JSON array of numbers.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Samples {
    /// Exact whole numbers (bytes, counts).
    Whole(Vec<u64>),
    /// Measured real numbers (Mbit/s, seconds).
    Real(Vec<f64>),
}

impl Samples {
    /// How many samples there are.
    pub fn len(&self) -> usize {
        match self {
            Samples::Whole(v) => v.len(),
            Samples::Real(v) => v.len(),
        }
    }

    /// Whether there are none (never, for a [`Metric`]'s samples).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The samples as floats.
    pub fn values(&self) -> Vec<f64> {
        match self {
            Samples::Whole(v) => v.iter().map(|&x| x as f64).collect(),
            Samples::Real(v) => v.clone(),
        }
    }

    /// The one sample, when it is the only one and a whole number.
    pub fn single_whole(&self) -> Option<u64> {
        match self {
            Samples::Whole(v) if v.len() == 1 => Some(v[0]),
            _ => None,
        }
    }

    /// [`mean`] of the samples (0 for none, which a [`Metric`] never has).
    pub fn mean(&self) -> f64 {
        mean(&self.values()).unwrap_or(0.0)
    }

    /// [`stddev`] of the samples; `None` for fewer than two.
    pub fn stddev(&self) -> Option<f64> {
        stddev(&self.values())
    }
}

/// A number a renderer prints: exact for one whole-number sample per side,
/// otherwise a mean. Serialised as a JSON number.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Number {
    /// A whole number (a size in bytes).
    Whole(u64),
    /// A signed whole number (a size change in bytes).
    Signed(i64),
    /// A real number (a mean, or its change).
    Real(f64),
}

impl Number {
    /// The number as people read it: whole numbers in full, reals with
    /// two decimals; `decimal` chooses the separator.
    pub fn text(self, decimal: Decimal) -> String {
        match self {
            Number::Whole(v) => v.to_string(),
            Number::Signed(v) => v.to_string(),
            Number::Real(v) => decimal.apply(format!("{v:.2}")),
        }
    }

    /// [`Number::text`] with the sign always shown (`+30904`, `-1.50`).
    pub fn signed_text(self, decimal: Decimal) -> String {
        match self {
            Number::Whole(v) => format!("+{v}"),
            Number::Signed(v) => format!("{v:+}"),
            Number::Real(v) => decimal.apply(format!("{v:+.2}")),
        }
    }

    /// The number for machines: shortest exact form (`-0.798703553652043`),
    /// `decimal` choosing the separator.
    pub fn machine_text(self, decimal: Decimal) -> String {
        match self {
            Number::Whole(v) => v.to_string(),
            Number::Signed(v) => v.to_string(),
            Number::Real(v) => decimal.apply(v.to_string()),
        }
    }
}

/// A companion row some metrics get: the value again in lowercase hex, as
/// binutils `size` prints `dec` (`hex`). Only for whole-number metrics.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HexRow {
    /// Item name of the row (CSV `item`, JSON key): `hex`.
    pub item: String,
    /// Label of the row in tables: `vmlinux hex`.
    pub label: String,
}

/// One measured thing compared between base and variant.
#[derive(Debug, Clone, PartialEq)]
pub struct Metric {
    /// Group within the family; CSV's `kind` column (`artifact`, `section`).
    pub kind: String,
    /// The thing measured within its kind; CSV's `item` column (`zImage`,
    /// `text`, `tcp-download`).
    pub item: String,
    /// Row label in tables (markdown, SVG): `zImage`, `vmlinux text`.
    pub label: String,
    /// Label in sentences (text, mail): `zImage size`, `vmlinux text`.
    pub phrase: String,
    /// The value in hex in a row of its own, for `dec`.
    pub hex: Option<HexRow>,
    base: Samples,
    variant: Samples,
    stats: Option<Stats>,
}

/// The statistics of a metric measured N times per side (the runtime
/// lab's): [`stats::compare`] against the noise floor an A/A control
/// measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Stats {
    /// Summaries, %change, Welch's t 95 % interval, Welch and Mann–Whitney
    /// p, and the verdict.
    pub comparison: stats::SampleComparison,
    /// The A/A control's |%change| of this metric, in percent; `None`
    /// without a control (the verdict then uses 0).
    pub noise_floor: Option<f64>,
}

impl Metric {
    /// A metric of `kind`/`item`, labelled `label` in tables and `phrase`
    /// in sentences, with the base's and the variant's samples (in the
    /// family's unit).
    ///
    /// Errors when either side has no sample (a metric compares values).
    pub fn new(
        kind: &str,
        item: &str,
        label: &str,
        phrase: &str,
        base: Samples,
        variant: Samples,
    ) -> anyhow::Result<Metric> {
        if base.is_empty() || variant.is_empty() {
            anyhow::bail!(
                "metric {kind} {item}: {} base and {} variant samples; a metric needs at least one on each side (leave it out instead)",
                base.len(),
                variant.len()
            );
        }
        Ok(Metric {
            kind: kind.to_string(),
            item: item.to_string(),
            label: label.to_string(),
            phrase: phrase.to_string(),
            hex: None,
            base,
            variant,
            stats: None,
        })
    }

    /// This metric with its [`Stats`] against `noise_floor` (the A/A
    /// control's |%change| in percent, `None` without a control), its
    /// values recorded to `resolution` in their unit (0 when unknown;
    /// [`stats::compare_at`]).
    pub fn with_stats(mut self, noise_floor: Option<f64>, resolution: f64) -> Metric {
        let (base, variant) = (self.base.values(), self.variant.values());
        self.stats = stats::compare_at(&base, &variant, noise_floor.unwrap_or(0.0), resolution)
            .map(|comparison| Stats {
                comparison,
                noise_floor,
            });
        self
    }

    /// The statistics, for metrics made [`Metric::with_stats`].
    pub fn stats(&self) -> Option<&Stats> {
        self.stats.as_ref()
    }

    /// A metric with one whole-number sample per side (a size in bytes):
    /// `change.before` for the base, `change.after` for the variant.
    pub fn whole(kind: &str, item: &str, label: &str, phrase: &str, change: Change) -> Metric {
        Metric {
            kind: kind.to_string(),
            item: item.to_string(),
            label: label.to_string(),
            phrase: phrase.to_string(),
            hex: None,
            base: Samples::Whole(vec![change.before]),
            variant: Samples::Whole(vec![change.after]),
            stats: None,
        }
    }

    /// The base build's samples (at least one).
    pub fn base(&self) -> &Samples {
        &self.base
    }

    /// The variant build's samples (at least one).
    pub fn variant(&self) -> &Samples {
        &self.variant
    }

    /// The exact change when each side is one whole-number sample (sizes).
    pub fn exact(&self) -> Option<Change> {
        Some(Change {
            before: self.base.single_whole()?,
            after: self.variant.single_whole()?,
        })
    }

    /// The base's value: the sample, or the mean of several.
    pub fn before(&self) -> Number {
        match self.exact() {
            Some(c) => Number::Whole(c.before),
            None => Number::Real(self.base.mean()),
        }
    }

    /// The variant's value: the sample, or the mean of several.
    pub fn after(&self) -> Number {
        match self.exact() {
            Some(c) => Number::Whole(c.after),
            None => Number::Real(self.variant.mean()),
        }
    }

    /// `after - before`, in the family's unit.
    pub fn delta(&self) -> Number {
        match self.exact() {
            Some(c) => Number::Signed(c.delta()),
            None => Number::Real(self.variant.mean() - self.base.mean()),
        }
    }

    /// `(after - before) * 100 / before` in percent; `None` when `before`
    /// is 0 and `after` is not, `Some(0.0)` when both are 0.
    pub fn percent(&self) -> Option<f64> {
        if let Some(c) = self.exact() {
            return c.percent();
        }
        let (b, a) = (self.base.mean(), self.variant.mean());
        if b == 0.0 {
            (a == 0.0).then_some(0.0)
        } else {
            Some((a - b) * 100.0 / b)
        }
    }

    /// The percent change as printed: `+1.68%` ([`format_percent`], exact)
    /// for one whole sample per side, otherwise the mean's change rounded
    /// to two decimals; `n/a` without a percentage.
    pub fn percent_text(&self, decimal: Decimal) -> String {
        if let Some(c) = self.exact() {
            return c.percent_text(decimal);
        }
        match self.percent() {
            Some(p) => decimal.apply(format!("{p:+.2}%")),
            None => "n/a".to_string(),
        }
    }

    /// How many samples the values average, when more than one:
    /// `mean of 3 samples` or `mean of 3 → 5 samples`.
    pub fn sample_note(&self) -> Option<String> {
        let (b, v) = (self.base.len(), self.variant.len());
        match (b, v) {
            (1, 1) => None,
            _ if b == v => Some(format!("mean of {b} samples")),
            _ => Some(format!("mean of {b} → {v} samples")),
        }
    }
}

/// Whether renderers print a family's unit next to its values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnitLabel {
    /// Not printed: the unit is the format's documented default (bytes).
    Implied,
    /// Printed after the values (`941.33 → 950.00 Mbit/s`) and in labels.
    Shown,
}

/// A group of metrics measured the same way, in one unit.
#[derive(Debug, Clone, PartialEq)]
pub struct Family {
    /// Family name: `size` ([`super::sizes::FAMILY`]), `throughput`, …
    pub name: String,
    /// Unit of every sample: `bytes`, `Mbit/s`, …
    pub unit: String,
    /// Whether the unit is printed.
    pub unit_label: UnitLabel,
    /// The metrics, in the order reports list them.
    pub metrics: Vec<Metric>,
}

impl Family {
    /// A family `name` in `unit` without metrics yet.
    pub fn new(name: &str, unit: &str, unit_label: UnitLabel) -> Family {
        Family {
            name: name.to_string(),
            unit: unit.to_string(),
            unit_label,
            metrics: Vec::new(),
        }
    }
}
