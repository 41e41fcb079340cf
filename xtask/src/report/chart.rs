//! What the SVG charts ([`super::svg`], [`super::lab::svg`]) share:
//! plotters' errors as anyhow's, one palette, one legend box.

use std::ops::Range;

use anyhow::Result;
use plotters::coord::ranged1d::SegmentedCoord;
use plotters::coord::types::{RangedCoordf64, RangedCoordusize};
use plotters::coord::{CoordTranslate, Shift};
use plotters::prelude::*;

/// A chart of horizontal rows: x a value, y the rows' segments (row 0 at
/// the bottom).
pub type RowsChart<'a> =
    ChartContext<'a, SVGBackend<'a>, Cartesian2d<RangedCoordf64, SegmentedCoord<RangedCoordusize>>>;

/// The x axis of a [`rows`] chart: its range, ticks, their text and the
/// axis' description.
pub struct XAxis<'f> {
    /// The values the axis spans.
    pub range: Range<f64>,
    /// How many ticks.
    pub ticks: usize,
    /// A tick's text.
    pub format: &'f dyn Fn(&f64) -> String,
    /// The text under the axis (a unit or "change in percent").
    pub desc: &'f str,
}

/// A chart in `area` captioned `title`, one row per label (the first at
/// the top, labelled on the left in a 330 px column), over `x`, its mesh
/// drawn.
pub fn rows<'a>(
    area: &DrawingArea<SVGBackend<'a>, Shift>,
    title: &str,
    labels: &[String],
    x: XAxis<'_>,
) -> Result<RowsChart<'a>> {
    let n = labels.len();
    let mut chart = ChartBuilder::on(area)
        .caption(title, ("sans-serif", 17).into_font())
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(330)
        // An integer range is inclusive in plotters: 0..n-1 gives n segments.
        .build_cartesian_2d(x.range, (0..n - 1).into_segmented())
        .map_err(err)?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(n)
        .y_label_formatter(&|v| match v {
            SegmentValue::CenterOf(i) if *i < n => labels[n - 1 - *i].clone(),
            _ => String::new(),
        })
        .x_labels(x.ticks)
        .x_label_formatter(x.format)
        .x_desc(x.desc)
        .label_style(("sans-serif", 13))
        .light_line_style(WHITE.mix(0.0))
        .draw()
        .map_err(err)?;
    Ok(chart)
}

/// The series colours, in order (matplotlib's `tab10`, without its grey).
pub const PALETTE: [RGBColor; 6] = [
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0x8c, 0x56, 0x4b),
];

/// The colour of an A/A control: `tab10`'s grey.
pub const GREY: RGBColor = RGBColor(0x7f, 0x7f, 0x7f);

/// A plotters error as "drawing the SVG chart: …".
pub fn err<E: std::fmt::Display>(e: E) -> anyhow::Error {
    anyhow::anyhow!("drawing the SVG chart: {e}")
}

/// The legend of `chart`'s labelled series, boxed, at `position`.
pub fn legend<'a, CT: CoordTranslate>(
    chart: &mut ChartContext<'a, SVGBackend<'a>, CT>,
    position: SeriesLabelPosition,
) -> Result<()> {
    chart
        .configure_series_labels()
        .position(position)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 12))
        .draw()
        .map_err(err)
}
