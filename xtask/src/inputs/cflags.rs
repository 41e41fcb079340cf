//! The one check every variant's KBUILD_CFLAGS pass before they reach
//! kbuild: [`validate`].
//!
//! Flags are pasted verbatim into the kernel's top-level Makefile (by
//! `201-extra_optimization.patch`), and make hands them to `/bin/sh`: a
//! backtick, `$(...)` or `;` in a flag runs a command on every compile, a
//! newline starts a new Makefile line, `#` comments out the rest of it. The
//! compiler probe cannot see any of this (it gets the flags as argv), so
//! flags are checked against a conservative allow-list instead: each flag is
//! one compiler option, `-` followed by characters from [`ALLOWED_PUNCTUATION`],
//! ASCII letters and digits, and flags are separated by spaces; a
//! branch's flags are at most [`MAX_FLAGS_BYTES`] long.

use std::fmt;

/// Punctuation allowed in a flag besides ASCII letters and digits: enough
/// for `-march=armv7-a+fp`, `-Wl,--gc-sections`, `-DX=1`, `-I/usr/include`,
/// `-fprofile-use=a/b.gcda:x`.
pub const ALLOWED_PUNCTUATION: &str = "_=,.+:/-";

/// The longest flags string of one branch, in bytes. The flags become
/// part of one Makefile line and of every compile command kbuild runs
/// through `sh -c`, where Linux takes at most 128 KiB per argument
/// (`MAX_ARG_STRLEN`) and 2 MiB in all; OpenWrt's own flags are under
/// 100 bytes. A 5 MB flag once got through and every compile then failed
/// with "argument list too long".
pub const MAX_FLAGS_BYTES: usize = 4096;

/// Longest part of a refused flag repeated in a message, in characters.
const SHOWN_CHARS: usize = 60;

/// Why a flags string is refused: the flag, where in the string the
/// offending character is, and which character; or that the whole string
/// is longer than [`MAX_FLAGS_BYTES`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnsafeFlag {
    /// The whole offending flag: the space-separated word holding the
    /// character (a newline or tab does not split it).
    pub flag: String,
    /// Byte offset of the offending character in the flags string.
    pub offset: usize,
    /// The offending character, or `None` when the flag is refused as a
    /// whole (it does not start with `-`, or is only `-`).
    pub character: Option<char>,
    /// The length of the whole string in bytes, when it is refused for
    /// being longer than [`MAX_FLAGS_BYTES`] (then `flag` is empty and
    /// `offset` 0).
    pub too_long: Option<usize>,
}

impl UnsafeFlag {
    /// The flag as messages show it: at most [`SHOWN_CHARS`] characters.
    fn shown(&self) -> String {
        let mut chars = self.flag.chars();
        let head: String = chars.by_ref().take(SHOWN_CHARS).collect();
        match chars.count() {
            0 => format!("{head:?}"),
            more => format!("{head:?} (and {more} more characters)"),
        }
    }
}

impl fmt::Display for UnsafeFlag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(bytes) = self.too_long {
            return write!(
                f,
                "the flags are {bytes} bytes long, more than the {MAX_FLAGS_BYTES} bytes \
                 a branch's flags may have (they become one Makefile line and part of \
                 every compile command); shorten them, or put what needs more in a patch \
                 under patches/experiments/, listed in the variant's `patches`"
            );
        }
        match self.character {
            Some(c) => write!(f, "flag {} contains {}", self.shown(), describe(c))?,
            None if self.flag == "-" => write!(f, "flag \"-\" is not a compiler option")?,
            None => write!(
                f,
                "{} is not a compiler option (it does not start with '-')",
                self.shown()
            )?,
        }
        let fix = match self.character {
            Some(_) => "Remove the character",
            None => "Remove the word or spell it as the option it stands for",
        };
        write!(
            f,
            "; each flag must be one compiler option: '-' followed only by ASCII letters, \
             digits and {ALLOWED_PUNCTUATION}, flags separated by spaces on one line. \
             {fix} (a flag that really needs more, such as a quoted -D value, belongs in a \
             patch under patches/experiments/, listed in the variant's `patches`)"
        )
    }
}

impl std::error::Error for UnsafeFlag {}

/// Checks a KBUILD_CFLAGS string (`-Os -fno-tree-ch`) before it is written
/// into a Makefile or handed to kbuild: every space-separated word must be
/// one compiler option made of allowed characters (see the module docs).
///
/// Returns the first problem: the flag, the byte offset of the offending
/// character in `flags` and the character. Spaces separate flags; every
/// other whitespace (tab, newline, carriage return), NUL and every shell or
/// make metacharacter (`` ` $ ; | & < > ( ) \ ' " # * ? [ ] { } ~ ! % ``)
/// is refused, and so is a string longer than [`MAX_FLAGS_BYTES`].
pub fn validate(flags: &str) -> Result<(), UnsafeFlag> {
    if flags.len() > MAX_FLAGS_BYTES {
        return Err(UnsafeFlag {
            flag: String::new(),
            offset: 0,
            character: None,
            too_long: Some(flags.len()),
        });
    }
    let mut start = 0;
    for word in flags.split(' ') {
        if !word.is_empty() {
            check_word(start, word)?;
        }
        start += word.len() + 1;
    }
    Ok(())
}

