//! Imports within each folder of `src/` point one way, so that no two
//! files of a folder depend on each other.

use std::collections::{BTreeMap, BTreeSet};

use super::{crate_dir, read, rust_files};

/// Every path of a use-tree or expression starting at `s[0]`, `{a, b::c}` expanded.
fn paths(s: &[char], i: &mut usize, prefix: Vec<String>, out: &mut Vec<Vec<String>>) {
    let mut path = prefix;
    loop {
        while s.get(*i).is_some_and(|c| c.is_whitespace()) {
            *i += 1;
        }
        if s.get(*i) == Some(&'{') {
            *i += 1;
            while *i < s.len() && s[*i] != '}' {
                paths(s, i, path.clone(), out);
                while s.get(*i).is_some_and(|c| c.is_whitespace() || *c == ',') {
                    *i += 1;
                }
            }
            *i += 1;
            return;
        }
        let start = *i;
        while s
            .get(*i)
            .is_some_and(|c| c.is_alphanumeric() || *c == '_' || *c == '*')
        {
            *i += 1;
        }
        if *i == start {
            break;
        }
        path.push(s[start..*i].iter().collect());
        if s.get(*i) == Some(&':') && s.get(*i + 1) == Some(&':') {
            *i += 2;
        } else {
            break;
        }
    }
    out.push(path);
}

/// Within each folder of `src/`, imports between sibling modules point one
/// way: a file `a.rs` and a folder `a/` are one node, `mod.rs` (or the
/// `a.rs` beside `a/`) is the folder's own node `mod`, and `super::X`,
/// `self::X`, `crate::…::X` or, in the folder's own file, a bare `X::`
/// make an edge to `X` (to `mod` when `X` is an item of the folder's own
/// file, re-exports included). Test modules do not count. A hub `mod.rs`
/// that held shared types and dispatched to the files that import them
/// was a loop: the types move to named files, `mod.rs` keeps dispatch.
#[test]
fn imports_within_a_folder_point_one_way() {
    let src = crate_dir().join("src");
    // Module path of each non-test file (`lab/ssh/mod.rs` → [lab, ssh]).
    let mut modules: BTreeMap<Vec<String>, String> = BTreeMap::new();
    for file in rust_files(&src) {
        let rel = file.strip_prefix(&src).unwrap().display().to_string();
        if rel.ends_with("tests.rs") || !rel.contains('/') {
            continue;
        }
        let mut m: Vec<String> = rel
            .trim_end_matches(".rs")
            .split('/')
            .map(String::from)
            .collect();
        if m.last().is_some_and(|l| l == "mod") {
            m.pop();
        }
        modules.insert(m, rel);
    }
    let is_module = |p: &[String]| modules.keys().any(|m| m.starts_with(p));
    // folder → (from, to) → the file that makes the edge.
    let mut edges: BTreeMap<Vec<String>, BTreeMap<(String, String), String>> = BTreeMap::new();
    for (module, rel) in &modules {
        let mut text = String::new();
        for line in read(&src.join(rel)).lines() {
            text.push_str(line.split("//").next().unwrap_or(""));
            text.push('\n');
        }
        // Inline test modules (`#[cfg(test)] mod tests { … }`) do not count.
        while let Some(at) = text.find("#[cfg(test)]") {
            let rest = text[at + 12..].trim_start();
            let Some(open) = rest.starts_with("mod ").then(|| rest.find('{')).flatten() else {
                text.replace_range(at..at + 12, "");
                continue;
            };
            let body = text.len() - rest.len() + open;
            let mut depth = 0;
            let end = text[body..]
                .char_indices()
                .find_map(|(j, c)| {
                    depth += (c == '{') as i32 - (c == '}') as i32;
                    (depth == 0).then_some(body + j + 1)
                })
                .unwrap_or(text.len());
            text.replace_range(at..end, "");
        }
        let s: Vec<char> = text.chars().collect();
        for start in 0..s.len() {
            let boundary =
                start == 0 || !(s[start - 1].is_alphanumeric() || "_:".contains(s[start - 1]));
            if !boundary || !s[start].is_ascii_lowercase() {
                continue;
            }
            let mut found = Vec::new();
            paths(&s, &mut start.clone(), Vec::new(), &mut found);
            for p in found.into_iter().filter(|p| p.len() > 1) {
                let mut abs = module.clone();
                let mut rest = &p[..];
                match p[0].as_str() {
                    "crate" => (abs.clear(), rest = &p[1..]).1,
                    "self" => rest = &p[1..],
                    "super" => {
                        while rest.first().is_some_and(|x| x == "super") {
                            abs.pop();
                            rest = &rest[1..];
                        }
                    }
                    _ if is_module(&[module.clone(), vec![p[0].clone()]].concat()) => {}
                    _ => continue,
                }
                abs.extend(rest.iter().cloned());
                // Every folder that holds this file and the target.
                for depth in 1..module.len() + 1 {
                    let folder = &module[..depth];
                    if !abs.starts_with(folder) || abs.len() <= depth {
                        continue;
                    }
                    let node = |m: &[String]| match m.get(depth) {
                        Some(n) if m.len() > depth && is_module(&m[..depth + 1]) => n.clone(),
                        _ => "mod".to_string(),
                    };
                    let (from, to) = (node(module), node(&abs));
                    if from != to {
                        let folder_edges = edges.entry(folder.to_vec()).or_default();
                        folder_edges
                            .entry((from, to))
                            .or_insert_with(|| rel.clone());
                    }
                }
            }
        }
    }
    // Strongly connected components of each folder's graph name the loops.
    let mut loops = Vec::new();
    for (folder, graph) in &edges {
        let reach = |from: &str| {
            let mut seen: BTreeSet<String> = BTreeSet::from([from.to_string()]);
            let mut todo = vec![from.to_string()];
            while let Some(n) = todo.pop() {
                for (a, b) in graph.keys() {
                    if *a == n && seen.insert(b.clone()) {
                        todo.push(b.clone());
                    }
                }
            }
            seen
        };
        let mut done = BTreeSet::new();
        for (a, _) in graph.keys() {
            let component: BTreeSet<String> = reach(a)
                .into_iter()
                .filter(|b| reach(b).contains(a))
                .collect();
            if component.len() < 2 || !done.insert(component.clone()) {
                continue;
            }
            let why: Vec<String> = graph
                .iter()
                .filter(|((a, b), _)| component.contains(a) && component.contains(b))
                .map(|((a, b), file)| format!("{a} -> {b} ({file})"))
                .collect();
            loops.push((folder.join("/"), why.join(", ")));
        }
    }
    let loops: Vec<String> = loops
        .iter()
        .map(|(f, why)| format!("src/{f}: {why}"))
        .collect();
    assert!(
        loops.is_empty(),
        "imports within a folder go in a loop; move what both sides use to a file of its own:\n{}",
        loops.join("\n")
    );
}
