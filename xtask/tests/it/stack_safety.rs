//! The patch stack under abuse, with the real binary on a generated tree
//! (40 files) and series (30 patches that change, create and delete files,
//! several per file):
//!
//! * `kill -9` during `patches push -a`, `pop -a` and `refresh`, at random
//!   moments (a refresh rewrites the top patch in quilt's form, which
//!   applies as the original does):
//!   after every kill, `patches status` must recover by itself, the tree
//!   must be exactly the tree with the first k patches applied (k as the
//!   state says, the reference made by GNU `patch`), and the next command
//!   must work;
//! * two commands on one tree: the second waits for the first's lock
//!   (saying whose), or fails at once with `--no-wait`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use xshell::{cmd, Shell};
use xtask::patches::engine::ApplyOptions;
use xtask::patches::stack::Stack;
use xtask::util::lock::Wait;

const BIN: &str = env!("CARGO_BIN_EXE_xtask");
const FILES: usize = 40;
const PATCHES: usize = 30;

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

type Tree = BTreeMap<PathBuf, Vec<u8>>;

fn source(rng: &mut Rng, tag: &str) -> String {
    (0..60 + rng.below(200))
        .map(|i| match rng.below(8) {
            0 => "{\n".to_string(),
            1 => "}\n".to_string(),
            2 => format!("int {tag}_fn_{i}(void)\n"),
            _ => format!("\t{tag}_call_{i}({});\n", rng.below(1000)),
        })
        .collect()
}

fn edit(rng: &mut Rng, text: &str, tag: &str) -> String {
    let mut l: Vec<String> = text.split_inclusive('\n').map(str::to_string).collect();
    for e in 0..1 + rng.below(6) {
        let at = rng.below(l.len() + 1);
        match rng.below(3) {
            0 if at < l.len() => {
                l.remove(at);
            }
            1 if at < l.len() => l[at] = format!("\t{tag}_changed_{e}();\n"),
            _ => l.insert(at, format!("\t{tag}_added_{e}();\n")),
        }
    }
    l.concat()
}

fn diff(sh: &Shell, scratch: &Path, path: &Path, old: Option<&[u8]>, new: Option<&[u8]>) -> String {
    let (a, b) = (scratch.join("old"), scratch.join("new"));
    std::fs::write(&a, old.unwrap_or_default()).unwrap();
    std::fs::write(&b, new.unwrap_or_default()).unwrap();
    let p = path.display();
    let la = old.map_or("/dev/null".to_string(), |_| format!("a/{p}"));
    let lb = new.map_or("/dev/null".to_string(), |_| format!("b/{p}"));
    cmd!(sh, "diff -u --label {la} --label {lb} {a} {b}")
        .ignore_status()
        .read()
        .unwrap()
        + "\n"
}

/// Files and directories of a tree, the state directory left out.
fn snapshot(root: &Path) -> (Tree, Vec<PathBuf>) {
    let mut files = Tree::new();
    let mut dirs = Vec::new();
    for e in walkdir::WalkDir::new(root).min_depth(1) {
        let e = e.unwrap();
        let rel = e.path().strip_prefix(root).unwrap().to_path_buf();
        if rel.starts_with(".xtask-pc") {
            continue;
        }
        if e.file_type().is_dir() {
            dirs.push(rel);
        } else {
            files.insert(rel, std::fs::read(e.path()).unwrap());
        }
    }
    (files, dirs)
}

fn write_tree(root: &Path, tree: &Tree) {
    for (rel, bytes) in tree {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, bytes).unwrap();
    }
}

struct Fixture {
    _dir: tempfile::TempDir,
    tree: PathBuf,
    patches: PathBuf,
    series: Vec<String>,
    /// The tree (files, directories) with the first k patches applied by GNU patch.
    refs: Vec<(Tree, Vec<PathBuf>)>,
}

