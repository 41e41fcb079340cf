//! Shared helpers for the patch engine tests: trees on disk, GNU diff/patch
//! and git run through xshell, and the differential check against GNU patch.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use xshell::{cmd, Shell};
use xtask::patches::engine::{
    self, ApplyError, ApplyOptions, ApplyReport, FileOp, FileProblem, HunkOutcome,
};

/// A file to put in a tree: relative path, content, permission bits.
#[derive(Clone, Debug)]
pub struct F {
    pub path: String,
    pub data: Vec<u8>,
    pub mode: u32,
}

pub fn f(path: &str, data: impl Into<Vec<u8>>) -> F {
    F {
        path: path.to_string(),
        data: data.into(),
        mode: 0o644,
    }
}

/// A tree as read back: path → file (content, mode) or directory (`None`).
pub type Tree = BTreeMap<String, Option<(Vec<u8>, u32)>>;

pub fn write_tree(root: &Path, files: &[F]) {
    for file in files {
        let p = root.join(&file.path);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(&p, &file.data).unwrap();
        fs::set_permissions(&p, fs::Permissions::from_mode(file.mode)).unwrap();
    }
}

pub fn read_tree(root: &Path) -> Tree {
    let mut t = Tree::new();
    fn walk(root: &Path, dir: &Path, t: &mut Tree) {
        for e in fs::read_dir(dir).unwrap() {
            let e = e.unwrap();
            let p = e.path();
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            let m = fs::symlink_metadata(&p).unwrap();
            if m.is_dir() {
                t.insert(rel, None);
                walk(root, &p, t);
            } else {
                let data = if m.file_type().is_symlink() {
                    fs::read_link(&p)
                        .unwrap()
                        .to_string_lossy()
                        .as_bytes()
                        .to_vec()
                } else {
                    fs::read(&p).unwrap()
                };
                t.insert(rel, Some((data, m.permissions().mode() & 0o777)));
            }
        }
    }
    walk(root, root, &mut t);
    t
}

/// `diff -u a/NAME b/NAME` of two contents (GNU diffutils).
pub fn gnu_diff(name: &str, a: &[u8], b: &[u8]) -> Vec<u8> {
    let tmp = tempfile::tempdir().unwrap();
    write_tree(
        tmp.path(),
        &[f(&format!("a/{name}"), a), f(&format!("b/{name}"), b)],
    );
    let sh = Shell::new().unwrap();
    sh.change_dir(tmp.path());
    let (pa, pb) = (format!("a/{name}"), format!("b/{name}"));
    let out = cmd!(sh, "diff -u {pa} {pb}")
        .ignore_status()
        .output()
        .unwrap();
    assert!(out.status.code().unwrap_or(2) < 2, "diff failed");
    out.stdout
}

/// `diff -ruN a b` of two trees (creations and deletions get epoch timestamps).
pub fn gnu_diff_trees(a: &[F], b: &[F]) -> Vec<u8> {
    let tmp = tempfile::tempdir().unwrap();
    fs::create_dir_all(tmp.path().join("a")).unwrap();
    fs::create_dir_all(tmp.path().join("b")).unwrap();
    write_tree(&tmp.path().join("a"), a);
    write_tree(&tmp.path().join("b"), b);
    let sh = Shell::new().unwrap();
    sh.change_dir(tmp.path());
    let out = cmd!(sh, "diff -ruN a b").ignore_status().output().unwrap();
    assert!(out.status.code().unwrap_or(2) < 2, "diff failed");
    out.stdout
}

/// `git diff --cached` (renames and copies detected) between two trees.
pub fn git_diff(before: &[F], after: &[F]) -> Vec<u8> {
    let tmp = tempfile::tempdir().unwrap();
    let sh = Shell::new().unwrap();
    sh.change_dir(tmp.path());
    let q = ["-c", "user.name=t", "-c", "user.email=t@example.org"];
    cmd!(sh, "git init -q .").run().unwrap();
    write_tree(tmp.path(), before);
    cmd!(sh, "git {q...} add -A").run().unwrap();
    cmd!(sh, "git {q...} commit -q --allow-empty -m before")
        .run()
        .unwrap();
    for e in fs::read_dir(tmp.path()).unwrap() {
        let p = e.unwrap().path();
        if p.file_name().unwrap() != ".git" {
            if p.is_dir() {
                fs::remove_dir_all(&p).unwrap();
            } else {
                fs::remove_file(&p).unwrap();
            }
        }
    }
    write_tree(tmp.path(), after);
    cmd!(sh, "git {q...} add -A").run().unwrap();
    cmd!(sh, "git {q...} diff --cached -M -C --find-copies-harder")
        .output()
        .unwrap()
        .stdout
}

