//! Differential tests: the engine against GNU patch (`/usr/bin/patch`) on a
//! corpus generated here. Each case applies the same patch with both to two
//! copies of a tree and requires the same verdict, the same per-hunk
//! messages (line, offset, fuzz, as `patch --verbose` prints them) and the
//! same resulting tree. Expected results come from GNU patch, never from
//! this file.

use crate::common::patch_harness as harness;

use harness::*;

/// Random edits applied to the very text they were diffed from.
#[test]
fn exact_matches() {
    for seed in 0..40 {
        let mut rng = Rng(seed);
        let a = source_text(&mut rng, 20, 60);
        let b = edit(&mut rng, &a, 1, 6);
        let p = gnu_diff("file.c", &join(&a), &join(&b));
        if p.is_empty() {
            continue;
        }
        let (v, _) = differential(&format!("exact {seed}"), &[f("file.c", join(&a))], &p, 1, 0);
        assert_eq!(v, Verdict::Applied);
    }
}

/// The target moved on: lines inserted or removed away from (and between)
/// the hunks, so hunks land at an offset, or fail.
#[test]
fn offsets() {
    let mut offset_seen = false;
    for seed in 0..60 {
        let mut rng = Rng(1000 + seed);
        let a = source_text(&mut rng, 40, 60);
        let b = edit(&mut rng, &a, 1, 5);
        let p = gnu_diff("file.c", &join(&a), &join(&b));
        if p.is_empty() {
            continue;
        }
        let mut target = a.clone();
        for _ in 0..1 + rng.below(3) {
            let at = rng.below(target.len());
            if rng.chance(60) {
                for k in 0..1 + rng.below(8) {
                    target.insert(at, format!("\tupstream_{seed}_{k}();"));
                }
            } else {
                let n = rng.below(4).min(target.len() - at);
                target.drain(at..at + n);
            }
        }
        let (_, gnu) = differential(
            &format!("offset {seed}"),
            &[f("file.c", join(&target))],
            &p,
            1,
            0,
        );
        offset_seen |= gnu.stdout.contains("(offset");
    }
    assert!(offset_seen, "the corpus never produced an offset");
}

/// Context lines changed in the target: fuzz 0 fails, fuzz 1 and 2 ignore
/// one or two context lines at the hunk ends, fuzz 3 is capped by context.
#[test]
fn fuzz_levels() {
    let mut fuzz_seen = [false; 3];
    for seed in 0..60 {
        let mut rng = Rng(2000 + seed);
        let a = source_text(&mut rng, 30, 50);
        let b = edit(&mut rng, &a, 1, 4);
        let p = gnu_diff("file.c", &join(&a), &join(&b));
        if p.is_empty() {
            continue;
        }
        let mut target = a.clone();
        for k in 0..1 + rng.below(4) {
            let at = rng.below(target.len());
            target[at] = format!("\tlocal_change_{seed}_{k}();");
        }
        if rng.chance(30) {
            target.insert(rng.below(target.len()), "\tshifted();".into());
        }
        for fuzz in 0..=3 {
            let (_, gnu) = differential(
                &format!("fuzz {seed}"),
                &[f("file.c", join(&target))],
                &p,
                1,
                fuzz,
            );
            for (i, seen) in fuzz_seen.iter_mut().enumerate().skip(1) {
                *seen |= gnu.stdout.contains(&format!("with fuzz {i}"));
            }
            fuzz_seen[0] |= gnu.stdout.contains("FAILED");
        }
    }
    assert_eq!(fuzz_seen, [true; 3], "corpus lacks failures or fuzz 1/2");
}

/// The target already has the patch: both must call it reversed.
#[test]
fn reversed_and_already_applied() {
    for seed in 0..25 {
        let mut rng = Rng(3000 + seed);
        let a = source_text(&mut rng, 20, 40);
        let b = edit(&mut rng, &a, 1, 4);
        let p = gnu_diff("file.c", &join(&a), &join(&b));
        if p.is_empty() {
            continue;
        }
        // Already applied: the target is b.
        differential(
            &format!("applied {seed}"),
            &[f("file.c", join(&b))],
            &p,
            1,
            0,
        );
        // A reversed patch (b→a) on a.
        let r = gnu_diff("file.c", &join(&b), &join(&a));
        differential(
            &format!("reversed {seed}"),
            &[f("file.c", join(&a))],
            &r,
            1,
            2,
        );
    }
}

