//! `results export` and `results merge` for CI fan-out: one tar per
//! (target, variant) job, merged into a fresh workspace whose size report
//! then works (`--by dir` included: `attribution.json` travels with its
//! result); and what a merge refuses (nothing is written then).

use crate::common::gate;
use crate::common::mount_ns;
use crate::common::report_fixture;

use std::path::Path;

use report_fixture::{request, write_attribution, Fixture};
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

fn merge_err(into: &Fixture, files: &[&Path]) -> String {
    let files: Vec<_> = files.iter().map(|f| f.to_path_buf()).collect();
    let err = format!("{:#}", archive::merge(&into.layout(), &files).unwrap_err());
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
    for v in ["baseline", "no-reorder-blocks"] {
        write_attribution(
            &built.results_dir("bcm53xx", v),
            [&[("net/ipv4/tcp.o", 100)], &[], &[]],
        );
    }
    let sh = Shell::new().unwrap();
    let tars = tempfile::tempdir().unwrap();
    let (a, b) = (tars.path().join("a.tar"), tars.path().join("b.tar"));
    export(&sh, &built, "bcm53xx", "baseline", &a);
    export(&sh, &built, "bcm53xx", "no-reorder-blocks", &b);
    // Equal results, equal bytes: the tar does not carry times or owners.
    let again = tars.path().join("again.tar");
    export(&sh, &built, "bcm53xx", "baseline", &again);
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&again).unwrap());

    archive::merge(&merged.layout(), &[a.clone(), b]).unwrap();
    for v in ["baseline", "no-reorder-blocks"] {
        for file in [FILE_NAME, "vmlinux", "attribution.json"] {
            assert_eq!(
                std::fs::read(built.results_dir("bcm53xx", v).join(file)).unwrap(),
                std::fs::read(merged.results_dir("bcm53xx", v).join(file)).unwrap(),
                "{v}/{file}"
            );
        }
    }
    xtask::report::load(&merged.layout(), &request(&["bcm53xx"], &[])).unwrap();
    // The build's attribution travels with it: `--by dir` reports it.
    let by_dir = xtask::report::ReportRequest {
        by: Some(xtask::measure::linkmap::Grouping::Dir),
        ..request(&["bcm53xx"], &[])
    };
    let r = xtask::report::load(&merged.layout(), &by_dir).unwrap();
    assert!(r.targets[0].comparisons[0].attribution.is_some());
    // Merging the same job again replaces it.
    archive::merge(&merged.layout(), &[a]).unwrap();
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
    let err = merge_err(&merged, &[&tar]);
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
    let err = merge_err(&merged, &[&abs]);
    assert!(err.contains("would escape"), "{err}");
    // A link pointing out of the results.
    std::os::unix::fs::symlink("/etc", root.join("bcm53xx/baseline/etc")).unwrap();
    let link = built.root().join("link.tar");
    cmd!(sh, "tar -cf {link} -C {root} bcm53xx/baseline")
        .run()
        .unwrap();
    let err = merge_err(&merged, &[&link]);
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
    let err = merge_err(&merged, &[&a, &b]);
    assert!(err.contains("compiler") && err.contains("13.1.0"), "{err}");
    // Against results already merged, too.
    archive::merge(&merged.layout(), &[a]).unwrap();
    let files = [b.clone()];
    let err = format!(
        "{:#}",
        archive::merge(&merged.layout(), &files).unwrap_err()
    );
    assert!(err.contains("already merged"), "{err}");
    assert!(!merged.results_dir("bcm53xx", "no-reorder-blocks").exists());
}

/// A tar of `built`'s `bcm53xx/<variant>` as GNU tar writes it, sparse
/// files kept sparse (`-S`), so a huge member costs nothing on disk.
fn sparse_tar(sh: &Shell, built: &Fixture, variant: &str, name: &str) -> std::path::PathBuf {
    let tar = built.root().join(name);
    let root = built.layout().results_root();
    let member = format!("bcm53xx/{variant}");
    cmd!(sh, "tar -cSf {tar} -C {root} {member}").run().unwrap();
    tar
}

/// This process's peak resident memory (`VmHWM`), in bytes.
fn peak_memory() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    kib << 10
}

