//! Differential tests on small compiled fixtures: our symbol reader against
//! the cross `nm --size-sort`, and our renderer against the kernel's
//! `scripts/bloat-o-meter -p <cross-prefix>` in every mode.

use crate::common::elf_fixtures;
use crate::common::elf_tools;
use crate::common::gate;

use elf_tools::BloatJob;
use xtask::measure::bloat::{self, BloatMode, Options};
use xtask::measure::symbols::read_symbols;

#[test]
fn fixtures_match_nm_and_bloat_o_meter() {
    if !elf_tools::with_bloat_o_meter(gate::Needs::new()).met() {
        return;
    }
    let script = elf_tools::bloat_o_meter();
    let dir = tempfile::tempdir().expect("temporary directory");
    let fixtures = elf_fixtures::build_fixtures(dir.path());
    let mut failures = Vec::new();
    let mut compared = 0;

    // The symbol list, file by file.
    for fixture in &fixtures {
        for file in [&fixture.old, &fixture.new] {
            let ours = read_symbols(file)
                .expect("reading fixture symbols")
                .to_nm_text();
            let theirs = elf_tools::run_nm_size_sort(fixture.prefix, file);
            if elf_tools::sorted_lines(&ours) != elf_tools::sorted_lines(&theirs) {
                let report = elf_tools::first_difference(&ours, &theirs).unwrap_or_default();
                failures.push(format!(
                    "nm --size-sort, {} {file:?}: {report}",
                    fixture.label
                ));
            }
            compared += 1;
        }
    }

    // The rendered diff: every mode old → new, and the default mode new → old.
    let mut jobs = Vec::new();
    for fixture in &fixtures {
        for mode in BloatMode::ALL {
            jobs.push((
                fixture,
                BloatJob {
                    prefix: fixture.prefix,
                    mode,
                    old: &fixture.old,
                    new: &fixture.new,
                },
            ));
        }
        jobs.push((
            fixture,
            BloatJob {
                prefix: fixture.prefix,
                mode: BloatMode::All,
                old: &fixture.new,
                new: &fixture.old,
            },
        ));
    }
    let bare: Vec<BloatJob<'_>> = jobs
        .iter()
        .map(|(_, j)| BloatJob {
            prefix: j.prefix,
            mode: j.mode,
            old: j.old,
            new: j.new,
        })
        .collect();
    let reference = elf_tools::run_bloat_o_meter_batch(&script, &bare);
    for ((fixture, job), theirs) in jobs.iter().zip(&reference) {
        let old = read_symbols(job.old).unwrap().symbols;
        let new = read_symbols(job.new).unwrap().symbols;
        let ours = bloat::diff(&old, &new, job.mode).render();
        if let Some(report) = elf_tools::first_difference(&ours, theirs) {
            failures.push(format!(
                "bloat-o-meter {:?}, {} {:?} → {:?}: {report}",
                job.mode.flag(),
                fixture.label,
                job.old,
                job.new
            ));
        }
        compared += 1;
    }
    assert!(
        failures.is_empty(),
        "{} of {compared} comparisons differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Folding clones changes only which names rows have: every counted byte is
/// still counted, the note line comes first, and no row keeps a clone suffix.
#[test]
fn folding_clones_keeps_totals_and_says_so() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let Some(fixture) = elf_fixtures::build_fixtures(dir.path()).into_iter().next() else {
        return; // the gate skipped every toolchain (or failed under CI)
    };
    let old = read_symbols(&fixture.old).unwrap().symbols;
    let new = read_symbols(&fixture.new).unwrap().symbols;
    for mode in BloatMode::ALL {
        let plain = bloat::diff(&old, &new, mode);
        let folded = bloat::diff_with(&old, &new, mode, Options { fold_clones: true });
        for (p, f) in plain.tables.iter().zip(&folded.tables) {
            assert_eq!((p.before, p.after), (f.before, f.after), "{mode:?} totals");
            assert_eq!(p.net(), f.net(), "{mode:?} net change");
            for row in &f.rows {
                assert_eq!(
                    bloat::fold_clone(&row.name),
                    row.name,
                    "{mode:?}: {row:?} not folded"
                );
            }
        }
        let text = folded.render();
        let first = text.lines().next().unwrap();
        assert!(
            first.contains("clones") && first.contains("not bloat-o-meter"),
            "{first}"
        );
        assert!(!plain.render().contains("clones"));
        assert_eq!(text.lines().skip(1).collect::<Vec<_>>().join("\n"), {
            // Below the note the layout is bloat-o-meter's.
            let rendered = folded
                .tables
                .iter()
                .map(|t| t.to_string())
                .collect::<String>();
            rendered.trim_end().to_string()
        });
    }
    // The fixture defines clone_base and .isra/.part/.constprop clones of it.
    let plain = bloat::diff(&old, &new, BloatMode::Text);
    let folded = bloat::diff_with(&old, &new, BloatMode::Text, Options { fold_clones: true });
    assert!(plain.tables[0]
        .rows
        .iter()
        .any(|r| r.name.starts_with("clone_base.")));
    assert!(!folded.tables[0]
        .rows
        .iter()
        .any(|r| r.name.starts_with("clone_base.")));
}
