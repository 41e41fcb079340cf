//! Rebase on a generated "old kernel → new kernel" fixture with one patch of
//! each class. The expected class of every patch comes from GNU patch
//! (`patch -p1 -N --dry-run --fuzz=2` on the new tree): no message → clean,
//! `(offset` → offset, `with fuzz` → fuzz, `Reversed (or previously
//! applied)` → upstream, `FAILED` → conflict. Then --skip, --continue
//! (refreshed bytes checked against GNU `diff -u -p`), --abort and
//! --keep-going. And a rebase killed while copying its work tree: --abort
//! restores patches/ exactly.

use std::path::{Path, PathBuf};

use xshell::{cmd, Shell};
use xtask::patches::rebase::{self, Action, Class, RebaseOptions};
use xtask::util::layout::Layout;

fn lines(tag: &str, n: usize) -> Vec<String> {
    (0..n)
        .map(|i| {
            if i % 9 == 0 {
                format!("int {tag}_fn_{i}(void)\n")
            } else {
                format!("\t{tag}_stmt_{i}();\n")
            }
        })
        .collect()
}

const NAMES: &[(&str, &str)] = &[
    ("100-clean.patch", "clean"),
    ("200-offset.patch", "offset"),
    ("300-fuzz.patch", "fuzz"),
    ("400-upstream.patch", "upstream"),
    ("500-conflict.patch", "conflict"),
    ("600-late.patch", "late"),
];

struct Fx {
    _dir: tempfile::TempDir,
    root: PathBuf,
    newk: PathBuf,
}

fn gnu_diff(sh: &Shell, dir: &Path, path: &str, old: &str, new: &str) -> String {
    let (a, b) = (dir.join("o"), dir.join("n"));
    std::fs::write(&a, old).unwrap();
    std::fs::write(&b, new).unwrap();
    let (la, lb) = (format!("a/{path}"), format!("b/{path}"));
    cmd!(sh, "diff -u -p --label {la} --label {lb} {a} {b}")
        .ignore_status()
        .read()
        .unwrap()
        + "\n"
}

fn fixture() -> Fx {
    let sh = Shell::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    let old_dir = root.join("patches/generic/pending-6.6");
    std::fs::create_dir_all(&old_dir).unwrap();
    let newk = root.join("linux-new");
    std::fs::create_dir_all(newk.join("drivers")).unwrap();
    std::fs::write(
        newk.join("Makefile"),
        "VERSION = 6\nPATCHLEVEL = 12\nSUBLEVEL = 0\nEXTRAVERSION =\n",
    )
    .unwrap();
    std::fs::write(newk.join("Kbuild"), "obj-y += drivers/\n").unwrap();
    for (name, tag) in NAMES {
        let path = format!("drivers/{tag}.c");
        let old = lines(tag, 40);
        let mut new = old.clone();
        new[20] = format!("\t{tag}_patched();\n");
        new.insert(22, format!("\t{tag}_added();\n"));
        let header = format!("From: Dev <dev@example.org>\nSubject: [PATCH] {tag}\n\n---\n");
        let patch = header + &gnu_diff(&sh, &root, &path, &old.concat(), &new.concat());
        std::fs::write(old_dir.join(name), patch).unwrap();
        let mut kernel = old.clone();
        match *tag {
            "offset" => {
                for k in 0..5 {
                    kernel.insert(0, format!("/* upstream {k} */\n"));
                }
            }
            "fuzz" => kernel[17] = "\t/* context changed upstream */\n".into(),
            "upstream" => kernel = new.clone(),
            "conflict" => kernel[20] = "\t/* the deleted line changed upstream */\n".into(),
            _ => {}
        }
        std::fs::write(newk.join(&path), kernel.concat()).unwrap();
    }
    Fx {
        _dir: dir,
        root,
        newk,
    }
}

fn gnu_class(sh: &Shell, tree: &Path, patch: &Path) -> Class {
    let out = cmd!(sh, "patch -p1 -N --dry-run --fuzz=2 -d {tree} -i {patch}")
        .ignore_status()
        .read()
        .unwrap();
    if out.contains("FAILED") {
        Class::Conflict
    } else if out.contains("Reversed (or previously applied)") {
        Class::Upstream
    } else if out.contains("with fuzz") {
        Class::Fuzz
    } else if out.contains("(offset") {
        Class::Offset
    } else {
        Class::Clean
    }
}

fn opts(fx: &Fx, keep_going: bool) -> RebaseOptions {
    RebaseOptions {
        from: "6.6".into(),
        to: "6.12".into(),
        target: None,
        kernel_src: Some(fx.newk.clone()),
        fuzz: 2,
        keep_going,
    }
}

fn new_dir(fx: &Fx) -> PathBuf {
    fx.root.join("patches/generic/pending-6.12")
}

