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
//!   command is the one `.ci/run` runs.
//!
//! `docs/incoming/` (engineers' notes the lead folds into the book) is not
//! part of the book and is not checked.
//!
//! The checkers take text, so the tests at the end show each of them
//! failing on a broken link, a broken anchor and a removed flag.

#[allow(dead_code, unused_imports)]
#[path = "../src/cli/mod.rs"]
mod cli;
#[path = "docs/commands.rs"]
mod commands;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};

use pulldown_cmark::{CodeBlockKind, Event, Options, Tag, TagEnd};

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

/// What the checks need of one Markdown page.
#[derive(Default)]
struct Page {
    /// Link and image destinations, with their 1-based line.
    links: Vec<(usize, String)>,
    /// Heading ids as GitHub makes them (github-slugger).
    github_ids: BTreeSet<String>,
    /// Heading ids as mdBook makes them (`normalize_id`).
    mdbook_ids: BTreeSet<String>,
    /// Inline code spans, with their line.
    inline_code: Vec<(usize, String)>,
    /// Lines of code blocks in a shell-like language (none, sh, bash,
    /// console, shell, yaml), with their line.
    shell_lines: Vec<(usize, String)>,
    /// Plain text (not code blocks), with its line.
    text: Vec<(usize, String)>,
}

const SHELL_LANGUAGES: &[&str] = &["", "sh", "bash", "shell", "console", "yaml", "yml"];

fn parse_page(markdown: &str) -> Page {
    let line_of = |offset: usize| markdown[..offset].matches('\n').count() + 1;
    let mut page = Page::default();
    let mut heading: Option<String> = None;
    let mut code_block: Option<(usize, bool, String)> = None; // (line, shell, text)
    let mut seen_github: BTreeMap<String, usize> = BTreeMap::new();
    let mut seen_mdbook: BTreeMap<String, usize> = BTreeMap::new();
    let options = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH;
    for (event, range) in pulldown_cmark::Parser::new_ext(markdown, options).into_offset_iter() {
        let line = line_of(range.start);
        match event {
            Event::Start(Tag::Heading { .. }) => heading = Some(String::new()),
            Event::End(TagEnd::Heading(_)) => {
                let text = heading.take().unwrap_or_default();
                page.github_ids
                    .insert(unique(github_slug(&text), &mut seen_github));
                page.mdbook_ids
                    .insert(unique(mdbook_id(&text), &mut seen_mdbook));
            }
            Event::Start(Tag::Link { dest_url, .. })
            | Event::Start(Tag::Image { dest_url, .. }) => {
                page.links.push((line, dest_url.to_string()))
            }
            Event::Start(Tag::CodeBlock(kind)) => {
                let lang = match &kind {
                    CodeBlockKind::Fenced(info) => {
                        info.split_whitespace().next().unwrap_or("").to_string()
                    }
                    CodeBlockKind::Indented => String::new(),
                };
                let fenced = markdown[range.clone()].starts_with(['`', '~']);
                let code_line = if fenced { line + 1 } else { line };
                code_block = Some((
                    code_line,
                    SHELL_LANGUAGES.contains(&lang.as_str()),
                    String::new(),
                ));
            }
            Event::End(TagEnd::CodeBlock) => {
                if let Some((first, true, text)) = code_block.take() {
                    for (i, l) in text.lines().enumerate() {
                        page.shell_lines.push((first + i, l.to_string()));
                    }
                }
            }
            Event::Text(t) => {
                if let Some((_, _, code)) = &mut code_block {
                    code.push_str(&t);
                } else {
                    if let Some(h) = &mut heading {
                        h.push_str(&t);
                    }
                    page.text.push((line, t.to_string()));
                }
            }
            Event::Code(c) => {
                if let Some(h) = &mut heading {
                    h.push_str(&c);
                }
                page.inline_code.push((line, c.to_string()));
            }
            Event::Html(h) | Event::InlineHtml(h) => {
                // <a id="x"></a> / <a name="x"></a> anchors.
                for key in ["id=\"", "name=\""] {
                    if let Some(start) = h.find(key) {
                        let rest = &h[start + key.len()..];
                        if let Some(end) = rest.find('"') {
                            page.github_ids.insert(rest[..end].to_string());
                            page.mdbook_ids.insert(rest[..end].to_string());
                        }
                    }
                }
            }
            _ => {}
        }
    }
    page
}

/// The id of a repeated heading gets `-1`, `-2`, … (GitHub and mdBook alike).
fn unique(id: String, seen: &mut BTreeMap<String, usize>) -> String {
    let n = seen.entry(id.clone()).or_insert(0);
    let out = if *n == 0 { id } else { format!("{id}-{n}") };
    *n += 1;
    out
}

/// GitHub's heading id (github-slugger): lower case; letters, digits,
/// `_` and `-` kept, each space a `-`, everything else dropped.
fn github_slug(text: &str) -> String {
    text.trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '_' || c == '-' => Some(c),
            _ => None,
        })
        .collect()
}

