//! `cargo xtask bench patches`: push a generated series of real-sized
//! patches onto identical hard-linked copies of a real kernel tree with
//! this engine ([`Stack`]), a GNU `patch -p1` loop and `quilt push -a`,
//! check that the three trees are identical (`diff -r`), and print the
//! times and ratios of one run; then rebase the series onto a generated
//! "new kernel" (the same tree with upstream-like edits) and print the
//! time and class counts.
//!
//! The series: `--patches` patches (default 300), each changing 1–3 `.c`
//! files of the tree that no other patch touches, 2–5 hunks per file
//! (insertions, replacements, deletions of a few lines), written by
//! [`crate::patches::diff::unified`] with a mail-style header. The new
//! kernel differs per patch by its index mod 10: lines added at the top of
//! the patch's first file (offset), a context line of its first hunk
//! changed (fuzz), the patch itself applied (upstream), a line its first
//! hunk deletes changed (conflict), else nothing (clean).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use xshell::{cmd, Shell};

use crate::patches::engine::{apply_patch, parse_patch, ApplyOptions};
use crate::patches::rebase::{self, Action, RebaseOptions};
use crate::patches::stack::Stack;
use crate::util::fs::write_atomic;
use crate::util::layout::Layout;

/// `bench patches` options.
#[derive(Debug, Clone)]
pub struct BenchOptions {
    /// An unpacked kernel tree (never written; copied with hard links).
    /// `None`: the unpacked linux-source-6.12 under target/xtask/pristine/.
    pub kernel_src: Option<PathBuf>,
    /// Patches in the series.
    pub patches: usize,
    /// Seed of the generator.
    pub seed: u64,
    /// Skip the quilt run.
    pub no_quilt: bool,
    /// Skip the rebase run.
    pub no_rebase: bool,
}

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

fn default_tree(layout: &Layout) -> Result<PathBuf> {
    let pristine = layout.pristine_dir();
    if let Ok(rd) = std::fs::read_dir(&pristine) {
        for e in rd.flatten() {
            let t = e.path().join("linux-source-6.12");
            if t.join("Makefile").is_file() {
                return Ok(t);
            }
        }
    }
    bail!(
        "no unpacked linux-source-6.12 under {}; pass --kernel-src DIR",
        pristine.display()
    )
}

/// Candidate files: regular `.c` files of 4–80 KiB under drivers/, net/, fs/, sound/, in path order.
fn candidates(tree: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for top in ["drivers", "net", "fs", "sound"] {
        for e in walkdir::WalkDir::new(tree.join(top)).sort_by_file_name() {
            let e = e.with_context(|| format!("walking {}", tree.display()))?;
            let p = e.path();
            if e.file_type().is_file() && p.extension().is_some_and(|x| x == "c") {
                let len = e.metadata().map(|m| m.len()).unwrap_or(0);
                if (4096..80 * 1024).contains(&len) {
                    out.push(p.strip_prefix(tree).unwrap_or(p).to_path_buf());
                }
            }
        }
    }
    Ok(out)
}

/// One generated patch: name, bytes, its files' old and new contents.
struct Generated {
    name: String,
    bytes: Vec<u8>,
    files: Vec<(PathBuf, Vec<u8>, Vec<u8>)>,
}

fn edit_file(rng: &mut Rng, old: &[u8], tag: &str) -> Vec<u8> {
    let mut lines: Vec<Vec<u8>> = old
        .split_inclusive(|&b| b == b'\n')
        .map(<[u8]>::to_vec)
        .collect();
    let hunks = 2 + rng.below(4);
    let step = lines.len() / (hunks + 1);
    for h in (0..hunks).rev() {
        let at = (h + 1) * step + rng.below(step.max(1) / 2);
        let at = at.min(lines.len());
        match rng.below(3) {
            0 => {
                for k in 0..1 + rng.below(6) {
                    lines.insert(
                        at,
                        format!("\t/* {tag}: added line {h}.{k} */\n").into_bytes(),
                    );
                }
            }
            1 if at < lines.len() => {
                lines[at] = format!("\tpr_debug(\"{tag}: replaced {h}\\n\");\n").into_bytes();
            }
            _ => {
                let n = (1 + rng.below(3)).min(lines.len().saturating_sub(at));
                lines.drain(at..at + n);
            }
        }
    }
    lines.concat()
}

