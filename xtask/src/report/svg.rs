//! `--format svg`: a bar chart of the percent change per target and artifact,
//! drawn with `plotters` (SVG backend only, no system fonts: text is written
//! as SVG `<text>` in the `sans-serif` family and laid out with plotters'
//! built-in size estimate, so nothing needs fontconfig or FreeType).
//!
//! One horizontal-bar panel per target, titled `SOC (openwrt/target)`. One
//! bar per metric ([`super::model::TargetReport::rows`]) and variant: for
//! sizes per artifact, then per vmlinux section (`text`, `data`, `bss`,
//! `dec`); the bar's length is the percent change against the base
//! (`(after - before) * 100 / before`), printed at its end, and the row's
//! label gives the values before → after (sizes in bytes, `dec` also in
//! hex as `size` prints it; other families with their unit, means of
//! several samples with two decimals). Bars are coloured by variant, with a legend when more
//! than one variant is compared. `--allow-mismatch` warnings are printed in
//! red under the title. All panels share one x scale. Canvas: 960 px wide, 26 px per bar plus about 110 px
//! per panel. The runtime lab's runs follow, every run a dot
//! ([`super::lab::svg`]).

use anyhow::Result;
use plotters::prelude::*;

use super::chart::{err, legend, rows, XAxis, PALETTE};
use super::document::Report;
use super::lab::svg as lab_svg;
use super::lab::LabReport;
use super::model::Metric;
use super::style::Style;
use super::text::{heading, unit_suffix};

/// Canvas width in pixels.
pub const WIDTH: u32 = 960;
const ROW: u32 = 26;
const PANEL_EXTRA: u32 = 110;
const TITLE: u32 = 40;
const WARNING_LINE: u32 = 18;

struct Bar<'a> {
    label: String,
    metric: &'a Metric,
    variant: usize,
}

/// Characters per warning line (13 px sans-serif across the canvas).
const WRAP: usize = 125;

/// Splits `text` at spaces into lines of at most `width` characters
/// (longer words stay whole); continuation lines are indented.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    let mut fresh = true; // nothing but indentation on `line` yet
    for word in text.split(' ') {
        if !fresh && line.chars().count() + 1 + word.chars().count() > width {
            lines.push(std::mem::replace(&mut line, "    ".to_string()));
            fresh = true;
        }
        if !fresh {
            line.push(' ');
        }
        line.push_str(word);
        fresh = false;
    }
    lines.push(line);
    lines
}