/// A 3 GB result.json (sparse: a 10 KB tar) is refused without being
/// read into memory; before, merge grew to 3.15 GB before "invalid JSON".
#[test]
fn a_huge_result_json_is_refused_without_reading_it() {
    let (built, merged) = (Fixture::new(), Fixture::new());
    built.standard("bcm53xx");
    let record = built.results_dir("bcm53xx", "baseline").join(FILE_NAME);
    std::fs::File::create(&record)
        .unwrap()
        .set_len(3 << 30)
        .unwrap();
    let sh = Shell::new().unwrap();
    let tar = sparse_tar(&sh, &built, "baseline", "huge.tar");
    let err = merge_err(&merged, &[&tar]);
    assert!(
        err.contains("huge.tar") && err.contains("bcm53xx/baseline/result.json"),
        "{err}"
    );
    let peak = peak_memory();
    assert!(
        peak < 1 << 30,
        "the merge took {} MiB of memory",
        peak >> 20
    );
}

/// A member no build writes (a 1 GB sparse file, or a small one) is
/// refused; before, it was merged and `results export` wrote it back out.
#[test]
fn members_a_build_does_not_write_are_refused() {
    let (built, merged) = (Fixture::new(), Fixture::new());
    built.standard("bcm53xx");
    let extra = built.results_dir("bcm53xx", "baseline").join("extra.bin");
    std::fs::File::create(&extra)
        .unwrap()
        .set_len(1 << 30)
        .unwrap();
    let sh = Shell::new().unwrap();
    let tar = sparse_tar(&sh, &built, "baseline", "extra.tar");
    let err = merge_err(&merged, &[&tar]);
    assert!(err.contains("bcm53xx/baseline/extra.bin"), "{err}");
    std::fs::write(&extra, "not from a build\n").unwrap();
    let tar = sparse_tar(&sh, &built, "baseline", "small.tar");
    let err = merge_err(&merged, &[&tar]);
    assert!(
        err.contains("bcm53xx/baseline/extra.bin is not a file a build writes"),
        "{err}"
    );
}

/// A result already merged that cannot be read is a refusal, not skipped
/// by the different-inputs check; before, a result with an all-zero
/// kernel sha256 merged beside it with exit 0.
#[test]
fn an_unreadable_result_already_there_is_a_refusal() {
    let (built, merged) = (Fixture::new(), Fixture::new());
    built.standard("bcm53xx");
    let variant = built.results_dir("bcm53xx", "no-reorder-blocks");
    let mut other = BuildResult::read(&variant).unwrap();
    other.kernel_source.sha256 = Some("0".repeat(64));
    other.write(&variant).unwrap();
    let sh = Shell::new().unwrap();
    let (a, b) = (built.root().join("a.tar"), built.root().join("b.tar"));
    export(&sh, &built, "bcm53xx", "baseline", &a);
    export(&sh, &built, "bcm53xx", "no-reorder-blocks", &b);
    archive::merge(&merged.layout(), &[a]).unwrap();
    let existing = merged.results_dir("bcm53xx", "baseline").join(FILE_NAME);
    std::fs::remove_file(&existing).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &existing).unwrap();
    let files = [b];
    let err = format!(
        "{:#}",
        archive::merge(&merged.layout(), &files).unwrap_err()
    );
    assert!(
        err.contains(&existing.display().to_string()) && err.contains("/dev/zero"),
        "{err}"
    );
    assert!(!merged.results_dir("bcm53xx", "no-reorder-blocks").exists());
}

/// With `target/xtask/results` on another file system (a tmpfs), merging
/// over a result replaces it; before, the old result was removed and the
/// rename then failed with "Invalid cross-device link".
#[test]
fn a_results_dir_on_another_file_system_keeps_its_results() {
    let (built, merged) = (Fixture::new(), Fixture::new());
    built.standard("bcm53xx");
    let sh = Shell::new().unwrap();
    let (a, b) = (built.root().join("a.tar"), built.root().join("b.tar"));
    export(&sh, &built, "bcm53xx", "baseline", &a);
    export(&sh, &built, "bcm53xx", "no-reorder-blocks", &b);
    let layout = merged.layout();
    let ran = mount_ns::in_private_mounts(|| {
        let sh = Shell::new().unwrap();
        mount_ns::tmpfs(&layout.results_root());
        let (from, to) = (
            built.results_dir("bcm53xx", "baseline"),
            layout.results_root().join("bcm53xx"),
        );
        std::fs::create_dir_all(&to).unwrap();
        cmd!(sh, "cp -a {from} {to}").run().unwrap();
        let record = layout.results_dir("bcm53xx", "baseline").join(FILE_NAME);
        let before = std::fs::read(&record).unwrap();
        let replaced = archive::merge(&layout, &[a.clone(), b.clone()]);
        assert!(
            std::fs::read(&record).ok().as_ref() == Some(&before),
            "the old result is gone: {replaced:?}"
        );
        replaced.unwrap();
        BuildResult::read(&layout.results_dir("bcm53xx", "no-reorder-blocks")).unwrap();
        let hidden: Vec<_> = walkdir::WalkDir::new(layout.work_dir())
            .into_iter()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with(".staging"))
            .map(|e| e.path().to_path_buf())
            .collect();
        assert!(hidden.is_empty(), "{hidden:?}");
    });
    if ran.is_none() {
        eprintln!("note: the cross-file-system merge was not tried");
    }
}

