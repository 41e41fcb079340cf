//! `patches export` (and import) on a generated OpenWrt checkout: OpenWrt's
//! own patches survive an export unless `--prune` is given, and
//! `--dry-run` prints the plan and writes nothing.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use xtask::patches::openwrt_sync::{self, FileAction, Prune, SyncDirection, SyncOptions, Write};

fn patch(tag: &str) -> String {
    format!("Subject: {tag}\n\n--- a/{tag}.c\n+++ b/{tag}.c\n@@ -1 +1 @@\n-old\n+{tag}\n")
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

struct Fx {
    _dir: tempfile::TempDir,
    openwrt: PathBuf,
    patches: PathBuf,
}

/// OpenWrt has a (same as ours), b (different), its own c..f and a README;
/// we have a, b and a new patch.
fn fixture() -> Fx {
    let dir = tempfile::tempdir().unwrap();
    let openwrt = dir.path().join("openwrt");
    let ow = openwrt.join("target/linux/generic/pending-6.6");
    for tag in ["100-a", "120-c", "130-d", "140-e", "150-f"] {
        write(&ow.join(format!("{tag}.patch")), &patch(tag));
    }
    write(&ow.join("110-b.patch"), &patch("b-old"));
    write(&ow.join("README"), "not a patch\n");
    let patches = dir.path().join("patches");
    let ours = patches.join("generic/pending-6.6");
    write(&ours.join("100-a.patch"), &patch("100-a"));
    write(&ours.join("110-b.patch"), &patch("b-new"));
    write(&ours.join("200-new.patch"), &patch("new"));
    Fx {
        _dir: dir,
        openwrt,
        patches,
    }
}

/// Every file under `dir`: bytes and mtime.
fn state(dir: &Path) -> BTreeMap<PathBuf, (Vec<u8>, SystemTime)> {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().is_file())
        .map(|e| {
            let p = e.path().to_path_buf();
            let bytes = std::fs::read(&p).unwrap();
            let mtime = e.metadata().unwrap().modified().unwrap();
            (p, (bytes, mtime))
        })
        .collect()
}

fn export(fx: &Fx, options: SyncOptions) -> Vec<openwrt_sync::DirSync> {
    openwrt_sync::sync(
        &fx.openwrt,
        &fx.patches,
        &[],
        "6.6",
        SyncDirection::Export,
        options,
    )
    .unwrap()
}

fn names(plan: &[(FileAction, PathBuf)], action: FileAction) -> Vec<String> {
    plan.iter()
        .filter(|(a, _)| *a == action)
        .map(|(_, p)| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect()
}

#[test]
fn export_keeps_openwrts_own_patches_unless_pruned() {
    let fx = fixture();
    let ow = fx.openwrt.join("target/linux/generic/pending-6.6");
    let done = export(&fx, SyncOptions::default());
    assert_eq!(done.len(), 1);
    let d = &done[0];
    assert_eq!(
        (d.added, d.changed, d.removed, d.kept, d.unchanged),
        (1, 1, 0, 4, 1)
    );
    for tag in ["120-c", "130-d", "140-e", "150-f"] {
        assert_eq!(
            std::fs::read_to_string(ow.join(format!("{tag}.patch"))).unwrap(),
            patch(tag),
            "{tag} was touched"
        );
    }
    assert_eq!(
        std::fs::read_to_string(ow.join("110-b.patch")).unwrap(),
        patch("b-new")
    );
    assert!(ow.join("200-new.patch").is_file());
    let text = openwrt_sync::render(&done, SyncOptions::default());
    assert!(
        text.contains("4 kept (not in the source; --prune removes them)"),
        "{text}"
    );
    assert!(text.contains("130-d.patch"), "{text}");

    let pruned = SyncOptions {
        prune: Prune::Remove,
        ..SyncOptions::default()
    };
    let done = export(&fx, pruned);
    assert_eq!(
        names(&done[0].plan, FileAction::Remove),
        ["120-c.patch", "130-d.patch", "140-e.patch", "150-f.patch"]
    );
    let mut left: Vec<_> = std::fs::read_dir(&ow)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(
        left,
        ["100-a.patch", "110-b.patch", "200-new.patch", "README"]
    );
}

#[test]
fn dry_run_prints_the_plan_and_writes_nothing() {
    let fx = fixture();
    let before = state(&fx.openwrt);
    let options = SyncOptions {
        prune: Prune::Remove,
        write: Write::DryRun,
    };
    let done = export(&fx, options);
    assert_eq!(state(&fx.openwrt), before, "a dry run wrote");
    let plan = &done[0].plan;
    assert_eq!(names(plan, FileAction::Add), ["200-new.patch"]);
    assert_eq!(names(plan, FileAction::Change), ["110-b.patch"]);
    assert_eq!(names(plan, FileAction::Remove).len(), 4);
    let text = openwrt_sync::render(&done, options);
    let ow = fx.openwrt.join("target/linux/generic/pending-6.6");
    for line in [
        format!("add    {}", ow.join("200-new.patch").display()),
        format!("change {}", ow.join("110-b.patch").display()),
        format!("remove {}", ow.join("150-f.patch").display()),
        "dry run: nothing was written".to_string(),
    ] {
        assert!(text.contains(&line), "{line:?} missing from:\n{text}");
    }
    // Without --prune the dry run lists them as kept.
    let done = export(
        &fx,
        SyncOptions {
            prune: Prune::Keep,
            write: Write::DryRun,
        },
    );
    assert_eq!(names(&done[0].plan, FileAction::Keep).len(), 4);
    assert_eq!(state(&fx.openwrt), before);
}

#[test]
fn the_cli_dry_run_writes_nothing() {
    let fx = fixture();
    let own = fx
        .openwrt
        .join("target/linux/generic/pending-6.12/999-openwrt-own.patch");
    write(&own, &patch("own"));
    let before = state(&fx.openwrt);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args([
            "patches",
            "export",
            "--kernel",
            "6.12",
            "--dry-run",
            "--openwrt",
        ])
        .arg(&fx.openwrt)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains(&format!("keep   {}", own.display())),
        "{stdout}"
    );
    assert!(stdout.contains("dry run: nothing was written"), "{stdout}");
    assert_eq!(state(&fx.openwrt), before);
}