fn generate(tree: &Path, count: usize, seed: u64) -> Result<Vec<Generated>> {
    let files = candidates(tree)?;
    let mut rng = Rng(seed);
    let mut next = 0usize;
    let stride = (files.len() / (count * 3).max(1)).max(1);
    let mut out = Vec::new();
    for i in 0..count {
        let n = 1 + rng.below(3);
        let mut gen = Generated {
            name: format!("{:04}-bench-{i}.patch", 100 + i),
            bytes: format!(
                "From: Bench <bench@example.org>\nSubject: [PATCH] bench: change {i}\n\n\
                 Generated for `cargo xtask bench patches`.\n\nSigned-off-by: Bench <bench@example.org>\n---\n"
            )
            .into_bytes(),
            files: Vec::new(),
        };
        for _ in 0..n {
            let Some(rel) = files.get(next * stride) else {
                bail!(
                    "{}: not enough candidate files for {count} patches",
                    tree.display()
                );
            };
            next += 1;
            let old = crate::util::fs::read_bytes_limited(
                &tree.join(rel),
                crate::util::fs::FileLimit::binary("tree file"),
                "",
            )?;
            let new = edit_file(&mut rng, &old, &format!("bench {i}"));
            let p = rel.to_string_lossy();
            gen.bytes.extend_from_slice(&crate::patches::diff::unified(
                &format!("a/{p}"),
                &format!("b/{p}"),
                &old,
                &new,
            ));
            gen.files.push((rel.clone(), old, new));
        }
        out.push(gen);
    }
    Ok(out)
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

/// Runs the benchmark and prints its report.
///
/// Errors: no kernel tree, a push failing in any of the three tools, trees
/// that differ (the `diff -r` output is in the error), quilt/patch missing.
pub fn run(sh: &Shell, layout: &Layout, args: &BenchOptions) -> Result<()> {
    let src = match &args.kernel_src {
        Some(p) => p.clone(),
        None => default_tree(layout)?,
    };
    let scratch = layout.work_dir().join("bench-push");
    if scratch.exists() {
        std::fs::remove_dir_all(&scratch)
            .with_context(|| format!("removing {}", scratch.display()))?;
    }
    let t = Instant::now();
    let series = generate(&src, args.patches, args.seed)?;
    let patches = scratch.join("patches");
    let names = write_series(&patches, &series, t)?;
    let ours = scratch.join("ours");
    let gnu = scratch.join("gnu");
    let quilt = scratch.join("quilt");
    let bare = scratch.join("bare");
    for d in [&ours, &gnu, &quilt, &bare] {
        crate::util::fs::copy_tree(sh, &src, d, crate::util::fs::CopyKind::HardLinks)?;
    }
    warm_page_cache(&src, &patches, &series, &names);

    let t_bare = push_bare(&bare, &patches, &names)?;

    let stack = Stack::new(&ours, &patches, names.clone(), ApplyOptions::default());
    let t = Instant::now();
    while stack.push_next()?.is_some() {}
    let t_ours = t.elapsed();

    let t_gnu = push_gnu(sh, &gnu, &patches, &names)?;

    let home = scratch.join("home");
    std::fs::create_dir_all(&home).with_context(|| format!("creating {}", home.display()))?;
    let t_quilt = if args.no_quilt {
        None
    } else {
        Some(push_quilt(sh, &quilt, &patches, &home)?)
    };
    for (name, other) in [
        ("GNU patch", &gnu),
        ("quilt", &quilt),
        ("the bare engine", &bare),
    ] {
        if name == "quilt" && args.no_quilt {
            continue;
        }
        let out = cmd!(
            sh,
            "diff -r -q --no-dereference --exclude=.pc --exclude=.xtask-pc {ours} {other}"
        )
        .quiet()
        .ignore_status()
        .read()
        .context("diff -r")?;
        if !out.trim().is_empty() {
            bail!("the trees pushed by this engine and {name} differ:\n{out}");
        }
    }
    println!("trees identical (diff -r, state directories excluded)");
    println!("push {} patches:", names.len());
    println!(
        "  xtask push     {:8.3} s  (engine + pre-images + state, as quilt keeps .pc)",
        secs(t_ours)
    );
    println!(
        "  engine alone   {:8.3} s  (parse + apply, no state)",
        secs(t_bare)
    );
    println!(
        "  GNU patch loop {:8.3} s  ({:.1}× the engine's time)",
        secs(t_gnu),
        secs(t_gnu) / secs(t_ours)
    );
    if let Some(q) = t_quilt {
        println!(
            "  quilt push -a  {:8.3} s  ({:.1}× the engine's time)",
            secs(q),
            secs(q) / secs(t_ours)
        );
    }
    if !args.no_rebase {
        bench_rebase(sh, &scratch, &src, &series)?;
    }
    std::fs::remove_dir_all(&scratch).with_context(|| format!("removing {}", scratch.display()))?;
    Ok(())
}

/// Writes `series` as a quilt series under `patches`
/// (`generic/pending-6.6/<name>` and a `series` file), prints its size
/// and the time since `t` (the start of its generation), and returns the
/// patches' names as `series` lists them.
///
/// Errors: a file that cannot be written.
fn write_series(patches: &Path, series: &[Generated], t: Instant) -> Result<Vec<String>> {
    let dir = patches.join("generic").join("pending-6.6");
    let mut names = Vec::new();
    let mut series_file = String::new();
    let (mut total_bytes, mut total_files) = (0, 0);
    for g in series {
        write_atomic(&dir.join(&g.name), &g.bytes)?;
        names.push(format!("generic/pending-6.6/{}", g.name));
        series_file.push_str(&format!("generic/pending-6.6/{}\n", g.name));
        total_bytes += g.bytes.len();
        total_files += g.files.len();
    }
    write_atomic(&patches.join("series"), series_file.as_bytes())?;
    println!(
        "series: {} patches, {} files, {:.1} KiB of patches (avg {:.1} KiB), generated in {:.2} s",
        series.len(),
        total_files,
        total_bytes as f64 / 1024.0,
        total_bytes as f64 / 1024.0 / series.len().max(1) as f64,
        secs(t.elapsed())
    );
    Ok(names)
}

/// Warms the page cache the same way for all three tools (the copies of
/// `src` share inodes): reads every file of `src` that `series` touches
/// and every patch of `names` under `patches` once. A file that cannot be
/// read is skipped: the pushes report it.
fn warm_page_cache(src: &Path, patches: &Path, series: &[Generated], names: &[String]) {
    for g in series {
        for (rel, _, _) in &g.files {
            let _ = crate::util::fs::read_bytes_limited(
                &src.join(rel),
                crate::util::fs::FileLimit::binary("tree file"),
                "",
            );
        }
    }
    for n in names {
        let _ = crate::util::fs::read_bytes_limited(
            &patches.join(n),
            crate::util::fs::FileLimit::input("patch"),
            "",
        );
    }
}

/// Pushes the patches `names` (under `patches`) onto `bare` with the
/// engine alone (parse and apply, no state): the time it took.
///
/// Errors: a patch that cannot be read, parsed or applied (naming it).
fn push_bare(bare: &Path, patches: &Path, names: &[String]) -> Result<Duration> {
    let t = Instant::now();
    for n in names {
        let f = patches.join(n);
        let bytes = crate::util::fs::read_bytes_limited(
            &f,
            crate::util::fs::FileLimit::input("patch"),
            "",
        )?;
        let p = parse_patch(&bytes).map_err(|e| anyhow::anyhow!("{}: {e}", f.display()))?;
        apply_patch(bare, &p, &ApplyOptions::default())
            .map_err(|e| anyhow::anyhow!("{}: {e}", f.display()))?;
    }
    Ok(t.elapsed())
}

/// Pushes the patches `names` (under `patches`) onto `gnu` with a GNU
/// `patch -p1` loop: the time it took.
///
/// Errors: a patch GNU patch fails on (naming it), or no `patch`.
fn push_gnu(sh: &Shell, gnu: &Path, patches: &Path, names: &[String]) -> Result<Duration> {
    let t = Instant::now();
    for n in names {
        let f = patches.join(n);
        cmd!(sh, "patch -p1 -s -N --fuzz=2 -d {gnu} -i {f}")
            .quiet()
            .run()
            .with_context(|| format!("GNU patch {}", f.display()))?;
    }
    Ok(t.elapsed())
}

/// Pushes the series under `patches` onto `quilt` with `quilt push -a`,
/// with `home` as its `HOME` and no quiltrc: the time it took.
///
/// Errors: quilt fails, or is missing.
fn push_quilt(sh: &Shell, quilt: &Path, patches: &Path, home: &Path) -> Result<Duration> {
    let _cd = sh.push_dir(quilt);
    let _e = [
        sh.push_env("QUILT_PATCHES", patches),
        sh.push_env("QUILT_SERIES", patches.join("series")),
        sh.push_env("QUILT_PC", ".pc"),
        sh.push_env("HOME", home),
        sh.push_env("LC_ALL", "C"),
    ];
    let t = Instant::now();
    cmd!(sh, "quilt --quiltrc=- push -a -q")
        .quiet()
        .ignore_stdout()
        .run()
        .context("quilt push -a")?;
    Ok(t.elapsed())
}

/// The "new kernel": `src` hard-linked, with per-patch edits by index mod 10.
fn bench_rebase(sh: &Shell, scratch: &Path, src: &Path, series: &[Generated]) -> Result<()> {
    let newk = scratch.join("new-kernel");
    crate::util::fs::copy_tree(sh, src, &newk, crate::util::fs::CopyKind::HardLinks)?;
    for (i, g) in series.iter().enumerate() {
        let (rel, old, new) = &g.files[0];
        let path = newk.join(rel);
        let changed: Option<Vec<u8>> = match i % 10 {
            5 => {
                let mut v = b"/* upstream: eight new lines at the top */\n".repeat(8);
                v.extend_from_slice(old);
                Some(v)
            }
            6 | 8 => {
                let patch = parse_patch(&g.bytes).map_err(|e| anyhow::anyhow!("{e}"))?;
                let hunk = &patch.files[0].hunks[0];
                let want = if i % 10 == 6 {
                    crate::patches::engine::LineKind::Context
                } else {
                    crate::patches::engine::LineKind::Delete
                };
                // First context line (fuzz) or first deleted line (conflict).
                let target = hunk.lines.iter().position(|l| l.kind == want);
                let old_line = target.map(|t| {
                    hunk.lines[..t]
                        .iter()
                        .filter(|l| l.kind != crate::patches::engine::LineKind::Insert)
                        .count()
                        + hunk.first()
                        - 1
                });
                old_line.map(|n| {
                    let mut lines: Vec<Vec<u8>> = old
                        .split_inclusive(|&b| b == b'\n')
                        .map(<[u8]>::to_vec)
                        .collect();
                    if n < lines.len() {
                        lines[n] = b"/* changed upstream */\n".to_vec();
                    }
                    lines.concat()
                })
            }
            7 => {
                let patch = parse_patch(&g.bytes).map_err(|e| anyhow::anyhow!("{e}"))?;
                apply_patch(&newk, &patch, &ApplyOptions::default())
                    .map_err(|e| anyhow::anyhow!("{e}"))
                    .context("making an upstream patch")?;
                None
            }
            _ => None,
        };
        let _ = new;
        if let Some(bytes) = changed {
            write_atomic(&path, &bytes)?;
        }
    }
    let layout = Layout::new(scratch);
    let opts = RebaseOptions {
        from: "6.6".into(),
        to: "6.12".into(),
        target: None,
        kernel_src: Some(newk.clone()),
        fuzz: 2,
        keep_going: true,
    };
    let t = Instant::now();
    let out = rebase::run(sh, &layout, &opts, Action::Start)?;
    let elapsed = t.elapsed();
    let counts = rebase::counts(&out.state);
    let summary: Vec<String> = counts
        .iter()
        .map(|(k, v)| format!("{} {v}", k.as_str()))
        .collect();
    println!(
        "rebase --keep-going of {} patches onto the edited tree: {:.3} s (work-tree copy included); {}",
        out.state.results.len(),
        secs(elapsed),
        summary.join(", ")
    );
    Ok(())
}
