//! Engine behaviour beyond GNU patch's: refusals with nothing written,
//! hard-linked trees, all-or-nothing application, parse errors with line
//! numbers, reverse application, and `.rej` text checked against GNU's.

use crate::common::patch_harness as harness;

use std::fs;
use std::os::unix::fs::{symlink, MetadataExt, PermissionsExt};
use std::path::Path;

use harness::*;
use xshell::{cmd, Shell};
use xtask::patches::engine::{
    apply_patch, apply_patch_file, apply_patch_reverse, check_patch, parse_patch, render_rejects,
    reverse_applies, write_rejects, ApplyError, ApplyOptions, ParseErrorKind,
};

const P1: ApplyOptions = ApplyOptions { strip: 1, fuzz: 0 };

fn simple_patch(name: &str) -> Vec<u8> {
    format!("--- a/{name}\n+++ b/{name}\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n").into_bytes()
}

/// Applies `patch_bytes` to a fresh tree of `files` and asserts it is refused
/// with the tree unchanged; returns the error text.
fn refused(files: &[F], patch_bytes: &[u8], opts: ApplyOptions, setup: impl Fn(&Path)) -> String {
    let tmp = tempfile::tempdir().unwrap();
    let tree = tmp.path().join("tree");
    fs::create_dir_all(&tree).unwrap();
    write_tree(&tree, files);
    setup(tmp.path());
    let before = read_tree(tmp.path());
    let patch = parse_patch(patch_bytes).unwrap();
    let err = apply_patch(&tree, &patch, &opts).expect_err("must be refused");
    assert_eq!(
        read_tree(tmp.path()),
        before,
        "refusal changed files: {err}"
    );
    err.to_string()
}

#[test]
fn refuses_absolute_paths() {
    let p = b"--- /etc/passwd\n+++ /etc/passwd\n@@ -1 +1 @@\n-a\n+b\n";
    let e = refused(
        &[f("etc/passwd", "a\n")],
        p,
        ApplyOptions { strip: 0, fuzz: 0 },
        |_| {},
    );
    assert!(e.contains("absolute"), "{e}");
}

#[test]
fn refuses_parent_dir_components() {
    let p = b"--- a/../outside\n+++ b/../outside\n@@ -1 +1 @@\n-a\n+b\n";
    let e = refused(&[f("x", "a\n")], p, P1, |root| {
        fs::write(root.join("outside"), "a\n").unwrap()
    });
    assert!(e.contains(".."), "{e}");
    // Creation through ".." as well.
    let p = b"--- /dev/null\n+++ b/sub/../../evil\n@@ -0,0 +1 @@\n+x\n";
    refused(&[f("x", "a\n")], p, P1, |_| {});
}

#[test]
fn refuses_symlinked_directories_and_files() {
    // A directory symlink inside the tree pointing outside it.
    let e = refused(&[f("x", "a\n")], &simple_patch("link/f"), P1, |root| {
        fs::create_dir_all(root.join("outside")).unwrap();
        fs::write(root.join("outside/f"), "one\ntwo\nthree\n").unwrap();
        symlink(root.join("outside"), root.join("tree/link")).unwrap();
    });
    assert!(e.contains("symbolic link"), "{e}");
    // The file itself is a symlink.
    refused(&[f("x", "a\n")], &simple_patch("f"), P1, |root| {
        fs::write(root.join("target"), "one\ntwo\nthree\n").unwrap();
        symlink(root.join("target"), root.join("tree/f")).unwrap();
    });
    // Creating a file under a symlinked directory.
    let p = b"--- /dev/null\n+++ b/link/new\n@@ -0,0 +1 @@\n+x\n";
    refused(&[f("x", "a\n")], p, P1, |root| {
        fs::create_dir_all(root.join("outside")).unwrap();
        symlink(root.join("outside"), root.join("tree/link")).unwrap();
    });
}

