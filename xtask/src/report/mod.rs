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
mod compare;
pub mod csv;
pub mod device_fit;
pub mod document;
pub mod json;
pub mod kconfig;
pub mod known;
pub mod lab;
pub mod load;
pub mod mail;
pub mod markdown;
pub mod model;
pub mod openwrt_lab;
pub mod request;
pub mod sizes;
pub mod style;
pub mod svg;
pub mod text;

use std::path::Path;

use anyhow::{bail, Context, Result};

use crate::util::fs::write_atomic;
use crate::util::layout::Layout;

pub use document::{Comparison, Report, TargetReport};
pub use known::{build_command, lab_kernel_of};
pub use lab::find::LabRuns;
pub use load::load;
pub use model::{format_percent, Change, Decimal};
pub use request::{ReportRequest, SymbolOptions};
pub use style::{display_path, escape_controls, Format, Style};

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

/// Why `--agreement` is refused in CSV and SVG.
const AGREEMENT_FORMATS: &str =
    "--agreement has no CSV or SVG form; use --format text, mail, markdown or json";

fn render_raw(report: &Report, format: Format, style: &Style) -> Result<String> {
    Ok(match format {
        Format::Text => text::render(report, style),
        Format::Mail => mail::render(report, style),
        Format::Markdown => markdown::render(report, style),
        Format::Json => json::render(report, style)?,
        Format::Csv if report.agreement.is_some() => bail!("{AGREEMENT_FORMATS}"),
        Format::Csv => csv::render(report, style)?,
        Format::Svg => {
            if report.symbols.is_some() {
                bail!("--symbols has no SVG form; use --format text, mail, markdown, json or csv for symbol diffs");
            }
            if report.by.is_some() {
                bail!("--by has no SVG form; use --format text, mail, markdown, json or csv");
            }
            if report.agreement.is_some() {
                bail!("{AGREEMENT_FORMATS}");
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
    request: &ReportRequest,
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
    if matches!(format, Format::Svg | Format::Csv) && request.agreement {
        bail!("{AGREEMENT_FORMATS}");
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