#[test]
fn classes_agree_with_gnu_patch_then_skip() {
    let sh = Shell::new().unwrap();
    let fx = fixture();
    let layout = Layout::new(&fx.root);
    let out = rebase::run(&sh, &layout, &opts(&fx, false), Action::Start).unwrap();
    assert_eq!(
        out.state.stopped_at.as_deref(),
        Some("generic/pending-6.12/500-conflict.patch")
    );
    for r in &out.state.results {
        let file = fx
            .root
            .join("patches/generic/pending-6.6")
            .join(Path::new(&r.name).file_name().unwrap());
        assert_eq!(r.class, gnu_class(&sh, &fx.newk, &file), "{}", r.name);
    }
    let classes: Vec<Class> = out.state.results.iter().map(|r| r.class).collect();
    assert_eq!(
        classes,
        [
            Class::Clean,
            Class::Offset,
            Class::Fuzz,
            Class::Upstream,
            Class::Conflict
        ]
    );
    assert!(!new_dir(&fx).join("400-upstream.patch").exists());
    assert!(out.tree.join("drivers/conflict.c.rej").exists());
    // The refreshed fuzz patch applies to the new tree with no fuzz.
    assert_eq!(
        gnu_class(&sh, &fx.newk, &new_dir(&fx).join("300-fuzz.patch")),
        Class::Clean
    );
    assert_eq!(
        gnu_class(&sh, &fx.newk, &new_dir(&fx).join("200-offset.patch")),
        Class::Clean
    );
    let table = rebase::table(&out.state, &out.tree);
    assert!(table.contains("stopped at"), "{table}");

    let out = rebase::run(&sh, &layout, &opts(&fx, false), Action::Skip).unwrap();
    assert_eq!(out.state.stopped_at, None);
    assert_eq!(out.state.results.last().unwrap().class, Class::Clean);
    assert!(!new_dir(&fx).join("500-conflict.patch").exists());
    assert!(!out.tree.join("drivers/conflict.c.rej").exists());
    let json: serde_json::Value =
        serde_json::from_str(&rebase::json(&out.state, &out.tree)).unwrap();
    assert_eq!(json["counts"]["clean"], 2);
    assert_eq!(json["counts"]["upstream"], 1);
}

#[test]
fn continue_refreshes_the_fixed_patch() {
    let sh = Shell::new().unwrap();
    let fx = fixture();
    let layout = Layout::new(&fx.root);
    let out = rebase::run(&sh, &layout, &opts(&fx, false), Action::Start).unwrap();
    let file = out.tree.join("drivers/conflict.c");
    let base = std::fs::read_to_string(fx.newk.join("drivers/conflict.c")).unwrap();
    let fixed = base.replace(
        "\tconflict_stmt_22();\n",
        "\tconflict_stmt_22();\n\tconflict_added();\n",
    );
    std::fs::write(&file, &fixed).unwrap();
    let out = rebase::run(&sh, &layout, &opts(&fx, false), Action::Continue).unwrap();
    assert_eq!(out.state.stopped_at, None);
    let want = "From: Dev <dev@example.org>\nSubject: [PATCH] conflict\n\n---\n".to_string()
        + &gnu_diff(&sh, &fx.root, "drivers/conflict.c", &base, &fixed);
    assert_eq!(
        std::fs::read_to_string(new_dir(&fx).join("500-conflict.patch")).unwrap(),
        want
    );
    assert_eq!(out.state.results.len(), NAMES.len());
}

#[test]
fn abort_restores_the_start() {
    let sh = Shell::new().unwrap();
    let fx = fixture();
    let layout = Layout::new(&fx.root);
    // A new directory that existed before, with a patch of its own.
    std::fs::create_dir_all(new_dir(&fx)).unwrap();
    let own = "--- /dev/null\n+++ b/drivers/own.c\n@@ -0,0 +1 @@\n+own\n";
    std::fs::write(new_dir(&fx).join("050-own.patch"), own).unwrap();
    rebase::run(&sh, &layout, &opts(&fx, false), Action::Start).unwrap_err_or_stop();
    rebase::run(&sh, &layout, &opts(&fx, false), Action::Abort).unwrap();
    let left: Vec<_> = std::fs::read_dir(new_dir(&fx))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, vec![std::ffi::OsString::from("050-own.patch")]);
    assert_eq!(
        std::fs::read_to_string(new_dir(&fx).join("050-own.patch")).unwrap(),
        own
    );
    assert!(!rebase::rebase_dir(&layout, None, "6.6", "6.12").exists());
}

trait StopOk {
    fn unwrap_err_or_stop(self);
}
impl StopOk for anyhow::Result<rebase::RebaseOutcome> {
    fn unwrap_err_or_stop(self) {
        assert!(self.unwrap().state.stopped_at.is_some());
    }
}

