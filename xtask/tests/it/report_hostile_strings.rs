//! What a hostile `lab.json` holds stays a string. A
//! `lab_target` of `../../x` made `size-report` read a `result.json`
//! outside `target/`; it is refused as a target file's name would be. Arm
//! names and a failure reason holding escape sequences reached the
//! terminal raw; every format escapes them now.

use crate::common::lab_fixture;
use crate::common::report_fixture;

use lab_fixture::{record, write, RUN};
use report_fixture::{request, Fixture};
use xtask::report::{self, Format, LabRuns, Style};
use xtask::results::lab::{LabRecord, Status};

/// `size-report --lab-run DIR` of `record` in a workspace with the
/// bcm53xx pair: the loaded report, or the error.
fn load(f: &Fixture, record: &LabRecord) -> anyhow::Result<report::Report> {
    let dir = write(f, RUN, record);
    let mut named = request(&[], &[]);
    named.lab = LabRuns::Dirs(vec![dir]);
    report::load(&f.layout(), &named)
}

#[test]
fn a_lab_target_or_variant_that_climbs_out_is_refused() {
    let f = Fixture::new();
    f.standard("bcm53xx");
    // What the report would have read: a result.json outside target/.
    let outside = f.root().join("target/x/no-reorder-blocks");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::copy(
        f.results_dir("bcm53xx", "no-reorder-blocks")
            .join("result.json"),
        outside.join("result.json"),
    )
    .unwrap();
    let mut climbing = record();
    climbing.lab_target = "../../x".to_string();
    let err = format!("{:#}", load(&f, &climbing).unwrap_err());
    assert!(
        err.contains("lab_target = \"../../x\" contains '/'"),
        "{err}"
    );
    assert!(
        err.contains("repair the field or run the lab again"),
        "{err}"
    );

    let mut variant = record();
    variant.arms[2].variant = "..".to_string();
    let err = format!("{:#}", load(&f, &variant).unwrap_err());
    assert!(err.contains("arms[2].variant = \"..\""), "{err}");
    // The default selection passes such a run over with a note.
    write(&f, RUN, &climbing);
    let r = report::load(&f.layout(), &request(&[], &[])).unwrap();
    assert!(r.labs.is_empty());
}

/// A control character of a record in the rendered report, if any
/// (newline and tab lay out tables).
fn raw_control(text: &str) -> Option<(usize, char)> {
    text.char_indices()
        .find(|&(_, c)| c.is_control() && c != '\n' && c != '\t')
}

#[test]
fn arm_names_and_a_failure_reason_are_escaped_in_every_format() {
    let f = Fixture::new();
    let mut hostile = record();
    let evil = "no\u{1b}[2J\u{1b}]0;owned\u{7}-reorder\u{9b}1m\r";
    for arm in hostile
        .arms
        .iter_mut()
        .filter(|a| a.name == "no-reorder-blocks")
    {
        arm.name = evil.to_string();
    }
    for run in hostile
        .runs
        .iter_mut()
        .filter(|r| r.arm == "no-reorder-blocks")
    {
        run.arm = evil.to_string();
    }
    for boot in hostile
        .boots
        .iter_mut()
        .filter(|b| b.arm == "no-reorder-blocks")
    {
        boot.arm = evil.to_string();
    }
    hostile.status = Status::Failed {
        reason: "killed \u{1b}[31mred\u{7f}\u{85}".to_string(),
    };
    let loaded = load(&f, &hostile).unwrap();
    assert_eq!(loaded.labs.len(), 1);
    for format in Format::ALL {
        let text = report::render(&loaded, format, &Style::default()).unwrap();
        if let Some((at, c)) = raw_control(&text) {
            panic!(
                "{format}: {c:?} raw at byte {at}: {:?}",
                &text[at.saturating_sub(40)..(at + 40).min(text.len())]
            );
        }
        if format == Format::Json {
            // JSON escapes, so the value reads back as it was.
            let value: serde_json::Value = serde_json::from_str(&text).unwrap();
            assert!(value.to_string().contains("\\u001b[2J"), "{format}");
            assert!(
                text.contains("\\u009b1m") && text.contains("\\u0085"),
                "{text}"
            );
        } else if format != Format::Svg && format != Format::Csv {
            assert!(
                text.contains("no\\u{1b}[2J\\u{1b}]0;owned\\u{7}-reorder\\u{9b}1m\\r"),
                "{format}: {text}"
            );
        }
    }
    // The failure reason is in the text report's notes.
    let text = report::render(&loaded, Format::Text, &Style::default()).unwrap();
    assert!(
        text.contains("killed \\u{1b}[31mred\\u{7f}\\u{85}"),
        "{text}"
    );
}