/// Files without a final newline, on either side, and patches touching them.
#[test]
fn missing_newline_at_eof() {
    for seed in 0..30 {
        let mut rng = Rng(4000 + seed);
        let a = source_text(&mut rng, 3, 12);
        let b = edit(&mut rng, &a, 1, 3);
        let (mut ja, mut jb) = (join(&a), join(&b));
        if rng.chance(60) {
            ja.pop();
        }
        if rng.chance(60) {
            jb.pop();
        }
        let p = gnu_diff("file.c", &ja, &jb);
        if p.is_empty() {
            continue;
        }
        for target in [ja.clone(), {
            let mut t = ja.clone();
            t.extend_from_slice(b"tail\n");
            t
        }] {
            differential(&format!("eof {seed}"), &[f("file.c", target)], &p, 1, 2);
        }
    }
}

fn crlf(s: &[u8]) -> Vec<u8> {
    let mut v = Vec::new();
    for &c in s {
        if c == b'\n' {
            v.push(b'\r');
        }
        v.push(c);
    }
    v
}

/// CRLF targets with LF patches ("different line endings"), CRLF patches
/// (GNU strips their CRs), and diffs of CRLF files.
#[test]
fn crlf_line_ends() {
    let mut different_seen = false;
    for seed in 0..12 {
        let mut rng = Rng(5000 + seed);
        let a = source_text(&mut rng, 10, 20);
        let b = edit(&mut rng, &a, 1, 3);
        let lf = gnu_diff("file.c", &join(&a), &join(&b));
        if lf.is_empty() {
            continue;
        }
        let cr_patch = crlf(&lf);
        let cr_files = gnu_diff("file.c", &crlf(&join(&a)), &crlf(&join(&b)));
        for (pname, p) in [("lf", &lf), ("crlf", &cr_patch), ("of-crlf", &cr_files)] {
            for (tname, t) in [("lf", join(&a)), ("crlf", crlf(&join(&a)))] {
                let (_, gnu) = differential(
                    &format!("crlf {seed} patch {pname} target {tname}"),
                    &[f("file.c", t)],
                    p,
                    1,
                    0,
                );
                different_seen |= gnu.stdout.contains("different line endings");
            }
        }
    }
    assert!(different_seen);
}

/// `diff -ruN`: creations and deletions (epoch timestamps), nested directories.
#[test]
fn creates_and_deletes() {
    for seed in 0..15 {
        let mut rng = Rng(6000 + seed);
        let keep = source_text(&mut rng, 10, 0);
        let gone = source_text(&mut rng, 1, 10);
        let born = source_text(&mut rng, 1, 10);
        let a = vec![
            f("keep.c", join(&keep)),
            f("old/deep/gone.c", join(&gone)),
            f("old/sibling.c", b"x\n".to_vec()),
        ];
        let mut b = vec![
            f("keep.c", join(&edit(&mut rng, &keep, 2, 0))),
            f("new/dir/born.c", join(&born)),
        ];
        if rng.chance(50) {
            b.push(f("old/sibling.c", b"x\n".to_vec()));
        }
        let p = gnu_diff_trees(&a, &b);
        let (v, _) = differential(&format!("create/delete {seed}"), &a, &p, 1, 0);
        assert_eq!(v, Verdict::Applied);
        // Applying it again: already applied.
        let (v, _) = differential(&format!("create/delete again {seed}"), &b, &p, 1, 0);
        assert_eq!(v, Verdict::Reversed);
    }
}

/// git diffs: renames (with and without changes), copies, mode changes,
/// creation and deletion with modes, empty files.
#[test]
fn git_extended_headers() {
    for seed in 0..10 {
        let mut rng = Rng(7000 + seed);
        let t1 = source_text(&mut rng, 30, 0);
        let t2 = source_text(&mut rng, 30, 0);
        let t3 = source_text(&mut rng, 12, 0);
        let mut script = f("script.sh", b"#!/bin/sh\necho hi\n".to_vec());
        let before = vec![
            f("drivers/a.c", join(&t1)),
            f("drivers/b.c", join(&t2)),
            f("doc/gone.txt", join(&t3)),
            script.clone(),
            f("empty", Vec::new()),
        ];
        script.mode = 0o755;
        let mut exe = f("tools/new.sh", b"#!/bin/sh\n".to_vec());
        exe.mode = 0o755;
        let after = vec![
            f("drivers/renamed.c", join(&edit(&mut rng, &t1, 1, 2))),
            f("drivers/b.c", join(&t2)),
            f("drivers/b_copy.c", join(&edit(&mut rng, &t2, 1, 0))),
            script,
            exe,
            f("new_empty", Vec::new()),
        ];
        let p = git_diff(&before, &after);
        let text = String::from_utf8_lossy(&p);
        assert!(
            text.contains("rename from") && text.contains("copy from") && text.contains("new mode"),
            "{text}"
        );
        let (v, _) = differential(&format!("git {seed}"), &before, &p, 1, 0);
        assert_eq!(v, Verdict::Applied);
    }
}

