//! The rebase classifier's `upstream` for patches that still apply
//! forwards (bcm53xx's 6.7 backports, already in 6.12, still apply
//! forwards there): a patch whose change the new kernel already
//! has is upstream when it also applies in reverse, or when the lines it
//! adds are all there next to its context; and not when a line it adds
//! only appears in a neighbouring entry, or when a hunk that deletes
//! lines reverse-applies only with fuzz.
//!
//! Every patch is written by GNU `diff -u`, and GNU `patch --dry-run -N`
//! confirms it applies forwards to the new tree (so a classifier that only
//! asks "does it apply?" keeps it); for the upstream cases, applying it
//! with GNU patch duplicates lines the tree already has.

use std::path::Path;

use xshell::{cmd, Shell};
use xtask::patches::rebase::{self, Action, Class, RebaseOptions};
use xtask::util::layout::Layout;

/// A workspace whose `patches/generic/pending-6.6/100-x.patch` is the
/// patch GNU diff writes from `old` to `new` for `drivers/x.c`, and a new
/// kernel tree whose `drivers/x.c` is `kernel`.
struct Case {
    dir: tempfile::TempDir,
    tree: std::path::PathBuf,
    patch: std::path::PathBuf,
}

fn case(old: &str, new: &str, kernel: &str) -> Case {
    let sh = Shell::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("old"), dir.path().join("new"));
    std::fs::write(&a, old).unwrap();
    std::fs::write(&b, new).unwrap();
    let diff = cmd!(
        sh,
        "diff -u --label a/drivers/x.c --label b/drivers/x.c {a} {b}"
    )
    .ignore_status()
    .read()
    .unwrap();
    let old_dir = dir.path().join("patches/generic/pending-6.6");
    std::fs::create_dir_all(&old_dir).unwrap();
    let patch = old_dir.join("100-x.patch");
    std::fs::write(&patch, format!("Subject: x\n\n---\n{diff}\n")).unwrap();
    let tree = dir.path().join("linux-new");
    std::fs::create_dir_all(tree.join("drivers")).unwrap();
    std::fs::write(
        tree.join("Makefile"),
        "VERSION = 6\nPATCHLEVEL = 12\nSUBLEVEL = 0\nEXTRAVERSION =\n",
    )
    .unwrap();
    std::fs::write(tree.join("Kbuild"), "obj-y += drivers/\n").unwrap();
    std::fs::write(tree.join("drivers/x.c"), kernel).unwrap();
    Case { dir, tree, patch }
}

/// GNU patch's dry run, forwards, never treating the patch as reversed.
fn gnu_applies(tree: &Path, patch: &Path) -> String {
    let sh = Shell::new().unwrap();
    let out = cmd!(sh, "patch -p1 -N -F2 --dry-run -d {tree} -i {patch}")
        .quiet()
        .ignore_status()
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "GNU patch should apply it forwards: {said}"
    );
    said
}

/// The class `patches rebase --from 6.6 --to 6.12` gives the patch (GNU's
/// fuzz 2, as OpenWrt applies), and which of `reasons` its note names.
fn class_of(c: &Case) -> (Class, Option<&'static str>) {
    let sh = Shell::new().unwrap();
    let opts = RebaseOptions {
        from: "6.6".into(),
        to: "6.12".into(),
        target: None,
        kernel_src: Some(c.tree.clone()),
        fuzz: 2,
        keep_going: true,
    };
    let out = rebase::run(&sh, &Layout::new(c.dir.path()), &opts, Action::Start).unwrap();
    let r = &out.state.results[0];
    let why = [BOTH_WAYS, ADDED_LINES_THERE, "applies in reverse:"]
        .into_iter()
        .find(|n| r.note.contains(n));
    (r.class, why)
}

/// The reasons an upstream patch's note gives.
const BOTH_WAYS: &str = "applies both ways";
const ADDED_LINES_THERE: &str = "every line it adds is already there";

fn node(name: &str, body: &[&str]) -> String {
    let mut s = format!("\t\t{name} {{\n");
    for l in body {
        s.push_str(&format!("\t\t\t{l}\n"));
    }
    s.push_str("\t\t};\n");
    s
}

/// The shape of bcm53xx's 030-v6.7-0006 on Linux 6.12: the hunk matches
/// forwards at a second site whose context upstream left unchanged, and
/// in reverse at the site upstream changed.
#[test]
fn a_patch_that_applies_both_ways_is_upstream() {
    let block =
        |x: &str| format!("\tone();\n\ttwo();\n\tthree();\n{x}\tfour();\n\tfive();\n\tsix();\n");
    let old = block("") + "}\n";
    let new = block("\tX();\n") + "}\n";
    // Upstream has X in the first copy; a second copy kept the old text.
    let kernel = block("\tX();\n") + "}\n\n" + &block("") + "}\n";
    let c = case(&old, &new, &kernel);
    let gnu = gnu_applies(&c.tree, &c.patch);
    assert!(gnu.contains("offset"), "{gnu}");
    assert_eq!(class_of(&c), (Class::Upstream, Some(BOTH_WAYS)));
}