/// Renders the report as an SVG document.
pub fn render(report: &Report, style: &Style) -> Result<String> {
    let mut variants: Vec<String> = Vec::new();
    for t in &report.targets {
        for c in &t.comparisons {
            if !variants.contains(&c.variant.variant.name) {
                variants.push(c.variant.variant.name.clone());
            }
        }
    }
    let panels: Vec<(String, Vec<Bar<'_>>)> = report
        .targets
        .iter()
        .map(|t| {
            let mut bars = Vec::new();
            let vi = |name: &str| variants.iter().position(|v| v == name).unwrap_or(0);
            let d = style.decimal();
            for row in t.rows() {
                for (c, cell) in t.comparisons.iter().zip(&row.cells) {
                    let Some(m) = *cell else { continue };
                    let hex = match (&m.hex, m.exact()) {
                        (Some(_), Some(ch)) => format!(" (0x{:x} → 0x{:x})", ch.before, ch.after),
                        _ => String::new(),
                    };
                    bars.push(Bar {
                        label: format!(
                            "{}  {} → {}{}{hex}",
                            m.label,
                            m.before().text(d),
                            m.after().text(d),
                            unit_suffix(row.family)
                        ),
                        metric: m,
                        variant: vi(&c.variant.variant.name),
                    });
                }
            }
            (heading(t), bars)
        })
        .collect();
    let warnings: Vec<String> = report
        .targets
        .iter()
        .flat_map(|t| {
            t.comparisons.iter().flat_map(move |c| {
                c.warnings.iter().map(move |w| {
                    format!(
                        "WARNING ({}, {} → {}, --allow-mismatch): {w}",
                        t.name, report.base, c.variant.variant.name
                    )
                })
            })
        })
        .flat_map(|w| wrap(&w, WRAP))
        .collect();

    let lab_panels: Vec<(&LabReport, lab_svg::Panel<'_>)> = report
        .labs
        .iter()
        .flat_map(|l| lab_svg::panels(l).into_iter().map(move |p| (l, p)))
        .collect();
    let heights: Vec<u32> = panels
        .iter()
        .map(|(_, bars)| bars.len() as u32 * ROW + PANEL_EXTRA)
        .chain(lab_panels.iter().map(|(_, p)| p.height()))
        .collect();
    let header = TITLE + warnings.len() as u32 * WARNING_LINE;
    let height = header + heights.iter().sum::<u32>();

    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let title = super::mail::title(report);
        root.draw(&Text::new(
            title,
            (12, 12),
            ("sans-serif", 20).into_font().color(&BLACK),
        ))
        .map_err(err)?;
        for (i, w) in warnings.iter().enumerate() {
            root.draw(&Text::new(
                w.clone(),
                (12, (TITLE + i as u32 * WARNING_LINE) as i32),
                ("sans-serif", 13).into_font().color(&RED),
            ))
            .map_err(err)?;
        }
        let mut breaks = Vec::new();
        let mut y = header;
        for h in &heights {
            breaks.push(y);
            y += h;
        }
        // One scale for every panel, with room for the value labels
        // beyond the longest bar.
        let largest = panels
            .iter()
            .flat_map(|(_, bars)| bars.iter().filter_map(|b| b.metric.percent()))
            .fold(0.0f64, |m, p| m.max(p.abs()));
        let limit = if largest == 0.0 { 1.0 } else { largest * 1.45 };
        let areas = root.split_by_breakpoints::<u32, u32, _, _>([], breaks);
        let mut areas = areas.iter().skip(1);
        for ((title, bars), area) in panels.iter().zip(&mut areas) {
            draw_panel(area, title, bars, &variants, limit, style)?;
        }
        for ((lab, panel), area) in lab_panels.iter().zip(areas) {
            lab_svg::draw(area, lab, panel, style)?;
        }
        root.present().map_err(err)?;
    }
    svg.push('\n');
    Ok(svg)
}

/// Draws one target's panel; `limit` is the x-axis half-width in percent,
/// shared by all panels so that bar lengths compare across targets.
fn draw_panel(
    area: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    title: &str,
    bars: &[Bar<'_>],
    variants: &[String],
    limit: f64,
    style: &Style,
) -> Result<()> {
    let n = bars.len();
    let labels: Vec<String> = bars.iter().map(|b| b.label.clone()).collect();
    let decimal_comma = style.decimal_comma;
    let tick = |x: &f64| {
        // Tick values near 0 come out as tiny negatives: print 0 plainly.
        let x = if x.abs() < limit * 1e-9 { 0.0 } else { *x };
        let text = format!("{x:+.2}%");
        if decimal_comma {
            text.replace('.', ",")
        } else {
            text
        }
    };
    let x = XAxis {
        range: -limit..limit,
        ticks: 9,
        format: &tick,
        desc: "change in percent",
    };
    let mut chart = rows(area, title, &labels, x)?;

    for (vi, name) in variants.iter().enumerate() {
        let color = PALETTE[vi % PALETTE.len()];
        let series = chart
            .draw_series(
                bars.iter()
                    .enumerate()
                    .filter(|(_, b)| b.variant == vi)
                    .map(|(i, b)| {
                        let row = n - 1 - i;
                        let p = b.metric.percent().unwrap_or(0.0);
                        let mut bar = Rectangle::new(
                            [
                                (0.0, SegmentValue::Exact(row)),
                                (p, SegmentValue::Exact(row + 1)),
                            ],
                            color.filled(),
                        );
                        bar.set_margin(4, 4, 0, 0);
                        bar
                    }),
            )
            .map_err(err)?;
        if variants.len() > 1 {
            series.label(name.as_str()).legend(move |(x, y)| {
                Rectangle::new([(x, y - 5), (x + 12, y + 5)], color.filled())
            });
        }
    }
    // Value labels at the end of each bar, outside it.
    let font = ("sans-serif", 12).into_font().color(&BLACK);
    chart
        .draw_series(bars.iter().enumerate().map(|(i, b)| {
            let row = n - 1 - i;
            let p = b.metric.percent().unwrap_or(0.0);
            let text = b.metric.percent_text(style.decimal());
            let offset = limit * 0.02;
            let (x, anchor) = if p < 0.0 {
                (p - offset, plotters::style::text_anchor::HPos::Right)
            } else {
                (p + offset, plotters::style::text_anchor::HPos::Left)
            };
            Text::new(
                text,
                (x, SegmentValue::CenterOf(row)),
                font.clone().pos(plotters::style::text_anchor::Pos::new(
                    anchor,
                    plotters::style::text_anchor::VPos::Center,
                )),
            )
        }))
        .map_err(err)?;
    chart
        .draw_series(std::iter::once(PathElement::new(
            vec![(0.0, SegmentValue::Exact(0)), (0.0, SegmentValue::Exact(n))],
            BLACK.stroke_width(1),
        )))
        .map_err(err)?;
    if variants.len() > 1 {
        legend(&mut chart, SeriesLabelPosition::LowerRight)?;
    }
    Ok(())
}
