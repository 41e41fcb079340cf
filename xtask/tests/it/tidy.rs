//! Checks of the source tree itself, in the style of rust-analyzer's
//! `xtask/src/tidy.rs`: file sizes, where clap may appear, documented
//! public items, which pipeline stage may import which, that only the
//! tests' gate reads `CI`, that a test returns early only through it, and
//! that the test build compiles no dependency a second time.

mod dev_features;
mod early_return;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Longest source file, in lines.
const MAX_LINES: usize = 600;

/// Which top-level modules of `src/` each stage may import (`crate::X`).
/// Data flows one way (inputs → patched tree → build → results →
/// measurements → reports), but imports follow this table: the records
/// (`results`) and the ELF readers (`measure`) sit below `patches` and
/// `build`, which write them; `report` never imports `inputs`, `build` or
/// `lab`; `util` is below everything. `src/lib.rs` documents the same
/// table ([`lib_rs_documents_the_allowed_imports`]).
const ALLOWED: &[(&str, &[&str])] = &[
    ("util", &[]),
    ("inputs", &["util"]),
    ("measure", &["util"]),
    ("results", &["measure", "util"]),
    ("patches", &["inputs", "results", "util"]),
    (
        "kernel_build",
        &["inputs", "patches", "measure", "results", "util"],
    ),
    ("report", &["patches", "measure", "results", "util"]),
    (
        "lab",
        &["inputs", "kernel_build", "results", "measure", "util"],
    ),
    (
        "host",
        &["inputs", "kernel_build", "results", "lab", "util"],
    ),
    (
        "bench",
        &[
            "inputs",
            "patches",
            "kernel_build",
            "measure",
            "results",
            "report",
            "lab",
            "util",
        ],
    ),
    (
        "experiment",
        &["inputs", "kernel_build", "results", "lab", "report", "util"],
    ),
];

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "rs"))
        .map(|e| e.into_path())
        .collect();
    files.sort();
    files
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn no_source_file_is_over_600_lines() {
    let mut long = Vec::new();
    for sub in ["src", "tests", "benches"] {
        for file in rust_files(&crate_dir().join(sub)) {
            let lines = read(&file).lines().count();
            if lines > MAX_LINES {
                long.push(format!("{} has {lines} lines", file.display()));
            }
        }
    }
    assert!(
        long.is_empty(),
        "split these files below {MAX_LINES} lines:\n{}",
        long.join("\n")
    );
}

#[test]
fn clap_only_in_cli() {
    let src = crate_dir().join("src");
    let offenders: Vec<String> = rust_files(&src)
        .into_iter()
        .filter(|f| !f.starts_with(src.join("cli")))
        .filter(|f| read(f).contains("clap"))
        .map(|f| f.display().to_string())
        .collect();
    assert!(
        offenders.is_empty(),
        "clap types belong in src/cli/, which hands the library plain options; found in:\n{}",
        offenders.join("\n")
    );
}

/// Whether a test needs a host tool is decided in one place,
/// `tests/it/common/gate.rs` (fails under CI, counts the skip elsewhere),
/// and for the unit tests in `src/util/test_gate.rs` by the same rule, not
/// by each test reading `CI` on its own.
#[test]
fn only_the_gate_reads_ci() {
    let needle = format!("{q}CI{q}", q = '"');
    let gates = [
        crate_dir().join("tests/it/common/gate.rs"),
        crate_dir().join("src/util/test_gate.rs"),
    ];
    let offenders: Vec<String> = ["src", "tests", "benches"]
        .iter()
        .flat_map(|sub| rust_files(&crate_dir().join(sub)))
        .filter(|f| !gates.contains(f) && read(f).contains(&needle))
        .map(|f| f.display().to_string())
        .collect();
    assert!(
        offenders.is_empty(),
        "decide with tests/it/common/gate.rs's Needs whether a test can run, not by reading CI; found in:\n{}",
        offenders.join("\n")
    );
}

