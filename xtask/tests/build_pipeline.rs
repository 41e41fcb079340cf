//! The build pipeline around the backends, on small fixture trees: the
//! series order, the all-or-nothing patched tree, and result.json never
//! surviving a failed build.

use std::path::Path;

use xshell::Shell;
use xtask::build::{self, Backend, BuildOptions, Built, Job};
use xtask::kernel_src::PristineTree;
use xtask::paths::Layout;
use xtask::results;
use xtask::targets::Target;
use xtask::variants::Variant;
use xtask::{patched_tree, series};

const MAKEFILE: &str = "VERSION = 6\nPATCHLEVEL = 12\nSUBLEVEL = 0\nEXTRAVERSION =\n\nifdef CONFIG_CC_OPTIMIZE_FOR_PERFORMANCE\nKBUILD_CFLAGS += -O2\nelse ifdef CONFIG_CC_OPTIMIZE_FOR_SIZE\nKBUILD_CFLAGS += -Os\nendif\n";

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A project with targets/, patches/ and a fake kernel tree.
fn project() -> (tempfile::TempDir, Layout, Target, Variant) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    let root = root.as_path();
    write(
        &root.join("targets/t.toml"),
        "openwrt = \"ramips/mt7621\"\nsoc = \"S\"\ncpu = \"c\"\narch = \"mips\"\ncross_compile = \"mipsel-linux-gnu-\"\ncompiler_package = \"p\"\nkernel = \"6.12\"\nartifacts = [\"vmlinux\"]\n[kconfig]\nbase = \"allnoconfig\"\n",
    );
    write(&root.join("linux/Makefile"), MAKEFILE);
    write(
        &root.join("linux/a.c"),
        "one\ntwo\nthree\nfour\nfive\nsix\nseven\n",
    );
    let target = Target::load(&root.join("targets/t.toml")).unwrap();
    let variant = Variant {
        name: "v".into(),
        description: String::new(),
        os_flags: "-Os -fno-tree-ch".into(),
        o2_flags: "-O2".into(),
        patches: vec![],
        kconfig: vec![],
    };
    (dir, Layout::new(root), target, variant)
}

fn patch_a(from: &str, to: &str) -> String {
    format!("Subject: change a.c\n\n--- a/a.c\n+++ b/a.c\n@@ -2,3 +2,3 @@\n two\n-{from}\n+{to}\n four\n")
}

#[test]
fn series_is_in_openwrt_order_with_the_generated_flag_patch() {
    let (dir, layout, target, variant) = project();
    let p = layout.patches_dir();
    write(&p.join("ramips/patches-6.12/100-target.patch"), "x");
    write(&p.join("generic/hack-6.12/300-hack.patch"), "x");
    write(&p.join("generic/backport-6.12/050-backport.patch"), "x");
    write(&p.join("generic/pending-6.12/100-first.patch"), "x");
    write(&p.join("generic/pending-6.12/300-later.patch"), "x");
    write(&p.join("generic/pending-6.12/README"), "not a patch");
    write(&p.join("generic/pending-6.1/100-other-kernel.patch"), "x");
    let names: Vec<String> = series::collect(&p, &target, &variant, "6.12", MAKEFILE)
        .unwrap()
        .into_iter()
        .map(|s| s.name)
        .collect();
    assert_eq!(
        names,
        [
            "generic/backport-6.12/050-backport.patch",
            "generic/pending-6.12/100-first.patch",
            "generic/pending-6.12/201-extra_optimization.patch",
            "generic/pending-6.12/300-later.patch",
            "generic/hack-6.12/300-hack.patch",
            "ramips/patches-6.12/100-target.patch",
        ]
    );
    drop(dir);
}

fn pristine(layout: &Layout) -> PristineTree {
    PristineTree {
        dir: layout.root().join("linux"),
        version: "6.12.0".into(),
        tarball_sha256: Some("00".repeat(32)),
        origin: layout.root().join("linux.tar"),
    }
}

#[test]
fn patched_tree_has_every_patch_and_leaves_the_pristine_tree_alone() {
    let (_dir, layout, target, variant) = project();
    write(
        &layout
            .patches_dir()
            .join("generic/pending-6.12/100-a.patch"),
        &patch_a("three", "THREE"),
    );
    let sh = Shell::new().unwrap();
    let series =
        series::collect(&layout.patches_dir(), &target, &variant, "6.12", MAKEFILE).unwrap();
    let tree = patched_tree::prepare(&sh, &layout, &pristine(&layout), &series).unwrap();
    let a = std::fs::read_to_string(tree.dir.join("a.c")).unwrap();
    assert!(a.contains("THREE\n"));
    let mk = std::fs::read_to_string(tree.dir.join("Makefile")).unwrap();
    assert!(mk.contains("KBUILD_CFLAGS += -Os -fno-tree-ch $(EXTRA_OPTIMIZATION)"));
    assert_eq!(
        std::fs::read_to_string(layout.root().join("linux/a.c")).unwrap(),
        "one\ntwo\nthree\nfour\nfive\nsix\nseven\n"
    );
    assert_eq!(
        std::fs::read_to_string(layout.root().join("linux/Makefile")).unwrap(),
        MAKEFILE
    );
    assert_eq!(tree.patches.len(), 2);
}

