//! Differential tests against GNU patch beyond `patch --forward` on clean
//! unified diffs: `patch -f` (as quilt and OpenWrt run it), context diffs
//! (`diff -c`), patches whose last hunk lost its trailing blank lines, hunk
//! bodies longer than their headers count. Expected results come from GNU
//! patch on the same input.

use crate::common::patch_harness as harness;

use std::fs;

use harness::*;
use xshell::{cmd, Shell};
use xtask::patches::engine::{parse_patch, ApplyReport, ParseErrorKind, ParseWarningKind};

/// `diff -C N --label a/NAME --label b/NAME` of two contents.
fn context_diff(name: &str, a: &[u8], b: &[u8], lines: usize) -> Vec<u8> {
    let tmp = tempfile::tempdir().unwrap();
    write_tree(tmp.path(), &[f("old", a), f("new", b)]);
    let sh = Shell::new().unwrap();
    sh.change_dir(tmp.path());
    let (la, lb, c) = (
        format!("a/{name}"),
        format!("b/{name}"),
        format!("-C{lines}"),
    );
    let out = cmd!(sh, "diff {c} --label {la} --label {lb} old new")
        .ignore_status()
        .output()
        .unwrap();
    assert!(out.status.code().unwrap_or(2) < 2, "diff failed");
    out.stdout
}

/// `diff -crN a b` of two trees.
fn context_diff_trees(a: &[F], b: &[F]) -> Vec<u8> {
    let tmp = tempfile::tempdir().unwrap();
    fs::create_dir_all(tmp.path().join("a")).unwrap();
    fs::create_dir_all(tmp.path().join("b")).unwrap();
    write_tree(&tmp.path().join("a"), a);
    write_tree(&tmp.path().join("b"), b);
    let sh = Shell::new().unwrap();
    sh.change_dir(tmp.path());
    let out = cmd!(sh, "diff -crN a b").ignore_status().output().unwrap();
    assert!(out.status.code().unwrap_or(2) < 2, "diff failed");
    out.stdout
}

/// Context diffs of random edits (changes, pure insertions and deletions,
/// files without a final newline) with 1 to 5 lines of context, applied
/// to the text they came from, to a text that moved on, and at every fuzz.
#[test]
fn context_diffs() {
    let (mut cases, mut applied, mut offset) = (0, 0, 0);
    for seed in 0..120 {
        let mut rng = Rng(20000 + seed);
        let a = source_text(&mut rng, 3, 60);
        let b = edit(&mut rng, &a, 1, 6);
        let (mut ja, mut jb) = (join(&a), join(&b));
        if rng.chance(15) {
            ja.pop();
        }
        if rng.chance(15) {
            jb.pop();
        }
        let p = context_diff("file.c", &ja, &jb, 1 + rng.below(5));
        if p.is_empty() {
            continue;
        }
        let target = if rng.chance(50) {
            ja.clone()
        } else {
            join(&edit(&mut rng, &a, 1, 4))
        };
        let (v, gnu) = differential(
            &format!("context {seed}"),
            &[f("file.c", target)],
            &p,
            1,
            rng.below(3),
        );
        cases += 1;
        applied += usize::from(v == Verdict::Applied);
        offset += usize::from(gnu.stdout.contains("(offset"));
    }
    assert!(
        applied > 50 && offset > 5,
        "{applied} of {cases}, {offset} offsets"
    );
}

/// `diff -crN`: context diffs that create and delete files.
#[test]
fn context_diffs_create_and_delete() {
    for seed in 0..10 {
        let mut rng = Rng(21000 + seed);
        let keep = source_text(&mut rng, 10, 20);
        let a = vec![
            f("keep.c", join(&keep)),
            f("old/gone.c", join(&source_text(&mut rng, 1, 8))),
        ];
        let b = vec![
            f("keep.c", join(&edit(&mut rng, &keep, 1, 3))),
            f("new/born.c", join(&source_text(&mut rng, 1, 8))),
        ];
        let p = context_diff_trees(&a, &b);
        let (v, _) = differential(&format!("context tree {seed}"), &a, &p, 1, 0);
        assert_eq!(v, Verdict::Applied);
    }
}

/// `diff -C0`: an insertion applies; a deletion GNU patch 2.7 itself
/// cannot read ("replacement text or line numbers mangled"): both refuse.
#[test]
fn context_diffs_without_context() {
    let a = b"a\nb\nc\nd\ne\n".to_vec();
    let inserted = context_diff("f", &a, b"a\nb\nc\nnew\nd\ne\n", 0);
    let (v, _) = differential("C0 insertion", &[f("f", a.clone())], &inserted, 1, 0);
    assert_eq!(v, Verdict::Applied);
    let deleted = context_diff("f", &a, b"a\nb\nd\ne\n", 0);
    let tmp = tempfile::tempdir().unwrap();
    write_tree(tmp.path(), &[f("f", a)]);
    assert_eq!(run_gnu(tmp.path(), &deleted, 1, 0).status, 2);
    let e = parse_patch(&deleted).unwrap_err();
    assert!(
        matches!(e.kind, ParseErrorKind::CountMismatch { hunk_line: 3 }),
        "{e}"
    );
}

