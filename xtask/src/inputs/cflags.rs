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
//!
//! The compiler probe itself runs what the flags name, so some options are
//! refused by name before any probe ([`REFUSED_OPTIONS`]: `-B` made the
//! probe run `<dir>/cc1`, `-fplugin=` loads a shared object into the
//! compiler), and so is every flag naming a file by an absolute path or a
//! path with `..` ([`PATH_OPTIONS`]): kbuild compiles in the build
//! directory under `target/xtask`, so a relative path without `..` stays in
//! the workspace. Options passed on with `-Wa,`, `-Wl,` and `-Wp,` are
//! checked one by one, and so is every value after `=`, `,` or `:` that is
//! itself an option (`-fcompare-debug=-B<dir>/` makes GCC run `<dir>/cc1`),
//! as deep as they nest. `--` options are refused but `--param=`: GCC takes
//! any unambiguous prefix of one for it (`--pref` is `--prefix`).

use std::fmt;

/// Punctuation allowed in a flag besides ASCII letters and digits: enough
/// for `-march=armv7-a+fp`, `-Wl,--gc-sections`, `-DX=1`, `-Iinclude/x`,
/// `-fprofile-use=a/b.gcda:x`.
pub const ALLOWED_PUNCTUATION: &str = "_=,.+:/-";

/// Options refused by name (and every option that begins with one), with
/// what they do: each makes the compiler (or the linker it drives) run or
/// load a program, or take its own parts, from a place the flag names.
/// GCC's manual, "Options for Directory Search", "Options for Debugging
/// Your Program" (`-wrapper`) and "Plugins"; GNU ld's `-plugin`.
pub const REFUSED_OPTIONS: &[(&str, &str)] = &[
    (
        "-B",
        "makes the compiler run cc1, as and ld from the directory it names",
    ),
    (
        "--prefix",
        "is -B: makes the compiler run cc1, as and ld from the directory it names",
    ),
    ("-fplugin", "loads a shared object into the compiler"),
    (
        "-iplugindir",
        "makes the compiler load plugins from the directory it names",
    ),
    (
        "-specs",
        "makes the compiler read a specs file, which can run any program",
    ),
    (
        "--specs",
        "makes the compiler read a specs file, which can run any program",
    ),
    (
        "--sysroot",
        "makes the compiler take headers and libraries from another root",
    ),
    (
        "-isysroot",
        "makes the compiler take headers from another root",
    ),
    (
        "-wrapper",
        "runs every program the compiler starts through another one",
    ),
    ("-plugin", "makes the linker load a shared object"),
    ("--plugin", "makes the linker load a shared object"),
    (
        "-iprefix",
        "sets the prefix -iwithprefix joins to its value, into any directory",
    ),
    (
        "-imultiarch",
        "appends its value (`../../x`) to every system include directory",
    ),
];

