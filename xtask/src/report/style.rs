//! How a report is printed, apart from what it compares: the format
//! ([`Format`]), the decimal separator ([`Style`]), control characters
//! escaped ([`escape_controls`]) and paths shown relative to the
//! workspace ([`display_path`]).

use std::fmt;
use std::path::Path;

use anyhow::Result;

use super::model::Decimal;

/// Output format of a report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    /// Plain text as posted in pull requests ([`super::text`]).
    #[default]
    Text,
    /// A commit message / mailing-list body ([`super::mail`]).
    Mail,
    /// GitHub-flavoured Markdown tables ([`super::markdown`]).
    Markdown,
    /// Every number, machine-readable ([`super::json`]).
    Json,
    /// Every number, one row per value ([`super::csv`]).
    Csv,
    /// A bar chart of percent changes ([`super::svg`]).
    Svg,
}

impl Format {
    /// Every format, in the order `--format` documents them.
    pub const ALL: [Format; 6] = [
        Format::Text,
        Format::Mail,
        Format::Markdown,
        Format::Json,
        Format::Csv,
        Format::Svg,
    ];

    /// The `--format` spelling.
    pub fn name(self) -> &'static str {
        match self {
            Format::Text => "text",
            Format::Mail => "mail",
            Format::Markdown => "markdown",
            Format::Json => "json",
            Format::Csv => "csv",
            Format::Svg => "svg",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Format {
    type Err = anyhow::Error;

    fn from_str(s: &str) -> Result<Format> {
        Format::ALL
            .into_iter()
            .find(|f| f.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Format::ALL.iter().map(|f| f.name()).collect();
                anyhow::anyhow!("unknown format {s:?}; use one of {}", names.join(", "))
            })
    }
}

/// Presentation choices that do not change what is compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Style {
    /// Write percentages with a decimal comma (`+1,68%`). In CSV this also
    /// switches the field separator to `;`, as spreadsheets in
    /// decimal-comma locales expect.
    pub decimal_comma: bool,
}

impl Style {
    /// The decimal separator [`Style::decimal_comma`] asks for.
    pub fn decimal(&self) -> Decimal {
        if self.decimal_comma {
            Decimal::Comma
        } else {
            Decimal::Point
        }
    }
}

/// `text` of `format` with its control characters other than newline and
/// tab escaped: in JSON as JSON escapes (`\u001b`, so the value reads back
/// unchanged; serde_json escapes C0 itself, but not DEL and C1 such as
/// U+009B, a CSI), elsewhere as Rust's (`\u{1b}`,
/// [`crate::util::text::printable_lines`]).
pub fn escape_controls(text: &str, format: Format) -> std::borrow::Cow<'_, str> {
    if format != Format::Json {
        return crate::util::text::printable_lines(text);
    }
    let escaped = |c: char| c.is_control() && c != '\n';
    if !text.chars().any(escaped) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if escaped(c) {
            out.push_str(&format!("\\u{:04x}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// `path` relative to `root` (the workspace root) when it is inside it,
/// else as given.
pub fn display_path(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .display()
        .to_string()
}
