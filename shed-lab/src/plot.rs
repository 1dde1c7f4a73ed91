//! A sweep as an SVG: goodput and p99 against offered load, one line per
//! policy, with the ideal (goodput = min(offered, capacity)) for reference.

use std::collections::BTreeMap;
use std::path::Path;

use plotters::prelude::*;

use crate::Report;

const COLORS: [RGBColor; 5] = [
    RGBColor(204, 37, 41),
    RGBColor(218, 124, 48),
    RGBColor(62, 150, 81),
    RGBColor(57, 106, 177),
    RGBColor(107, 76, 154),
];

/// Writes the plot of `reports` (a sweep) to `path`.
pub fn svg(reports: &[Report], path: &Path) -> Result<(), Box<dyn std::error::Error>> {
    let Some(first) = reports.first() else {
        return Err("nothing to plot".into());
    };
    let capacity = first.capacity_rps;
    let offered = |r: &Report| r.total.offered as f64 / r.seconds;
    let mut lines: BTreeMap<&str, Vec<&Report>> = BTreeMap::new();
    for r in reports {
        lines.entry(r.policy.as_str()).or_default().push(r);
    }
    let x_max = reports.iter().map(offered).fold(0.0, f64::max) * 1.05;
    let y_max = capacity.max(
        reports
            .iter()
            .map(|r| r.total.goodput_rps)
            .fold(0.0, f64::max),
    ) * 1.15;
    let p99_max = reports.iter().map(|r| r.total.p99_ms).fold(1.0, f64::max) * 1.15;

    let root = SVGBackend::new(path, (900, 900)).into_drawing_area();
    root.fill(&WHITE)?;
    let (top, bottom) = root.split_vertically(450);

    let mut goodput = ChartBuilder::on(&top)
        .caption(
            format!("{}: goodput against offered load", first.scenario),
            ("sans-serif", 22),
        )
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..x_max, 0.0..y_max)?;
    goodput
        .configure_mesh()
        .x_desc("offered (rps)")
        .y_desc("served in time (rps)")
        .draw()?;
    goodput
        .draw_series(LineSeries::new(
            [(0.0, 0.0), (capacity, capacity), (x_max, capacity)],
            BLACK.stroke_width(1),
        ))?
        .label("ideal")
        .legend(|(x, y)| PathElement::new([(x, y), (x + 20, y)], BLACK));

    let mut latency = ChartBuilder::on(&bottom)
        .caption("p99 of calls served in time", ("sans-serif", 22))
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..x_max, 0.0..p99_max)?;
    latency
        .configure_mesh()
        .x_desc("offered (rps)")
        .y_desc("p99 (ms)")
        .draw()?;

    for (i, (policy, runs)) in lines.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let points: Vec<(f64, f64)> = runs
            .iter()
            .map(|r| (offered(r), r.total.goodput_rps))
            .collect();
        goodput
            .draw_series(LineSeries::new(points.clone(), color.stroke_width(2)).point_size(3))?
            .label(*policy)
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], color.stroke_width(2)));
        let p99: Vec<(f64, f64)> = runs.iter().map(|r| (offered(r), r.total.p99_ms)).collect();
        latency
            .draw_series(LineSeries::new(p99, color.stroke_width(2)).point_size(3))?
            .label(*policy)
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], color.stroke_width(2)));
    }
    goodput
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::LowerRight)
        .draw()?;
    latency
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperLeft)
        .draw()?;
    root.present()?;
    Ok(())
}