fn check_word(start: usize, word: &str) -> Result<(), UnsafeFlag> {
    if let Some((at, c)) = word.char_indices().find(|&(_, c)| !allowed(c)) {
        return Err(UnsafeFlag {
            flag: word.to_string(),
            offset: start + at,
            character: Some(c),
            too_long: None,
        });
    }
    if !word.starts_with('-') || word == "-" {
        return Err(UnsafeFlag {
            flag: word.to_string(),
            offset: start,
            character: None,
            too_long: None,
        });
    }
    Ok(())
}

fn allowed(c: char) -> bool {
    c.is_ascii_alphanumeric() || ALLOWED_PUNCTUATION.contains(c)
}

/// `'`' (backtick: command substitution in the shell)` and the like.
fn describe(c: char) -> String {
    let what = match c {
        '`' => "backtick: command substitution in the shell",
        '$' => "dollar sign: make and shell variable expansion",
        ';' => "semicolon: ends a shell command",
        '|' => "pipe: shell pipeline",
        '&' => "ampersand: shell background/and",
        '<' | '>' => "shell redirection",
        '(' | ')' => "parenthesis: shell subshell, make function call",
        '\\' => "backslash: shell and make escape, line continuation",
        '\'' | '"' => "quote: shell quoting",
        '#' => "hash: starts a make comment",
        '*' | '?' | '[' | ']' => "shell glob character",
        '{' | '}' => "brace: shell brace expansion",
        '~' => "tilde: shell home expansion",
        '!' => "exclamation mark: shell negation and history",
        '%' => "percent sign: make pattern character",
        '\n' => "newline: starts a new Makefile line",
        '\r' => "carriage return",
        '\t' => "tab: whitespace inside a flag",
        '\0' => "NUL byte",
        c if c.is_whitespace() => "whitespace inside a flag",
        c if c.is_control() => "control character",
        c if !c.is_ascii() => "non-ASCII character",
        _ => "a character outside the allowed set",
    };
    format!("'{}' ({what})", c.escape_debug())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinary_flags_pass() {
        for flags in [
            "-Os -fno-reorder-blocks -fno-tree-ch",
            "-O2  -march=armv7-a+fp -Wl,--gc-sections -DX=1 -I/usr/include",
            "",
            " -Os ",
        ] {
            validate(flags).unwrap();
        }
    }

    #[test]
    fn hostile_flags_name_the_character_and_its_offset() {
        let cases: &[(&str, char, usize)] = &[
            ("-Os -DX=`touch$${IFS}pwned`", '`', 8),
            ("-Os -DX=$(shell touch pwned)", '$', 8),
            ("-Os -DX=$$HOME", '$', 8),
            ("-Os\n-fno-tree-ch", '\n', 3),
            ("-Os; touch pwned", ';', 3),
            ("-Os #-fno-tree-ch", '#', 4),
            ("-Os\t-fno-tree-ch", '\t', 3),
            ("-Os -D\0", '\0', 6),
            ("-Os -D'x'", '\'', 6),
            ("-Os -fplugin=ä", 'ä', 13),
        ];
        for &(flags, c, offset) in cases {
            let err = validate(flags).unwrap_err();
            assert_eq!(err.character, Some(c), "{flags:?}");
            assert_eq!(err.offset, offset, "{flags:?}");
            assert_eq!(flags[offset..].chars().next(), Some(c));
            let text = err.to_string();
            assert!(text.contains(&format!("'{}'", c.escape_debug())), "{text}");
            assert!(text.contains("Remove the character"), "{text}");
        }
    }

    #[test]
    fn a_long_string_is_refused_with_the_limit_and_not_repeated() {
        let long = format!("-Os -DX={}", "1".repeat(MAX_FLAGS_BYTES));
        let err = validate(&long).unwrap_err();
        assert_eq!(err.too_long, Some(long.len()));
        let text = err.to_string();
        assert!(text.contains("4096 bytes") && text.len() < 400, "{text}");
        validate(&long[..MAX_FLAGS_BYTES]).unwrap();
        // A long word with a bad character is shown cut.
        let word = format!("-D{}$", "y".repeat(1000));
        let text = validate(&word).unwrap_err().to_string();
        assert!(text.contains("(and 943 more characters)"), "{text}");
    }

    #[test]
    fn every_flag_is_an_option() {
        for (flags, bad) in [("-Os pwned", "pwned"), ("-Os -", "-"), ("@file", "@file")] {
            let err = validate(flags).unwrap_err();
            assert!(err.to_string().contains(&format!("{bad:?}")), "{err}");
        }
    }
}
