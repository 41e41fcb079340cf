//! Where `cargo xtask test`'s time went: the end-to-end build's wall
//! time, nextest's, and the slow tests' share of the summed test time.
//!
//! The test times come from the JUnit report nextest writes
//! (`[profile.default.junit]` in `.config/nextest.toml`, at
//! `<target dir>/nextest/default/junit.xml`): one `<testcase name=…
//! time="SECONDS">` per test, `name` the test's path in its binary
//! (`lab_malta::boots…`). Which tests are slow comes from the tests'
//! gate: each slow test that runs writes `<test>: <why>` to the ledger
//! [`super::selftest::SLOW_LEDGER_ENV`] names.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result};

/// How many of the slowest tests the summary lists.
const LONGEST: usize = 8;

/// nextest's JUnit report of the default profile: under
/// `$CARGO_TARGET_DIR` when set, else the workspace's `target/`.
pub fn junit_path() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            crate::util::layout::Layout::from_manifest_dir()
                .root()
                .join("target")
        });
    target.join("nextest/default/junit.xml")
}

/// The wall-clock times of `cargo xtask test`'s two steps.
#[derive(Debug, Clone, Copy)]
pub struct Walls {
    /// The end-to-end build before the tests.
    pub build: Duration,
    /// `cargo nextest run`, compiling the tests included.
    pub tests: Duration,
}

/// One test's time from the JUnit report.
#[derive(Debug, Clone, PartialEq)]
struct Case {
    /// The binary and the test, as nextest names them (`xtask::it
    /// lab_malta::…`).
    name: String,
    /// Seconds.
    seconds: f64,
    /// Named in the slow-test ledger.
    slow: bool,
}

/// The summary's lines: the walls, the tests' summed time, and the slow
/// tests' count, summed time and share of it, then the `LONGEST` (8)
/// tests, slow ones marked.
///
/// Errors: `junit` is not XML, or a `testcase` has no `name` or a `time`
/// that is not a number of seconds.
pub fn summary(junit: &str, slow_ledger: &str, walls: Walls) -> Result<String> {
    let slow: BTreeSet<&str> = slow_ledger
        .lines()
        .filter_map(|l| l.split_once(": ").map(|(test, _)| test))
        .collect();
    let mut cases = cases(junit, &slow)?;
    let total: f64 = cases.iter().map(|c| c.seconds).sum();
    let slow_total: f64 = cases.iter().filter(|c| c.slow).map(|c| c.seconds).sum();
    let slow_count = cases.iter().filter(|c| c.slow).count();
    let share = if total > 0.0 {
        100.0 * slow_total / total
    } else {
        0.0
    };
    let mut out = format!(
        "test time: the end-to-end build {:.0} s, then nextest {:.0} s (wall clock); {} tests ran for {total:.0} s summed\n\
         slow tests (XTASK_SLOW_TESTS: kernel builds, QEMU): {slow_count}, {slow_total:.0} s summed, {share:.0} % of the test time",
        walls.build.as_secs_f64(),
        walls.tests.as_secs_f64(),
        cases.len(),
    );
    cases.sort_by(|a, b| b.seconds.total_cmp(&a.seconds));
    let _ = write!(out, "\nthe {LONGEST} longest:");
    for case in cases.iter().take(LONGEST) {
        let mark = if case.slow { " (slow)" } else { "" };
        let _ = write!(out, "\n  {:>7.1} s  {}{mark}", case.seconds, case.name);
    }
    Ok(out)
}

/// The report's test cases; a case is slow when its test (the name after
/// the binary's) is in `slow`.
fn cases(junit: &str, slow: &BTreeSet<&str>) -> Result<Vec<Case>> {
    let doc = roxmltree::Document::parse(junit).context("nextest's JUnit report is not XML")?;
    doc.descendants()
        .filter(|n| n.has_tag_name("testcase"))
        .map(|n| {
            let test = n.attribute("name").context("a testcase without a name")?;
            let time = n.attribute("time").unwrap_or("0");
            let seconds: f64 = time
                .parse()
                .ok()
                .filter(|s: &f64| s.is_finite() && *s >= 0.0)
                .with_context(|| format!("testcase {test}: time {time:?} is not seconds"))?;
            let binary = n.attribute("classname").unwrap_or("");
            Ok(Case {
                name: format!("{binary} {test}").trim().to_string(),
                seconds,
                slow: slow.contains(test),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// As nextest 0.9 writes it (`time` in seconds, `classname` the binary).
    const JUNIT: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<testsuites name="nextest-run" tests="3" skipped="0" failures="0" errors="0" time="100.5">
    <testsuite name="xtask::it" tests="3" skipped="0" errors="0" failures="0">
        <testcase name="lab_malta::boots" classname="xtask::it" time="90.000"/>
        <testcase name="tidy::stages_import_only_earlier_stages" classname="xtask::it" time="0.021"/>
        <testcase name="e2e_patch_only::builds" classname="xtask::it" time="30.000">
            <failure type="test failure">it failed</failure>
        </testcase>
    </testsuite>
</testsuites>"#;

    #[test]
    fn the_slow_tests_share_is_their_summed_time_over_all() {
        let walls = Walls {
            build: Duration::from_secs(300),
            tests: Duration::from_secs(100),
        };
        let text = summary(
            JUNIT,
            "lab_malta::boots: builds the Malta lab kernel\n",
            walls,
        )
        .unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "test time: the end-to-end build 300 s, then nextest 100 s (wall clock); 3 tests ran for 120 s summed"
        );
        assert_eq!(
            lines[1],
            "slow tests (XTASK_SLOW_TESTS: kernel builds, QEMU): 1, 90 s summed, 75 % of the test time"
        );
        assert_eq!(lines[3], "     90.0 s  xtask::it lab_malta::boots (slow)");
        assert_eq!(lines[4], "     30.0 s  xtask::it e2e_patch_only::builds");
        assert_eq!(lines.len(), 6, "{text}");
    }

    #[test]
    fn a_report_that_is_not_junit_is_an_error() {
        let walls = Walls {
            build: Duration::ZERO,
            tests: Duration::ZERO,
        };
        let err = summary("<testsuites>", "", walls).unwrap_err();
        assert!(format!("{err:#}").contains("not XML"), "{err:#}");
        let bad = r#"<testsuites><testcase name="a" time="soon"/></testsuites>"#;
        let err = summary(bad, "", walls).unwrap_err();
        assert!(format!("{err:#}").contains("testcase a"), "{err:#}");
    }
}
