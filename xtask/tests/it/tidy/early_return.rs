//! An early `return` in a test goes through the gate: a test that returns
//! before its end must have asked [`crate::common::gate`] (a failure under
//! CI, a counted skip elsewhere), or it passes having checked nothing.
//!
//! The check is textual. In each `#[test]` function that is not
//! `#[ignore]`d (the helpers a parent test runs in a process of its own
//! return when their environment variable is missing), every `return;`
//! and `return Ok(());` sits in a block whose header (`if …`, `let … else`)
//! or whose statements before the `return` call the gate: `.met()`,
//! `gate::…`, or a helper of `tests/it/` that does so itself (such as
//! `openwrt_fixture::debian_tarball` or the file's own `malta_kernel`), by
//! name. Comments, strings and character literals do not count.

use std::collections::BTreeSet;

/// `text` with its comments and its string and character literals blanked
/// (newlines kept), so that the braces and words in them do not count.
pub fn code_only(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = b.to_vec();
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for c in &mut out[from..to.min(b.len())] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    let mut i = 0;
    while i < b.len() {
        let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
        // `br"…"` is a raw string too.
        let byte_prefix = i > 0 && b[i - 1] == b'b' && (i < 2 || !ident(b[i - 2]));
        let ident_before = i > 0 && ident(b[i - 1]) && !byte_prefix;
        if b[i..].starts_with(b"//") {
            let end = text[i..].find('\n').map_or(b.len(), |n| i + n);
            blank(&mut out, i, end);
            i = end;
        } else if !ident_before && (b[i..].starts_with(b"r\"") || b[i..].starts_with(b"r#")) {
            let hashes = b[i + 1..].iter().take_while(|c| **c == b'#').count();
            if b.get(i + 1 + hashes) != Some(&b'"') {
                i += 1;
                continue;
            }
            let close = format!("\"{}", "#".repeat(hashes));
            let from = i + 2 + hashes;
            let end = text[from..]
                .find(&close)
                .map_or(b.len(), |n| from + n + close.len());
            blank(&mut out, i, end);
            i = end;
        } else if b[i] == b'"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            blank(&mut out, i, j + 1);
            i = j + 1;
        } else if b[i] == b'\'' {
            // A character literal ('{', '\n', '\''), not a lifetime ('a).
            let len = match (b.get(i + 1), b.get(i + 2), b.get(i + 3)) {
                (Some(b'\\'), _, _) => b[i + 2..]
                    .iter()
                    .skip(1)
                    .position(|c| *c == b'\'')
                    .map(|n| n + 4),
                (Some(_), Some(b'\''), _) => Some(3),
                _ => None,
            };
            match len {
                Some(len) => {
                    blank(&mut out, i, i + len);
                    i += len;
                }
                None => i += 1,
            }
        } else {
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// One function of a file's [`code_only`] text.
pub struct Function<'a> {
    /// Its name.
    pub name: &'a str,
    /// The attributes before it (from the end of the item before).
    pub attributes: &'a str,
    /// Its body, braces included.
    pub body: &'a str,
}

/// Every function with a body in `code` (a file's [`code_only`] text),
/// nested ones included.
pub fn functions(code: &str) -> Vec<Function<'_>> {
    let b = code.as_bytes();
    let mut found = Vec::new();
    for (at, _) in code.match_indices("fn ") {
        if at > 0 && (b[at - 1].is_ascii_alphanumeric() || b[at - 1] == b'_') {
            continue;
        }
        let name_at = at + 3;
        let name_len = code[name_at..]
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(0);
        let Some(open) = code[name_at..].find(['{', ';']).map(|n| name_at + n) else {
            continue;
        };
        if name_len == 0 || b[open] == b';' {
            continue;
        }
        let Some(close) = matching(code, open) else {
            continue;
        };
        let item_start = code[..at].rfind(['}', ';']).map_or(0, |n| n + 1);
        found.push(Function {
            name: &code[name_at..name_at + name_len],
            attributes: &code[item_start..at],
            body: &code[open..=close],
        });
    }
    found
}

/// The `}` that closes the `{` at `open`.
fn matching(code: &str, open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in code[open..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(open + i);
                }
            }
            _ => {}
        }
    }
    None
}

/// The helpers (functions that are not tests) of `codes` that call the
/// gate, directly or through another such helper.
pub fn gated_helpers(codes: &[String]) -> BTreeSet<String> {
    let helpers: Vec<Function> = codes
        .iter()
        .flat_map(|c| functions(c))
        .filter(|f| !f.attributes.contains("#[test]"))
        .collect();
    let mut gated = BTreeSet::new();
    loop {
        let before = gated.len();
        for f in &helpers {
            if calls_the_gate(f.body, &gated) {
                gated.insert(f.name.to_string());
            }
        }
        if gated.len() == before {
            return gated;
        }
    }
}

/// Whether `text` calls the gate: `.met()`, `gate::`, or one of `helpers`.
fn calls_the_gate(text: &str, helpers: &BTreeSet<String>) -> bool {
    text.contains(".met()")
        || text.contains("gate::")
        || helpers.iter().any(|h| {
            text.match_indices(&format!("{h}(")).any(|(at, _)| {
                !text[..at]
                    .chars()
                    .next_back()
                    .is_some_and(|c| c.is_alphanumeric() || c == '_')
            })
        })
}

/// The tests of `code` (a file's [`code_only`] text) that return early
/// without the gate, each with the header of the block it returns from.
pub fn ungated_returns(code: &str, helpers: &BTreeSet<String>) -> Vec<String> {
    let mut found = Vec::new();
    for test in functions(code) {
        let attributes = test.attributes;
        if !attributes.contains("#[test]") || attributes.contains("#[ignore") {
            continue;
        }
        let body = test.body;
        for (at, _) in body.match_indices("return") {
            let word_before = body[..at]
                .chars()
                .next_back()
                .is_some_and(|c| c.is_alphanumeric() || c == '_');
            let after = body[at + "return".len()..].trim_start();
            if word_before || !(after.starts_with(';') || after.starts_with("Ok(())")) {
                continue;
            }
            // The block the `return` leaves, and the header before it.
            let mut depth = 0usize;
            let open = body[..at]
                .char_indices()
                .rev()
                .find(|(_, c)| match c {
                    '}' => {
                        depth += 1;
                        false
                    }
                    '{' if depth == 0 => true,
                    '{' => {
                        depth -= 1;
                        false
                    }
                    _ => false,
                })
                .map_or(0, |(i, _)| i);
            let header_start = body[..open].rfind([';', '{', '}']).map_or(0, |n| n + 1);
            let header = &body[header_start..open];
            if !calls_the_gate(&body[header_start..at], helpers) {
                let header: Vec<&str> = header.split_whitespace().collect();
                found.push(format!(
                    "{}: returns after `{}`",
                    test.name,
                    header.join(" ")
                ));
            }
        }
    }
    found
}