#[test]
fn a_failing_patch_names_itself_and_keeps_no_tree() {
    let (_dir, layout, target, variant) = project();
    let p = layout.patches_dir().join("generic/pending-6.12");
    write(&p.join("100-a.patch"), &patch_a("three", "THREE"));
    write(&p.join("110-b.patch"), &patch_a("nothing-like-this", "x"));
    let sh = Shell::new().unwrap();
    let series =
        series::collect(&layout.patches_dir(), &target, &variant, "6.12", MAKEFILE).unwrap();
    let err = format!(
        "{:#}",
        patched_tree::prepare(&sh, &layout, &pristine(&layout), &series).unwrap_err()
    );
    assert!(err.contains("110-b.patch"), "{err}");
    assert!(err.contains("Hunk #1 FAILED at 2"), "{err}");
    let left: Vec<_> = std::fs::read_dir(layout.patched_src_dir())
        .unwrap()
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[test]
fn a_patch_escaping_the_tree_is_refused() {
    let (_dir, layout, target, variant) = project();
    write(
        &layout
            .patches_dir()
            .join("generic/pending-6.12/100-evil.patch"),
        "--- a/../outside\n+++ b/../outside\n@@ -0,0 +1 @@\n+x\n",
    );
    let sh = Shell::new().unwrap();
    let series =
        series::collect(&layout.patches_dir(), &target, &variant, "6.12", MAKEFILE).unwrap();
    let err = format!(
        "{:#}",
        patched_tree::prepare(&sh, &layout, &pristine(&layout), &series).unwrap_err()
    );
    assert!(err.contains("100-evil.patch"), "{err}");
    assert!(!layout.patched_src_dir().join("outside").exists());
    assert!(!layout.root().join("outside").exists());
}

struct FailingBackend;

impl Backend for FailingBackend {
    fn name(&self) -> &'static str {
        "failing"
    }
    fn preflight(&self, _: &Shell, _: &[Job]) -> anyhow::Result<()> {
        Ok(())
    }
    fn build(&self, _: &Shell, _: &Job, _: BuildOptions, log: &Path) -> anyhow::Result<Built> {
        std::fs::write(log, "make: *** [vmlinux] Error 2\n")?;
        anyhow::bail!("make failed")
    }
}

#[test]
fn a_failed_build_leaves_no_result_json_not_even_an_old_one() {
    let (_dir, layout, target, variant) = project();
    let results_dir = layout.results_dir(&target.name, &variant.name);
    write(&results_dir.join(results::FILE_NAME), "{\"old\": true}");
    write(
        &results_dir.join("vmlinux"),
        "stale artifact of an older build",
    );
    let sh = Shell::new().unwrap();
    let jobs = [Job { target, variant }];
    let options = BuildOptions {
        jobs: 1,
        verbose: false,
    };
    let err = build::run(&sh, &layout, &FailingBackend, &jobs, options).unwrap_err();
    assert!(format!("{err:#}").contains("building t/v"), "{err:#}");
    assert!(!results_dir.join(results::FILE_NAME).exists());
    assert!(!results_dir.join("vmlinux").exists());
    assert!(results_dir.join("build.log").is_file());
}

#[test]
fn staging_left_by_an_interrupted_run_is_removed() {
    let (_dir, layout, target, variant) = project();
    let stale = layout.patched_src_dir().join(".staging-interrupted/linux");
    write(&stale.join("a.c"), "half-patched");
    let sh = Shell::new().unwrap();
    let series =
        series::collect(&layout.patches_dir(), &target, &variant, "6.12", MAKEFILE).unwrap();
    patched_tree::prepare(&sh, &layout, &pristine(&layout), &series).unwrap();
    assert!(!layout
        .patched_src_dir()
        .join(".staging-interrupted")
        .exists());
}

/// The series is applied as OpenWrt's patch-kernel.sh applies it, `patch
/// -p1 -f` (here with no fuzz, as the build runs): a patch whose first
/// site already has the change goes to the next matching site instead of
/// stopping the build as "reversed", and an empty (0-byte) patch applies as
/// nothing. The patched tree must equal what GNU patch makes of the same
/// series on a copy of the pristine tree.
#[test]
fn series_applies_as_patch_f_does() {
    let (_dir, layout, target, variant) = project();
    let block = "\tone();\n\ttwo();\n\tthree();\n\tfour();\n\tfive();\n\tsix();\n";
    let upstream = block.replace("\tthree();\n", "\tthree();\n\tX();\n");
    write(
        &layout.root().join("linux/b.c"),
        &(upstream + "}\n" + block),
    );
    let p = layout.patches_dir().join("generic/pending-6.12");
    write(
        &p.join("100-x.patch"),
        "--- a/b.c\n+++ b/b.c\n@@ -1,6 +1,7 @@\n \tone();\n \ttwo();\n \tthree();\n+\tX();\n \tfour();\n \tfive();\n \tsix();\n",
    );
    write(&p.join("110-empty.patch"), "");
    write(&p.join("120-a.patch"), &patch_a("three", "THREE"));
    let sh = Shell::new().unwrap();
    let series =
        series::collect(&layout.patches_dir(), &target, &variant, "6.12", MAKEFILE).unwrap();
    let tree = patched_tree::prepare(&sh, &layout, &pristine(&layout), &series).unwrap();
    let gnu = layout.root().join("gnu");
    let linux = layout.root().join("linux");
    xshell::cmd!(sh, "cp -a {linux} {gnu}").run().unwrap();
    for patch in &series {
        let file = layout.root().join("one.patch");
        std::fs::write(&file, &patch.bytes).unwrap();
        xshell::cmd!(sh, "patch -d {gnu} -p1 -f -F0 -s -i {file}")
            .run()
            .unwrap();
    }
    for name in ["a.c", "b.c", "Makefile"] {
        assert_eq!(
            std::fs::read_to_string(tree.dir.join(name)).unwrap(),
            std::fs::read_to_string(gnu.join(name)).unwrap(),
            "{name}"
        );
    }
    assert_eq!(tree.patches.len(), 4);
}
