//! `results export` and `results merge` against hostile results (issue
//! 40 items 9 to 11 and the hostile trials after them): a JSON member the
//! report cannot read, export packing what a merge refuses, names and
//! links that lead out of the results.

use crate::common::report_fixture;

use std::path::Path;

use report_fixture::{write_attribution, Fixture};
use xshell::{cmd, Shell};
use xtask::results::archive;

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

/// An `attribution.json` the report cannot read (not
/// JSON, or of another vmlinux) merged with exit 0 and replaced a good
/// one. A merge checks every JSON member as its reader does, and replaces
/// nothing otherwise.
#[test]
fn a_json_member_the_report_cannot_read_is_refused_and_nothing_replaced() {
    let (built, merged) = (Fixture::new(), Fixture::new());
    built.standard("bcm53xx");
    let dir = built.results_dir("bcm53xx", "baseline");
    write_attribution(&dir, [&[("net/ipv4/tcp.o", 100)], &[], &[]]);
    let sh = Shell::new().unwrap();
    let tars = tempfile::tempdir().unwrap();
    let good = tars.path().join("good.tar");
    export(&sh, &built, "bcm53xx", "baseline", &good);
    archive::merge(&merged.layout(), &[good]).unwrap();
    let there = merged
        .results_dir("bcm53xx", "baseline")
        .join("attribution.json");
    let before = std::fs::read(&there).unwrap();
    let good_json = std::fs::read_to_string(dir.join("attribution.json")).unwrap();
    for (what, text) in [
        ("not JSON", "not json at all\n".to_string()),
        (
            "another vmlinux",
            good_json.replacen("\"vmlinux_sha256\":\"", "\"vmlinux_sha256\":\"0", 1),
        ),
    ] {
        std::fs::write(dir.join("attribution.json"), &text).unwrap();
        // Packed by tar directly: `results export` refuses it too (below).
        let tar = tars.path().join("bad.tar");
        let root = built.layout().results_root();
        cmd!(sh, "tar -cf {tar} -C {root} bcm53xx/baseline")
            .run()
            .unwrap();
        let err = format!(
            "{:#}",
            archive::merge(&merged.layout(), std::slice::from_ref(&tar)).unwrap_err()
        );
        assert!(
            err.contains("nothing merged") && err.contains("attribution.json"),
            "{what}: {err}"
        );
        assert_eq!(std::fs::read(&there).unwrap(), before, "{what}: replaced");
        let err = format!(
            "{:#}",
            archive::export(
                &sh,
                &built.layout(),
                &["bcm53xx".into()],
                &["baseline".into()],
                &tars.path().join("x.tar")
            )
            .unwrap_err()
        );
        assert!(
            err.contains("nothing exported") && err.contains("attribution.json"),
            "{what}: {err}"
        );
    }
}

/// Export packs only what a merge accepts (a
/// report file an experiment wrote into a result is left out, and said
/// so), and `--target`/`--variant` name directories in the results only.
#[test]
fn export_packs_what_merge_accepts_from_the_results_only() {
    let (built, merged) = (Fixture::new(), Fixture::new());
    built.standard("bcm53xx");
    let dir = built.results_dir("bcm53xx", "baseline");
    std::fs::write(dir.join("report.txt"), "a report\n").unwrap();
    let sh = Shell::new().unwrap();
    let tars = tempfile::tempdir().unwrap();
    let tar = tars.path().join("a.tar");
    export(&sh, &built, "bcm53xx", "baseline", &tar);
    archive::merge(&merged.layout(), &[tar]).unwrap();
    assert!(!merged
        .results_dir("bcm53xx", "baseline")
        .join("report.txt")
        .exists());
    // The hostile trial's F10: hard links were packed as link members,
    // which a merge refuses; an artifact that is a link was only a note.
    let base = built.results_dir("bcm53xx", "baseline");
    std::fs::remove_file(base.join("report.txt")).unwrap();
    std::fs::hard_link(base.join("vmlinux"), base.join("build.log")).unwrap();
    let tar = tars.path().join("hard.tar");
    export(&sh, &built, "bcm53xx", "baseline", &tar);
    archive::merge(&merged.layout(), &[tar]).unwrap();
    let zimage = base.join("zImage");
    std::fs::rename(&zimage, base.join("zImage.real")).unwrap();
    std::os::unix::fs::symlink("zImage.real", &zimage).unwrap();
    let err = format!(
        "{:#}",
        archive::export(
            &sh,
            &built.layout(),
            &["bcm53xx".into()],
            &["baseline".into()],
            &tars.path().join("x.tar")
        )
        .unwrap_err()
    );
    assert!(err.contains("zImage is not a regular file"), "{err}");
    // A linked results/<target> led a merge out of the results.
    let (fresh, victim) = (Fixture::new(), tempfile::tempdir().unwrap());
    std::fs::create_dir_all(fresh.layout().results_root()).unwrap();
    std::os::unix::fs::symlink(victim.path(), fresh.layout().results_root().join("bcm53xx"))
        .unwrap();
    let tar = tars.path().join("again.tar");
    std::fs::remove_file(&zimage).unwrap();
    std::fs::rename(base.join("zImage.real"), &zimage).unwrap();
    export(&sh, &built, "bcm53xx", "baseline", &tar);
    let err = format!("{:#}", archive::merge(&fresh.layout(), &[tar]).unwrap_err());
    assert!(err.contains("is a symbolic link"), "{err}");
    assert_eq!(std::fs::read_dir(victim.path()).unwrap().count(), 0);
    let outside = tempfile::tempdir().unwrap();
    for (target, variant) in [
        (outside.path().display().to_string(), "baseline".to_string()),
        (
            "../openwrt/results/arm-tiny".to_string(),
            "baseline".to_string(),
        ),
        ("bcm53xx".to_string(), "../no-reorder-blocks".to_string()),
        ("..".to_string(), "baseline".to_string()),
    ] {
        let err = format!(
            "{:#}",
            archive::export(
                &sh,
                &built.layout(),
                std::slice::from_ref(&target),
                std::slice::from_ref(&variant),
                &tars.path().join("x.tar")
            )
            .unwrap_err()
        );
        assert!(
            err.starts_with("nothing exported") && err.contains("is not a name in"),
            "{target}/{variant}: {err}"
        );
        assert!(!tars.path().join("x.tar").exists());
    }
}
