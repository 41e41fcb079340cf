//! Differential tests of the patch stack against quilt 0.66 (`/usr/bin/quilt`)
//! on generated fixture trees and series (written here, never fetched):
//! the tree after `push -a`, after `pop -a`, and the bytes of refreshed
//! patches must equal quilt's, with quilt run as OpenWrt runs it:
//! `QUILT_DIFF_OPTS=-p`, `quilt refresh -p ab --no-index --no-timestamps`,
//! `--quiltrc=-`, HOME and every QUILT_* variable set explicitly.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use proptest::prelude::*;
use xshell::{cmd, Shell};
use xtask::patches::engine::ApplyOptions;
use xtask::patches::stack::{Refreshed, Stack};

struct Rng(u64);
impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) % n.max(1) as u64) as usize
    }
}

const POOL: &[&str] = &[
    "{\n",
    "}\n",
    "\n",
    "\treturn 0;\n",
    "\tint ret;\n",
    "static int probe(struct device *dev)\n",
    "\tif (ret)\n",
    "\t\tgoto out;\n",
];

fn source(rng: &mut Rng, n: usize, tag: &str) -> String {
    (0..n)
        .map(|i| match rng.below(10) {
            0..=3 => POOL[rng.below(POOL.len())].to_string(),
            4 => format!("int {tag}_function_{i}(void)\n"),
            _ => format!("\t{tag}_call_{i}({});\n", rng.below(100)),
        })
        .collect()
}

fn edit(rng: &mut Rng, a: &str, tag: &str) -> String {
    let mut l: Vec<String> = a.split_inclusive('\n').map(str::to_string).collect();
    let at = rng.below(l.len() + 1);
    l.insert(at, format!("\t{tag}_always();\n"));
    for e in 0..1 + rng.below(4) {
        let at = rng.below(l.len() + 1);
        match rng.below(3) {
            0 => l.insert(at, format!("\t{tag}_new_{e}();\n")),
            1 if at < l.len() => {
                l.remove(at);
            }
            _ if at < l.len() => l[at] = POOL[rng.below(POOL.len())].to_string(),
            _ => {}
        }
    }
    l.concat()
}

fn gnu_diff(
    sh: &Shell,
    dir: &Path,
    path: &str,
    old: Option<&str>,
    new: Option<&str>,
    u: usize,
) -> String {
    let a = dir.join("diff-old");
    let b = dir.join("diff-new");
    std::fs::write(&a, old.unwrap_or("")).unwrap();
    std::fs::write(&b, new.unwrap_or("")).unwrap();
    let la = if old.is_some() {
        format!("a/{path}")
    } else {
        "/dev/null".into()
    };
    let lb = if new.is_some() {
        format!("b/{path}")
    } else {
        "/dev/null".into()
    };
    let u = format!("-U{u}");
    cmd!(sh, "diff {u} -p --label {la} --label {lb} {a} {b}")
        .ignore_status()
        .read()
        .unwrap()
        + "\n"
}

/// Files of a tree (relative path → bytes), state directories excluded.
fn snapshot(root: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut m = BTreeMap::new();
    for e in walkdir::WalkDir::new(root) {
        let e = e.unwrap();
        let rel = e.path().strip_prefix(root).unwrap().to_path_buf();
        if rel.starts_with(".pc") || rel.starts_with(".xtask-pc") {
            continue;
        }
        if e.file_type().is_file() {
            m.insert(rel, std::fs::read(e.path()).unwrap());
        }
    }
    m
}

fn copy_tree(from: &Path, to: &Path) {
    for (rel, bytes) in snapshot(from) {
        let p = to.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, bytes).unwrap();
    }
    std::fs::create_dir_all(to).unwrap();
}

