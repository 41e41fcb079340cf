//! `lab.json` files from a hostile trial: no input may panic
//! `size-report`, every value is checked against its metric's unit and
//! range, settings and arms that contradict each other are refused, and
//! the checks take linear time (issue #29 §14–§17). Each case starts from
//! the fixture run (`lab_fixture/lab.json`: brcm47xx, 3 rounds, arms
//! baseline, baseline~control and no-reorder-blocks).

#[path = "common/lab_fixture.rs"]
mod lab_fixture;
#[path = "common/report_fixture.rs"]
mod report_fixture;

use lab_fixture::{record, write, RUN};
use report_fixture::{request, Fixture};
use xtask::report::{self, Format, LabRuns, Style};
use xtask::results::lab::LabRecord;

/// `size-report` of `f` in every format, plain (the newest complete lab
/// run) and with `--lab-run DIR`: the reports, or the errors, as text.
fn every_report(f: &Fixture, dir: &std::path::Path) -> Vec<String> {
    let mut out = Vec::new();
    for runs in [LabRuns::Newest, LabRuns::Dirs(vec![dir.to_path_buf()])] {
        let mut asked = request(&[], &[]);
        asked.lab = runs;
        match report::load(&f.layout(), &asked) {
            Ok(r) => {
                for format in Format::ALL {
                    match report::render(&r, format, &Style::default()) {
                        Ok(text) => out.push(text),
                        Err(e) => out.push(format!("{e:#}")),
                    }
                }
            }
            Err(e) => out.push(format!("{e:#}")),
        }
    }
    out
}

/// A workspace with size results, the lab kernels' results (their
/// `vmlinux` artifact) and `record` as the lab run.
fn workspace(record: &LabRecord) -> (Fixture, std::path::PathBuf) {
    let f = Fixture::new();
    f.standard("bcm53xx");
    for variant in ["baseline", "no-reorder-blocks"] {
        let mut kernel = f.result(
            "bcm53xx",
            variant,
            &[("vmlinux", 1)],
            (30_000, 4_000, 2_000),
        );
        kernel.target.name = "brcm47xx-lab".to_string();
        f.write(kernel, &[]);
    }
    let dir = write(&f, RUN, record);
    (f, dir)
}

/// A non-ASCII character in an arm's `image_sha256` where the report cuts
/// it short (its 12th character) panicked `size-report` (exit 101 in
/// `report/lab/find.rs`), with `--lab-run` and without (the newest
/// complete run is found and read by a plain `size-report`). Now the note
/// that the lab kernel was rebuilt since names it.
#[test]
fn a_non_ascii_image_sha256_does_not_panic_the_report() {
    for sha in ["aéééééééééééééééééééé", "ab€€€€€€€€€€€€€€€"]
    {
        let mut r = record();
        r.arms[0].kernel.as_mut().unwrap().image_sha256 = sha.to_string();
        let (f, dir) = workspace(&r);
        let reports = std::panic::catch_unwind(|| every_report(&f, &dir))
            .unwrap_or_else(|_| panic!("size-report panicked on image_sha256 {sha:?}"));
        // The text report of each (format ALL[0]) names it, cut short.
        let cut: String = sha.chars().take(12).collect();
        let naming = reports
            .iter()
            .filter(|t| t.contains(&format!("sha256 {cut} →")))
            .count();
        assert!(naming >= 2, "{reports:#?}");
    }
}