/// What GNU patch did.
pub struct Gnu {
    pub status: i32,
    pub stdout: String,
}

impl Gnu {
    /// `patching file` (or `symbolic link`) and `Hunk #` lines, as `--verbose` prints them for
    /// every hunk (ignored hunks of skipped patches left out).
    pub fn lines(&self) -> Vec<String> {
        self.stdout
            .lines()
            .filter(|l| {
                l.starts_with("patching file")
                    || l.starts_with("patching symbolic link")
                    || (l.starts_with("Hunk #") && !l.contains(" ignored "))
            })
            .map(str::to_string)
            .collect()
    }

    /// GNU skipped some file as reversed or already applied: "Reversed (or
    /// previously applied) patch detected!", or "The next patch would create
    /// the file X, which already exists!" (delete ... does not exist).
    pub fn reversed(&self) -> bool {
        self.stdout
            .contains("Reversed (or previously applied) patch detected!")
            || (self.stdout.contains("The next patch would")
                && self.stdout.contains("Skipping patch."))
    }
}

/// `patch -pN --batch --forward --verbose --fuzz F` in `dir` (no backups, no rejects).
pub fn run_gnu(dir: &Path, patch_bytes: &[u8], strip: usize, fuzz: usize) -> Gnu {
    run_gnu_mode(dir, patch_bytes, strip, fuzz, "--forward")
}

/// `patch -pN -f --verbose --fuzz F` in `dir`, as quilt and OpenWrt run it.
pub fn run_gnu_forced(dir: &Path, patch_bytes: &[u8], strip: usize, fuzz: usize) -> Gnu {
    run_gnu_mode(dir, patch_bytes, strip, fuzz, "--force")
}

fn run_gnu_mode(dir: &Path, patch_bytes: &[u8], strip: usize, fuzz: usize, mode: &str) -> Gnu {
    let pfile = tempfile::NamedTempFile::new().unwrap();
    fs::write(pfile.path(), patch_bytes).unwrap();
    let p = pfile.path();
    let sh = Shell::new().unwrap();
    sh.change_dir(dir);
    let (strip_arg, fuzz_arg) = (format!("-p{strip}"), fuzz.to_string());
    let out = cmd!(
        sh,
        "patch {strip_arg} --batch {mode} --verbose --fuzz {fuzz_arg} --no-backup-if-mismatch --reject-file=- -i {p}"
    )
    .ignore_status()
    .quiet()
    .output()
    .unwrap();
    Gnu {
        status: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
    }
}

/// Our report in GNU's `--verbose` wording: every hunk gets a line. A file
/// that is not there to patch gets none (GNU: "can't find file to patch").
pub fn our_lines(report: &ApplyReport) -> Vec<String> {
    let mut v = Vec::new();
    for f in report
        .files
        .iter()
        .filter(|f| f.problem != Some(FileProblem::Missing))
    {
        let kind = if f.symlink { "symbolic link" } else { "file" };
        let mut s = format!("patching {kind} {}", f.path.display());
        match (&f.source, f.op) {
            (Some(src), FileOp::Rename) => s += &format!(" (renamed from {})", src.display()),
            (Some(src), FileOp::Copy) => s += &format!(" (copied from {})", src.display()),
            _ => {}
        }
        v.push(s);
        for (i, h) in f.hunks.iter().enumerate() {
            v.push(match *h {
                HunkOutcome::Applied { line, offset, fuzz } => {
                    let mut s = format!("Hunk #{} succeeded at {line}", i + 1);
                    if fuzz > 0 {
                        s += &format!(" with fuzz {fuzz}");
                    }
                    if offset != 0 {
                        s += &format!(
                            " (offset {offset} line{})",
                            if offset == 1 { "" } else { "s" }
                        );
                    }
                    s + "."
                }
                HunkOutcome::Failed { .. } => engine::hunk_message(i + 1, h).unwrap(),
            });
        }
    }
    v
}

/// What both engines concluded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Applied,
    Failed,
    Reversed,
}