#[test]
fn keep_going_classifies_everything() {
    let sh = Shell::new().unwrap();
    let fx = fixture();
    let layout = Layout::new(&fx.root);
    let out = rebase::run(&sh, &layout, &opts(&fx, true), Action::Start).unwrap();
    assert_eq!(out.state.stopped_at, None);
    let classes: Vec<Class> = out.state.results.iter().map(|r| r.class).collect();
    assert_eq!(
        classes,
        [
            Class::Clean,
            Class::Offset,
            Class::Fuzz,
            Class::Upstream,
            Class::Conflict,
            Class::Clean
        ]
    );
    let conflict = &out.state.results[4];
    let rej = std::fs::read_to_string(&conflict.rejects[0]).unwrap();
    assert!(rej.starts_with("--- drivers/conflict.c"), "{rej}");
    // Nothing of the conflicting patch is in the tree.
    assert_eq!(
        std::fs::read(out.tree.join("drivers/conflict.c")).unwrap(),
        std::fs::read(fx.newk.join("drivers/conflict.c")).unwrap()
    );
}

/// The files under `dir`, with their bytes.
fn files_under(dir: &Path) -> std::collections::BTreeMap<PathBuf, Vec<u8>> {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().is_file())
        .map(|e| (e.path().to_path_buf(), std::fs::read(e.path()).unwrap()))
        .collect()
}

const CHILD_ROOT: &str = "XTASK_REBASE_KILL_CHILD_ROOT";

/// The child half of `abort_restores_patches_after_a_kill_while_copying_the_tree`
/// (does nothing unless that test runs it): starts a rebase of the
/// fixture at `$XTASK_REBASE_KILL_CHILD_ROOT`, to be killed.
#[test]
#[ignore = "a helper: abort_restores_patches_after_a_kill_while_copying_the_tree runs it"]
fn child_starts_a_rebase_to_be_killed() {
    let Some(root) = std::env::var_os(CHILD_ROOT) else {
        return;
    };
    let root = PathBuf::from(root);
    let sh = Shell::new().unwrap();
    let opts = RebaseOptions {
        from: "6.6".into(),
        to: "6.12".into(),
        target: None,
        kernel_src: Some(root.join("linux-new")),
        fuzz: 2,
        keep_going: false,
    };
    let _ = rebase::run(&sh, &Layout::new(&root), &opts, Action::Start);
}

#[test]
fn abort_restores_patches_after_a_kill_while_copying_the_tree() {
    use std::os::unix::process::CommandExt;
    use std::time::{Duration, Instant};
    let fx = fixture();
    let layout = Layout::new(&fx.root);
    // A kernel big enough for the copy to take a while.
    for i in 0..6000 {
        let f = fx.newk.join(format!("bulk/d{}/f{i}.c", i % 60));
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(f, format!("int f{i};\n")).unwrap();
    }
    std::fs::create_dir_all(new_dir(&fx)).unwrap();
    let own = "--- /dev/null\n+++ b/drivers/own.c\n@@ -0,0 +1 @@\n+own\n";
    std::fs::write(new_dir(&fx).join("050-own.patch"), own).unwrap();
    let patches = fx.root.join("patches");
    let before = files_under(&patches);

    let rebase_dir = rebase::rebase_dir(&layout, None, "6.6", "6.12");
    let copying = rebase_dir.join("linux.copying");
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            crate::common::helper_name(module_path!(), "child_starts_a_rebase_to_be_killed")
                .as_str(),
            "--exact",
            "--ignored",
            "--test-threads=1",
        ])
        .env(CHILD_ROOT, &fx.root)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .process_group(0)
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !copying.exists() && Instant::now() < deadline {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the rebase ended before it copied its tree"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    let group = format!("-{}", child.id());
    let sh = Shell::new().unwrap();
    cmd!(sh, "kill -9 -- {group}").quiet().run().unwrap();
    child.wait().unwrap();
    assert!(copying.exists(), "no copy under way within 60 s");
    assert!(
        !rebase_dir.join("linux").exists(),
        "killed too late: the tree was copied"
    );
    assert_ne!(
        files_under(&patches),
        before,
        "the old series should be in the new directory by now"
    );

    rebase::run(&sh, &layout, &opts(&fx, false), Action::Abort).unwrap();
    assert_eq!(files_under(&patches), before);
    assert!(!rebase_dir.exists());
}

