//! The lab's part of the SVG format: one panel per lab run and family
//! (throughput in Mbit/s, guest CPU per packet in ns/packet), drawn like
//! the size panels ([`crate::report::svg`]).
//!
//! A row per (direction, GRO setting) and arm, labelled with the arm (and
//! the series on its first arm's row); every measured run is a dot at its
//! value on the x axis, in the arm's colour, and the arm's mean a vertical
//! tick. The x axis spans the panel's values with a margin (and room for
//! the legend on the right), in the family's unit.

use anyhow::Result;
use plotters::prelude::*;

use super::{families, LabReport};
use crate::report::chart::{err, legend, rows, XAxis, GREY, PALETTE};
use crate::report::model::mean;
use crate::report::style::Style;
use crate::results::lab::metric::MeasuredBy as Source;

/// Height of one row, pixels.
const ROW: u32 = 22;
/// Height a panel needs besides its rows (title, axis, margins), pixels.
const PANEL_EXTRA: u32 = 110;

/// Arm `index`'s colour: the base first, its A/A control (second) grey,
/// then the variants.
fn arm_color(index: usize) -> RGBColor {
    match index {
        0 => PALETTE[0],
        1 => GREY,
        n => PALETTE[(n - 1) % PALETTE.len()],
    }
}

/// One row: its label, the arm's index (for its colour) and values.
struct Row<'a> {
    label: String,
    arm: usize,
    values: &'a [f64],
}

/// One panel: its title, unit and rows.
pub struct Panel<'a> {
    title: String,
    unit: String,
    rows: Vec<Row<'a>>,
}

impl Panel<'_> {
    /// Pixels the panel needs.
    pub fn height(&self) -> u32 {
        self.rows.len() as u32 * ROW + PANEL_EXTRA
    }
}

/// The panels of `lab`: one per family that has runs.
pub fn panels(lab: &LabReport) -> Vec<Panel<'_>> {
    let mut out = Vec::new();
    for metric in families() {
        let (family, unit) = (metric.name(), metric.unit());
        let mut rows = Vec::new();
        for s in lab.series.iter().filter(|s| s.family == family) {
            for (i, (arm, values)) in s.arms.iter().enumerate() {
                let label = if i == 0 {
                    format!("{}: {arm}", s.title())
                } else {
                    arm.clone()
                };
                let arm = lab.arms.iter().position(|a| a.name == *arm).unwrap_or(0);
                rows.push(Row { label, arm, values });
            }
        }
        if !rows.is_empty() {
            out.push(Panel {
                title: if lab.is_host() {
                    format!(
                        "Runtime lab, {}: {} ({unit}), every run",
                        lab.machine(),
                        metric.title()
                    )
                } else {
                    format!(
                        "Runtime lab, {} on {}: {} ({unit}), every run",
                        lab.target,
                        lab.machine_short(),
                        metric.title()
                    )
                },
                unit: unit.to_string(),
                rows,
            });
            if metric.family() == Source::CoreModel {
                if let Some(p) = out.last_mut() {
                    p.title.push_str(super::CORE_MODEL_CAPTION);
                }
            }
        }
    }
    out
}

/// Draws `panel` of `lab` into `area`.
pub fn draw(
    area: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    lab: &LabReport,
    panel: &Panel<'_>,
    style: &Style,
) -> Result<()> {
    let n = panel.rows.len();
    let all = panel.rows.iter().flat_map(|r| r.values.iter().copied());
    let (lo, hi) = all.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    });
    let pad = ((hi - lo) * 0.08).max(hi.abs() * 0.005).max(1e-9);
    // Room on the right for the legend.
    let (lo, hi) = (lo - pad, hi + pad + (hi - lo + 2.0 * pad) * 0.3);
    let labels: Vec<String> = panel.rows.iter().map(|r| r.label.clone()).collect();
    let decimal = style.decimal();
    let x = XAxis {
        range: lo..hi,
        ticks: 8,
        format: &|x| decimal.apply(format!("{x:.0}")),
        desc: panel.unit.as_str(),
    };
    let mut chart = rows(area, &panel.title, &labels, x)?;
    for (ai, arm) in lab.arms.iter().enumerate() {
        let color = arm_color(ai);
        let mine = || {
            panel
                .rows
                .iter()
                .enumerate()
                .filter(move |(_, r)| r.arm == ai)
        };
        let series = chart
            .draw_series(mine().flat_map(|(i, r)| {
                let row = n - 1 - i;
                r.values.iter().map(move |&v| {
                    Circle::new(
                        (v, SegmentValue::CenterOf(row)),
                        4,
                        color.mix(0.75).filled(),
                    )
                })
            }))
            .map_err(err)?;
        series
            .label(arm.name.as_str())
            .legend(move |(x, y)| Circle::new((x + 6, y), 4, color.filled()));
        chart
            .draw_series(mine().filter_map(|(i, r)| {
                let m = mean(r.values)?;
                let row = n - 1 - i;
                Some(PathElement::new(
                    vec![
                        (m, SegmentValue::Exact(row)),
                        (m, SegmentValue::Exact(row + 1)),
                    ],
                    color.stroke_width(2),
                ))
            }))
            .map_err(err)?;
    }
    legend(&mut chart, SeriesLabelPosition::UpperRight)
}