/// Options whose value is a file or directory written right after them
/// (`-Iinclude`, `-include/etc/passwd`): the value must stay in the
/// workspace. Values after `=`, `,` and `:` are checked too, whatever the
/// option.
pub const PATH_OPTIONS: &[&str] = &[
    "-I",
    "-L",
    "-iquote",
    "-isystem",
    "-idirafter",
    "-iprefix",
    "-iwithprefixbefore",
    "-iwithprefix",
    "-imultilib",
    "-include",
    "-imacros",
    "-o",
    "-MF",
    "-T",
    "-dumpdir",
    "-dumpbase",
];

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
    /// Why the flag is refused for what it does, when it is made of
    /// allowed characters: one of [`REFUSED_OPTIONS`]' reasons, or that it
    /// names a file outside the workspace (then `character` is `None` and
    /// `offset` the flag's).
    pub refused: Option<String>,
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
        if let Some(why) = &self.refused {
            return write!(
                f,
                "flag {} {why}; a variant's flags may only change how the compiler builds the \
                 kernel: options that run or load programs, change where the compiler finds \
                 its parts ({}) or name a file outside the workspace (an absolute path, `..`) \
                 are refused. Remove the flag (a relative path without `..` stays in the \
                 build directory)",
                self.shown(),
                REFUSED_OPTIONS
                    .iter()
                    .map(|(o, _)| *o)
                    .collect::<Vec<_>>()
                    .join(", ")
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
/// is refused, and so is a string longer than [`MAX_FLAGS_BYTES`]. Then
/// each flag (and each option `-Wa,`, `-Wl,`, `-Wp,` pass on) must not be
/// one of [`REFUSED_OPTIONS`] nor name a file by an absolute path or a
/// path with `..`.
pub fn validate(flags: &str) -> Result<(), UnsafeFlag> {
    if flags.len() > MAX_FLAGS_BYTES {
        return Err(UnsafeFlag {
            flag: String::new(),
            offset: 0,
            character: None,
            too_long: Some(flags.len()),
            refused: None,
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
            refused: None,
        });
    }
    if !word.starts_with('-') || word == "-" {
        return Err(UnsafeFlag {
            flag: word.to_string(),
            offset: start,
            character: None,
            too_long: None,
            refused: None,
        });
    }
    if let Some(why) = refused_option(word) {
        return Err(UnsafeFlag {
            flag: word.to_string(),
            offset: start,
            character: None,
            too_long: None,
            refused: Some(why),
        });
    }
    Ok(())
}

/// Why `flag` (allowed characters, starting with `-`) is refused for what
/// it does, if it is: a [`REFUSED_OPTIONS`] option, or a file named outside
/// the workspace. Options passed on by `-Wa,`/`-Wl,`/`-Wp,` are checked
/// as options, their other words as values.
fn refused_option(flag: &str) -> Option<String> {
    for pass_on in ["-Wa,", "-Wl,", "-Wp,"] {
        if let Some(rest) = flag.strip_prefix(pass_on) {
            return rest.split(',').find_map(|part| {
                let why = if part.starts_with('-') {
                    refused_tool_option(part)
                } else {
                    outside(part)
                }?;
                Some(format!("passes on {part:?}, which {why}"))
            });
        }
    }
    if let Some(why) = refused_tool_option(flag) {
        return Some(why);
    }
    // GCC takes any unambiguous prefix of a `--` option for the option
    // (`--pref` is `--prefix`, `--spec` is `--specs`), so the driver's `--`
    // options are refused by their first letters, but for `--param=`.
    if flag.starts_with("--") && !flag.starts_with("--param=") {
        return Some(
            "is a long option, which GCC also takes abbreviated (`--pref` for `--prefix`); \
             only `--param=NAME=VALUE` is accepted"
                .to_string(),
        );
    }
    // A value that is itself an option is checked as one: GCC hands
    // `-fcompare-debug=-B<dir>/` to the second compilation it runs, and
    // that runs `<dir>/cc1` (as `-foffload-options=` hands on its value).
    flag.split(['=', ',', ':']).skip(1).find_map(|value| {
        if value.starts_with('-') {
            let why = refused_option(value)?;
            Some(format!("passes on {value:?} as an option, which {why}"))
        } else {
            outside(value)
        }
    })
}

/// Why `flag` is refused by name ([`REFUSED_OPTIONS`]) or for the file it
/// names ([`PATH_OPTIONS`], an absolute value or one with `..` after `=`,
/// `,` or `:`): the checks an option passed on to the assembler,
/// preprocessor or linker gets too.
fn refused_tool_option(flag: &str) -> Option<String> {
    if let Some((option, why)) = REFUSED_OPTIONS.iter().find(|(o, _)| flag.starts_with(o)) {
        return Some(if flag == *option {
            why.to_string()
        } else {
            format!("({option}) {why}")
        });
    }
    let mut joined = PATH_OPTIONS.iter().filter_map(|o| flag.strip_prefix(o));
    if let Some(why) = joined.find_map(|v| {
        // GCC reads `-I=dir` as `dir` in its sysroot (`/` for Debian's
        // cross compilers): `-I=tmp/x` searches /tmp/x.
        if v.starts_with("=")
            && PATH_OPTIONS
                .iter()
                .any(|o| flag.starts_with(&format!("{o}=")))
        {
            return Some(format!(
                "names {v}, a directory of the compiler's sysroot (`=`), outside the workspace"
            ));
        }
        outside(v)
    }) {
        return Some(why);
    }
    flag.split(['=', ',', ':']).skip(1).find_map(|value| {
        if value.starts_with('-') {
            let why = refused_tool_option(value)?;
            Some(format!("passes on {value:?} as an option, which {why}"))
        } else {
            outside(value)
        }
    })
}

/// Why `value` names a file outside the workspace, if it does: an
/// absolute path or a path with a `..` component. (A response file,
/// `@file`, never gets here: `@` is not an allowed character.)
fn outside(value: &str) -> Option<String> {
    if value.starts_with('/') {
        Some(format!(
            "names {value}, an absolute path outside the workspace"
        ))
    } else if value.split('/').any(|c| c == "..") {
        Some(format!("names {value}, a path with '..'"))
    } else {
        None
    }
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
            "-O2  -march=armv7-a+fp -Wl,--gc-sections -DX=1 -Iinclude",
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

    /// Options that run or load a program, or name a file outside the
    /// workspace, are refused by what they do; before, `-B/some/dir/` was
    /// refused only after the compiler probe ran `/some/dir/cc1`, and
    /// `-fplugin=/path.so` passed.
    #[test]
    fn options_that_run_programs_or_reach_outside_are_refused() {
        for (flags, says) in [
            ("-Os -B/some/dir/", "makes the compiler run cc1"),
            ("-Os -Bprefix", "makes the compiler run cc1"),
            ("-Os --prefix=x", "is -B"),
            (
                "-Os -fplugin=/path.so",
                "loads a shared object into the compiler",
            ),
            (
                "-Os -fplugin=x.so",
                "loads a shared object into the compiler",
            ),
            ("-Os -fplugin-arg-x-y=1", "(-fplugin) loads a shared object"),
            ("-Os -specs=my.specs", "specs file"),
            ("-Os --specs=my.specs", "specs file"),
            ("-Os --sysroot=/opt/x", "from another root"),
            ("-Os -isysroot/opt/x", "from another root"),
            ("-Os -wrapper", "through another one"),
            ("-Os -iplugindir=p", "load plugins"),
            ("-Os -Wl,-plugin,x.so", "passes on \"-plugin\""),
            ("-Os -Wl,--plugin=x.so", "passes on \"--plugin=x.so\""),
            ("-Os -Wa,-I/etc", "passes on \"-I/etc\", which names /etc"),
            ("-Os -Wl,-rpath,/lib", "names /lib, an absolute path"),
            ("-Os -I/usr/include", "names /usr/include, an absolute path"),
            ("-Os -include/etc/passwd", "names /etc/passwd"),
            ("-Os -imacros../../x.h", "names ../../x.h, a path with '..'"),
            ("-Os -I..", "names .., a path with '..'"),
            ("-Os -fprofile-use=/tmp/p.gcda", "names /tmp/p.gcda"),
            ("-Os -fprofile-use=a/../../b", "a path with '..'"),
            ("-Os -fdebug-prefix-map=/x=y", "names /x"),
            ("-Os -o/tmp/x", "names /tmp/x"),
            // Options hidden in another option's value:
            // GCC's second compilation of -fcompare-debug ran <dir>/cc1.
            (
                "-Os -fcompare-debug=-Bevil/",
                "passes on \"-Bevil/\" as an option, which (-B) makes the compiler run cc1",
            ),
            ("-Os -fcompare-debug=-fplugin=x.so", "loads a shared object"),
            ("-Os -fcompare-debug=-wrapper,x", "through another one"),
            ("-Os -foffload-options=-specs=s", "specs file"),
            (
                "-Os -fcompare-debug=-Wl,-plugin,x.so",
                "makes the linker load",
            ),
            (
                "-Os -fcompare-debug=-fcompare-debug=-B/x/",
                "passes on \"-B/x/\" as an option, which (-B)",
            ),
            ("-Os -fcompare-debug=-I/etc", "names /etc, an absolute path"),
            // GCC's abbreviations of long options (the hostile trial's F1).
            ("-Os --pref", "also takes abbreviated"),
            ("-Os --spec", "also takes abbreviated"),
            ("-Os --sysr=x", "also takes abbreviated"),
            ("-Os --include-directory=x", "also takes abbreviated"),
            ("-Os -fcompare-debug=--pref", "also takes abbreviated"),
            // The second trial: the sysroot's `=`, and options that join
            // or append include directories.
            ("-Os -I=tmp/r3/inc", "the compiler's sysroot"),
            ("-Os -isystem=tmp/x", "the compiler's sysroot"),
            ("-Os -Wp,-I=tmp/x", "the compiler's sysroot"),
            ("-Os -Wp,-imultiarch../../../../tmp/r3", "appends its value"),
            ("-Os -iprefix.", "sets the prefix"),
        ] {
            let err = validate(flags).unwrap_err();
            assert_eq!(err.offset, 4, "{flags:?}");
            assert_eq!(err.character, None, "{flags:?}");
            let text = err.to_string();
            assert!(text.contains(says), "{flags:?}: {text}");
            assert!(text.contains("Remove the flag"), "{flags:?}: {text}");
        }
        for flags in [
            "-Iinclude/generated",
            "-fprofile-use=profiles/a.gcda:x",
            "-Wl,--gc-sections",
            "-Wa,-mno-warn-deprecated",
            "-fmacro-prefix-map=a=b",
            "-fno-plt -fno-caller-saves -mips32r2 -mtune=74kc",
            "-DX=1..2",
            "-fcompare-debug=-gtoggle",
            "-DX=-1",
            "--param=max-inline-insns-single=100",
        ] {
            validate(flags).unwrap();
        }
    }

    #[test]
    fn every_flag_is_an_option() {
        for (flags, bad) in [("-Os pwned", "pwned"), ("-Os -", "-"), ("@file", "@file")] {
            let err = validate(flags).unwrap_err();
            assert!(err.to_string().contains(&format!("{bad:?}")), "{err}");
        }
    }
}