/// An artifact whose bytes are not the ones its result records is
/// refused, and so is a result whose artifact is missing from the archive.
#[test]
fn artifacts_must_be_the_recorded_ones() {
    let (built, merged) = (Fixture::new(), Fixture::new());
    built.standard("bcm53xx");
    let dir = built.results_dir("bcm53xx", "baseline");
    let mut r = BuildResult::read(&dir).unwrap();
    r.artifacts.get_mut("zImage").unwrap().sha256 = "1".repeat(64);
    r.write(&dir).unwrap();
    let sh = Shell::new().unwrap();
    let tar = built.root().join("a.tar");
    export(&sh, &built, "bcm53xx", "baseline", &tar);
    let err = merge_err(&merged, &[&tar]);
    assert!(
        err.contains("bcm53xx/baseline/zImage has sha256") && err.contains(&"1".repeat(64)),
        "{err}"
    );
    std::fs::remove_file(dir.join("zImage")).unwrap();
    let root = built.layout().results_root();
    let without = built.root().join("without.tar");
    cmd!(sh, "tar -cf {without} -C {root} bcm53xx/baseline")
        .run()
        .unwrap();
    let err = merge_err(&merged, &[&without]);
    assert!(err.contains("lists the artifact zImage"), "{err}");
}

/// A merged result with the build key of the one it replaces but other
/// bytes gets a note: the build is not reproducible.
#[test]
fn one_build_key_with_other_bytes_gets_a_note() {
    let (built, merged) = (Fixture::new(), Fixture::new());
    built.standard("bcm53xx");
    let sh = Shell::new().unwrap();
    let (a, b) = (built.root().join("a.tar"), built.root().join("b.tar"));
    export(&sh, &built, "bcm53xx", "baseline", &a);
    let first = archive::merge(&merged.layout(), &[a]).unwrap();
    assert!(first.notes.is_empty(), "{:?}", first.notes);
    // The same job built again elsewhere, with other zImage bytes.
    let dir = built.results_dir("bcm53xx", "baseline");
    let zimage = dir.join("zImage");
    let len = std::fs::metadata(&zimage).unwrap().len() as usize;
    std::fs::write(&zimage, vec![1u8; len]).unwrap();
    let mut r = BuildResult::read(&dir).unwrap();
    r.artifacts.get_mut("zImage").unwrap().sha256 =
        xtask::util::hash::sha256_file(&zimage).unwrap();
    r.write(&dir).unwrap();
    export(&sh, &built, "bcm53xx", "baseline", &b);
    let again = archive::merge(&merged.layout(), &[b]).unwrap();
    assert_eq!(again.notes.len(), 1, "{:?}", again.notes);
    let note = &again.notes[0];
    assert!(
        note.contains("the same build key")
            && note.contains("zImage")
            && note.contains("(replaced)")
            && note.contains("not reproducible"),
        "{note}"
    );
}

