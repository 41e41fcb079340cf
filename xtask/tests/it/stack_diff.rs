//! Differential test: `diff::unified` against GNU `diff -u -p` on
//! generated texts full of repeated lines (braces, blank lines, `return 0;`),
//! where many edit scripts are equally short and only GNU's own choice
//! (prefix/suffix horizon, discarded lines, middle snake, boundary shifts)
//! gives the same bytes. Expected output comes from `/usr/bin/diff`.

use xshell::{cmd, Shell};
use xtask::patches::diff::unified;

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

const POOL: &[&str] = &[
    "{\n",
    "}\n",
    "\n",
    "\treturn 0;\n",
    "\tint ret;\n",
    "\tif (ret)\n",
    "\t\tgoto out;\n",
    "out:\n",
    "static int probe(struct device *dev)\n",
    "\tbreak;\n",
    "#endif\n",
    "   \n",
];

fn text(rng: &mut Rng, lines: usize, unique: usize) -> Vec<String> {
    (0..lines)
        .map(|i| {
            if rng.below(100) < unique {
                format!("\tline_{}_{i}();\n", rng.below(1000))
            } else {
                POOL[rng.below(POOL.len())].to_string()
            }
        })
        .collect()
}

fn edit(rng: &mut Rng, a: &[String], edits: usize, unique: usize) -> Vec<String> {
    let mut b = a.to_vec();
    for _ in 0..edits {
        let at = rng.below(b.len() + 1);
        match rng.below(3) {
            0 => {
                let n = 1 + rng.below(4);
                let ins = text(rng, n, unique);
                for (k, l) in ins.into_iter().enumerate() {
                    b.insert(at + k, l);
                }
            }
            1 if at < b.len() => {
                let n = (1 + rng.below(4)).min(b.len() - at);
                b.drain(at..at + n);
            }
            _ if at < b.len() => {
                b[at] = text(rng, 1, unique).remove(0);
            }
            _ => {}
        }
    }
    b
}

fn check(sh: &Shell, dir: &std::path::Path, name: &str, old: &[u8], new: &[u8]) {
    let (pa, pb) = (dir.join("old"), dir.join("new"));
    std::fs::write(&pa, old).unwrap();
    std::fs::write(&pb, new).unwrap();
    let gnu = cmd!(sh, "diff -u -p --label a/F --label b/F {pa} {pb}")
        .ignore_status()
        .output()
        .unwrap()
        .stdout;
    let ours = unified("a/F", "b/F", old, new);
    if ours != gnu {
        let keep = std::env::temp_dir().join(format!("stack-diff-{name}"));
        std::fs::create_dir_all(&keep).unwrap();
        std::fs::write(keep.join("old"), old).unwrap();
        std::fs::write(keep.join("new"), new).unwrap();
        std::fs::write(keep.join("gnu.diff"), &gnu).unwrap();
        std::fs::write(keep.join("ours.diff"), &ours).unwrap();
        panic!(
            "{name}: differs from GNU diff; inputs kept in {}",
            keep.display()
        );
    }
}

#[test]
fn small_files_with_repeated_lines() {
    let sh = Shell::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    for seed in 0..400u64 {
        let mut rng = Rng(seed * 7919 + 1);
        let len = 1 + rng.below(60);
        let a = text(&mut rng, len, 20);
        let edits = 1 + rng.below(6);
        let b = edit(&mut rng, &a, edits, 20);
        let (mut old, mut new) = (a.concat(), b.concat());
        if seed % 7 == 0 {
            old.pop();
        }
        if seed % 5 == 0 {
            new.pop();
        }
        check(
            &sh,
            dir.path(),
            &format!("small-{seed}"),
            old.as_bytes(),
            new.as_bytes(),
        );
    }
}

/// Large regions: GNU's "provisional discard" thresholds grow with the
/// region length, so these take other branches than the small files.
#[test]
fn large_files_with_repeated_lines() {
    let sh = Shell::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    for seed in 0..40u64 {
        let mut rng = Rng(seed * 104729 + 3);
        let len = 300 + rng.below(3000);
        let unique = rng.below(60);
        let a = text(&mut rng, len, unique);
        let edits = 1 + rng.below(80);
        let b = edit(&mut rng, &a, edits, unique);
        check(
            &sh,
            dir.path(),
            &format!("large-{seed}"),
            a.concat().as_bytes(),
            b.concat().as_bytes(),
        );
    }
}

#[test]
fn creation_and_deletion() {
    let sh = Shell::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    check(&sh, dir.path(), "create", b"", b"a\nb\n");
    check(&sh, dir.path(), "delete", b"a\nb\n", b"");
    check(&sh, dir.path(), "newline", b"a\nb", b"a\nb\n");
}