/// quilt in `tree` with the series in `patches` (names relative to it).
fn quilt(sh: &Shell, tree: &Path, patches: &Path, home: &Path, args: &[&str]) -> String {
    let _d = sh.push_dir(tree);
    let _e = [
        sh.push_env("QUILT_PATCHES", patches),
        sh.push_env("QUILT_SERIES", patches.join("series")),
        sh.push_env("QUILT_PC", ".pc"),
        sh.push_env("QUILT_DIFF_OPTS", "-p"),
        sh.push_env("QUILT_REFRESH_ARGS", ""),
        sh.push_env("QUILT_PUSH_ARGS", ""),
        sh.push_env("QUILT_NO_DIFF_INDEX", ""),
        sh.push_env("QUILT_NO_DIFF_TIMESTAMPS", ""),
        sh.push_env("HOME", home),
        sh.push_env("LC_ALL", "C"),
    ];
    let out = cmd!(sh, "quilt --quiltrc=- {args...}")
        .ignore_status()
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

const REFRESH: &[&str] = &["refresh", "-p", "ab", "--no-index", "--no-timestamps"];

struct Fixture {
    _dir: tempfile::TempDir,
    root: PathBuf,
    base: PathBuf,
    names: Vec<String>,
}

/// A tree of 6 files and a series of 8 patches made with GNU diff (two with
/// 5 lines of context, so refresh rewrites them), creations and a deletion
/// among them; patches may touch files of earlier ones.
fn fixture(seed: u64) -> Fixture {
    let sh = Shell::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    let base = root.join("base");
    let mut rng = Rng(seed);
    let mut files: BTreeMap<String, Option<String>> = BTreeMap::new();
    for k in 0..6 {
        let path = format!("drivers/net/f{k}.c");
        let n = 20 + rng.below(80);
        let text = source(&mut rng, n, &format!("f{k}"));
        std::fs::create_dir_all(base.join("drivers/net")).unwrap();
        std::fs::write(base.join(&path), &text).unwrap();
        files.insert(path, Some(text));
    }
    let pdir = root.join("patches/generic/pending-6.12");
    std::fs::create_dir_all(&pdir).unwrap();
    let mut names = Vec::new();
    for p in 0..8 {
        let mut body = format!(
            "From: Dev <dev@example.org>\nSubject: [PATCH] change {p}\n\n@@ this line is description\n--- \nSigned-off-by: Dev <dev@example.org>\n"
        );
        let context = if p % 4 == 3 { 5 } else { 3 };
        let mut paths: Vec<String> = files.keys().cloned().collect();
        let touched = 1 + rng.below(2);
        for t in 0..touched {
            let path = if p == 2 && t == 0 {
                format!("drivers/net/new/created{p}.c")
            } else {
                paths.remove(rng.below(paths.len()))
            };
            let old = files.get(&path).cloned().flatten();
            let new = if p == 5 && t == 0 {
                None
            } else {
                Some(match &old {
                    Some(o) => edit(&mut rng, o, &format!("p{p}")),
                    None => source(&mut rng, 10, "created"),
                })
            };
            if old == new {
                continue;
            }
            body.push_str(&gnu_diff(
                &sh,
                &root,
                &path,
                old.as_deref(),
                new.as_deref(),
                context,
            ));
            files.insert(path, new);
        }
        let name = format!("{:03}-change-{p}.patch", 100 + p * 10);
        std::fs::write(pdir.join(&name), body).unwrap();
        names.push(format!("generic/pending-6.12/{name}"));
    }
    let series: String = names.iter().map(|n| format!("{n}\n")).collect();
    std::fs::write(root.join("patches/series"), series).unwrap();
    Fixture {
        _dir: dir,
        root,
        base,
        names,
    }
}

fn stack(f: &Fixture, tree: &Path, patches: &Path) -> Stack {
    Stack::new(tree, patches, f.names.clone(), ApplyOptions::default())
}

#[test]
fn push_refresh_pop_equal_quilt() {
    let sh = Shell::new().unwrap();
    for seed in 1..=5u64 {
        let f = fixture(seed);
        let (qt, ot) = (f.root.join("q"), f.root.join("o"));
        copy_tree(&f.base, &qt);
        copy_tree(&f.base, &ot);
        let (qp, op) = (f.root.join("qpatches"), f.root.join("opatches"));
        copy_tree(&f.root.join("patches"), &qp);
        copy_tree(&f.root.join("patches"), &op);
        let home = f.root.join("home");
        std::fs::create_dir_all(&home).unwrap();

        let out = quilt(&sh, &qt, &qp, &home, &["push", "-a"]);
        assert!(
            out.contains("Now at patch"),
            "seed {seed}: quilt push -a: {out}"
        );
        let s = stack(&f, &ot, &op);
        while s.push_next().unwrap().is_some() {}
        assert_eq!(
            snapshot(&qt),
            snapshot(&ot),
            "seed {seed}: trees after push -a"
        );

        // Refresh every patch from the top down, popping as quilt must.
        for (i, name) in f.names.iter().enumerate().rev() {
            let out = quilt(&sh, &qt, &qp, &home, REFRESH);
            let (_, how) = s.refresh(None).unwrap();
            let q = std::fs::read(qp.join(name)).unwrap();
            let o = std::fs::read(op.join(name)).unwrap();
            assert_eq!(
                String::from_utf8_lossy(&q),
                String::from_utf8_lossy(&o),
                "seed {seed}: refreshed {name}"
            );
            assert_eq!(
                how == Refreshed::Unchanged,
                out.contains("is unchanged"),
                "seed {seed}: {name}: quilt said {out}"
            );
            if i > 0 {
                quilt(&sh, &qt, &qp, &home, &["pop"]);
                s.pop(false).unwrap();
            }
        }
        // Edit a file of the bottom patch and refresh it.
        let file = s.state.files(&f.names[0]).unwrap()[0].path.clone();
        for t in [&qt, &ot] {
            let p = t.join(&file);
            let mut text = std::fs::read_to_string(&p).unwrap_or_default();
            text.insert_str(text.len() / 2, "\t/* edited */\n");
            std::fs::write(&p, text).unwrap();
        }
        quilt(&sh, &qt, &qp, &home, REFRESH);
        assert_eq!(s.refresh(None).unwrap().1, Refreshed::Rewritten);
        assert_eq!(
            std::fs::read(qp.join(&f.names[0])).unwrap(),
            std::fs::read(op.join(&f.names[0])).unwrap(),
            "seed {seed}: refresh after an edit"
        );
        quilt(&sh, &qt, &qp, &home, &["pop", "-a"]);
        s.pop(false).unwrap();
        assert_eq!(
            snapshot(&qt),
            snapshot(&ot),
            "seed {seed}: trees after pop -a"
        );
        assert_eq!(
            snapshot(&ot),
            snapshot(&f.base),
            "seed {seed}: pop restores"
        );
        assert!(s.applied().unwrap().is_empty());
    }
}

/// An unchanged patch is not rewritten: same bytes, same file (inode) and
/// the old mtime it was given, then a changed one is. No sleep: the patch's
/// mtime is first set an hour back, which a rewrite replaces with now on
/// any filesystem, however coarse its timestamps.
#[test]
fn unchanged_refresh_keeps_file() {
    use std::os::unix::fs::MetadataExt;
    let f = fixture(42);
    let tree = f.root.join("o");
    copy_tree(&f.base, &tree);
    let patches = f.root.join("patches");
    let s = stack(&f, &tree, &patches);
    s.push_next().unwrap();
    let file = patches.join(&f.names[0]);
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    let handle = std::fs::File::options().write(true).open(&file).unwrap();
    handle.set_modified(old).unwrap();
    let before = std::fs::metadata(&file).unwrap();
    let bytes = std::fs::read(&file).unwrap();
    assert_eq!(s.refresh(None).unwrap().1, Refreshed::Unchanged);
    let after = std::fs::metadata(&file).unwrap();
    assert_eq!(std::fs::read(&file).unwrap(), bytes);
    assert_eq!(after.ino(), before.ino(), "the patch was replaced");
    assert_eq!(after.modified().unwrap(), old, "the patch was written");
    // The same checks see a rewrite: edit a file of the patch, refresh.
    let edited = tree.join(&s.state.files(&f.names[0]).unwrap()[0].path);
    let text = std::fs::read_to_string(&edited).unwrap_or_default();
    std::fs::write(&edited, text + "/* edited */\n").unwrap();
    assert_eq!(s.refresh(None).unwrap().1, Refreshed::Rewritten);
    let rewritten = std::fs::metadata(&file).unwrap();
    assert_ne!(std::fs::read(&file).unwrap(), bytes);
    assert_ne!(rewritten.ino(), before.ino());
    assert!(rewritten.modified().unwrap() > old);
}

/// A failed push leaves the tree and the state exactly as before.
#[test]
fn failed_push_changes_nothing() {
    let f = fixture(7);
    let tree = f.root.join("o");
    copy_tree(&f.base, &tree);
    let patches = f.root.join("patches");
    let s = stack(&f, &tree, &patches);
    s.push_next().unwrap();
    let second = s.next().unwrap().unwrap();
    let bytes = std::fs::read(patches.join(&second)).unwrap();
    let broken = String::from_utf8_lossy(&bytes).replace("\n-", "\n-XX");
    std::fs::write(patches.join(&second), broken).unwrap();
    let before = snapshot(&tree);
    let state_before = s.applied().unwrap();
    assert!(s.push_next().is_err());
    assert_eq!(snapshot(&tree), before);
    assert_eq!(s.applied().unwrap(), state_before);
    assert!(!s.state.patch_dir(&second).exists());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, .. ProptestConfig::default() })]
    /// Pushing a GNU-diff-made patch and refreshing it reproduces it byte for byte.
    #[test]
    fn refresh_reproduces_applied_patch(
        a in proptest::collection::vec(0usize..12, 0..50),
        b in proptest::collection::vec(0usize..12, 0..50),
        header in "[A-Za-z: @+-]{0,30}",
    ) {
        let line = |k: usize| if k < POOL.len() { POOL[k].to_string() } else { format!("unique_{k}();\n") };
        let old: String = a.iter().map(|&k| line(k)).collect();
        let new: String = b.iter().map(|&k| line(k)).collect();
        prop_assume!(old != new);
        let sh = Shell::new().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let tree = dir.path().join("t");
        std::fs::create_dir_all(&tree).unwrap();
        let (o, n) = (
            (!old.is_empty()).then_some(old.as_str()),
            Some(new.as_str()),
        );
        if let Some(o) = o {
            std::fs::write(tree.join("f.c"), o).unwrap();
        }
        let header = if header.starts_with("--- ") || header.starts_with("diff -") || header.starts_with("Index:") { String::new() } else { format!("{header}\n") };
        let patch = header + &gnu_diff(&sh, dir.path(), "f.c", o, n, 3);
        let patches = dir.path().join("p");
        std::fs::create_dir_all(&patches).unwrap();
        std::fs::write(patches.join("x.patch"), &patch).unwrap();
        let s = Stack::new(&tree, &patches, vec!["x.patch".into()], ApplyOptions::default());
        s.push_next().unwrap();
        let (_, how) = s.refresh(None).unwrap();
        let after = String::from_utf8(std::fs::read(patches.join("x.patch")).unwrap()).unwrap();
        prop_assert_eq!(after, patch);
        prop_assert_eq!(how, Refreshed::Unchanged);
    }
}