/// The last hunk lost 1 to 3 trailing blank context lines (an editor
/// stripped the file's trailing empty lines): GNU patch takes them as blank
/// context and applies, as we do, with a warning. Four are too many for
/// both.
#[test]
fn chopped_trailing_blank_lines() {
    let mut cases = 0;
    for seed in 0..30 {
        let mut rng = Rng(22000 + seed);
        let mut a = source_text(&mut rng, 10, 20);
        a.extend(std::iter::repeat_n(String::new(), 3));
        let mut b = a.clone();
        let at = b.len() - 4;
        b[at] = format!("\tchanged_{seed}();");
        let p = gnu_diff("file.c", &join(&a), &join(&b));
        let text = String::from_utf8(p).unwrap();
        for chop in 1..=3 {
            let mut cut = text.clone();
            for _ in 0..chop {
                assert!(cut.ends_with(" \n"), "{cut}");
                cut.truncate(cut.len() - 2);
            }
            // An editor that strips trailing white space too.
            let cut = if rng.chance(50) {
                cut.lines()
                    .map(|l| l.trim_end().to_string() + "\n")
                    .collect()
            } else {
                cut
            };
            let parsed = parse_patch(cut.as_bytes()).unwrap();
            assert_eq!(
                parsed.warnings[0].kind,
                ParseWarningKind::ChoppedBlankLines(chop),
                "{cut}"
            );
            let target = [f("file.c", join(&a))];
            let (v, _) = differential(
                &format!("chopped {seed}/{chop}"),
                &target,
                cut.as_bytes(),
                1,
                0,
            );
            assert_eq!(v, Verdict::Applied);
            cases += 1;
        }
    }
    // Four missing lines: GNU stops ("unexpected end of file in patch").
    let a = b"a\nb\nc\n\n\n\n\n".to_vec();
    let p = b"--- a/f\n+++ b/f\n@@ -1,7 +1,7 @@\n a\n-b\n+B\n c\n";
    let tmp = tempfile::tempdir().unwrap();
    write_tree(tmp.path(), &[f("f", a)]);
    assert_eq!(run_gnu(tmp.path(), p, 1, 0).status, 2);
    let e = parse_patch(p).unwrap_err();
    assert!(
        matches!(e.kind, ParseErrorKind::UnexpectedEnd { .. }),
        "{e}"
    );
    assert!(cases >= 90);
}

/// Hunk bodies longer than their headers count, at the end of the patch
/// and between two file diffs: GNU patch ends each hunk at its counts and
/// ignores the rest up to the next file header ("trailing garbage"); so do
/// we, with a warning naming the first ignored line.
#[test]
fn hunk_lines_past_the_counts() {
    for seed in 0..40 {
        let mut rng = Rng(23000 + seed);
        let a1 = source_text(&mut rng, 20, 30);
        let a2 = source_text(&mut rng, 20, 30);
        let b1 = edit(&mut rng, &a1, 1, 3);
        let b2 = edit(&mut rng, &a2, 1, 3);
        let p1 = String::from_utf8(gnu_diff("one.c", &join(&a1), &join(&b1))).unwrap();
        let p2 = String::from_utf8(gnu_diff("two.c", &join(&a2), &join(&b2))).unwrap();
        if p1.is_empty() || p2.is_empty() {
            continue;
        }
        let extra = match rng.below(4) {
            0 => " stray context\n".to_string(),
            1 => "+stray insertion\n".to_string(),
            2 => "-stray deletion\n \n".to_string(),
            _ => format!(" {}\n+more\n", a1[0]),
        };
        let files = [f("one.c", join(&a1)), f("two.c", join(&a2))];
        let (patch, garbage_line) = if rng.chance(50) {
            (format!("{p1}{extra}{p2}"), p1.lines().count() + 1)
        } else {
            (
                format!("{p1}{p2}{extra}"),
                p1.lines().count() + p2.lines().count() + 1,
            )
        };
        let parsed = parse_patch(patch.as_bytes()).unwrap();
        assert_eq!(parsed.files.len(), 2);
        let w = &parsed.warnings[0];
        assert_eq!(
            (w.line, w.kind),
            (garbage_line, ParseWarningKind::TrailingGarbage)
        );
        let (v, _) = differential(
            &format!("past the counts {seed}"),
            &files,
            patch.as_bytes(),
            1,
            0,
        );
        assert_eq!(v, Verdict::Applied);
    }
}

