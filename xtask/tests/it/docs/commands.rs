//! `cargo xtask …` commands in Markdown, checked against the real clap
//! definition (`super::cli`, compiled from `xtask/src/cli/`).

use clap::error::ErrorKind;
use clap::{CommandFactory, Parser};

use super::cli::{self, Cli, Command};
use super::markdown::Page;

/// Where a command was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// A line of a shell code block: meant to be run as written, so it
    /// must parse whole.
    Block,
    /// Inline code: may name a subcommand without its required arguments
    /// (`cargo xtask build`), but every word it does give must parse.
    Inline,
}

/// The words after each `cargo xtask` in `text`, up to a shell operator
/// (`&&`, `||`, `;`, ` | `, a redirection, a comment). `${{ … }}` (a CI
/// expression) counts as one word; `<command>` is a placeholder, which
/// makes the command a synopsis; quotes group words as the shell does.
pub fn commands_in(text: &str) -> Vec<Vec<String>> {
    let text = replace_placeholders(&replace_ci_expressions(text));
    let mut out = Vec::new();
    for (i, _) in text.match_indices("cargo xtask") {
        let before = text[..i].chars().next_back();
        let rest = &text[i + "cargo xtask".len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '-' || c == '_')
            || rest.starts_with(|c: char| !c.is_whitespace())
        {
            continue;
        }
        let end = ["&&", "||", ";", " | ", ">", " #", "cargo xtask"]
            .iter()
            .filter_map(|op| rest.find(op))
            .min()
            .unwrap_or(rest.len());
        out.push(words(&rest[..end]));
    }
    out
}

fn replace_ci_expressions(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("${{") {
        out.push_str(&rest[..start]);
        match rest[start..].find("}}") {
            Some(end) => {
                out.push_str("CI_EXPRESSION");
                rest = &rest[start + end + 2..];
            }
            None => {
                rest = &rest[start..];
                break;
            }
        }
    }
    out.push_str(rest);
    out
}

/// `<name>` (letters, digits, `_`, `-`) as `…`, a synopsis's placeholder.
fn replace_placeholders(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find('<') {
        out.push_str(&rest[..start]);
        let after = &rest[start + 1..];
        let name_len = after
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
            .unwrap_or(after.len());
        if name_len > 0 && after[name_len..].starts_with('>') {
            out.push('…');
            rest = &after[name_len + 1..];
        } else {
            out.push('<');
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// Shell words: whitespace-separated, `"…"` and `'…'` grouping, `\|` (a
/// table cell's escaped bar) read as `|`.
fn words(text: &str) -> Vec<String> {
    let text = text.replace("\\|", "|");
    let mut out = Vec::new();
    let mut word: Option<String> = None;
    let mut quote: Option<char> = None;
    for c in text.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.get_or_insert_with(String::new).push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                word.get_or_insert_with(String::new);
            }
            (None, c) if c.is_whitespace() => out.extend(word.take()),
            (None, c) => word.get_or_insert_with(String::new).push(c),
        }
    }
    out.extend(word);
    out
}

/// A synopsis rather than a command: optional parts in brackets,
/// alternatives with `|`, repetition with `...` or `…`.
fn is_synopsis(words: &[String]) -> bool {
    words
        .iter()
        .any(|w| w.contains(['[', ']', '|', '…']) || w.contains("..."))
}

/// Checks one command (the words after `cargo xtask`), as written at `place`.
pub fn check(words: &[String], place: Place) -> Result<(), String> {
    if is_synopsis(words) {
        return check_synopsis(words);
    }
    let argv = std::iter::once("cargo xtask".to_string()).chain(words.iter().cloned());
    let cli = match Cli::try_parse_from(argv) {
        Ok(cli) => cli,
        Err(e) => {
            let tolerated = match e.kind() {
                ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => true,
                ErrorKind::MissingRequiredArgument
                | ErrorKind::MissingSubcommand
                | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => place == Place::Inline,
                _ => false,
            };
            return if tolerated {
                Ok(())
            } else {
                Err(first_line(&e.to_string()))
            };
        }
    };
    // `lab` refuses some combinations after parsing (`--lab host --target
    // T`, `--bench` without `--lab host`): the same refusals here.
    if let Command::Lab(args) = &cli.command {
        let named = args.target.is_some() || args.machine == cli::LAB_HOST;
        if place == Place::Block || named {
            args.mode().map_err(|e| format!("{e:#}"))?;
        }
    }
    Ok(())
}

fn first_line(message: &str) -> String {
    message
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or(message)
        .trim()
        .to_string()
}

/// A synopsis: each subcommand (alternatives `import|export` each) must
/// exist, and each flag (`--x`, `-x`, `--x=V`) must be an argument of
/// every subcommand it follows. Values and placeholders are not checked.
fn check_synopsis(words: &[String]) -> Result<(), String> {
    let mut root = Cli::command();
    root.build();
    let mut commands: Vec<clap::Command> = vec![root];
    let mut path = vec!["cargo xtask".to_string()];
    let mut in_path = true;
    for word in words {
        let word = word
            .replace(['[', ']', '(', ')', '…'], "")
            .replace("...", "");
        let alternatives: Vec<&str> = word.split('|').filter(|a| !a.is_empty()).collect();
        let flags: Vec<&str> = alternatives
            .iter()
            .copied()
            .filter(|a| a.starts_with('-'))
            .collect();
        if flags.is_empty() {
            if in_path && commands.iter().all(|c| c.has_subcommands()) {
                let mut next = Vec::new();
                for c in &commands {
                    for a in &alternatives {
                        let sub = c.find_subcommand(a).ok_or_else(|| {
                            format!("`{a}` is not a subcommand of `{}`", path.join(" "))
                        })?;
                        next.push(sub.clone());
                    }
                }
                path.push(alternatives.join("|"));
                commands = next;
            } else {
                in_path = false;
            }
            continue;
        }
        in_path = false;
        for flag in flags {
            let flag = flag.split('=').next().unwrap();
            for c in &commands {
                if !has_flag(c, flag) {
                    return Err(format!("`{}` has no flag `{flag}`", path.join(" ")));
                }
            }
        }
    }
    Ok(())
}

fn has_flag(command: &clap::Command, flag: &str) -> bool {
    if flag == "--" {
        return true;
    }
    if let Some(long) = flag.strip_prefix("--") {
        return command.get_arguments().any(|a| {
            a.get_long() == Some(long)
                || a.get_all_aliases()
                    .is_some_and(|aliases| aliases.contains(&long))
        });
    }
    // `-j3`: the short flag is the first letter.
    let Some(short) = flag.chars().nth(1) else {
        return false;
    };
    command
        .get_arguments()
        .any(|a| a.get_short() == Some(short))
}

/// Every command of `page` the CLI refuses, as `file:line: command: why`.
pub fn problems(rel: &str, page: &Page) -> Vec<String> {
    let blocks = page.shell_lines.iter().map(|(l, t)| (*l, t, Place::Block));
    let inline = page.inline_code.iter().map(|(l, t)| (*l, t, Place::Inline));
    let mut out = Vec::new();
    for (line, text, place) in blocks.chain(inline) {
        for words in commands_in(text) {
            if let Err(why) = check(&words, place) {
                out.push(format!(
                    "{rel}:{line}: `cargo xtask {}`: {why}",
                    words.join(" ")
                ));
            }
        }
    }
    out
}