#[test]
fn refuses_binary_diffs_even_next_to_text_diffs() {
    let git_binary = b"diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\ndiff --git a/blob b/blob\nindex 1234567..89abcde 100644\nGIT binary patch\nliteral 5\nMcmZ?wbaHh60000\n\nliteral 0\nKcmV+b0RR6000031\n\n";
    let files = [
        f("f", "one\ntwo\nthree\n"),
        f("blob", vec![0u8, 1, 2, 3, 4]),
    ];
    let e = refused(&files, git_binary, P1, |_| {});
    assert!(e.contains("binary"), "{e}");
    let differ = b"--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\ndiff --git a/blob b/blob\nindex 1234567..89abcde 100644\nBinary files a/blob and b/blob differ\n";
    let e = refused(&files, differ, P1, |_| {});
    assert!(e.contains("binary"), "{e}");
}

#[test]
fn ed_scripts_and_garbage_are_parse_errors() {
    // `diff -e` output.
    let tmp = tempfile::tempdir().unwrap();
    write_tree(tmp.path(), &[f("a", "1\n2\n3\n"), f("b", "1\nX\n3\n4\n")]);
    let sh = Shell::new().unwrap();
    sh.change_dir(tmp.path());
    let ed = cmd!(sh, "diff -e a b")
        .ignore_status()
        .output()
        .unwrap()
        .stdout;
    let e = parse_patch(&ed).unwrap_err();
    assert!(matches!(e.kind, ParseErrorKind::Unsupported(_)), "{e}");
    let normal = cmd!(sh, "diff a b")
        .ignore_status()
        .output()
        .unwrap()
        .stdout;
    assert!(matches!(
        parse_patch(&normal).unwrap_err().kind,
        ParseErrorKind::Unsupported(_)
    ));
    assert_eq!(
        parse_patch(b"just words\n").unwrap_err().kind,
        ParseErrorKind::NoDiff
    );
}

#[test]
fn malformed_patches_name_the_line() {
    let good = gnu_diff("f", b"1\n2\n3\n4\n5\n6\n7\n", b"1\n2\n3\nX\n5\n6\n7\n");
    let text = String::from_utf8(good.clone()).unwrap();
    // Header says four more old/new lines than the body has: the body runs
    // into end of file (GNU takes up to three for stripped blank lines).
    let longer = text.replace("@@ -1,7 +1,7 @@", "@@ -1,11 +1,11 @@");
    let e = parse_patch(longer.as_bytes()).unwrap_err();
    assert_eq!(e.line, text.lines().count() + 1, "{e}");
    assert!(
        matches!(e.kind, ParseErrorKind::UnexpectedEnd { hunk_line: 3 }),
        "{e}"
    );
    // Header says fewer lines than the body has: GNU ends the hunk at the
    // counts; the warning names the first ignored line.
    let shorter = text.replace("@@ -1,7 +1,7 @@", "@@ -1,6 +1,6 @@");
    let w = &parse_patch(shorter.as_bytes()).unwrap().warnings[0];
    assert_eq!(w.line, text.lines().count(), "{w}");
    // Truncated in the middle of the hunk.
    let cut: String = text.lines().take(6).map(|l| format!("{l}\n")).collect();
    let e = parse_patch(cut.as_bytes()).unwrap_err();
    assert_eq!(e.line, 7, "{e}");
    // A garbage line inside the hunk.
    let garbage = text.replacen(" 2\n", "?2\n", 1);
    let e = parse_patch(garbage.as_bytes()).unwrap_err();
    assert_eq!((e.line, e.kind), (5, ParseErrorKind::BadHunkLine));
    // apply_patch_file names the patch file and the line.
    let tmp = tempfile::tempdir().unwrap();
    let pf = tmp.path().join("bad.patch");
    fs::write(&pf, &longer).unwrap();
    let e = apply_patch_file(tmp.path(), &pf, &P1)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("bad.patch") && e.contains(&format!(":{}:", text.lines().count() + 1)),
        "{e}"
    );
}