/// The shape of bcm53xx's 030-v6.7-0005 on the Netgear R8000 in 6.12:
/// it adds two disabled port nodes before `port@8`; upstream added them
/// with more lines inside (0006's fixed-link), so the patch neither
/// reverse-applies nor fails: with fuzz 1 it would add the nodes again.
#[test]
fn a_patch_whose_added_lines_are_all_there_is_upstream() {
    let head =
        node("port@3", &["label = \"lan\";"]) + "\n" + &node("port@4", &["label = \"wan\";"]);
    let cpu = node("port@8", &["label = \"cpu\";"]);
    let disabled = |n: &str| node(n, &["status = \"disabled\";"]);
    let old = format!("{head}\n{cpu}\t}};\n}};\n");
    let new = format!(
        "{head}\n{}\n{}\n{cpu}\t}};\n}};\n",
        disabled("port@5"),
        disabled("port@7")
    );
    let fixed = |n: &str| {
        node(
            n,
            &[
                "status = \"disabled\";",
                "",
                "fixed-link {",
                "\tspeed = <1000>;",
                "\tfull-duplex;",
                "};",
            ],
        )
        .replace("\t\t\t\n", "\n")
    };
    let kernel = format!(
        "{}\n{}\n{}\n{cpu}\t}};\n}};\n",
        head.replace("port@3", "port@2"),
        fixed("port@5"),
        fixed("port@7")
    );
    let c = case(&old, &new, &kernel);
    let gnu = gnu_applies(&c.tree, &c.patch);
    assert!(gnu.contains("fuzz"), "{gnu}");
    assert_eq!(class_of(&c), (Class::Upstream, Some(ADDED_LINES_THERE)));
}

/// OpenWrt's 498-mtd-spi-nor-locking-support-for-MX25L6405D on 6.12: the
/// line it adds is in the next table entry, past the hunk's own context.
/// Not upstream.
#[test]
fn an_added_line_of_a_neighbouring_entry_does_not_count() {
    let entry = |id: u32, flags: bool| {
        format!(
            "\t{{\n\t\t.id = {id:#x},\n\t\t.name = \"chip{id}\",\n\t\t.size = {},\n{}\t\t.no_sfdp_flags = SECT_4K,\n\t}},\n",
            id * 2,
            if flags { "\t\t.flags = SPI_NOR_HAS_LOCK,\n" } else { "" }
        )
    };
    let table = |third: bool| {
        entry(1, false) + &entry(2, false) + &entry(3, third) + &entry(4, true) + &entry(5, false)
    };
    let c = case(&table(false), &table(true), &table(false));
    let gnu = gnu_applies(&c.tree, &c.patch);
    assert!(!gnu.contains("offset") && !gnu.contains("fuzz"), "{gnu}");
    assert_eq!(class_of(&c), (Class::Clean, None));
}

/// OpenWrt's 781-21-v6.16-net-phy-realtek-remove-unsed-RTL821x_PHYSR-macros
/// on 6.12: a hunk that only deletes lines reverse-applies with fuzz 2
/// (its outer context lines meet once the deleted lines are skipped), but
/// the lines are still there. Not upstream.
#[test]
fn a_deletion_that_reverse_applies_only_with_fuzz_is_not_upstream() {
    let old = "#include <a.h>\n\n#include \"realtek.h\"\n\n#define PHYSR 0x11\n#define PHYSR_DUPLEX BIT(13)\n\n#define INER 0x12\n#define INER_INIT 0x6400\n#define INER_LINK BIT(10)\n";
    let new = old.replace("#define PHYSR 0x11\n#define PHYSR_DUPLEX BIT(13)\n\n", "");
    let c = case(old, &new, old);
    gnu_applies(&c.tree, &c.patch);
    let sh = Shell::new().unwrap();
    let (tree, patch) = (&c.tree, &c.patch);
    let reverse = cmd!(sh, "patch -p1 -R -f -F2 --dry-run -d {tree} -i {patch}")
        .quiet()
        .ignore_status()
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&reverse.stdout);
    assert!(
        reverse.status.success() && said.contains("with fuzz"),
        "GNU patch also reverse-applies it, with fuzz: {said}"
    );
    assert_eq!(class_of(&c), (Class::Clean, None));
}