fn fixture(seed: u64) -> Fixture {
    let sh = Shell::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(seed);
    let dirs = [
        "drivers/net",
        "net/core",
        "include/linux",
        "kernel",
        "arch/arm/mm",
    ];
    let mut model = Tree::new();
    for i in 0..FILES {
        let path = PathBuf::from(dirs[i % dirs.len()]).join(format!("f{i}.c"));
        model.insert(path, source(&mut rng, &format!("f{i}")).into_bytes());
    }
    let tree = dir.path().join("linux");
    write_tree(&tree, &model);
    let reference = dir.path().join("reference");
    write_tree(&reference, &model);
    let series_dir = dir.path().join("patches/generic/pending-6.12");
    std::fs::create_dir_all(&series_dir).unwrap();
    let mut series = Vec::new();
    let mut refs = vec![snapshot(&reference)];
    for k in 0..PATCHES {
        let tag = format!("p{k}");
        let mut text = format!("From: Dev <dev@example.org>\nSubject: [PATCH] {tag}\n\n---\n");
        let names: Vec<PathBuf> = model.keys().cloned().collect();
        let mut touched = Vec::new();
        for _ in 0..1 + rng.below(4) {
            let path = names[rng.below(names.len())].clone();
            if !touched.contains(&path) {
                touched.push(path);
            }
        }
        for path in touched {
            let old = model[&path].clone();
            let new = if rng.below(12) == 0 && model.len() > FILES / 2 {
                None
            } else {
                Some(edit(&mut rng, &String::from_utf8(old.clone()).unwrap(), &tag).into_bytes())
            };
            text += &diff(&sh, dir.path(), &path, Some(&old), new.as_deref());
            match new {
                Some(n) => model.insert(path, n),
                None => model.remove(&path),
            };
        }
        if rng.below(3) == 0 {
            let path = PathBuf::from(format!("drivers/new{k}/sub/n{k}.c"));
            let new = source(&mut rng, &tag).into_bytes();
            text += &diff(&sh, dir.path(), &path, None, Some(&new));
            model.insert(path, new);
        }
        let name = format!("{:03}-{tag}.patch", 100 + k);
        let file = series_dir.join(&name);
        std::fs::write(&file, &text).unwrap();
        cmd!(sh, "patch -s -p1 -d {reference} -i {file}")
            .quiet()
            .run()
            .unwrap();
        let snap = snapshot(&reference);
        assert_eq!(snap.0, model, "GNU patch and the model differ at {name}");
        refs.push(snap);
        series.push(format!("generic/pending-6.12/{name}"));
    }
    Fixture {
        tree,
        patches: dir.path().join("patches"),
        series,
        refs,
        _dir: dir,
    }
}

fn xtask(f: &Fixture, args: &[&str]) -> Command {
    let mut c = Command::new(BIN);
    c.arg("patches")
        .args(args)
        .arg("--tree")
        .arg(&f.tree)
        .arg("--patches-dir")
        .arg(&f.patches);
    c
}