#[test]
fn all_or_nothing_and_failure_names_file_hunk_and_line() {
    let mut rng = Rng(42);
    let a1 = source_text(&mut rng, 40, 0);
    let a2 = source_text(&mut rng, 40, 0);
    let b1 = edit(&mut rng, &a1, 3, 0);
    let mut b2 = a2.clone();
    b2[5] = "\tfirst();".into();
    b2[30] = "\tsecond();".into();
    let files = [f("one.c", join(&a1)), f("two.c", join(&a2))];
    let p = gnu_diff_trees(&files, &[f("one.c", join(&b1)), f("two.c", join(&b2))]);
    // two.c moved on: its second hunk no longer matches.
    let mut t2 = a2.clone();
    for l in t2.iter_mut().skip(27).take(7) {
        *l = format!("{l} /* upstream */");
    }
    let tmp = tempfile::tempdir().unwrap();
    write_tree(tmp.path(), &[files[0].clone(), f("two.c", join(&t2))]);
    let before = read_tree(tmp.path());
    let pf = tmp.path().join("../x.patch");
    fs::write(&pf, &p).unwrap();
    let gnu_dir = tempfile::tempdir().unwrap();
    write_tree(gnu_dir.path(), &[files[0].clone(), f("two.c", join(&t2))]);
    let gnu = run_gnu(gnu_dir.path(), &p, 1, 0);
    let failed_line = gnu
        .lines()
        .into_iter()
        .find(|l| l.contains("FAILED"))
        .unwrap();
    let e = apply_patch_file(tmp.path(), &pf, &P1).unwrap_err();
    let msg = format!("{e:#}");
    assert!(msg.contains("x.patch") && msg.contains("two.c"), "{msg}");
    assert!(
        msg.contains(failed_line.trim_end_matches('.')),
        "{msg} vs GNU {failed_line}"
    );
    assert_eq!(read_tree(tmp.path()), before);
    fs::remove_file(pf).unwrap();
}

#[test]
fn hard_linked_copies_keep_the_pristine_tree() {
    let tmp = tempfile::tempdir().unwrap();
    let (pristine, work) = (tmp.path().join("pristine"), tmp.path().join("work"));
    fs::create_dir_all(&pristine).unwrap();
    let mut exe = f("scripts/run.sh", "one\ntwo\nthree\n");
    exe.mode = 0o755;
    write_tree(
        &pristine,
        &[exe, f("gone", "x\n"), f("f", "one\ntwo\nthree\n")],
    );
    let sh = Shell::new().unwrap();
    cmd!(sh, "cp -al {pristine} {work}").run().unwrap();
    let before = read_tree(&pristine);
    let mut p = simple_patch("scripts/run.sh");
    p.extend_from_slice(b"--- a/gone\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n");
    p.extend_from_slice(b"diff --git a/f b/f\nold mode 100644\nnew mode 100755\n");
    let report = apply_patch(&work, &parse_patch(&p).unwrap(), &P1).unwrap();
    assert_eq!(report.files.len(), 3);
    assert_eq!(read_tree(&pristine), before, "pristine tree modified");
    let run = work.join("scripts/run.sh");
    assert_eq!(fs::read_to_string(&run).unwrap(), "one\nTWO\nthree\n");
    let m = fs::metadata(&run).unwrap();
    assert_eq!(m.permissions().mode() & 0o777, 0o755);
    assert_eq!(m.nlink(), 1, "hard link not broken");
    assert!(!work.join("gone").exists() && pristine.join("gone").exists());
    // Mode change only: a new inode with the new mode, content unchanged.
    let fm = fs::metadata(work.join("f")).unwrap();
    assert_eq!((fm.permissions().mode() & 0o777, fm.nlink()), (0o755, 1));
    assert_eq!(
        fs::metadata(pristine.join("f"))
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o644
    );
    // No temporary files left behind.
    let names: Vec<String> = read_tree(&work).into_keys().collect();
    assert!(
        names.iter().all(|n| !n.contains("xtask-patch")),
        "{names:?}"
    );
}