/// mdBook's heading id (`utils::normalize_id`): ASCII lower case;
/// alphanumerics, `_` and `-` kept, whitespace a `-`, the rest dropped.
fn mdbook_id(text: &str) -> String {
    text.trim()
        .chars()
        .filter_map(|c| match c {
            c if c.is_alphanumeric() || c == '_' || c == '-' => Some(c.to_ascii_lowercase()),
            c if c.is_whitespace() => Some('-'),
            _ => None,
        })
        .collect()
}

/// `path` with `.` and `..` folded, without touching the file system.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            c => out.push(c),
        }
    }
    out
}

/// Broken links of the page `file` (under `root`), each as `file:line: why`.
/// `pages` gives the parsed pages links may point into.
fn link_problems(
    root: &Path,
    file: &Path,
    page: &Page,
    pages: &BTreeMap<PathBuf, Page>,
) -> Vec<String> {
    let rel = file
        .strip_prefix(root)
        .unwrap_or(file)
        .display()
        .to_string();
    let mut problems = Vec::new();
    for (line, dest) in &page.links {
        if dest.contains("://") || dest.starts_with("mailto:") {
            continue;
        }
        let (path, anchor) = match dest.split_once('#') {
            Some((p, a)) => (p, Some(a)),
            None => (dest.as_str(), None),
        };
        let target = if path.is_empty() {
            file.to_path_buf()
        } else if path.starts_with('/') {
            problems.push(format!("{rel}:{line}: {dest}: an absolute link breaks outside the repository browser; link relative to the page"));
            continue;
        } else {
            normalize(&file.parent().unwrap().join(path))
        };
        if !target.starts_with(root) {
            problems.push(format!("{rel}:{line}: {dest}: leaves the repository"));
            continue;
        }
        if !target.exists() {
            problems.push(format!(
                "{rel}:{line}: {dest}: {} does not exist",
                target.strip_prefix(root).unwrap().display()
            ));
            continue;
        }
        let Some(anchor) = anchor else { continue };
        if target.extension().is_none_or(|x| x != "md") {
            problems.push(format!("{rel}:{line}: {dest}: an anchor into a file that is not a page (line anchors move with every edit)"));
            continue;
        }
        let parsed;
        let linked = match pages.get(&target) {
            Some(p) => p,
            None => {
                parsed = parse_page(&read(&target));
                &parsed
            }
        };
        let on_github = linked.github_ids.contains(anchor);
        let in_mdbook = linked.mdbook_ids.contains(anchor);
        if !(on_github && in_mdbook) {
            let known: Vec<&String> = linked.github_ids.iter().collect();
            problems.push(format!(
                "{rel}:{line}: {dest}: no heading with id {anchor:?} ({}); ids there: {known:?}",
                match (on_github, in_mdbook) {
                    (true, false) => "GitHub has it, mdBook does not",
                    (false, true) => "mdBook has it, GitHub does not",
                    _ => "neither GitHub nor mdBook",
                }
            ));
        }
    }
    problems
}

/// `xtask/src/…`, `xtask/tests/…`, `xtask/benches/…` paths named in `text`.
fn source_paths(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (i, _) in text.match_indices("xtask/") {
        if text[..i].ends_with(|c: char| c.is_alphanumeric() || c == '/' || c == '_') {
            continue; // target/xtask/…, cargo-xtask/…
        }
        let path: String = text[i..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '/' | '_' | '-' | '.'))
            .collect();
        let path = path.trim_end_matches('.').to_string();
        let is_source = ["xtask/src/", "xtask/tests/", "xtask/benches/"]
            .iter()
            .any(|p| path.starts_with(p) && path.len() > p.len());
        if is_source && !path.contains('*') {
            out.push(path);
        }
    }
    out
}

/// Source paths named in `page`'s text and inline code that do not exist.
fn missing_source_paths(root: &Path, rel: &str, page: &Page) -> Vec<String> {
    page.text
        .iter()
        .chain(&page.inline_code)
        .flat_map(|(line, t)| source_paths(t).into_iter().map(move |p| (*line, p)))
        .filter(|(_, p)| !root.join(p).exists())
        .map(|(line, p)| format!("{rel}:{line}: {p} does not exist"))
        .collect()
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
    let text = "# A\n\
        [ok](b.md#real-heading) [ok](../xtask/src/lib.rs) [ok](#a) [web](https://example.org/x)\n\
        [gone](c.md)\n\
        [bad anchor](b.md#unreal-heading)\n\
        [gone source](../xtask/src/gone.rs)\n\
        [line anchor](../xtask/src/lib.rs#L3)\n\
        [out](../../etc/passwd)\n\
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
            "docs/a.md:7"
        ],
        "{problems:#?}"
    );
    assert!(
        problems[1].contains("no heading with id \"unreal-heading\""),
        "{problems:#?}"
    );
    let missing = missing_source_paths(root, "docs/a.md", &page);
    assert_eq!(missing, ["docs/a.md:8: xtask/src/moved.rs does not exist"]);
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