/// A test that returns early asks the gate first ([`early_return`]): a
/// bare `return` passes a test that checked nothing, which neither CI nor
/// `cargo xtask test`'s list of skips would show.
#[test]
fn tests_return_early_only_through_the_gate() {
    let files = rust_files(&crate_dir().join("tests"));
    let codes: Vec<String> = files
        .iter()
        .map(|f| early_return::code_only(&read(f)))
        .collect();
    let helpers = early_return::gated_helpers(&codes);
    let problems: Vec<String> = files
        .iter()
        .zip(&codes)
        .flat_map(|(file, code)| {
            let rel = file
                .strip_prefix(crate_dir())
                .unwrap()
                .display()
                .to_string();
            early_return::ungated_returns(code, &helpers)
                .into_iter()
                .map(move |p| format!("{rel}: {p}"))
        })
        .collect();
    assert!(
        problems.is_empty(),
        "return early from a test only after the gate (gate::Needs::…met(), or a helper that asks it); found:\n{}",
        problems.join("\n")
    );
}

/// The check on text: a return after the gate (in the header or earlier in
/// the block), a bare one, and an `#[ignore]`d helper's.
#[test]
fn the_early_return_check_tells_a_gated_return_from_a_bare_one() {
    let text = r#"
fn ready() -> bool { gate::Needs::new().root("ns").met() }
#[test]
fn gated() { if !ready() { return; } let _brace = "{"; let _c = '{'; }
#[test]
fn gated_in_the_block() {
    let Some(x) = y else { let _ = gate::Needs::new().missing("y").met(); return; };
}
#[test]
fn bare() { if std::env::var_os("X").is_none() { return; } }
#[test]
#[ignore = "a helper"]
fn helper() { let Ok(x) = std::env::var("X") else { return; }; }
"#;
    let code = early_return::code_only(text);
    let helpers = early_return::gated_helpers(std::slice::from_ref(&code));
    assert_eq!(helpers, BTreeSet::from(["ready".to_string()]));
    assert_eq!(
        early_return::ungated_returns(&code, &helpers),
        ["bare: returns after `if std::env::var_os( ).is_none()`"]
    );
}

/// `remove_stale_staging` removes every staging directory no live run
/// owns; one made by a bare `tempfile::Builder` has no owner lock and no
/// pid in its name, so a second run (another workspace sharing the source
/// cache) would remove it under the first (CI, stop 23). A file that
/// removes stale staging makes its own with `StagingDir`.
#[test]
fn stale_staging_is_only_removed_beside_owned_staging() {
    let src = crate_dir().join("src");
    let fs_rs = src.join("util/fs.rs");
    let offenders: Vec<String> = rust_files(&src)
        .into_iter()
        .filter(|f| *f != fs_rs)
        .filter(|f| {
            let text = read(f);
            text.contains("remove_stale_staging(") && text.contains("tempfile::Builder")
        })
        .map(|f| f.display().to_string())
        .collect();
    assert!(
        offenders.is_empty(),
        "make staging directories with util::fs::StagingDir where stale ones are removed; found a bare tempfile::Builder in:\n{}",
        offenders.join("\n")
    );
}

/// The plain `std::fs` reads that stay, by file (under `src/`), with how
/// many and why none of them reads a file under `target/xtask/`.
const PLAIN_READS: [(&str, usize, &str); 19] = [
    ("lab/net/mod.rs", 1, "/sys"),
    ("util/process/proc_stat.rs", 1, "/proc"),
    ("lab/host_lab/mod.rs", 1, "/proc"),
    ("bench/lab/mod.rs", 1, "/proc/loadavg"),
    ("bench/symbols.rs", 2, "/proc"),
    (
        "kernel_build/openwrt.rs",
        1,
        "a patch of the user's OpenWrt checkout",
    ),
    (
        "kernel_build/openwrt_lab.rs",
        1,
        "a kconfig fragment of targets/",
    ),
    ("inputs/kconfig.rs", 1, "a kconfig fragment of targets/"),
    (
        "inputs/openwrt/image/origin.rs",
        1,
        "the user's OpenWrt checkout",
    ),
    (
        "patches/openwrt_sync.rs",
        3,
        "patches/ and the user's OpenWrt checkout",
    ),
    (
        "patches/openwrt_bump/commit.rs",
        1,
        "the user's OpenWrt checkout",
    ),
    (
        "patches/openwrt_bump/mod.rs",
        2,
        "the user's OpenWrt checkout",
    ),
    ("patches/series.rs", 2, "patch files of patches/"),
    ("patches/rebase.rs", 3, "patch files of patches/"),
    ("patches/engine/mod.rs", 1, "a patch file the user names"),
    ("patches/stack/mod.rs", 1, "a patch file of patches/"),
    (
        "patches/extra_optimization.rs",
        1,
        "the generated patch in patches/",
    ),
    (
        "patches/engine/fsops.rs",
        1,
        "a tree file checked first as a regular file (symlink_metadata)",
    ),
    (
        "patches/stack/refresh.rs",
        1,
        "a tree file checked first as a regular file (symlink_metadata)",
    ),
];

