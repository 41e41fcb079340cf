//! The README and the book in `docs/` (mdBook's layout) stay true to the
//! tree they describe:
//!
//! * every relative link resolves: to a page, a source file or a folder,
//!   and a `#anchor` to a heading of that page, as both GitHub and mdBook
//!   make heading ids (so the link works on the repository browser and in
//!   the HTML book);
//! * every `xtask/…` source path the pages (and the target files'
//!   comments) name in plain text exists;
//! * every `cargo xtask …` command in a shell code block or in inline code
//!   is accepted by the real command line: the clap types of
//!   `xtask/src/cli/` are compiled into this test and parse it with
//!   `try_parse_from`; a synopsis (`[--flag V]…`, `a|b`) has each
//!   subcommand and flag checked against the same definition;
//! * every page of `docs/` is in `docs/SUMMARY.md`, and the README's test
//!   command is the one `.ci/run` runs;
//! * every figure in a marked region (`<!-- figures: runs/NAME.json -->`)
//!   is in the recorded run it names ([`figures`]).
//!
//! `docs/incoming/` (engineers' notes the lead folds into the book) is not
//! part of the book and is not checked.
//!
//! The checkers take text, so the tests at the end show each of them
//! failing on a broken link, a broken anchor and a removed flag.

#[allow(dead_code, unused_imports)]
#[path = "../../src/cli/mod.rs"]
mod cli;
mod commands;
mod figures;
mod markdown;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use markdown::{link_problems, missing_source_paths, normalize, parse_page, source_paths, Page};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// README.md and every page under docs/ but docs/incoming/, sorted.
fn book_files(root: &Path) -> Vec<PathBuf> {
    let mut files = vec![root.join("README.md")];
    let docs = root.join("docs");
    let incoming = docs.join("incoming");
    files.extend(
        walkdir::WalkDir::new(&docs)
            .into_iter()
            .filter_entry(|e| e.path() != incoming)
            .filter_map(Result::ok)
            .filter(|e| e.path().extension().is_some_and(|x| x == "md"))
            .map(|e| e.into_path()),
    );
    files.sort();
    files
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn pages(root: &Path) -> BTreeMap<PathBuf, Page> {
    book_files(root)
        .into_iter()
        .map(|f| {
            let page = parse_page(&read(&f));
            (f, page)
        })
        .collect()
}

fn rel(root: &Path, file: &Path) -> String {
    file.strip_prefix(root)
        .unwrap_or(file)
        .display()
        .to_string()
}

#[test]
fn links_between_pages_and_to_sources_resolve() {
    let root = repo_root();
    let pages = pages(&root);
    assert!(
        pages.len() > 5,
        "the book's pages were not found under docs/"
    );
    let mut problems = Vec::new();
    for (file, page) in &pages {
        problems.extend(link_problems(&root, file, page, &pages));
        problems.extend(missing_source_paths(&root, &rel(&root, file), page));
    }
    assert!(
        problems.is_empty(),
        "broken links or source paths in the README and the book:\n{}",
        problems.join("\n")
    );
}

#[test]
fn target_files_name_sources_that_exist() {
    let root = repo_root();
    let mut problems = Vec::new();
    for entry in std::fs::read_dir(root.join("targets")).unwrap() {
        let file = entry.unwrap().path();
        if file.extension().is_none_or(|x| x != "toml") {
            continue;
        }
        for (i, line) in read(&file).lines().enumerate() {
            for path in source_paths(line) {
                if !root.join(&path).exists() {
                    problems.push(format!(
                        "{}:{}: {path} does not exist",
                        rel(&root, &file),
                        i + 1
                    ));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn every_cargo_xtask_command_in_the_docs_parses() {
    let root = repo_root();
    let mut problems = Vec::new();
    let mut checked = 0;
    for (file, page) in pages(&root) {
        checked += page
            .shell_lines
            .iter()
            .chain(&page.inline_code)
            .map(|(_, t)| commands::commands_in(t).len())
            .sum::<usize>();
        problems.extend(commands::problems(&rel(&root, &file), &page));
    }
    assert!(
        checked > 50,
        "only {checked} commands found: is the parser still reading the pages?"
    );
    assert!(
        problems.is_empty(),
        "commands the CLI no longer accepts (see `cargo xtask <command> --help`):\n{}",
        problems.join("\n")
    );
}

#[test]
fn every_page_is_in_the_summary() {
    let root = repo_root();
    let docs = root.join("docs");
    let summary = parse_page(&read(&docs.join("SUMMARY.md")));
    let listed: BTreeSet<PathBuf> = summary
        .links
        .iter()
        .map(|(_, dest)| normalize(&docs.join(dest.split('#').next().unwrap())))
        .collect();
    let missing: Vec<String> = book_files(&root)
        .into_iter()
        .filter(|f| f.starts_with(&docs) && *f != docs.join("SUMMARY.md"))
        .filter(|f| !listed.contains(f))
        .map(|f| rel(&root, &f))
        .collect();
    assert!(
        missing.is_empty(),
        "pages not in docs/SUMMARY.md: {missing:?}"
    );
    assert!(
        docs.join("book.toml").is_file(),
        "docs/book.toml is missing"
    );
}

#[test]
fn the_readme_is_a_front_door() {
    let lines = read(&repo_root().join("README.md")).lines().count();
    assert!(
        lines <= 150,
        "README.md has {lines} lines; move reference into docs/"
    );
}

/// `.ci/run`'s `cargo xtask` commands are the README's: a fresh clone set
/// up as the README says is what CI tests.
#[test]
fn the_readme_shows_what_ci_runs() {
    let root = repo_root();
    let ci: Vec<Vec<String>> = read(&root.join(".ci/run"))
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .flat_map(commands::commands_in)
        .collect();
    assert!(ci.len() >= 2, ".ci/run runs no cargo xtask command: {ci:?}");
    let readme = parse_page(&read(&root.join("README.md")));
    let shown: Vec<Vec<String>> = readme
        .shell_lines
        .iter()
        .flat_map(|(_, l)| commands::commands_in(l))
        .collect();
    for command in ci {
        assert!(
            shown.contains(&command),
            ".ci/run runs `cargo xtask {}`, which README.md's code blocks do not show",
            command.join(" ")
        );
    }
}

// The checkers themselves, on pages made here: each must fail on what it
// exists to catch.

#[test]
fn heading_ids_follow_github_and_mdbook() {
    let page = parse_page("# L1 cache model (`--cache-model`)\n## What a build does\n## What a build does\n### Lab speed (`bench lab`)\n");
    for ids in [&page.github_ids, &page.mdbook_ids] {
        let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
        assert_eq!(
            ids,
            [
                "l1-cache-model---cache-model",
                "lab-speed-bench-lab",
                "what-a-build-does",
                "what-a-build-does-1"
            ]
        );
    }
}

#[test]
fn a_broken_link_fails() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("docs")).unwrap();
    std::fs::create_dir_all(root.join("xtask/src")).unwrap();
    std::fs::write(root.join("xtask/src/lib.rs"), "").unwrap();
    std::fs::write(root.join("docs/b.md"), "# Real heading\n").unwrap();
    std::fs::write(root.join("README.md"), "# Front door\n").unwrap();
    let text = "# A\n\
        [ok](b.md#real-heading) [ok](../xtask/src/lib.rs) [ok](#a) [web](https://example.org/x)\n\
        [gone](c.md)\n\
        [bad anchor](b.md#unreal-heading)\n\
        [gone source](../xtask/src/gone.rs)\n\
        [line anchor](../xtask/src/lib.rs#L3)\n\
        [out](../../etc/passwd)\n\
        [front door](../README.md)\n\
        named in text: `xtask/src/moved.rs` and xtask/src/lib.rs\n";
    let file = root.join("docs/a.md");
    std::fs::write(&file, text).unwrap();
    let page = parse_page(text);
    let problems = link_problems(root, &file, &page, &BTreeMap::new());
    let lines: Vec<&str> = problems
        .iter()
        .map(|p| p.split(": ").next().unwrap())
        .collect();
    assert_eq!(
        lines,
        [
            "docs/a.md:3",
            "docs/a.md:4",
            "docs/a.md:5",
            "docs/a.md:6",
            "docs/a.md:7",
            "docs/a.md:8",
        ],
        "{problems:#?}"
    );
    assert!(
        problems[1].contains("no heading with id \"unreal-heading\""),
        "{problems:#?}"
    );
    assert!(
        problems[5].contains("mdBook renders only docs/"),
        "{problems:#?}"
    );
    let missing = missing_source_paths(root, "docs/a.md", &page);
    assert_eq!(missing, ["docs/a.md:9: xtask/src/moved.rs does not exist"]);
}

#[test]
fn a_removed_flag_or_subcommand_fails() {
    use commands::{check, commands_in, Place};
    let check_text = |text: &str, place| {
        let found = commands_in(text);
        assert_eq!(found.len(), 1, "{text}: {found:?}");
        check(&found[0], place)
    };
    // Accepted as written.
    for ok in [
        "cargo xtask build --target bcm53xx --variant baseline --variant no-reorder-blocks",
        "cargo xtask size-report --target bcm53xx --symbols --format markdown -o sizes.md",
        "cargo xtask lab --lab host --variant baseline --variant lo-no-tso-gso --runs 5 --duration 5",
        "cargo xtask build --target ${{ matrix.target }} --variant ${{ matrix.variant }}",
        "cargo xtask build --target T [--variant V]... [-j N] [--no-ccache] [--distcc HOSTS]",
        "cargo xtask patches import|export --openwrt PATH --kernel 6.6 [--prune] [--dry-run]",
        "cargo xtask size-report [--format text\\|mail\\|json]",
        "cargo xtask <command> --help",
    ] {
        assert_eq!(check_text(ok, Place::Block), Ok(()), "{ok}");
    }
    // A mention in prose may leave out required arguments; a block may not.
    assert_eq!(check_text("cargo xtask build", Place::Inline), Ok(()));
    assert!(check_text("cargo xtask build", Place::Block).is_err());
    // Refused, each with a reason naming the problem.
    for (bad, why) in [
        (
            "cargo xtask build --target bcm53xx --no-such-flag",
            "--no-such-flag",
        ),
        ("cargo xtask size-report --format pdf", "pdf"),
        ("cargo xtask lab --runs 0 --target brcm47xx", "0"),
        ("cargo xtask buidl --target bcm53xx", "buidl"),
        (
            "cargo xtask lab --lab host --target brcm47xx",
            "--target is for the forwarding lab",
        ),
        (
            "cargo xtask build --target T [--variant V]... [--no-such-flag]",
            "--no-such-flag",
        ),
        ("cargo xtask patches import|exprot --openwrt PATH", "exprot"),
        ("cargo xtask size-report [--format text\\|mail] [-Q]", "-Q"),
    ] {
        let err = check_text(bad, Place::Inline).expect_err(bad);
        assert!(err.contains(why), "{bad}: {err}");
    }
}

#[test]
fn figures_in_marked_regions_come_from_their_records() {
    let root = repo_root();
    let docs = root.join("docs");
    let mut problems = Vec::new();
    let mut regions = 0;
    for file in book_files(&root) {
        let text = read(&file);
        regions += figures::regions(&text).map_or(0, |r| r.len());
        problems.extend(figures::problems(&rel(&root, &file), &text, &docs));
    }
    assert!(
        regions >= 4,
        "only {regions} figures regions: are the marks still read?"
    );
    assert!(
        problems.is_empty(),
        "figures without a record (rewrite them from docs/runs/, or record the run):\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_figures_check_fails_on_a_figure_its_record_lacks() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("runs")).unwrap();
    std::fs::write(
        dir.path().join("runs/r.json"),
        r#"{"commit": "0123456789abcdef0123456789abcdef01234567", "date": "2026-12-07",
            "machine": "2 cores", "commands": [{"command": "x", "output": ["zImage size: 3336352 → 3390144 (+1.61%)"]}]}"#,
    )
    .unwrap();
    let page = "a\n<!-- figures: runs/r.json -->\nzImage 3,336,352 → 3,390,144 (+1.61 %), 2 cores\n<!-- /figures -->\n";
    assert!(figures::problems("p.md", page, dir.path()).is_empty());
    let wrong = page.replace("1.61", "1.62");
    let p = figures::problems("p.md", &wrong, dir.path());
    assert_eq!(p, ["p.md:2: 1.62 is not in runs/r.json"]);
    let missing = page.replace("runs/r.json", "runs/none.json");
    assert!(figures::problems("p.md", &missing, dir.path())[0].contains("does not exist"));
    let open = "<!-- figures: runs/r.json -->\n1.5\n";
    assert!(figures::problems("p.md", open, dir.path())[0].contains("not closed"));
    assert_eq!(
        figures::numbers("−0.36 % of 7,997,504; 6.12.117 on 2 cores of BCM47094"),
        [
            ("0.36".to_string(), true),
            ("7997504".to_string(), true),
            ("6.12.117".to_string(), true),
            ("2".to_string(), false)
        ]
    );
}

/// Where the book gives a record's schema (`lab.json (schema 3)`,
/// `result.json`, schema 2), it is the one this xtask writes: a page
/// said lab.json was schema 2 a round after it became 3.
#[test]
fn the_schemas_the_book_names_are_the_ones_written() {
    let root = repo_root();
    let written = [
        ("lab.json", xtask::results::lab::SCHEMA),
        ("result.json", xtask::results::SCHEMA),
        ("device-fit.json", xtask::results::device_fit::SCHEMA),
    ];
    let mut problems = Vec::new();
    let mut seen = 0;
    for file in pages(&root).keys() {
        let text = read(file).split_whitespace().collect::<Vec<_>>().join(" ");
        for (name, schema) in written {
            let mut from = 0;
            while let Some(i) = text[from..].find(name).map(|i| i + from) {
                from = i + name.len();
                // "lab.json (schema 3", "lab.json`, schema 2", "lab.json schema 3"
                let after: String = text[from..].chars().take(16).collect();
                let Some(at) = after.find("schema ") else {
                    continue;
                };
                let digits: String = after[at + 7..]
                    .chars()
                    .take_while(char::is_ascii_digit)
                    .collect();
                if let Ok(n) = digits.parse::<u32>() {
                    seen += 1;
                    if n != schema {
                        problems.push(format!(
                            "{}: {name} schema {n}, but xtask writes schema {schema}",
                            rel(&root, file)
                        ));
                    }
                }
            }
        }
    }
    assert!(seen >= 5, "the check found only {seen} schema claims");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
