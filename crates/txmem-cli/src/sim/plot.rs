//! Plotting a simulator report: one metric against the swept parameter,
//! one line per value of the series parameter.

use std::path::Path;

use txmem_sim::experiments::{Report, Row};

use crate::plot::{write_svg, Panel, Series};
use crate::sim::svg::{labelled_line_plot, LabelledSeries};

/// A parameter value as a plot label.
fn label(v: Option<&serde_json::Value>) -> String {
    match v {
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
        None => "-".into(),
    }
}

/// Plots `metric` against parameter `x`, one line per value of `series` (if any).
pub fn plot_report(
    path: &Path,
    r: &Report,
    x: &str,
    series: Option<&str>,
    metric: &str,
) -> Result<(), String> {
    // A grouped sweep (one panel per workload, say) is plotted by its mean rows.
    let is_mean = |row: &&Row| {
        row.params
            .values()
            .any(|v| v.as_str() == Some(txmem_sim::experiments::MEAN_GROUP))
    };
    let grouped = r.results.iter().any(|row| is_mean(&row));
    let rows: Vec<&Row> = r
        .results
        .iter()
        .filter(|row| !grouped || is_mean(row))
        .collect();
    let mut xs: Vec<String> = Vec::new();
    let mut names: Vec<String> = Vec::new();
    for row in &rows {
        let xv = label(row.params.get(x));
        if !xs.contains(&xv) {
            xs.push(xv);
        }
        let s = series
            .map(|s| label(row.params.get(s)))
            .unwrap_or_else(|| metric.to_string());
        if !names.contains(&s) {
            names.push(s);
        }
    }
    let lines: Vec<LabelledSeries> = names
        .iter()
        .map(|n| {
            let ys = xs
                .iter()
                .map(|xv| {
                    rows.iter()
                        .find(|row: &&&Row| {
                            label(row.params.get(x)) == *xv
                                && series
                                    .map(|s| label(row.params.get(s)) == *n)
                                    .unwrap_or(true)
                        })
                        .and_then(|row| row.metrics.get(metric)?.as_f64())
                })
                .collect();
            LabelledSeries {
                name: n.clone(),
                ys,
            }
        })
        .collect();
    let title = if grouped {
        format!("txmem sim {} (mean over groups)", r.experiment)
    } else {
        format!("txmem sim {}", r.experiment)
    };
    let numeric: Option<Vec<f64>> = xs.iter().map(|x| x.parse::<f64>().ok()).collect();
    let ymax = lines
        .iter()
        .flat_map(|l| l.ys.iter().flatten())
        .fold(0.0f64, |a, &b| a.max(b));
    match numeric {
        // Numeric parameter and large values: the shared plot with a real x axis (its axis
        // labels are whole numbers, so small rates and ratios use the labelled plot).
        Some(xv) if ymax >= 10.0 => {
            let series = lines
                .iter()
                .map(|l| Series {
                    name: l.name.clone(),
                    points: xv
                        .iter()
                        .zip(&l.ys)
                        .filter_map(|(&x, y)| y.map(|y| (x, y)))
                        .collect(),
                })
                .collect();
            let panel = Panel {
                title,
                x_label: x.to_string(),
                y_label: metric.to_string(),
                series,
            };
            write_svg(path, &[panel], 1)
        }
        _ => labelled_line_plot(path, &title, x, metric, &xs, &lines),
    }
}