/// Every file read back from `target/xtask/` (records, state, markers,
/// logs, a build's files, ELF images) goes through `util::fs`'s capped,
/// non-blocking reader (`read_limited`, `read_bytes_limited`,
/// `open_limited`): a symlink to /dev/zero or a FIFO put there is refused
/// at once. Before, an experiment's `state.json` as a symlink to /dev/zero
/// grew the process to 12.5 GB, and as a FIFO blocked it for ever while
/// it held `experiment.lock`. Plain reads stay only where
/// [`PLAIN_READS`] says why; code under `#[cfg(test)]` is not counted.
#[test]
fn files_are_read_through_the_capped_reader() {
    let src = crate_dir().join("src");
    let mut found: BTreeMap<String, usize> = BTreeMap::new();
    for file in rust_files(&src) {
        let rel = file.strip_prefix(&src).unwrap().display().to_string();
        if rel == "util/fs.rs" || rel.ends_with("tests.rs") {
            continue;
        }
        let text = read(&file);
        let code = text.split("#[cfg(test)]").next().unwrap_or("");
        let n: usize = ["fs::read(", "fs::read_to_string(", "File::open("]
            .iter()
            .map(|p| code.matches(p).count())
            .sum();
        if n > 0 {
            found.insert(rel, n);
        }
    }
    let allowed: BTreeMap<String, usize> = PLAIN_READS
        .iter()
        .map(|(f, n, _)| (f.to_string(), *n))
        .collect();
    let unexplained: Vec<String> = found
        .iter()
        .filter(|(f, n)| allowed.get(*f) != Some(n))
        .map(|(f, n)| {
            format!(
                "{f}: {n} plain read(s), {} explained",
                allowed.get(f).unwrap_or(&0)
            )
        })
        .collect();
    assert!(
        unexplained.is_empty(),
        "read files through util::fs::read_limited, read_bytes_limited or open_limited \
         (or explain the read in PLAIN_READS):\n{}",
        unexplained.join("\n")
    );
}

/// A test that needs the lab's host tools asks the gate (a counted skip
/// without CI), never unwraps the project's own check: that panicked on a
/// machine without QEMU, though the rest of the lab tests skipped.
#[test]
fn tests_ask_the_gate_about_host_tools() {
    let offenders: Vec<String> = rust_files(&crate_dir().join("tests"))
        .into_iter()
        .filter(|f| {
            let text: String = read(f).split_whitespace().collect();
            ["check_host_tools(", "require_tools("].iter().any(|call| {
                text.match_indices(call).any(|(at, _)| {
                    // What follows the call's closing parenthesis.
                    let mut depth = 0;
                    let after = text[at..].char_indices().find_map(|(i, c)| {
                        match c {
                            '(' => depth += 1,
                            ')' => depth -= 1,
                            _ => {}
                        }
                        (c == ')' && depth == 0).then(|| &text[at + i + 1..])
                    });
                    after.is_some_and(|a| a.starts_with(".unwrap()") || a.starts_with(".expect("))
                })
            })
        })
        .map(|f| f.display().to_string())
        .collect();
    assert!(
        offenders.is_empty(),
        "pass lab::check_host_tools / lab::require_tools to gate::Needs::check, not .unwrap(); found in:\n{}",
        offenders.join("\n")
    );
}

#[test]
fn every_public_item_is_documented() {
    // rustc checks it: the library denies missing docs.
    let lib = read(&crate_dir().join("src/lib.rs"));
    assert!(
        lib.lines().any(|l| l.trim() == "#![deny(missing_docs)]"),
        "src/lib.rs must keep #![deny(missing_docs)]"
    );
}

/// `crate::X` imports of each stage folder (or `X.rs`) of `src/`.
fn stage_imports() -> BTreeMap<String, BTreeSet<String>> {
    let src = crate_dir().join("src");
    let mut imports: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in rust_files(&src) {
        let rel = file.strip_prefix(&src).unwrap();
        let stage = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy()
            .trim_end_matches(".rs")
            .to_string();
        if matches!(stage.as_str(), "lib" | "main" | "cli") {
            continue;
        }
        let text = read(&file);
        let used = imports.entry(stage.clone()).or_default();
        for (i, _) in text.match_indices("crate::") {
            let before = text[..i].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                continue;
            }
            let rest = &text[i + "crate::".len()..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                .collect();
            if !name.is_empty() && name != stage {
                used.insert(name);
            }
        }
    }
    imports
}

