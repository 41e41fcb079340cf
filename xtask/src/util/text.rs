//! Text from files shown on a terminal.

use std::borrow::Cow;

/// `text` with every control character (C0, DEL, C1: escape sequences,
/// bell, carriage return, newline) written as its Rust escape (`\u{1b}`,
/// `\r`, `\n`), so that a string from a user's file or an archive cannot
/// move the cursor, recolour or retitle the terminal, or forge output
/// lines. Text without control characters is returned as it is.
pub fn printable(text: &str) -> Cow<'_, str> {
    if !text.chars().any(char::is_control) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if c.is_control() {
            out.extend(c.escape_debug());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// [`printable`] for text of several lines: newlines and tabs are kept
/// (they lay out a table or a list), every other control character is
/// escaped. For reports and error messages that quote strings from files.
pub fn printable_lines(text: &str) -> Cow<'_, str> {
    let escaped = |c: char| c.is_control() && c != '\n' && c != '\t';
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

#[cfg(test)]
mod tests {
    use super::*;

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
