//! Text from files shown on a terminal.

use std::borrow::Cow;

/// `text` with every control character (C0, DEL, C1: escape sequences,
/// bell, carriage return, newline) and invisible format character
/// ([`is_hidden`]: `\u{202e}` reverses what follows) written as its Rust
/// escape (`\u{1b}`, `\r`, `\n`), so that a string from a user's file or an archive cannot
/// move the cursor, recolour or retitle the terminal, or forge output
/// lines. Text without control characters is returned as it is.
pub fn printable(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_hidden) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if is_hidden(c) {
            out.extend(c.escape_debug());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Whether `c` changes what a terminal shows without being shown itself:
/// a control character (C0, DEL, C1), or an invisible format character
/// that reorders or hides text (the bidirectional overrides and isolates
/// U+202A–U+202E and U+2066–U+2069, the marks U+200E, U+200F and U+061C,
/// the zero-width U+200B–U+200D, U+2060–U+2064 and U+FEFF, the soft hyphen
/// U+00AD).
pub fn is_hidden(c: char) -> bool {
    c.is_control()
        || matches!(c,
            '\u{00AD}' | '\u{061C}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{2064}' | '\u{2066}'..='\u{2069}' | '\u{FEFF}')
}

/// [`printable`] for text of several lines: newlines and tabs are kept
/// (they lay out a table or a list), every other control character is
/// escaped. For reports and error messages that quote strings from files.
pub fn printable_lines(text: &str) -> Cow<'_, str> {
    let escaped = |c: char| is_hidden(c) && c != '\n' && c != '\t';
    if !text.chars().any(escaped) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if escaped(c) {
            out.extend(c.escape_debug());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// The first `chars` characters of `text` (all of it when shorter): a
/// short form of a sha256 from a record. Never cuts a character in two,
/// as a byte slice `&text[..12]` does (and panics) when a damaged record
/// holds a non-ASCII character there.
pub fn prefix(text: &str, chars: usize) -> &str {
    match text.char_indices().nth(chars) {
        Some((end, _)) => &text[..end],
        None => text,
    }
}

/// `text` with white space collapsed and `\` line continuations dropped.
pub fn collapse_make(text: &str) -> String {
    text.split_whitespace()
        .filter(|w| *w != "\\")
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prefix_never_cuts_a_character() {
        assert_eq!(prefix("e92f2ab791437dc1eba9", 12), "e92f2ab79143");
        assert_eq!(prefix("short", 12), "short");
        assert_eq!(prefix("aéééééééééééé", 12), "aééééééééééé");
        assert_eq!(prefix("ab€€€€€€€€€€€", 12), "ab€€€€€€€€€€");
    }

    /// The second hostile trial: U+202E reversed what followed it on the
    /// terminal (`KBUILD_CFLAGS += -Os \u{202e}KOS` read as `SOK`).
    #[test]
    fn invisible_format_characters_are_escaped_too() {
        assert_eq!(printable("-Os \u{202e}KOS"), "-Os \\u{202e}KOS");
        assert_eq!(printable_lines("a\u{200b}b\nc"), "a\\u{200b}b\nc");
        assert_eq!(printable("ä € 🦀"), "ä € 🦀");
    }

    #[test]
    fn control_characters_are_escaped_and_the_rest_kept() {
        assert!(matches!(printable("plain – ä"), Cow::Borrowed("plain – ä")));
        assert_eq!(
            printable("\x1b[31mred\x1b]0;title\x07\r\n\u{9b}2J"),
            "\\u{1b}[31mred\\u{1b}]0;title\\u{7}\\r\\n\\u{9b}2J"
        );
    }

    #[test]
    fn lines_and_tabs_are_kept_the_rest_escaped() {
        assert!(matches!(printable_lines("a\tb\nc"), Cow::Borrowed(_)));
        assert_eq!(
            printable_lines("arm \x1b[2Jx\r\n\tnext\u{9b}"),
            "arm \\u{1b}[2Jx\\r\n\tnext\\u{9b}"
        );
    }
}