#[test]
fn stages_import_only_earlier_stages() {
    let allowed: BTreeMap<&str, &[&str]> = ALLOWED.iter().copied().collect();
    let mut problems = Vec::new();
    for (stage, used) in stage_imports() {
        let Some(ok) = allowed.get(stage.as_str()) else {
            problems.push(format!(
                "src/{stage}: a stage the tidy test does not know; add it to ALLOWED"
            ));
            continue;
        };
        for u in used {
            if !ok.contains(&u.as_str()) {
                problems.push(format!("src/{stage} imports crate::{u}"));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "imports the table ALLOWED does not allow (report must never read inputs):\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_allowed_imports_have_no_cycle() {
    let graph: BTreeMap<&str, &[&str]> = ALLOWED.iter().copied().collect();
    fn visit<'a>(n: &'a str, graph: &BTreeMap<&'a str, &'a [&'a str]>, path: &mut Vec<&'a str>) {
        assert!(!path.contains(&n), "import cycle: {path:?} -> {n}");
        path.push(n);
        for m in graph.get(n).copied().unwrap_or(&[]) {
            visit(m, graph, path);
        }
        path.pop();
    }
    for n in graph.keys() {
        visit(n, &graph, &mut Vec::new());
    }
}

/// The table in `src/lib.rs`'s module docs (`stage    may import`) is
/// [`ALLOWED`], so what contributors read is the rule the test enforces.
#[test]
fn lib_rs_documents_the_allowed_imports() {
    let lib = read(&crate_dir().join("src/lib.rs"));
    let rows: Vec<&str> = lib
        .lines()
        .filter_map(|l| l.strip_prefix("//!"))
        .map(str::trim)
        .skip_while(|l| !l.starts_with("stage ") || !l.ends_with("may import"))
        .skip(1)
        .take_while(|l| !l.starts_with("```"))
        .collect();
    let documented: BTreeMap<String, BTreeSet<String>> = rows
        .iter()
        .map(|row| {
            let (stage, rest) = row.split_once(char::is_whitespace).unwrap_or((row, ""));
            let imports = rest
                .split(',')
                .map(str::trim)
                .filter(|i| !i.is_empty() && *i != "-")
                .map(String::from)
                .collect();
            (stage.to_string(), imports)
        })
        .collect();
    let allowed: BTreeMap<String, BTreeSet<String>> = ALLOWED
        .iter()
        .map(|(stage, imports)| {
            let imports = imports.iter().map(|i| i.to_string()).collect();
            (stage.to_string(), imports)
        })
        .collect();
    assert_eq!(
        documented, allowed,
        "src/lib.rs's table of stages and their imports differs from tidy.rs's ALLOWED"
    );
}

/// docs/architecture.md's table (`| stage | may import |`) is [`ALLOWED`]
/// too: the book's reader sees every stage, `experiment` included.
#[test]
fn the_book_documents_the_allowed_imports() {
    let book = read(&crate_dir().join("../docs/architecture.md"));
    let documented: BTreeMap<String, BTreeSet<String>> = book
        .lines()
        .skip_while(|l| *l != "| stage | may import |")
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|row| {
            let cells: Vec<&str> = row.split('|').map(str::trim).collect();
            let stage = cells[1].trim_matches('`').to_string();
            // "`patches`, `measure` — never `inputs`…": the allowed ones
            // come before the dash; "nothing: below everything" is none.
            let allowed = cells[2].split(" — ").next().unwrap_or("");
            let imports = allowed
                .split(',')
                .map(|i| i.trim().trim_matches('`'))
                .filter(|i| !i.is_empty() && !i.starts_with("nothing"))
                .map(String::from)
                .collect();
            (stage, imports)
        })
        .collect();
    let allowed: BTreeMap<String, BTreeSet<String>> = ALLOWED
        .iter()
        .map(|(stage, imports)| {
            (
                stage.to_string(),
                imports.iter().map(|i| i.to_string()).collect(),
            )
        })
        .collect();
    assert_eq!(
        documented, allowed,
        "docs/architecture.md's table of stages and their imports differs from tidy.rs's ALLOWED"
    );
}

mod folder_imports;
