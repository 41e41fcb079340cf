//! Percent formatting of `size-report`: sign always shown, two decimals,
//! exact decimal rounding (half away from zero), the sign of tiny changes,
//! and the decimal comma.

use xtask::report::{format_percent, Change, Decimal};

#[test]
fn sign_and_two_decimals() {
    let cases: &[(u64, u64, &str)] = &[
        // The form in the issue: bcm53xx zImage.
        (1_840_424, 1_871_328, "+1.68%"),
        (1_871_328, 1_840_424, "-1.65%"),
        // No change.
        (1000, 1000, "+0.00%"),
        // Whole numbers and large changes.
        (100, 150, "+50.00%"),
        (100, 50, "-50.00%"),
        (100, 0, "-100.00%"),
        (1, 1000, "+99900.00%"),
        // Tiny changes that round to zero keep the sign of the change.
        (10_000_000, 10_000_001, "+0.00%"),
        (10_000_000, 9_999_999, "-0.00%"),
        (20_000, 20_001, "+0.01%"), // 0.005 exactly rounds up
        (20_000, 19_999, "-0.01%"), // … and away from zero when negative
        (20_001, 20_002, "+0.00%"), // just below 0.005
        // Exact ties at the second decimal, where binary printf would go
        // to even: 0.125% and 0.375%.
        (800, 801, "+0.13%"),
        (800, 799, "-0.13%"),
        (800, 803, "+0.38%"),
        // Just under / over a tie.
        (100_000, 100_124, "+0.12%"),
        (100_000, 100_126, "+0.13%"),
        // No base size: no percentage.
        (0, 0, "+0.00%"),
        (0, 5, "n/a"),
        // u64 extremes do not overflow.
        (u64::MAX, u64::MAX, "+0.00%"),
        (u64::MAX, 0, "-100.00%"),
        (1, u64::MAX, "+1844674407370955161400.00%"),
    ];
    for &(before, after, want) in cases {
        assert_eq!(
            format_percent(before, after, Decimal::Point),
            want,
            "{before} → {after}"
        );
    }
}

#[test]
fn decimal_comma() {
    assert_eq!(
        format_percent(1_840_424, 1_871_328, Decimal::Comma),
        "+1,68%"
    );
    assert_eq!(
        format_percent(10_000_000, 9_999_999, Decimal::Comma),
        "-0,00%"
    );
    assert_eq!(format_percent(0, 5, Decimal::Comma), "n/a");
}

#[test]
fn change_numbers() {
    let c = Change {
        before: 800,
        after: 799,
    };
    assert_eq!(c.delta(), -1);
    assert_eq!(c.percent(), Some(-0.125));
    assert_eq!(c.percent_text(Decimal::Point), "-0.13%");
    let new = Change {
        before: 0,
        after: 7,
    };
    assert_eq!(new.delta(), 7);
    assert_eq!(new.percent(), None);
}

/// The integer rounding agrees with correctly rounded decimal arithmetic
/// on a sweep of sizes (checked against a reference that uses exact
/// rational comparisons rather than floats).
#[test]
fn agrees_with_exact_reference() {
    fn reference(before: u64, after: u64) -> String {
        let delta = after as i128 - before as i128;
        let sign = if delta < 0 { "-" } else { "+" };
        let num = delta.unsigned_abs() * 10_000; // hundredths of a percent × before
        let den = before as u128;
        let (q, r) = (num / den, num % den);
        let rounded = if 2 * r >= den { q + 1 } else { q };
        format!("{sign}{}.{:02}%", rounded / 100, rounded % 100)
    }
    for before in [1u64, 3, 7, 400, 799, 800, 1000, 4096, 65_535, 1_840_424] {
        for after in (before.saturating_sub(50))..(before + 50) {
            assert_eq!(
                format_percent(before, after, Decimal::Point),
                reference(before, after)
            );
        }
    }
}