/// `patch -f`, as quilt's push and OpenWrt's patch-kernel.sh run it:
/// already applied and reversed patches, creations of existing files and
/// deletions of missing ones, random targets; and a hunk that matches
/// backwards exactly but forwards only with fuzz (GNU without `-f` calls
/// that patch reversed; with `-f` it applies). Same verdicts, hunk
/// messages and trees as GNU patch -f; never "reversed".
#[test]
fn forced_like_quilt() {
    let (mut cases, mut applied_reversible) = (0, 0);
    let mut count = |(applied, _, report): (bool, Gnu, ApplyReport)| {
        cases += 1;
        applied_reversible += usize::from(applied && report.applies_in_reverse);
    };
    for seed in 0..40 {
        let mut rng = Rng(14000 + seed);
        let a = source_text(&mut rng, 20, 40);
        let b = edit(&mut rng, &a, 1, 4);
        let p = gnu_diff("file.c", &join(&a), &join(&b));
        if p.is_empty() {
            continue;
        }
        let fuzz = rng.below(3);
        count(differential_forced(
            &format!("applied {seed}"),
            &[f("file.c", join(&b))],
            &p,
            1,
            fuzz,
        ));
        let t = edit(&mut rng, &a, 0, 5);
        count(differential_forced(
            &format!("mix {seed}"),
            &[f("file.c", join(&t))],
            &p,
            1,
            fuzz,
        ));
    }
    for seed in 0..10 {
        let mut rng = Rng(15000 + seed);
        let keep = source_text(&mut rng, 10, 0);
        let a = vec![
            f("keep.c", join(&keep)),
            f("old/gone.c", b"x\ny\n".to_vec()),
        ];
        let b = vec![
            f("keep.c", join(&edit(&mut rng, &keep, 2, 0))),
            f("new/born.c", b"born\n".to_vec()),
        ];
        let p = gnu_diff_trees(&a, &b);
        count(differential_forced(
            &format!("create/delete again {seed}"),
            &b,
            &p,
            1,
            0,
        ));
    }
    // Two similar blocks; the patch was made where block B read like A.
    let block = |first: &str, last: &str| -> Vec<String> {
        [first, "two();", "three();", "four();", "five();", last]
            .iter()
            .map(|s| s.to_string())
            .collect()
    };
    for seed in 0..20 {
        let mut rng = Rng(16000 + seed);
        let filler: Vec<String> = (0..rng.below(10))
            .map(|k| format!("filler_{k}();"))
            .collect();
        let a_block = block("one();", "six();");
        let mut a_done = a_block.clone();
        a_done.insert(3, "X();".into());
        let tree = [
            filler.clone(),
            a_done,
            filler.clone(),
            block("ONE();", "SIX();"),
        ]
        .concat();
        // After "three();" of the second block.
        let edit = Edit {
            at: filler.len() * 2 + 6 + 3,
            del: 0,
            ins: vec!["X();".into()],
        };
        let base = [filler.clone(), a_block.clone(), filler, a_block].concat();
        let p = hunks_patch("f.c", &base, &[edit], 3);
        let (applied, gnu, report) = differential_forced(
            &format!("blocks {seed}"),
            &[f("f.c", join(&tree))],
            &p,
            1,
            2,
        );
        assert!(
            applied && gnu.stdout.contains("with fuzz 1"),
            "{}",
            gnu.stdout
        );
        assert!(
            report.applies_in_reverse,
            "block case {seed}: no reverse hint"
        );
        cases += 1;
        applied_reversible += 1;
    }
    assert!(
        cases >= 100 && applied_reversible >= 20,
        "{cases} {applied_reversible}"
    );
}