/// A description full of diff-like lines: the engine must ignore it; GNU
/// gets the bare patch (it would misread such a description).
#[test]
fn descriptions_with_diff_like_lines() {
    let descriptions: [&[u8]; 3] = [
        b"From: Dev <dev@example.org>\nSubject: [PATCH] fix\n\n@@ this is prose\n--- not a header\n+++ neither\n---\n file.c | 2 +-\n\n",
        b"Explain the change:\n\n@@ -1,3 +1,3 @@\n-old\n+new\n\nSigned-off-by: X\n",
        b"--- a/file.c\n+++ b/file.c\nwas quoted here\n\n",
    ];
    for (i, d) in descriptions.iter().enumerate() {
        let mut rng = Rng(8000 + i as u64);
        let a = source_text(&mut rng, 30, 0);
        let b = edit(&mut rng, &a, 3, 0);
        let p = gnu_diff("file.c", &join(&a), &join(&b));
        let mut ours = d.to_vec();
        ours.extend_from_slice(&p);
        ours.extend_from_slice(b"-- \n2.43.0\n");
        let parsed = xtask::patches::engine::parse_patch(&ours).unwrap();
        assert_eq!(parsed.description, d.to_vec());
        let (v, _) = differential_with(
            &format!("description {i}"),
            &[f("file.c", join(&a))],
            &p,
            &ours,
            1,
            0,
        );
        assert_eq!(v, Verdict::Applied);
    }
}

