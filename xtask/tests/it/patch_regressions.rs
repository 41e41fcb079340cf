//! Saved regression cases of the patch engine, as files, in the manner of
//! diffy's `tests/compat/`: each folder of `tests/regressions/` is a patch
//! the engine once got wrong, with what GNU patch makes of it.
//!
//! ```text
//! tests/regressions/<case>/
//!   case.toml        fault (what went wrong, and the commit that fixed it),
//!                    strip (-p), fuzz (-F), mode: "force" (patch -f, as quilt
//!                    push, OpenWrt's patch-kernel.sh and our push and build
//!                    apply) or "forward" (patch --forward, as rebase checks)
//!   case.patch       the patch
//!   in/              the tree it is applied to
//!   expected/status  GNU patch 2.7's exit status
//!   expected/stdout  what `patch --verbose` printed
//!   expected/tree/   the tree GNU patch left (status 1: with the hunks that
//!                    applied; ours must leave in/ unchanged instead)
//! ```
//!
//! The one test runs GNU patch on each case and checks that `expected/`
//! is still what it prints and leaves (so the saved answer is the
//! reference tool's, never typed by hand), then applies the patch with the
//! engine: the same verdict, the same `patching file`/`Hunk #` lines and
//! the same tree. `UPDATE_EXPECT=1 cargo test --test it patch_regressions::`
//! (expect-test's variable) writes `expected/` from GNU patch, for a new
//! case. To add one: a folder with `case.toml`, `case.patch` and `in/`.

use crate::common::gate;
use crate::common::patch_harness;

use std::path::{Path, PathBuf};

use patch_harness::{our_lines, read_tree, run_gnu, run_gnu_forced, Gnu, Tree};
use serde::Deserialize;
use xtask::patches::engine::{self, ApplyError, ApplyOptions};

/// `case.toml`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    /// What the engine did wrong (the commit that fixed it is in the
    /// file's comment).
    fault: String,
    strip: usize,
    fuzz: usize,
    mode: Mode,
}

/// How the patch is applied, by GNU patch and by the engine.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Mode {
    /// `patch -f`; [`engine::apply_patch_forced`].
    Force,
    /// `patch --batch --forward`; [`engine::apply_patch`].
    Forward,
}

fn cases_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/regressions")
}

/// A copy of `from` in a new temporary directory.
fn copy_of(from: &Path) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write_tree(dir.path(), &read_tree(from));
    dir
}

fn write_tree(root: &Path, tree: &Tree) {
    use std::os::unix::fs::PermissionsExt;
    for (path, entry) in tree {
        let p = root.join(path);
        match entry {
            None => std::fs::create_dir_all(&p).unwrap(),
            Some((data, mode)) => {
                std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                std::fs::write(&p, data).unwrap();
                std::fs::set_permissions(&p, std::fs::Permissions::from_mode(*mode)).unwrap();
            }
        }
    }
}

/// `expected/tree/` as read back (a tree GNU emptied has no folder in git).
fn expected_tree(dir: &Path) -> Tree {
    let tree = dir.join("expected/tree");
    if tree.is_dir() {
        read_tree(&tree)
    } else {
        Tree::new()
    }
}

/// Files only, with their bytes: git keeps neither empty folders nor
/// modes other than 644 and 755.
fn files(tree: &Tree) -> Vec<(&String, &Vec<u8>)> {
    tree.iter()
        .filter_map(|(path, entry)| entry.as_ref().map(|(data, _)| (path, data)))
        .collect()
}

fn load(dir: &Path) -> Result<Case, String> {
    let text = std::fs::read_to_string(dir.join("case.toml")).map_err(|e| e.to_string())?;
    toml_edit::de::from_str(&text).map_err(|e| format!("case.toml: {e}"))
}

/// Runs one case; `Err` says what differs, after the fault it once was.
fn check(dir: &Path, bless: bool) -> Result<(), String> {
    let case = load(dir)?;
    run(dir, &case, bless).map_err(|e| format!("(once: {}) {e}", case.fault))
}

