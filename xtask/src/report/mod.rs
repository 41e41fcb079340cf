//! `cargo xtask size-report`: compare variant builds against a base build,
//! target by target, in the forms developers post and tools read.
//!
//! * [`load`](mod@load): choose targets and variants and read their `result.json`
//!   files and vmlinux (never `targets/` or `variants.toml`).
//! * [`checks`]: whether a base and a variant are comparable.
//! * [`model`]: the [`Report`]: per target and variant, metric families
//!   (sizes, and whatever else gets measured) and their arithmetic;
//!   [`sizes`] makes the size family of two results.
//! * One renderer per [`Format`]: [`text`], [`mail`], [`markdown`],
//!   [`json`], [`csv`], [`svg`]; each walks the model's families and
//!   metrics, so a new family needs no renderer change.
//!
//! Sizes are bytes throughout; percentages are `(after - before) * 100 /
//! before` ([`model::format_percent`] for the printed form).

pub mod attribution;
pub mod chart;
pub mod checks;
pub mod csv;
pub mod device_fit;
pub mod json;
pub mod kconfig;
pub mod known;
pub mod lab;
pub mod load;
pub mod mail;
pub mod markdown;
pub mod model;
pub mod openwrt_lab;
pub mod sizes;
pub mod svg;
pub mod text;

use std::fmt;
use std::path::Path;

use anyhow::{bail, Context, Result};

use crate::util::fs::write_atomic;
use crate::util::layout::Layout;

pub use known::{build_command, lab_kernel_of};
pub use lab::find::LabRuns;
pub use load::{load, Request, SymbolOptions};
pub use model::{format_percent, Change, Decimal, Report};

/// Output format of a report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    /// Plain text as posted in pull requests ([`text`]).
    #[default]
    Text,
    /// A commit message / mailing-list body ([`mail`]).
    Mail,
    /// GitHub-flavoured Markdown tables ([`markdown`]).
    Markdown,
    /// Every number, machine-readable ([`json`]).
    Json,
    /// Every number, one row per value ([`csv`]).
    Csv,
    /// A bar chart of percent changes ([`svg`]).
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

/// Renders `report` in `format`, with every control character but newline
/// and tab that a string from a record brought in (an arm name, a failure
/// reason, a description holding an escape sequence) escaped
/// ([`escape_controls`]): no format carries a terminal's escape sequence.
///
/// Errors only for SVG with symbol diffs, which a chart cannot show.
pub fn render(report: &Report, format: Format, style: &Style) -> Result<String> {
    let text = render_raw(report, format, style)?;
    Ok(escape_controls(&text, format).into_owned())
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

fn render_raw(report: &Report, format: Format, style: &Style) -> Result<String> {
    Ok(match format {
        Format::Text => text::render(report, style),
        Format::Mail => mail::render(report, style),
        Format::Markdown => markdown::render(report, style),
        Format::Json => json::render(report, style)?,
        Format::Csv => csv::render(report, style)?,
        Format::Svg => {
            if report.symbols.is_some() {
                bail!("--symbols has no SVG form; use --format text, mail, markdown, json or csv for symbol diffs");
            }
            if report.by.is_some() {
                bail!("--by has no SVG form; use --format text, mail, markdown, json or csv");
            }
            svg::render(report, style)?
        }
    })
}

/// `cargo xtask size-report`: loads what `request` names from `layout`'s
/// results, renders it, and writes it atomically to `output` (or prints it
/// to stdout). Targets and variants left out of `all` for lack of results
/// are listed on stderr (and in JSON's `skipped`).
pub fn run(
    layout: &Layout,
    request: &Request,
    format: Format,
    style: &Style,
    output: Option<&Path>,
) -> Result<()> {
    if format == Format::Svg && request.symbols.is_some() {
        bail!("--symbols has no SVG form; use --format text, mail, markdown, json or csv for symbol diffs");
    }
    if format == Format::Svg && request.by.is_some() {
        bail!("--by has no SVG form; use --format text, mail, markdown, json or csv");
    }
    let dir = output
        .and_then(Path::parent)
        .filter(|d| !d.as_os_str().is_empty());
    if let Some(dir) = dir.filter(|d| !d.is_dir()) {
        let (out, shown) = (output.unwrap_or(dir).display(), dir.display());
        if dir.exists() {
            bail!("--output {out}: {shown} is not a directory; write the report elsewhere");
        }
        bail!("--output {out}: directory {shown} does not exist; create it (mkdir -p {shown}) or write elsewhere");
    }
    if let Some(out) = output.filter(|o| o.is_dir()) {
        bail!(
            "--output {}: is a directory; name the report file, e.g. {}",
            out.display(),
            out.join(format!("size-report.{}", format.name())).display()
        );
    }
    let report = load::load(layout, request)?;
    let text = render(&report, format, style)?;
    for s in &report.skipped {
        eprintln!("note: {}", crate::util::text::printable_lines(s));
    }
    match output {
        Some(path) => {
            write_atomic(path, text.as_bytes())?;
            eprintln!("wrote {}", path.display());
        }
        None => {
            use std::io::Write as _;
            match std::io::stdout().lock().write_all(text.as_bytes()) {
                // `| head` closing the pipe is not an error.
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
                other => other.context("writing the report to stdout")?,
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
