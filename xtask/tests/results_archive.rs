//! `results export` and `results merge` for CI fan-out: one tar per
//! (target, variant) job, merged into a fresh workspace whose size report
//! then works; and what a merge refuses (nothing is written then).

#[path = "common/report_fixture.rs"]
mod report_fixture;

use std::path::Path;

use report_fixture::{request, Fixture};
use xshell::{cmd, Shell};
use xtask::results::{archive, BuildResult, FILE_NAME};

fn export(sh: &Shell, from: &Fixture, target: &str, variant: &str, to: &Path) {
    archive::export(
        sh,
        &from.layout(),
        &[target.to_string()],
        &[variant.to_string()],
        to,
    )
    .unwrap();
}

fn merge_err(sh: &Shell, into: &Fixture, files: &[&Path]) -> String {
    let files: Vec<_> = files.iter().map(|f| f.to_path_buf()).collect();
    let err = format!(
        "{:#}",
        archive::merge(sh, &into.layout(), &files).unwrap_err()
    );
    assert!(
        !into.layout().results_root().join("bcm53xx").exists(),
        "a refused merge wrote results"
    );
    err
}

#[test]
fn exported_jobs_merge_into_a_workspace_that_reports() {
    let (built, merged) = (Fixture::new(), Fixture::new());
    built.standard("bcm53xx");
    let sh = Shell::new().unwrap();
    let tars = tempfile::tempdir().unwrap();
    let (a, b) = (tars.path().join("a.tar"), tars.path().join("b.tar"));
    export(&sh, &built, "bcm53xx", "baseline", &a);
    export(&sh, &built, "bcm53xx", "no-reorder-blocks", &b);
    // Equal results, equal bytes: the tar does not carry times or owners.
    let again = tars.path().join("again.tar");
    export(&sh, &built, "bcm53xx", "baseline", &again);
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&again).unwrap());

    archive::merge(&sh, &merged.layout(), &[a.clone(), b]).unwrap();
    for v in ["baseline", "no-reorder-blocks"] {
        for file in [FILE_NAME, "vmlinux"] {
            assert_eq!(
                std::fs::read(built.results_dir("bcm53xx", v).join(file)).unwrap(),
                std::fs::read(merged.results_dir("bcm53xx", v).join(file)).unwrap(),
                "{v}/{file}"
            );
        }
    }
    xtask::report::load(&merged.layout(), &request(&["bcm53xx"], &[])).unwrap();
    // Merging the same job again replaces it.
    archive::merge(&sh, &merged.layout(), &[a]).unwrap();
    BuildResult::read(&merged.results_dir("bcm53xx", "baseline")).unwrap();
    // Nothing staged is left behind.
    let left: Vec<_> = std::fs::read_dir(merged.layout().work_dir())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(".staging"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn an_unreadable_result_is_refused() {
    let (built, merged) = (Fixture::new(), Fixture::new());
    built.standard("bcm53xx");
    let record = built.results_dir("bcm53xx", "baseline").join(FILE_NAME);
    std::fs::write(&record, "{\"schema\": 2, \"truncated").unwrap();
    let sh = Shell::new().unwrap();
    let tar = built.root().join("a.tar");
    let root = built.layout().results_root();
    cmd!(sh, "tar -cf {tar} -C {root} bcm53xx/baseline")
        .run()
        .unwrap();
    let err = merge_err(&sh, &merged, &[&tar]);
    assert!(err.contains("a.tar") && err.contains("unreadable"), "{err}");
}

#[test]
fn members_that_escape_are_refused() {
    let (built, merged) = (Fixture::new(), Fixture::new());
    built.standard("bcm53xx");
    let sh = Shell::new().unwrap();
    let root = built.layout().results_root();
    // An absolute member.
    let abs = built.root().join("abs.tar");
    let record = root.join("bcm53xx/baseline").join(FILE_NAME);
    cmd!(sh, "tar -cPf {abs} {record}").run().unwrap();
    let err = merge_err(&sh, &merged, &[&abs]);
    assert!(err.contains("would escape"), "{err}");
    // A link pointing out of the results.
    std::os::unix::fs::symlink("/etc", root.join("bcm53xx/baseline/etc")).unwrap();
    let link = built.root().join("link.tar");
    cmd!(sh, "tar -cf {link} -C {root} bcm53xx/baseline")
        .run()
        .unwrap();
    let err = merge_err(&sh, &merged, &[&link]);
    assert!(err.contains("link"), "{err}");
}

#[test]
fn results_of_one_target_from_different_inputs_are_refused() {
    let (built, merged) = (Fixture::new(), Fixture::new());
    built.standard("bcm53xx");
    let variant = built.results_dir("bcm53xx", "no-reorder-blocks");
    let mut other = BuildResult::read(&variant).unwrap();
    other.compiler = "arm-linux-gnueabi-gcc (Debian 13.1.0-1) 13.1.0".to_string();
    other.write(&variant).unwrap();
    let sh = Shell::new().unwrap();
    let (a, b) = (built.root().join("a.tar"), built.root().join("b.tar"));
    export(&sh, &built, "bcm53xx", "baseline", &a);
    export(&sh, &built, "bcm53xx", "no-reorder-blocks", &b);
    let err = merge_err(&sh, &merged, &[&a, &b]);
    assert!(err.contains("compiler") && err.contains("13.1.0"), "{err}");
    // Against results already merged, too.
    archive::merge(&sh, &merged.layout(), &[a]).unwrap();
    let files = [b.clone()];
    let err = format!(
        "{:#}",
        archive::merge(&sh, &merged.layout(), &files).unwrap_err()
    );
    assert!(err.contains("already merged"), "{err}");
    assert!(!merged.results_dir("bcm53xx", "no-reorder-blocks").exists());
}