/// Runs a command to the end; its stdout.
fn run(f: &Fixture, args: &[&str]) -> String {
    let out = xtask(f, args).output().unwrap();
    assert!(
        out.status.success(),
        "{args:?} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn applied(f: &Fixture) -> Vec<String> {
    std::fs::read_to_string(f.tree.join(".xtask-pc/applied-patches"))
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

/// The tree is the reference for the applied prefix of the series.
fn check_consistent(f: &Fixture, context: &str) -> usize {
    let applied = applied(f);
    let k = applied.len();
    assert_eq!(applied, f.series[..k], "{context}: applied list");
    let (files, dirs) = snapshot(&f.tree);
    let (want_files, want_dirs) = &f.refs[k];
    if &files != want_files {
        let wrong: Vec<_> = files
            .keys()
            .chain(want_files.keys())
            .filter(|p| files.get(*p) != want_files.get(*p))
            .collect();
        panic!("{context}: the tree is not the tree with {k} patches: {wrong:?} differ");
    }
    assert_eq!(&dirs, want_dirs, "{context}: directories with {k} patches");
    k
}

#[test]
fn killed_push_pop_and_refresh_are_recovered() {
    let f = fixture(7);
    // One clean run each way, timed, to spread the kills over a whole run.
    let clock = Instant::now();
    run(&f, &["push", "-a"]);
    let push_time = clock.elapsed();
    assert_eq!(check_consistent(&f, "clean push -a"), PATCHES);
    let clock = Instant::now();
    run(&f, &["pop", "-a"]);
    let pop_time = clock.elapsed();
    assert_eq!(check_consistent(&f, "clean pop -a"), 0);
    run(&f, &["push", &f.series[0]]);
    let clock = Instant::now();
    run(&f, &["refresh"]);
    let refresh_time = clock.elapsed();
    run(&f, &["pop", "-a"]);
    eprintln!("clean push -a: {push_time:?}, pop -a: {pop_time:?}, refresh: {refresh_time:?}");

    let mut rng = Rng(0x5eed);
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    let deadline = Instant::now() + Duration::from_secs(240);
    let mut kills = 0;
    for round in 0..200 {
        if kills >= 80 || Instant::now() > deadline {
            break;
        }
        let k = applied(&f).len();
        let (op, full) = if k > 0 && rng.below(6) == 0 {
            // The top patch, in quilt's form: the tree does not change.
            ("refresh", refresh_time)
        } else if k == PATCHES || (k > 0 && rng.below(3) == 0) {
            ("pop", pop_time)
        } else {
            ("push", push_time)
        };
        let args: &[&str] = match op {
            "refresh" => &["refresh"],
            _ => &[op, "-a"],
        };
        let mut child = xtask(&f, args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let full_us = full.as_micros().max(1000) as usize;
        std::thread::sleep(Duration::from_micros(rng.below(full_us * 11 / 10) as u64));
        let finished = child.try_wait().unwrap().is_some();
        let _ = child.kill();
        let status = child.wait().unwrap();
        if finished {
            *counts.entry("finished before the kill").or_default() += 1;
            assert!(status.success(), "round {round}: {op} failed");
            check_consistent(&f, &format!("round {round}: {op}, finished"));
            continue;
        }
        kills += 1;
        let status_out = run(&f, &["status"]);
        let what = if status_out.contains("undid the interrupted push") {
            "killed mid-push, undone"
        } else if status_out.contains("the interrupted push of") {
            "killed after a push was recorded, journal closed"
        } else if status_out.contains("finished the interrupted pop") {
            "killed mid-pop, finished"
        } else if status_out.contains("finished the interrupted refresh") {
            "killed mid-refresh, finished"
        } else {
            assert!(!status_out.contains("recovered"), "{status_out}");
            "killed between transactions"
        };
        *counts.entry(what).or_default() += 1;
        check_consistent(&f, &format!("round {round}: {op} killed, then status"));
    }
    // The next commands work: everything on, everything off.
    run(&f, &["push", "-a"]);
    assert_eq!(check_consistent(&f, "final push -a"), PATCHES);
    run(&f, &["pop", "-a"]);
    assert_eq!(check_consistent(&f, "final pop -a"), 0);
    assert!(
        !f.tree.join(".xtask-pc/journal").exists(),
        "a journal was left behind"
    );
    let mid: usize = counts
        .iter()
        .filter(|(k, _)| k.contains("mid-"))
        .map(|(_, v)| v)
        .sum();
    eprintln!("kills: {kills}, of which {mid} landed mid-transaction and were recovered");
    for (what, n) in &counts {
        eprintln!("  {what}: {n}");
    }
    assert!(kills >= 50, "only {kills} kills landed: {counts:?}");
    assert!(mid >= 5, "too few kills landed mid-transaction: {counts:?}");
}

/// A refresh killed after its journal was written (the patch file not yet
/// rewritten) is run again by the next command.
#[test]
fn interrupted_refresh_is_finished() {
    let f = fixture(11);
    run(&f, &["push", &f.series[1]]);
    let top = f.series[1].clone();
    let patch_file = f.patches.join(&top);
    let before = std::fs::read_to_string(&patch_file).unwrap();
    let (files, _) = snapshot(&f.tree);
    let victim = files
        .keys()
        .find(|p| before.contains(&format!("b/{}", p.display())))
        .unwrap();
    let path = f.tree.join(victim);
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str("\trefreshed_by_hand();\n");
    std::fs::write(&path, text).unwrap();
    std::fs::write(
        f.tree.join(".xtask-pc/journal"),
        format!("xtask-journal 1\nrefresh {top}\n"),
    )
    .unwrap();
    let out = run(&f, &["status"]);
    assert!(out.contains("finished the interrupted refresh"), "{out}");
    let after = std::fs::read_to_string(&patch_file).unwrap();
    assert!(after.contains("+\trefreshed_by_hand();"), "{after}");
    // The manifest has the new post-images: a clean pop works.
    run(&f, &["pop", "-a"]);
    assert_eq!(check_consistent(&f, "pop after the refresh"), 0);
}

/// State damaged by an older version (a patch listed as applied whose saved
/// files are gone) no longer blocks `pop -a --force`.
#[test]
fn pop_force_drops_a_patch_whose_saved_files_are_gone() {
    let f = fixture(13);
    run(&f, &["push", &f.series[2]]);
    std::fs::remove_dir_all(f.tree.join(".xtask-pc").join(&f.series[2])).unwrap();
    let out = xtask(&f, &["pop", "-a"]).output().unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("pop --force"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    run(&f, &["pop", "-a", "--force"]);
    assert!(applied(&f).is_empty());
}

/// `--no-wait` fails at once naming the holder's pid; without it the
/// command waits, says for whom, and runs when the lock is released.
#[test]
fn a_second_command_waits_for_the_tree_lock() {
    let f = fixture(17);
    let stack = Stack::new(
        &f.tree,
        &f.patches,
        Vec::new(),
        ApplyOptions { strip: 1, fuzz: 2 },
    );
    let held = stack.lock(Wait::No).unwrap();
    let out = xtask(&f, &["push", "-a", "--no-wait"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains(&format!("pid {}", std::process::id())),
        "{err}"
    );
    assert!(err.contains(".xtask-pc/lock"), "{err}");
    assert!(applied(&f).is_empty());

    // Readiness, not a sleep: the lock is released only once the child
    // says it waits for it, however slow the machine.
    let mut waiting = xtask(&f, &["push", "-a"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = std::io::BufReader::new(waiting.stderr.take().unwrap());
    let expected = format!("waiting for pid {}, which holds", std::process::id());
    let mut err = String::new();
    while !err.contains(&expected) {
        let read = std::io::BufRead::read_line(&mut stderr, &mut err).unwrap();
        assert!(read > 0, "exited without waiting for the lock: {err}");
    }
    assert!(applied(&f).is_empty(), "pushed while the tree was locked");
    drop(held);
    std::io::Read::read_to_string(&mut stderr, &mut err).unwrap();
    let status = waiting.wait().unwrap();
    assert!(status.success(), "{err}");
    assert_eq!(check_consistent(&f, "after waiting"), PATCHES);
}

/// Two `push -a` started together on one tree: one pushes, the other
/// waits and then finds everything applied; the stack is whole.
#[test]
fn two_pushes_on_one_tree_leave_a_whole_stack() {
    let f = fixture(19);
    for round in 0..3 {
        let children: Vec<_> = (0..2)
            .map(|_| {
                xtask(&f, &["push", "-a"])
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for mut c in children {
            assert!(c.wait().unwrap().success(), "round {round}");
        }
        assert_eq!(check_consistent(&f, "two pushes"), PATCHES);
        run(&f, &["pop", "-a"]);
        assert_eq!(check_consistent(&f, "pop"), 0);
    }
}