fn run(dir: &Path, case: &Case, bless: bool) -> Result<(), String> {
    let patch = std::fs::read(dir.join("case.patch")).map_err(|e| format!("case.patch: {e}"))?;
    let input = dir.join("in");

    // GNU patch, the reference: expected/ must be what it does today.
    let gnu_tree = copy_of(&input);
    let gnu = match case.mode {
        Mode::Force => run_gnu_forced(gnu_tree.path(), &patch, case.strip, case.fuzz),
        Mode::Forward => run_gnu(gnu_tree.path(), &patch, case.strip, case.fuzz),
    };
    if gnu.status > 1 {
        return Err(format!(
            "GNU patch trouble ({}):\n{}",
            gnu.status, gnu.stdout
        ));
    }
    let expected = dir.join("expected");
    if bless {
        let _ = std::fs::remove_dir_all(&expected);
        write_tree(&expected.join("tree"), &read_tree(gnu_tree.path()));
        std::fs::write(expected.join("status"), format!("{}\n", gnu.status)).unwrap();
        std::fs::write(expected.join("stdout"), &gnu.stdout).unwrap();
    }
    let saved = Gnu {
        status: std::fs::read_to_string(expected.join("status"))
            .map_err(|e| format!("expected/status: {e} (UPDATE_EXPECT=1 writes it)"))?
            .trim()
            .parse()
            .map_err(|e| format!("expected/status: {e}"))?,
        stdout: std::fs::read_to_string(expected.join("stdout"))
            .map_err(|e| format!("expected/stdout: {e}"))?,
    };
    let saved_tree = expected_tree(dir);
    if (saved.status, &saved.stdout) != (gnu.status, &gnu.stdout)
        || files(&saved_tree) != files(&read_tree(gnu_tree.path()))
    {
        return Err(format!(
            "expected/ is no longer what GNU patch does (status {}):\n{}\
             (UPDATE_EXPECT=1 rewrites it; say why in the commit)",
            gnu.status, gnu.stdout
        ));
    }

    // The engine.
    let ours_tree = copy_of(&input);
    let parsed = engine::parse_patch(&patch).map_err(|e| format!("parsing case.patch: {e:#}"))?;
    let options = ApplyOptions {
        strip: case.strip,
        fuzz: case.fuzz,
    };
    let outcome = match case.mode {
        Mode::Force => engine::apply_patch_forced(ours_tree.path(), &parsed, &options),
        Mode::Forward => engine::apply_patch(ours_tree.path(), &parsed, &options),
    };
    let ours = read_tree(ours_tree.path());
    match (outcome, saved.status) {
        (Ok(report), 0) => {
            if our_lines(&report) != saved.lines() {
                return Err(format!(
                    "we say {:#?}, GNU {:#?}",
                    our_lines(&report),
                    saved.lines()
                ));
            }
            if files(&ours) != files(&saved_tree) {
                return Err("our tree differs from expected/tree".to_string());
            }
        }
        (Err(ApplyError::Failed(report)), 1) => {
            // GNU calls a file reversed when its first hunk applies
            // backwards and then prints no hunk lines (patch_harness.rs).
            if !saved.reversed() && our_lines(&report) != saved.lines() {
                return Err(format!(
                    "we say {:#?}, GNU {:#?}",
                    our_lines(&report),
                    saved.lines()
                ));
            }
            if files(&ours) != files(&read_tree(&input)) {
                return Err("a failed patch changed our tree".to_string());
            }
        }
        (Err(ApplyError::Reversed { .. }), 1) if saved.reversed() => {
            if files(&ours) != files(&read_tree(&input)) {
                return Err("a reversed patch changed our tree".to_string());
            }
        }
        (Ok(_), status) => return Err(format!("we applied it, GNU's status is {status}")),
        (Err(e), status) => return Err(format!("we refused ({e:#}), GNU's status is {status}")),
    }
    Ok(())
}

#[test]
fn saved_cases_apply_as_gnu_patch_applies_them() {
    if !gate::Needs::new().program("patch", "patch").met() {
        return;
    }
    let bless = std::env::var_os("UPDATE_EXPECT").is_some();
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(cases_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    assert!(dirs.len() >= 5, "cases: {dirs:?}");
    let failures: Vec<String> = dirs
        .iter()
        .filter_map(|dir| {
            check(dir, bless)
                .err()
                .map(|e| format!("{}: {e}", dir.file_name().unwrap().to_string_lossy()))
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// Each case says what went wrong, so a failure names the old fault.
#[test]
fn every_case_names_its_fault() {
    for entry in std::fs::read_dir(cases_dir()).unwrap() {
        let dir = entry.unwrap().path();
        let case = load(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        assert!(!case.fault.trim().is_empty(), "{}", dir.display());
        assert!(dir.join("case.patch").is_file(), "{}", dir.display());
        assert!(dir.join("in").is_dir(), "{}", dir.display());
    }
}
