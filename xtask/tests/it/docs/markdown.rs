//! One Markdown page as the checks read it (pulldown-cmark, mdBook's own
//! parser), heading ids as GitHub and mdBook make them, and the link and
//! source-path checks.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};

use pulldown_cmark::{CodeBlockKind, Event, Options, Tag, TagEnd};

use super::read;

/// What the checks need of one Markdown page.
#[derive(Default)]
pub struct Page {
    /// Link and image destinations, with their 1-based line.
    pub links: Vec<(usize, String)>,
    /// Heading ids as GitHub makes them (github-slugger).
    pub github_ids: BTreeSet<String>,
    /// Heading ids as mdBook makes them (`normalize_id`).
    pub mdbook_ids: BTreeSet<String>,
    /// Inline code spans, with their line.
    pub inline_code: Vec<(usize, String)>,
    /// Lines of code blocks in a shell-like language (none, sh, bash,
    /// console, shell, yaml), with their line.
    pub shell_lines: Vec<(usize, String)>,
    /// Plain text (not code blocks), with its line.
    pub text: Vec<(usize, String)>,
}

const SHELL_LANGUAGES: &[&str] = &["", "sh", "bash", "shell", "console", "yaml", "yml"];

pub fn parse_page(markdown: &str) -> Page {
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
pub fn unique(id: String, seen: &mut BTreeMap<String, usize>) -> String {
    let n = seen.entry(id.clone()).or_insert(0);
    let out = if *n == 0 { id } else { format!("{id}-{n}") };
    *n += 1;
    out
}

/// GitHub's heading id (github-slugger): lower case; letters, digits,
/// `_` and `-` kept, each space a `-`, everything else dropped.
pub fn github_slug(text: &str) -> String {
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
pub fn mdbook_id(text: &str) -> String {
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
pub fn normalize(path: &Path) -> PathBuf {
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
pub fn link_problems(
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
        let docs = root.join("docs");
        let is_page = target.extension().is_some_and(|x| x == "md");
        if file.starts_with(&docs) && is_page && !target.starts_with(&docs) {
            problems.push(format!("{rel}:{line}: {dest}: mdBook renders only docs/, so the HTML book cannot follow a link to a page outside it; link a page of the book"));
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
pub fn source_paths(text: &str) -> Vec<String> {
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
pub fn missing_source_paths(root: &Path, rel: &str, page: &Page) -> Vec<String> {
    page.text
        .iter()
        .chain(&page.inline_code)
        .flat_map(|(line, t)| source_paths(t).into_iter().map(move |p| (*line, p)))
        .filter(|(_, p)| !root.join(p).exists())
        .map(|(line, p)| format!("{rel}:{line}: {p} does not exist"))
        .collect()
}