/// Files skipped as missing (to patch, or to delete) or as already
/// applied are reported in GNU patch's words ("can't find file to patch",
/// "Skipping patch", "N out of N hunks ignored"), next to files that apply
/// and files with failed hunks, as `patch --batch --forward` prints them
/// (less its "text leading up to this" excerpt).
#[test]
fn skipped_files_in_gnu_words() {
    let mut rng = Rng(24000);
    let have = source_text(&mut rng, 20, 0);
    let rev = source_text(&mut rng, 20, 0);
    let fail = source_text(&mut rng, 20, 0);
    let rev_done = edit(&mut rng, &rev, 2, 0);
    let mut patch = Vec::new();
    patch.extend(gnu_diff(
        "have.c",
        &join(&have),
        &join(&edit(&mut rng, &have, 2, 0)),
    ));
    let missing = source_text(&mut rng, 20, 0);
    patch.extend(gnu_diff(
        "nope.c",
        &join(&missing),
        &join(&edit(&mut rng, &missing, 3, 0)),
    ));
    patch.extend(b"--- a/gone.c\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-x\n-y\n");
    patch.extend(gnu_diff("rev.c", &join(&rev), &join(&rev_done)));
    patch.extend(gnu_diff(
        "fail.c",
        &join(&fail),
        &join(&edit(&mut rng, &fail, 1, 0)),
    ));
    let mut fail_target = fail.clone();
    for l in fail_target.iter_mut() {
        *l = format!("{l} /* moved on */");
    }
    let files = [
        f("have.c", join(&have)),
        f("rev.c", join(&rev_done)),
        f("fail.c", join(&fail_target)),
    ];
    let tmp = tempfile::tempdir().unwrap();
    write_tree(tmp.path(), &files);
    let pfile = tmp.path().join("p.patch");
    fs::write(&pfile, &patch).unwrap();
    let sh = Shell::new().unwrap();
    sh.change_dir(tmp.path());
    let out = cmd!(
        sh,
        "patch -p1 --batch --forward --no-backup-if-mismatch --reject-file=- -i p.patch"
    )
    .ignore_status()
    .read()
    .unwrap();
    let gnu: Vec<String> = out
        .lines()
        .filter(|l| {
            !l.starts_with("The text leading up")
                && !l.starts_with('|')
                && !l.starts_with("--------")
        })
        .map(|l| l.split(" -- saving rejects").next().unwrap().to_string())
        .collect();
    let odir = tempfile::tempdir().unwrap();
    write_tree(odir.path(), &files);
    let parsed = parse_patch(&patch).unwrap();
    let opts = xtask::patches::engine::ApplyOptions { strip: 1, fuzz: 2 };
    let Err(xtask::patches::engine::ApplyError::Failed(report)) =
        xtask::patches::engine::apply_patch(odir.path(), &parsed, &opts)
    else {
        panic!("must fail");
    };
    let ours: Vec<String> = report.render().lines().map(str::to_string).collect();
    assert_eq!(ours, gnu);
    for words in [
        "can't find file to patch at input line",
        "No file to patch.  Skipping patch.",
        "which does not exist!  Skipping patch.",
        "Reversed (or previously applied) patch detected!  Skipping patch.",
        "2 out of 2 hunks ignored",
        "Hunk #1 FAILED at",
    ] {
        assert!(ours.iter().any(|l| l.contains(words)), "{words}: {ours:#?}");
    }
    assert!(!ours.iter().any(|l| l.contains("FAILED at 0")), "{ours:?}");
}

/// git diffs that create symbolic links (`new file mode 120000`) whose
/// targets stay inside the tree: next to the link, up and down
/// directories, not (yet) existing, created by the same patch. GNU patch
/// creates the links ("patching symbolic link"); so do we.
#[test]
fn git_symlinks_inside_the_tree() {
    let links: &[(&str, &str)] = &[
        ("same", "target.txt"),
        ("sub/link", "../target.txt"),
        ("deep/a/b/up", "../../../sub/../target.txt"),
        ("dangling", "not-yet.txt"),
        ("new/dir/l", "file.c"),
        ("./dot", "./target.txt"),
    ];
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    fs::create_dir_all(&repo).unwrap();
    let sh = Shell::new().unwrap();
    sh.change_dir(&repo);
    let q = ["-c", "user.name=t", "-c", "user.email=t@example.org"];
    cmd!(sh, "git init -q .").run().unwrap();
    let before = [f("target.txt", "x\n"), f("keep.c", "a\nb\nc\n")];
    write_tree(&repo, &before);
    cmd!(sh, "git {q...} add -A").run().unwrap();
    cmd!(sh, "git {q...} commit -q -m before").run().unwrap();
    write_tree(
        &repo,
        &[f("new/dir/file.c", "new\n"), f("keep.c", "a\nB\nc\n")],
    );
    for (link, to) in links {
        let p = repo.join(link);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(to, &p).unwrap();
    }
    cmd!(sh, "git {q...} add -A").run().unwrap();
    let p = cmd!(sh, "git diff --cached").output().unwrap().stdout;
    assert_eq!(
        String::from_utf8_lossy(&p)
            .matches("new file mode 120000")
            .count(),
        6
    );
    let (v, gnu) = differential("git symlinks", &before, &p, 1, 0);
    assert_eq!(v, Verdict::Applied);
    assert!(
        gnu.stdout.contains("patching symbolic link sub/link"),
        "{}",
        gnu.stdout
    );
}