/// Applies `gnu_patch` with GNU patch to one copy of `files` and
/// `our_patch` with the engine to another; asserts the same verdict, the
/// same per-hunk messages, and the same resulting tree (ours unchanged on
/// failure). Returns the verdict and GNU's output.
pub fn differential_with(
    name: &str,
    files: &[F],
    gnu_patch: &[u8],
    our_patch: &[u8],
    strip: usize,
    fuzz: usize,
) -> (Verdict, Gnu) {
    let tmp = tempfile::tempdir().unwrap();
    let (gdir, odir) = (tmp.path().join("gnu"), tmp.path().join("ours"));
    fs::create_dir_all(&gdir).unwrap();
    fs::create_dir_all(&odir).unwrap();
    write_tree(&gdir, files);
    write_tree(&odir, files);
    let before = read_tree(&odir);
    let gnu = run_gnu(&gdir, gnu_patch, strip, fuzz);
    let ctx = || {
        format!(
            "case {name} (fuzz {fuzz})\n--- patch ---\n{}\n--- GNU (status {}) ---\n{}",
            String::from_utf8_lossy(our_patch),
            gnu.status,
            gnu.stdout
        )
    };
    assert!(gnu.status <= 1, "GNU patch trouble: {}", ctx());
    let parsed = engine::parse_patch(our_patch).unwrap_or_else(|e| panic!("{e}\n{}", ctx()));
    let opts = ApplyOptions { strip, fuzz };
    let ours = engine::apply_patch(&odir, &parsed, &opts);
    let verdict = match &ours {
        Ok(report) => {
            assert_eq!(gnu.status, 0, "we applied, GNU did not: {}", ctx());
            assert_eq!(our_lines(report), gnu.lines(), "messages differ: {}", ctx());
            assert_eq!(
                read_tree(&odir),
                read_tree(&gdir),
                "trees differ: {}",
                ctx()
            );
            Verdict::Applied
        }
        Err(ApplyError::Reversed { .. }) => {
            // Known difference, the other way round: a patch whose first
            // hunk applies forwards but a later one fails, while the whole
            // patch applies backwards, is "reversed" to us and failed
            // hunks (status 1) to GNU. Both refuse it.
            assert!(
                gnu.reversed() || gnu.status == 1,
                "we say reversed, GNU applied: {}",
                ctx()
            );
            assert_eq!(read_tree(&odir), before, "tree changed: {}", ctx());
            Verdict::Reversed
        }
        Err(ApplyError::Failed(report)) => {
            assert_eq!(gnu.status, 1, "we failed, GNU did not: {}", ctx());
            // Known difference: GNU calls a file reversed when its *first*
            // hunk applies backwards; we require every hunk of the patch to.
            // GNU then skips the file, so its hunk messages say nothing.
            if !gnu.reversed() {
                assert_eq!(our_lines(report), gnu.lines(), "messages differ: {}", ctx());
            }
            assert_eq!(read_tree(&odir), before, "tree changed: {}", ctx());
            Verdict::Failed
        }
        Err(e) => panic!("unexpected error {e}: {}", ctx()),
    };
    (verdict, gnu)
}

/// As [`differential`], but GNU runs with `-f` (quilt's and OpenWrt's
/// mode) and the engine with [`patch::apply_patch_forced`]: both must
/// apply, or both fail with the same hunk messages (never "reversed"),
/// with the same resulting tree. Returns whether it applied, GNU's output
/// and our report.
pub fn differential_forced(
    name: &str,
    files: &[F],
    patch_bytes: &[u8],
    strip: usize,
    fuzz: usize,
) -> (bool, Gnu, ApplyReport) {
    let tmp = tempfile::tempdir().unwrap();
    let (gdir, odir) = (tmp.path().join("gnu"), tmp.path().join("ours"));
    fs::create_dir_all(&gdir).unwrap();
    fs::create_dir_all(&odir).unwrap();
    write_tree(&gdir, files);
    write_tree(&odir, files);
    let before = read_tree(&odir);
    let gnu = run_gnu_forced(&gdir, patch_bytes, strip, fuzz);
    let ctx = || {
        format!(
            "case {name} (-f, fuzz {fuzz})\n--- patch ---\n{}\n--- GNU (status {}) ---\n{}",
            String::from_utf8_lossy(patch_bytes),
            gnu.status,
            gnu.stdout
        )
    };
    assert!(gnu.status <= 1, "GNU patch trouble: {}", ctx());
    let parsed = engine::parse_patch(patch_bytes).unwrap_or_else(|e| panic!("{e}\n{}", ctx()));
    let opts = ApplyOptions { strip, fuzz };
    match engine::apply_patch_forced(&odir, &parsed, &opts) {
        Ok(report) => {
            assert_eq!(gnu.status, 0, "we applied, GNU did not: {}", ctx());
            assert_eq!(
                our_lines(&report),
                gnu.lines(),
                "messages differ: {}",
                ctx()
            );
            assert_eq!(
                read_tree(&odir),
                read_tree(&gdir),
                "trees differ: {}",
                ctx()
            );
            (true, gnu, report)
        }
        Err(ApplyError::Failed(report)) => {
            assert_eq!(gnu.status, 1, "we failed, GNU did not: {}", ctx());
            assert_eq!(
                our_lines(&report),
                gnu.lines(),
                "messages differ: {}",
                ctx()
            );
            assert_eq!(read_tree(&odir), before, "tree changed: {}", ctx());
            (false, gnu, report)
        }
        Err(e) => panic!("unexpected error {e}: {}", ctx()),
    }
}

