//! SVG plots of latency percentiles (plotters, SVG backend only): one panel per flow kind, one
//! colour per system, one marker per percentile, latency on a log scale, and a legend column.

use anyhow::Context;
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use scdflow::bench::{Flow, Record};
use std::path::Path;

/// One plot: `x` places records along the horizontal axis (evenly spaced categories), one
/// panel per flow.
pub struct Plot<'a> {
    /// The title above the panels.
    pub title: String,
    /// The horizontal axis's description.
    pub x_desc: String,
    /// The categories from left to right: a record's value and its label.
    pub ticks: Vec<(u64, String)>,
    /// A record's category value, or `None` to leave it out.
    pub x: &'a dyn Fn(&Record) -> Option<u64>,
}

/// The size of one panel, and the width of the legend column.
const PANEL: (u32, u32) = (440, 440);
const LEGEND: u32 = 130;

/// Colours by system, in order of first appearance.
const COLOURS: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(255, 127, 14),
    RGBColor(127, 127, 127),
];

const PERCENTILES: [&str; 4] = ["p50", "p90", "p99", "p99.9"];

/// Writes `plot` of `records` for `flows` to `path`.
pub fn write(path: &Path, plot: &Plot, flows: &[Flow], records: &[Record]) -> anyhow::Result<()> {
    let width = PANEL.0 * flows.len().max(1) as u32 + LEGEND;
    let root = SVGBackend::new(path, (width, PANEL.1)).into_drawing_area();
    draw(&root, plot, flows, records)
        .map_err(|e| anyhow::anyhow!("{e}"))
        .with_context(|| format!("{}: cannot draw the plot", path.display()))?;
    root.present()
        .map_err(|e| anyhow::anyhow!("{e}"))
        .with_context(|| format!("{}: cannot write", path.display()))
}

type DrawResult = Result<(), Box<dyn std::error::Error>>;

fn draw(
    root: &DrawingArea<SVGBackend, Shift>,
    plot: &Plot,
    flows: &[Flow],
    records: &[Record],
) -> DrawResult {
    root.fill(&WHITE)?;
    let root = root.titled(&plot.title, ("sans-serif", 18))?;
    let (panels, legend) = root.split_horizontally(root.dim_in_pixel().0 - LEGEND);
    // A peer that measures throughput only has nothing to plot.
    let records: Vec<&Record> = records.iter().filter(|r| r.latency.count > 0).collect();
    let mut systems: Vec<&str> = Vec::new();
    for r in &records {
        if !systems.contains(&r.system.as_str()) {
            systems.push(&r.system);
        }
    }
    let placed: Vec<(usize, &Record)> = records
        .iter()
        .copied()
        .filter_map(|r| {
            let x = (plot.x)(r)?;
            Some((plot.ticks.iter().position(|(t, _)| *t == x)?, r))
        })
        .collect();
    let values = placed
        .iter()
        .flat_map(|(_, r)| r.latency.percentiles().map(|(_, v)| v))
        .filter(|&v| v > 0);
    let (lo, hi) = values.fold((u64::MAX, 0), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let (lo, hi) = if hi == 0 {
        (1.0, 10.0)
    } else {
        (lo as f64 / 1.5, hi as f64 * 1.5)
    };
    let n = plot.ticks.len().max(1);
    let tick = |x: &f64| {
        let i = x.round();
        if (x - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < plot.ticks.len() {
            plot.ticks[i as usize].1.clone()
        } else {
            String::new()
        }
    };
    let micros = |y: &f64| format!("{y:.0}");
    for (area, &flow) in panels
        .split_evenly((1, flows.len().max(1)))
        .iter()
        .zip(flows)
    {
        let mut chart = ChartBuilder::on(area)
            .caption(flow.label(), ("sans-serif", 16))
            .margin(12)
            .x_label_area_size(44)
            .y_label_area_size(64)
            .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), (lo..hi).log_scale())?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(n)
            .x_label_formatter(&tick)
            .y_label_formatter(&micros)
            .x_desc(plot.x_desc.as_str())
            .y_desc("latency per commit (µs)")
            .draw()?;
        for (s, system) in systems.iter().enumerate() {
            let colour = COLOURS[s % COLOURS.len()];
            let mut mine: Vec<(usize, &Record)> = placed
                .iter()
                .filter(|(_, r)| r.flow == flow && r.system == *system)
                .copied()
                .collect();
            mine.sort_by_key(|(x, _)| *x);
            for q in 0..PERCENTILES.len() {
                let points: Vec<((f64, f64), bool)> = mine
                    .iter()
                    .map(|(x, r)| {
                        let y = r.latency.percentiles()[q].1 as f64;
                        ((*x as f64, y), r.complete())
                    })
                    .filter(|((_, y), _)| *y > 0.0)
                    .collect();
                let style = colour.stroke_width(if q == 2 { 2 } else { 1 });
                chart.draw_series(LineSeries::new(points.iter().map(|(p, _)| *p), style))?;
                // Hollow markers: runs that the budget cut short.
                for (complete, style) in [(true, colour.filled()), (false, colour.stroke_width(1))]
                {
                    let at = points
                        .iter()
                        .filter(|(_, c)| *c == complete)
                        .map(|(p, _)| EmptyElement::at(*p));
                    draw_markers(&mut chart, q, at, style)?;
                }
            }
        }
    }
    draw_legend(&legend, &systems)
}