/// A compressed archive is named as such, with the command that
/// decompresses it; before, the tar crate's "numeric field did not have
/// utf-8 text … cksum" was all a merge said.
#[test]
fn a_compressed_archive_is_named_with_how_to_decompress_it() {
    let (built, merged) = (Fixture::new(), Fixture::new());
    built.standard("bcm53xx");
    let sh = Shell::new().unwrap();
    let tars = tempfile::tempdir().unwrap();
    let tar = tars.path().join("a.tar");
    export(&sh, &built, "bcm53xx", "baseline", &tar);
    for (program, ext, format, decompress) in [
        ("gzip", "gz", "gzip", "gzip -dk"),
        ("xz", "xz", "xz", "xz -dk"),
        ("bzip2", "bz2", "bzip2", "bzip2 -dk"),
        ("zstd", "zst", "zstd", "zstd -d"),
        ("lz4", "lz4", "lz4", "lz4 -d"),
    ] {
        if !gate::Needs::new()
            .program(program, &format!("apt-get install {program}"))
            .met()
        {
            continue;
        }
        let packed = tars.path().join(format!("a.tar.{ext}"));
        let bytes = cmd!(sh, "{program} -c {tar}")
            .quiet()
            .output()
            .unwrap()
            .stdout;
        std::fs::write(&packed, bytes).unwrap();
        let err = merge_err(&merged, &[&packed]);
        assert!(
            err.contains(&format!("it is {format}-compressed"))
                && err.contains(&format!("`{decompress} {}`", packed.display())),
            "{err}"
        );
        assert!(!err.contains("cksum"), "{err}");
    }
    // The plain tar still merges.
    archive::merge(&merged.layout(), &[tar]).unwrap();
}

/// A `build.log` of 20 GiB (a few bytes, then a hole) in each sparse
/// form GNU tar writes is refused as sparse: the PAX forms 0.0, 0.1 and
/// 1.0 and GNU's `S` type. Before, PAX 0.0 was merged as its 4 KiB of
/// packed data (a 20 GiB file's header said so) and 0.1 and 1.0 were
/// refused for their `GNUSparseFile.<pid>/` directory, not as sparse.
#[test]
fn every_sparse_form_is_refused() {
    let (built, merged) = (Fixture::new(), Fixture::new());
    built.standard("bcm53xx");
    let log = built.results_dir("bcm53xx", "baseline").join("build.log");
    std::fs::write(&log, "make: Entering directory\n").unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&log)
        .unwrap()
        .set_len(20 << 30)
        .unwrap();
    let sh = Shell::new().unwrap();
    let root = built.layout().results_root();
    for (name, format) in [
        ("pax-0.0.tar", "--format=pax --sparse-version=0.0"),
        ("pax-0.1.tar", "--format=pax --sparse-version=0.1"),
        ("pax-1.0.tar", "--format=pax --sparse-version=1.0"),
        ("gnu.tar", "--format=gnu"),
    ] {
        let tar = built.root().join(name);
        let format: Vec<&str> = format.split(' ').collect();
        cmd!(sh, "tar -cSf {tar} {format...} -C {root} bcm53xx/baseline")
            .run()
            .unwrap();
        let err = merge_err(&merged, &[&tar]);
        assert!(
            err.contains(name) && err.contains("is a sparse file"),
            "{name}: {err}"
        );
    }
}

/// A member whose path is not canonical (`bcm53xx/./baseline/vmlinux`,
/// `bcm53xx//baseline/vmlinux`) is refused, with other bytes than the
/// canonical member beside it. Before, the merge skipped it (the path
/// library reads it as `bcm53xx/baseline/vmlinux`, so it was neither a
/// member of its own nor checked) and succeeded.
#[test]
fn a_member_path_that_is_not_canonical_is_refused() {
    let (built, merged, other) = (Fixture::new(), Fixture::new(), Fixture::new());
    built.standard("bcm53xx");
    let sh = Shell::new().unwrap();
    let other_root = other.layout().results_root();
    let vmlinux = other_root.join("bcm53xx/baseline/vmlinux");
    std::fs::create_dir_all(vmlinux.parent().unwrap()).unwrap();
    std::fs::write(&vmlinux, "other bytes").unwrap();
    for member in ["bcm53xx/./baseline/vmlinux", "bcm53xx//baseline/vmlinux"] {
        let tar = built.root().join("a.tar");
        export(&sh, &built, "bcm53xx", "baseline", &tar);
        cmd!(sh, "tar -rf {tar} -C {other_root} {member}")
            .run()
            .unwrap();
        let listed = cmd!(sh, "tar -tf {tar}").read().unwrap();
        assert!(listed.lines().any(|l| l == member), "{listed}");
        let err = merge_err(&merged, &[&tar]);
        assert!(
            err.contains(&format!("member {member:?} is not a canonical path")),
            "{member}: {err}"
        );
    }
}