/// Many random mixes of the above on one file: edits to the target
/// anywhere, any fuzz. `PATCH_DIFF_CASES` raises the count (default 150).
#[test]
fn random_mixes() {
    let cases = std::env::var("PATCH_DIFF_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(150u64);
    for seed in 0..cases {
        let mut rng = Rng(9000 + seed);
        let a = source_text(&mut rng, 5, 80);
        let b = edit(&mut rng, &a, 1, 8);
        let p = gnu_diff("file.c", &join(&a), &join(&b));
        if p.is_empty() {
            continue;
        }
        let target = if rng.chance(20) {
            b.clone()
        } else {
            edit(&mut rng, &a, 0, 6)
        };
        let mut t = join(&target);
        if rng.chance(15) {
            t.pop();
        }
        differential(
            &format!("mix {seed}"),
            &[f("file.c", t)],
            &p,
            1,
            rng.below(4),
        );
    }
}

fn words(s: &str) -> Vec<String> {
    s.split_whitespace().map(str::to_string).collect()
}

/// Two identical hunks that each insert `X` after `c` (3 lines of
/// context), on one `a`..`f` block and on two blocks 20 lines apart: where
/// the second hunk goes (or whether it fails) is GNU patch 2.7.6's call.
#[test]
fn identical_hunks_small_cases() {
    let block = words("a b c d e f");
    let edit = Edit {
        at: 3,
        del: 0,
        ins: vec!["X".into()],
    };
    let p = hunks_patch("f", &block, &[edit.clone(), edit], 3);
    let filler: Vec<String> = (1..=20).map(|i| format!("z{i}")).collect();
    let two_blocks = [block.clone(), filler.clone(), block.clone()].concat();
    let filler_first = [filler, block.clone()].concat();
    for (name, text) in [
        ("one block", &block),
        ("two blocks", &two_blocks),
        ("filler first", &filler_first),
    ] {
        for fuzz in 0..=2 {
            differential(name, &[f("f", join(text))], &p, 1, fuzz);
        }
    }
}

/// A block repeated a few times (struct initializers of one driver), and a
/// patch that adds the same member to several of them, as OpenWrt's
/// 781-06 realtek patch does; the target has lines added, removed or
/// changed anywhere, so the identical hunks have to search. Each hunk must
/// land where GNU patch puts it (or fail where it fails): never back on a
/// site an earlier hunk of the file already patched.
#[test]
fn repeated_blocks_with_identical_hunks() {
    let block = |i: usize, odd: bool| -> Vec<String> {
        vec![
            "\t{".into(),
            format!("\t\tPHY_ID_MATCH_EXACT(0x001cc{i:03x}),"),
            "\t\t.get_features   = rtl822x_get_features,".into(),
            "\t\t.config_aneg    = rtl822x_config_aneg,".into(),
            "\t\t.config_init    = rtl822xb_config_init,".into(),
            "\t\t.read_status    = rtl822xb_read_status,".into(),
            "\t\t.suspend        = genphy_suspend,".into(),
            if odd {
                "\t\t.resume         = rtlgen_resume_c45,".into()
            } else {
                "\t\t.resume         = rtlgen_resume,".into()
            },
            "\t},".into(),
        ]
    };
    let (mut cases, mut failed, mut offset) = (0, 0, 0);
    for seed in 0..120 {
        let mut rng = Rng(12000 + seed);
        let mut a: Vec<String> = (0..rng.below(20)).map(|k| format!("head_{k}();")).collect();
        for b in 0..2 + rng.below(4) {
            // Often the same PHY id, so whole blocks repeat.
            a.extend(block(if rng.chance(50) { 0 } else { b }, rng.chance(20)));
            for k in 0..rng.below(4) {
                a.push(format!("mid_{b}_{k}();"));
            }
        }
        let mut b = a.clone();
        let mut i = 0;
        while i < b.len() {
            if b[i].contains(".config_init") && rng.chance(80) {
                b.insert(
                    i + 1,
                    "\t\t.get_rate_matching = rtl822xb_get_rate_matching,".into(),
                );
                i += 1;
            }
            i += 1;
        }
        let p = gnu_diff("realtek.c", &join(&a), &join(&b));
        if p.is_empty() {
            continue;
        }
        let mut t = a.clone();
        for _ in 0..rng.below(4) {
            let at = rng.below(t.len());
            match rng.below(3) {
                0 => {
                    let n = (1 + rng.below(12)).min(t.len() - at);
                    t.drain(at..at + n);
                }
                1 => {
                    for k in 0..1 + rng.below(12) {
                        t.insert(at, format!("upstream_{k}();"));
                    }
                }
                _ => t[at] = "\t\t.changed = upstream,".into(),
            }
        }
        for fuzz in [0, 1, 2] {
            let (v, gnu) = differential(
                &format!("repeated blocks {seed}"),
                &[f("realtek.c", join(&t))],
                &p,
                1,
                fuzz,
            );
            cases += 1;
            failed += usize::from(v == Verdict::Failed);
            offset += usize::from(gnu.stdout.contains("(offset"));
        }
    }
    assert!(
        cases >= 300 && failed > 20 && offset > 50,
        "{cases} {failed} {offset}"
    );
}

/// Hand-made patches: hunks that repeat, whose context overlaps the
/// previous hunk's, insert-only hunks (with and without context), on text
/// made of few distinct lines so that every hunk matches in many places.
#[test]
fn repeated_overlapping_and_insert_only_hunks() {
    let alphabet = ["a", "b", "c", "}", "", "\treturn 0;"];
    let (mut cases, mut applied) = (0, 0);
    for seed in 0..200 {
        let mut rng = Rng(13000 + seed);
        let n = 4 + rng.below(40);
        let old: Vec<String> = (0..n)
            .map(|_| alphabet[rng.below(alphabet.len())].to_string())
            .collect();
        let mut edits: Vec<Edit> = Vec::new();
        let mut at = 0;
        for k in 0..1 + rng.below(5) {
            let repeat = !edits.is_empty() && rng.chance(30);
            let e = if repeat {
                edits[edits.len() - 1].clone()
            } else {
                // Close to the previous edit, so contexts overlap.
                at = (at + rng.below(6)).min(n);
                let del = if rng.chance(50) {
                    0
                } else {
                    rng.below(3).min(n - at)
                };
                let ins = if del == 0 || rng.chance(50) {
                    (0..1 + rng.below(2))
                        .map(|i| format!("new_{k}_{i}"))
                        .collect()
                } else {
                    Vec::new()
                };
                Edit { at, del, ins }
            };
            edits.push(e);
        }
        let context = rng.below(4);
        let p = hunks_patch("f", &old, &edits, context);
        let mut target = old.clone();
        if rng.chance(50) {
            let at = rng.below(target.len() + 1);
            let extra: Vec<String> = (0..1 + rng.below(8))
                .map(|_| alphabet[rng.below(alphabet.len())].to_string())
                .collect();
            target.splice(at..at, extra);
        }
        let (v, _) = differential(
            &format!("hand-made hunks {seed}"),
            &[f("f", join(&target))],
            &p,
            1,
            rng.below(3),
        );
        cases += 1;
        applied += usize::from(v == Verdict::Applied);
    }
    assert!(
        applied > 40 && applied < cases,
        "{applied} of {cases} applied"
    );
}
