//! Property tests: for random texts a and b, the unified diff a→b (made by
//! the `similar` crate, or GNU `diff -u`) applied to a gives b, and applied
//! in reverse to b gives a back.

use crate::common::patch_harness as harness;

use std::fs;

use harness::*;
use proptest::prelude::*;
use xtask::patches::engine::{apply_patch, apply_patch_reverse, parse_patch, ApplyOptions};

/// Texts over a small line alphabet (so lines repeat and hunks could match
/// in several places), optionally without a final newline, optionally CRLF.
fn text() -> impl Strategy<Value = Vec<u8>> {
    (
        prop::collection::vec(
            prop::sample::select(vec!["a", "b", "c", "}", "", "x y", "\t"]),
            0..40,
        ),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(lines, final_newline, crlf)| {
            let eol = if crlf { "\r\n" } else { "\n" };
            let mut s = lines.join(eol);
            if final_newline && !lines.is_empty() {
                s.push_str(eol);
            }
            s.into_bytes()
        })
}

fn similar_diff(a: &[u8], b: &[u8], context: usize) -> Vec<u8> {
    let (a, b) = (String::from_utf8_lossy(a), String::from_utf8_lossy(b));
    let diff = similar::TextDiff::from_lines(a.as_ref(), b.as_ref());
    diff.unified_diff()
        .context_radius(context)
        .header("a/f", "b/f")
        .to_string()
        .into_bytes()
}

fn round_trip(a: &[u8], b: &[u8], p: &[u8]) -> Result<(), TestCaseError> {
    if p.is_empty() {
        prop_assert_eq!(a, b);
        return Ok(());
    }
    let patch = parse_patch(p).map_err(|e| TestCaseError::fail(format!("{e}")))?;
    let opts = ApplyOptions { strip: 1, fuzz: 0 };
    let tmp = tempfile::tempdir().unwrap();
    fs::write(tmp.path().join("f"), a).unwrap();
    apply_patch(tmp.path(), &patch, &opts).map_err(|e| TestCaseError::fail(format!("{e}")))?;
    prop_assert_eq!(fs::read(tmp.path().join("f")).unwrap(), b.to_vec());
    apply_patch_reverse(tmp.path(), &patch, &opts)
        .map_err(|e| TestCaseError::fail(format!("reverse: {e}")))?;
    prop_assert_eq!(fs::read(tmp.path().join("f")).unwrap(), a.to_vec());
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn similar_diffs_round_trip(a in text(), b in text(), context in 0usize..4) {
        let p = similar_diff(&a, &b, context);
        round_trip(&a, &b, &p)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 100, ..ProptestConfig::default() })]

    #[test]
    fn gnu_diffs_round_trip(a in text(), b in text()) {
        let p = gnu_diff("f", &a, &b);
        round_trip(&a, &b, &p)?;
    }
}