/// A patch whose hunk matches the new kernel backwards exactly (the change
/// is there) and forwards only with fuzz, at another site: `patches push`
/// applies it as quilt does (`patch -f`, with a warning), but the rebase
/// still calls it upstream, as GNU patch without `-f` does.
#[test]
fn reversed_looking_patch_is_upstream_though_push_would_apply_it() {
    let sh = Shell::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let block = |first: &str, last: &str| {
        format!("{first}\n\ttwo();\n\tthree();\n\tfour();\n\tfive();\n{last}\n")
    };
    let old = block("\tone();", "\tsix();") + "}\n" + &block("\tone();", "\tsix();");
    let new = block("\tone();", "\tsix();")
        + "}\n"
        + &block("\tone();", "\tsix();").replace("\tthree();\n", "\tthree();\n\tX();\n");
    let old_dir = root.join("patches/generic/pending-6.6");
    std::fs::create_dir_all(&old_dir).unwrap();
    let patch = "Subject: add X\n\n".to_string() + &gnu_diff(&sh, root, "drivers/x.c", &old, &new);
    std::fs::write(old_dir.join("100-x.patch"), &patch).unwrap();
    // The new kernel has X in the second block and changed the first one's ends.
    let newk = root.join("linux-new");
    std::fs::create_dir_all(newk.join("drivers")).unwrap();
    std::fs::write(
        newk.join("Makefile"),
        "VERSION = 6\nPATCHLEVEL = 12\nSUBLEVEL = 0\nEXTRAVERSION =\n",
    )
    .unwrap();
    std::fs::write(newk.join("Kbuild"), "obj-y += drivers/\n").unwrap();
    let kernel = block("\tONE();", "\tSIX();")
        + "}\n"
        + &block("\tone();", "\tsix();").replace("\tthree();\n", "\tthree();\n\tX();\n");
    std::fs::write(newk.join("drivers/x.c"), &kernel).unwrap();
    let fx = Fx {
        _dir: tempfile::tempdir().unwrap(),
        root: root.to_path_buf(),
        newk: newk.clone(),
    };
    let gnu = gnu_class(&sh, &newk, &old_dir.join("100-x.patch"));
    assert_eq!(gnu, Class::Upstream);
    let forced = cmd!(
        sh,
        "patch -p1 -f --dry-run -d {newk} -i {old_dir}/100-x.patch"
    )
    .ignore_status()
    .read()
    .unwrap();
    assert!(forced.contains("with fuzz 1"), "{forced}");
    let layout = Layout::new(root);
    let out = rebase::run(&sh, &layout, &opts(&fx, false), Action::Start).unwrap();
    assert_eq!(out.state.results[0].class, Class::Upstream);
}

/// A conflict because a file the patch changes is gone from the new
/// kernel: the note says so in GNU patch's words, per file, never
/// "Hunk #1 FAILED at 0".
#[test]
fn conflict_note_names_missing_files_in_gnu_words() {
    let sh = Shell::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let old_dir = root.join("patches/generic/pending-6.6");
    std::fs::create_dir_all(&old_dir).unwrap();
    let kept = lines("kept", 20).concat();
    let gone = lines("gone", 20).concat();
    let patch = gnu_diff(
        &sh,
        root,
        "drivers/kept.c",
        &kept,
        &kept.replace("kept_stmt_5", "x"),
    ) + &gnu_diff(
        &sh,
        root,
        "drivers/gone.c",
        &gone,
        &gone.replace("gone_stmt_5", "x"),
    );
    std::fs::write(old_dir.join("100-two.patch"), &patch).unwrap();
    let newk = root.join("linux-new");
    std::fs::create_dir_all(newk.join("drivers")).unwrap();
    std::fs::write(
        newk.join("Makefile"),
        "VERSION = 6\nPATCHLEVEL = 12\nSUBLEVEL = 0\nEXTRAVERSION =\n",
    )
    .unwrap();
    std::fs::write(newk.join("Kbuild"), "obj-y += drivers/\n").unwrap();
    std::fs::write(newk.join("drivers/kept.c"), &kept).unwrap();
    let gnu = cmd!(
        sh,
        "patch -p1 -N --batch --dry-run -d {newk} -i {old_dir}/100-two.patch"
    )
    .ignore_status()
    .read()
    .unwrap();
    let fx = Fx {
        _dir: tempfile::tempdir().unwrap(),
        root: root.to_path_buf(),
        newk,
    };
    let layout = Layout::new(root);
    let out = rebase::run(&sh, &layout, &opts(&fx, true), Action::Start).unwrap();
    let r = &out.state.results[0];
    assert_eq!(r.class, Class::Conflict);
    for words in [
        "can't find file to patch at input line",
        "No file to patch.  Skipping patch.",
        "1 out of 1 hunk ignored",
    ] {
        assert!(gnu.contains(words), "GNU: {gnu}");
        assert!(r.note.contains(words), "{}", r.note);
    }
    assert!(r.note.starts_with("drivers/gone.c: "), "{}", r.note);
    assert!(!r.note.contains("FAILED"), "{}", r.note);
}
