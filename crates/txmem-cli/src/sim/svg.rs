//! Line plots whose x axis is a list of labels (policy names, backoff kinds...), for
//! sweeps over non-numeric parameters. Numeric sweeps use the shared [`crate::plot`].

use plotters::prelude::*;
use std::path::Path;

/// One line: a name and one y value per x label (`None` = no point).
#[derive(Clone, Debug)]
pub struct LabelledSeries {
    /// Legend entry.
    pub name: String,
    /// y per x position.
    pub ys: Vec<Option<f64>>,
}

/// A y-axis label: short units for large values, decimals for small ones (rates, ratios).
pub fn axis_label(v: f64) -> String {
    if v.abs() >= 1000.0 {
        crate::plot::human(v)
    } else if v.abs() >= 10.0 || v == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

/// Writes an SVG line plot with evenly spaced, labelled x positions.
pub fn labelled_line_plot(
    path: &Path,
    title: &str,
    x_label: &str,
    y_label: &str,
    x_values: &[String],
    series: &[LabelledSeries],
) -> Result<(), String> {
    let err = |e: &dyn std::fmt::Display| format!("cannot draw plot {}: {e}", path.display());
    if x_values.is_empty() {
        return Err(err(&"no x values"));
    }
    let ymax = series
        .iter()
        .flat_map(|s| s.ys.iter().flatten())
        .fold(0.0f64, |a, &b| a.max(b));
    let top = if ymax > 0.0 { ymax * 1.1 } else { 1.0 };
    let n = x_values.len();
    let root = SVGBackend::new(path, (900, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(15)
        .x_label_area_size(50)
        .y_label_area_size(80)
        .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), 0.0..top)
        .map_err(|e| err(&e))?;
    let labels = x_values.to_vec();
    chart
        .configure_mesh()
        .x_labels(n.clamp(2, 20) * 2 + 1)
        .x_label_formatter(&|x: &f64| {
            let i = x.round();
            if (x - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < labels.len() {
                labels[i as usize].clone()
            } else {
                String::new()
            }
        })
        .y_label_formatter(&|v| axis_label(*v))
        .x_desc(x_label)
        .y_desc(y_label)
        .draw()
        .map_err(|e| err(&e))?;
    for (k, s) in series.iter().enumerate() {
        let color = Palette99::pick(k).to_rgba();
        let pts: Vec<(f64, f64)> =
            s.ys.iter()
                .enumerate()
                .filter_map(|(i, y)| y.map(|y| (i as f64, y)))
                .collect();
        chart
            .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))
            .map_err(|e| err(&e))?
            .label(s.name.clone())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
            });
        chart
            .draw_series(pts.into_iter().map(|p| Circle::new(p, 4, color.filled())))
            .map_err(|e| err(&e))?;
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(|e| err(&e))?;
    root.present().map_err(|e| err(&e))?;
    Ok(())
}