/// quilt pushes with `patch -f`: a patch whose hunk matches backwards
/// exactly (at a site an earlier patch made look like it) but forwards only
/// with fuzz is applied, not refused as reversed; an empty (0-byte) patch
/// "appears to be empty; applied". The tree after `push -a` and `pop -a`
/// must equal quilt's, and the forced patch carries the reverse hint.
#[test]
fn forced_push_and_empty_patch_like_quilt() {
    let sh = Shell::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let block = |first: &str, last: &str| {
        format!("{first}\n\ttwo();\n\tthree();\n\tfour();\n\tfive();\n{last}\n")
    };
    let filler = "\tfiller();\n".repeat(4);
    let base = block("\tone();", "\tsix();") + &filler + &block("\tONE();", "\tSIX();");
    let with_a = base.replacen("\tthree();\n", "\tthree();\n\tX();\n", 1);
    // Made against a tree where the second block read like the first.
    let like_a = block("\tone();", "\tsix();") + &filler + &block("\tone();", "\tsix();");
    let like_a_done = block("\tone();", "\tsix();")
        + &filler
        + &block("\tone();", "\tsix();").replace("\tthree();\n", "\tthree();\n\tX();\n");
    let last_old = with_a.clone();
    let last_new = with_a.replacen("\tfiller();\n", "\tfiller_changed();\n", 1);
    let patches = [
        (
            "100-a.patch",
            gnu_diff(&sh, root, "drivers/f.c", Some(&base), Some(&with_a), 3),
        ),
        (
            "110-b.patch",
            gnu_diff(
                &sh,
                root,
                "drivers/f.c",
                Some(&like_a),
                Some(&like_a_done),
                3,
            ),
        ),
        ("120-empty.patch", String::new()),
        (
            "130-c.patch",
            gnu_diff(
                &sh,
                root,
                "drivers/f.c",
                Some(&last_old),
                Some(&last_new),
                3,
            ),
        ),
    ];
    let pdir = root.join("patches/generic/pending-6.12");
    std::fs::create_dir_all(&pdir).unwrap();
    let mut names = Vec::new();
    for (name, text) in &patches {
        std::fs::write(pdir.join(name), text).unwrap();
        names.push(format!("generic/pending-6.12/{name}"));
    }
    let series: String = names.iter().map(|n| format!("{n}\n")).collect();
    std::fs::write(root.join("patches/series"), series).unwrap();
    let (qt, ot) = (root.join("q"), root.join("o"));
    for t in [&qt, &ot] {
        std::fs::create_dir_all(t.join("drivers")).unwrap();
        std::fs::write(t.join("drivers/f.c"), &base).unwrap();
    }
    let home = root.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let patches_dir = root.join("patches");

    let out = quilt(&sh, &qt, &patches_dir, &home, &["push", "-a"]);
    assert!(
        out.contains("Now at patch generic/pending-6.12/130-c.patch"),
        "{out}"
    );
    assert!(
        out.contains("120-empty.patch appears to be empty; applied"),
        "{out}"
    );
    let s = Stack::new(&ot, &patches_dir, names.clone(), ApplyOptions::default());
    let mut reports = Vec::new();
    while let Some((name, report)) = s.push_next().unwrap() {
        reports.push((name, report));
    }
    assert_eq!(snapshot(&qt), snapshot(&ot), "trees after push -a");
    let hints: Vec<bool> = reports.iter().map(|(_, r)| r.applies_in_reverse).collect();
    assert_eq!(hints, [false, true, false, false]);
    assert!(reports[2].1.files.is_empty());
    let warning = reports[1].1.warnings(&reports[1].0).join("\n");
    assert!(
        warning.contains("110-b.patch") && warning.contains("patches rebase"),
        "{warning}"
    );
    quilt(&sh, &qt, &patches_dir, &home, &["pop", "-a"]);
    while s.pop(false).unwrap().is_some() {}
    assert_eq!(snapshot(&qt), snapshot(&ot), "trees after pop -a");
    assert_eq!(
        std::fs::read_to_string(ot.join("drivers/f.c")).unwrap(),
        base
    );
}