#[test]
fn reverse_application_and_detection() {
    let mut rng = Rng(7);
    let a = source_text(&mut rng, 50, 0);
    let b = edit(&mut rng, &a, 5, 0);
    let p = parse_patch(&gnu_diff("f.c", &join(&a), &join(&b))).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    write_tree(tmp.path(), &[f("f.c", join(&a))]);
    assert!(!reverse_applies(tmp.path(), &p, &P1).unwrap());
    // A dry run writes nothing.
    check_patch(tmp.path(), &p, &P1).unwrap();
    assert_eq!(fs::read(tmp.path().join("f.c")).unwrap(), join(&a));
    apply_patch(tmp.path(), &p, &P1).unwrap();
    assert_eq!(fs::read(tmp.path().join("f.c")).unwrap(), join(&b));
    assert!(reverse_applies(tmp.path(), &p, &P1).unwrap());
    let e = apply_patch(tmp.path(), &p, &P1).unwrap_err();
    assert!(
        matches!(e, ApplyError::Reversed { reverse: false, .. }),
        "{e}"
    );
    assert!(e
        .to_string()
        .contains("Reversed (or previously applied) patch detected!"));
    apply_patch_reverse(tmp.path(), &p, &P1).unwrap();
    assert_eq!(fs::read(tmp.path().join("f.c")).unwrap(), join(&a));
    let e = apply_patch_reverse(tmp.path(), &p, &P1).unwrap_err();
    assert!(
        matches!(e, ApplyError::Reversed { reverse: true, .. }),
        "{e}"
    );
}

/// `.rej` text against the reject file GNU patch writes for the same failure.
#[test]
fn rejects_match_gnu() {
    let mut compared = 0;
    for seed in 0..40 {
        let mut rng = Rng(11000 + seed);
        let a = source_text(&mut rng, 30, 40);
        let b = edit(&mut rng, &a, 2, 5);
        let p = gnu_diff("file.c", &join(&a), &join(&b));
        if p.is_empty() {
            continue;
        }
        let target = join(&edit(&mut rng, &a, 2, 4));
        let gdir = tempfile::tempdir().unwrap();
        write_tree(gdir.path(), &[f("file.c", target.clone())]);
        let pfile = gdir.path().join("p.patch");
        fs::write(&pfile, &p).unwrap();
        let sh = Shell::new().unwrap();
        sh.change_dir(gdir.path());
        let out = cmd!(
            sh,
            "patch -p1 --batch --forward --fuzz 0 --no-backup-if-mismatch -i p.patch"
        )
        .ignore_status()
        .quiet()
        .output()
        .unwrap();
        let gnu_out = String::from_utf8_lossy(&out.stdout);
        if gnu_out.contains("Skipping patch") || !gnu_out.contains("FAILED") {
            continue;
        }
        let gnu_rej = fs::read(gdir.path().join("file.c.rej")).unwrap();
        let odir = tempfile::tempdir().unwrap();
        write_tree(odir.path(), &[f("file.c", target)]);
        let parsed = parse_patch(&p).unwrap();
        let Err(ApplyError::Failed(report)) = apply_patch(odir.path(), &parsed, &P1) else {
            panic!("seed {seed}: GNU failed, we did not\n{gnu_out}");
        };
        let ours = render_rejects(&parsed.files[0], &report.files[0], 1);
        assert_eq!(
            String::from_utf8_lossy(&ours),
            String::from_utf8_lossy(&gnu_rej),
            "seed {seed}"
        );
        let written = write_rejects(odir.path(), &parsed, &report, 1).unwrap();
        assert_eq!(fs::read(odir.path().join(&written[0])).unwrap(), gnu_rej);
        compared += 1;
    }
    assert!(compared >= 5, "only {compared} reject files compared");
}

fn git_symlink_patch(path: &str, target: &str) -> Vec<u8> {
    format!(
        "diff --git a/{path} b/{path}\nnew file mode 120000\nindex 0000000..1234567\n--- /dev/null\n+++ b/{path}\n@@ -0,0 +1 @@\n+{target}\n\\ No newline at end of file\n"
    )
    .into_bytes()
}