/// The markers of percentile `q`: p50 circle, p90 triangle, p99 square, p99.9 cross.
fn draw_markers<'a, DB: DrawingBackend + 'a, I>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<RangedCoordf64, LogCoord<f64>>>,
    q: usize,
    at: I,
    fill: ShapeStyle,
) -> DrawResult
where
    I: Iterator<Item = EmptyElement<(f64, f64), DB>>,
    DB::ErrorType: 'static,
{
    let colour = fill.color;
    match q {
        0 => chart.draw_series(at.map(|e| e + Circle::new((0, 0), 3, fill)))?,
        1 => chart.draw_series(at.map(|e| e + TriangleMarker::new((0, 0), 4, fill)))?,
        2 => chart.draw_series(at.map(|e| e + Rectangle::new([(-3, -3), (3, 3)], fill)))?,
        _ => chart.draw_series(at.map(|e| e + Cross::new((0, 0), 4, colour.stroke_width(2))))?,
    };
    Ok(())
}

/// The legend column: a line per system in its colour, a marker per percentile in black.
fn draw_legend(area: &DrawingArea<SVGBackend, Shift>, systems: &[&str]) -> DrawResult {
    let text = |s: &str, y: i32, size: u32| {
        Text::new(
            s.to_string(),
            (36, y),
            ("sans-serif", size)
                .into_font()
                .into_text_style(area)
                .pos(Pos::new(HPos::Left, VPos::Center)),
        )
    };
    let mut y = 60;
    area.draw(&text("system", y, 13))?;
    for (s, system) in systems.iter().enumerate() {
        y += 20;
        let colour = COLOURS[s % COLOURS.len()];
        area.draw(&PathElement::new(
            vec![(6, y), (30, y)],
            colour.stroke_width(2),
        ))?;
        area.draw(&text(system, y, 12))?;
    }
    y += 32;
    area.draw(&text("percentile", y, 13))?;
    let black = BLACK.filled();
    for (q, label) in PERCENTILES.iter().enumerate() {
        y += 20;
        let at = EmptyElement::at((18, y));
        match q {
            0 => area.draw(&(at + Circle::new((0, 0), 3, black)))?,
            1 => area.draw(&(at + TriangleMarker::new((0, 0), 4, black)))?,
            2 => area.draw(&(at + Rectangle::new([(-3, -3), (3, 3)], black)))?,
            _ => area.draw(&(at + Cross::new((0, 0), 4, BLACK.stroke_width(2))))?,
        }
        area.draw(&text(label, y, 12))?;
    }
    y += 32;
    area.draw(&text("p99: thicker line", y, 11))?;
    y += 18;
    area.draw(&text("hollow: run cut", y, 11))?;
    y += 14;
    area.draw(&text("short by --budget", y, 11))?;
    Ok(())
}