/// A context diff (`diff -c`) in the series: pushed as quilt pushes it,
/// and refreshed as quilt refreshes it, which writes it back as a unified
/// diff under the same description.
#[test]
fn context_diff_patch_pushes_and_refreshes_like_quilt() {
    let sh = Shell::new().unwrap();
    for seed in 1..=4u64 {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let mut rng = Rng(seed * 31);
        let old = source(&mut rng, 40, "f");
        let new = edit(&mut rng, &old, "p");
        let (a, b) = (root.join("diff-old"), root.join("diff-new"));
        std::fs::write(&a, &old).unwrap();
        std::fs::write(&b, &new).unwrap();
        let (la, lb) = ("a/drivers/f.c", "b/drivers/f.c");
        let ctx = cmd!(sh, "diff -c -p --label {la} --label {lb} {a} {b}")
            .ignore_status()
            .read()
            .unwrap()
            + "\n";
        let patch = format!("Subject: [PATCH] context diff {seed}\n\n---\n{ctx}");
        let patches = root.join("patches");
        std::fs::create_dir_all(&patches).unwrap();
        std::fs::write(patches.join("100-ctx.patch"), &patch).unwrap();
        std::fs::write(patches.join("series"), "100-ctx.patch\n").unwrap();
        let (qt, ot) = (root.join("q"), root.join("o"));
        for t in [&qt, &ot] {
            std::fs::create_dir_all(t.join("drivers")).unwrap();
            std::fs::write(t.join("drivers/f.c"), &old).unwrap();
        }
        let (qp, op) = (root.join("qp"), root.join("op"));
        copy_tree(&patches, &qp);
        copy_tree(&patches, &op);
        let home = root.join("home");
        std::fs::create_dir_all(&home).unwrap();
        let out = quilt(&sh, &qt, &qp, &home, &["push", "-a"]);
        assert!(out.contains("Now at patch 100-ctx.patch"), "{out}");
        let s = Stack::new(
            &ot,
            &op,
            vec!["100-ctx.patch".into()],
            ApplyOptions::default(),
        );
        s.push_next().unwrap().unwrap();
        assert_eq!(
            snapshot(&qt),
            snapshot(&ot),
            "seed {seed}: trees after push"
        );
        quilt(&sh, &qt, &qp, &home, REFRESH);
        assert_eq!(s.refresh(None).unwrap().1, Refreshed::Rewritten);
        let (q, o) = (
            std::fs::read_to_string(qp.join("100-ctx.patch")).unwrap(),
            std::fs::read_to_string(op.join("100-ctx.patch")).unwrap(),
        );
        assert_eq!(q, o, "seed {seed}: refreshed");
        assert!(
            o.contains("\n--- a/drivers/f.c\n+++ b/drivers/f.c\n@@ "),
            "{o}"
        );
    }
}