/// git symbolic links are created only when their target resolves inside
/// the tree: absolute targets, targets above the tree or reached through
/// a symbolic link, a file turned into a link and other file types
/// (gitlinks) are refused with nothing written, naming the file and the
/// patch line; a push names the patch too. Before, each of these became
/// a regular file with mode 000.
#[test]
fn git_symlinks_outside_the_tree_are_refused() {
    let files = [f("x", "a\n"), f("sub/y", "b\n")];
    for (path, target) in [
        ("abs", "/etc/passwd"),
        ("up", "../outside"),
        ("sub/up2", "../../outside"),
        ("deep/up3", "../sub/../../x"),
        ("via", "linkdir/f"),
    ] {
        let mut p = simple_patch("x");
        p.extend(git_symlink_patch(path, target));
        let e = refused(&files, &p, P1, |root| {
            fs::create_dir_all(root.join("outside-dir")).unwrap();
            symlink(root.join("outside-dir"), root.join("tree/linkdir")).unwrap();
        });
        assert!(
            e.contains(path) && e.contains("patch line 8"),
            "{path}: {e}"
        );
        assert!(e.contains("symbolic link to"), "{path}: {e}");
    }
    // Two links of one patch, each inside the tree
    // lexically: up is the tree root, and out climbs out of it.
    // Refused in either order, nothing written.
    for order in [["up", "out"], ["out", "up"]] {
        let mut p = simple_patch("x");
        for name in order {
            let target = if name == "up" { "../.." } else { "up/../.." };
            p.extend(git_symlink_patch(&format!("a/b/{name}"), target));
        }
        let e = refused(&files, &p, P1, |_| {});
        assert!(
            e.contains("a/b/out") && e.contains("leads above the tree"),
            "{order:?}: {e}"
        );
    }
    // The second trial: across two patches of a series, lx -> ly/.. (ly
    // missing: inside) and then ly -> . (inside alone): lx now leads out.
    // The second patch is refused; a link through a real directory is not.
    let first = git_symlink_patch("lx", "ly/..");
    let e = refused(&files, &git_symlink_patch("ly", "."), P1, |root| {
        apply_patch(&root.join("tree"), &parse_patch(&first).unwrap(), &P1).unwrap();
    });
    assert!(
        e.contains("the link lx already in the tree then it leads above the tree"),
        "{e}"
    );
    let tmp = tempfile::tempdir().unwrap();
    write_tree(tmp.path(), &files);
    apply_patch(
        tmp.path(),
        &parse_patch(&git_symlink_patch("l", "sub/../x")).unwrap(),
        &P1,
    )
    .unwrap();
    // The control: made by hand, out leads above the tree.
    let made = tempfile::tempdir().unwrap();
    let tree = made.path().join("tree");
    fs::create_dir_all(tree.join("a/b")).unwrap();
    symlink("../..", tree.join("a/b/up")).unwrap();
    symlink("up/../..", tree.join("a/b/out")).unwrap();
    let real = fs::canonicalize(tree.join("a/b/out")).unwrap();
    assert!(
        !real.starts_with(fs::canonicalize(&tree).unwrap()),
        "{}",
        real.display()
    );
    let to_link = b"diff --git a/x b/x\nold mode 100644\nnew mode 120000\n";
    let e = refused(&files, to_link, P1, |_| {});
    assert!(
        e.contains("x: refusing it: turns a file into a symbolic link"),
        "{e}"
    );
    let gitlink = b"diff --git a/mod b/mod\nnew file mode 160000\nindex 0000000..1234567\n--- /dev/null\n+++ b/mod\n@@ -0,0 +1 @@\n+Subproject commit 1234567890123456789012345678901234567890\n";
    let e = refused(&files, gitlink, P1, |_| {});
    assert!(e.contains("mode 160000"), "{e}");
    // Through the stack: the error names the patch.
    let tmp = tempfile::tempdir().unwrap();
    let (tree, patches) = (tmp.path().join("tree"), tmp.path().join("patches"));
    fs::create_dir_all(&tree).unwrap();
    fs::create_dir_all(&patches).unwrap();
    write_tree(&tree, &files);
    fs::write(
        patches.join("100-link.patch"),
        git_symlink_patch("l", "../../etc"),
    )
    .unwrap();
    let s = xtask::patches::stack::Stack::new(&tree, &patches, vec!["100-link.patch".into()], P1);
    let e = format!("{:#}", s.push_next().unwrap_err());
    assert!(
        e.contains("100-link.patch") && e.contains("l: refusing it"),
        "{e}"
    );
    assert!(!tree.join("l").exists() && s.applied().unwrap().is_empty());
}