/// [`differential_with`] where both engines get the same patch.
pub fn differential(
    name: &str,
    files: &[F],
    patch_bytes: &[u8],
    strip: usize,
    fuzz: usize,
) -> (Verdict, Gnu) {
    differential_with(name, files, patch_bytes, patch_bytes, strip, fuzz)
}

/// A small deterministic pseudo-random generator (64-bit LCG).
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    /// 0 ..= n-1 (0 when n is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            return 0;
        }
        (self.next() % n as u64) as usize
    }
    pub fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

/// Source-like text: mostly distinct lines with some repeated ones
/// (`}`, blank lines, `return 0;`) so that hunks can match in several places.
pub fn source_text(rng: &mut Rng, min: usize, spread: usize) -> Vec<String> {
    let lines = min + rng.below(spread);
    (0..lines)
        .map(|i| match rng.below(10) {
            0 => "}".to_string(),
            1 => String::new(),
            2 => "\treturn 0;".to_string(),
            _ => format!("\tline_{i}_{}();", rng.below(1000)),
        })
        .collect()
}

pub fn join(lines: &[String]) -> Vec<u8> {
    let mut s = lines.join("\n");
    if !lines.is_empty() {
        s.push('\n');
    }
    s.into_bytes()
}

/// A few random edits: replaced, inserted and deleted lines.
pub fn edit(rng: &mut Rng, lines: &[String], min: usize, spread: usize) -> Vec<String> {
    let edits = min + rng.below(spread);
    let mut v = lines.to_vec();
    for k in 0..edits {
        let at = rng.below(v.len() + 1);
        match rng.below(3) {
            0 if at < v.len() => v[at] = format!("\tchanged_{k}_{}();", rng.below(1000)),
            1 if at < v.len() => {
                v.remove(at);
            }
            _ => v.insert(at, format!("\tadded_{k}_{}();", rng.below(1000))),
        }
    }
    v
}

/// One change for [`hunks_patch`]: at 0-based old line `at`, delete `del`
/// lines and insert `ins` there.
#[derive(Clone, Debug)]
pub struct Edit {
    pub at: usize,
    pub del: usize,
    pub ins: Vec<String>,
}

/// A unified diff of `name` (`a/NAME`, `b/NAME`) with one hunk per edit,
/// in the given order, each with up to `context` lines of context on each
/// side taken from `old`. Unlike `diff`, hunks may repeat (the same edit
/// twice gives two identical hunks) and their context may overlap, as in
/// hand-made or concatenated patches. New-side starts count the lines the
/// earlier edits added or removed.
pub fn hunks_patch(name: &str, old: &[String], edits: &[Edit], context: usize) -> Vec<u8> {
    let mut out = format!("--- a/{name}\n+++ b/{name}\n");
    let mut delta: isize = 0;
    for e in edits {
        let at = e.at.min(old.len());
        let del = e.del.min(old.len() - at);
        let before = at.saturating_sub(context);
        let after = (at + del + context).min(old.len());
        let old_count = after - before;
        let new_count = old_count - del + e.ins.len();
        let range = |start: usize, count: usize| match count {
            0 => format!("{},0", start - 1),
            1 => format!("{start}"),
            n => format!("{start},{n}"),
        };
        let new_start = (before as isize + 1 + delta).max(1) as usize;
        out += &format!(
            "@@ -{} +{} @@\n",
            range(before + 1, old_count),
            range(new_start, new_count)
        );
        for l in &old[before..at] {
            out += &format!(" {l}\n");
        }
        for l in &old[at..at + del] {
            out += &format!("-{l}\n");
        }
        for l in &e.ins {
            out += &format!("+{l}\n");
        }
        for l in &old[at + del..after] {
            out += &format!(" {l}\n");
        }
        delta += e.ins.len() as isize - del as isize;
    }
    out.into_bytes()
}