/// A patch that creates a git symbolic link pushes (the link is made) and
/// pops (it is removed); refreshing it is refused, naming the link, rather
/// than silently dropping the link from the patch.
#[test]
fn symlink_patch_pushes_pops_and_is_not_refreshed() {
    let dir = tempfile::tempdir().unwrap();
    let (tree, patches) = (dir.path().join("t"), dir.path().join("p"));
    std::fs::create_dir_all(tree.join("sub")).unwrap();
    std::fs::create_dir_all(&patches).unwrap();
    std::fs::write(tree.join("sub/target.txt"), "x\n").unwrap();
    let patch = "Subject: link\n\ndiff --git a/sub/l b/sub/l\nnew file mode 120000\nindex 0000000..1234567\n--- /dev/null\n+++ b/sub/l\n@@ -0,0 +1 @@\n+target.txt\n\\ No newline at end of file\n";
    std::fs::write(patches.join("100-link.patch"), patch).unwrap();
    let before = snapshot(&tree);
    let s = Stack::new(
        &tree,
        &patches,
        vec!["100-link.patch".into()],
        ApplyOptions::default(),
    );
    let (_, report) = s.push_next().unwrap().unwrap();
    assert!(report.files[0].symlink);
    assert_eq!(
        std::fs::read_link(tree.join("sub/l")).unwrap(),
        PathBuf::from("target.txt")
    );
    let e = format!("{:#}", s.refresh(None).unwrap_err());
    assert!(e.contains("sub/l is a symbolic link"), "{e}");
    assert_eq!(
        std::fs::read_to_string(patches.join("100-link.patch")).unwrap(),
        patch
    );
    s.pop(false).unwrap();
    assert!(std::fs::symlink_metadata(tree.join("sub/l")).is_err());
    assert_eq!(snapshot(&tree), before);
}
