//! The plot: throughput against threads, one panel per workload, one line
//! per system (failed rows are left out), drawn with the shared helper.

use std::path::Path;

use crate::measure::report::Report;
use crate::plot::{write_svg_with, Panel, PlotOptions, Series};

/// Writes the plot to `path`; an error if no row succeeded.
pub fn write(path: &Path, report: &Report) -> Result<(), String> {
    let mut panels: Vec<Panel> = Vec::new();
    for r in report.results.iter().filter(|r| r.status == "ok") {
        let Some(ops) = r.ops_per_sec else { continue };
        let panel = match panels.iter_mut().position(|p| p.title == r.workload) {
            Some(i) => &mut panels[i],
            None => {
                panels.push(Panel {
                    title: r.workload.clone(),
                    x_label: "threads".into(),
                    y_label: format!("{}/s (median, log scale)", report.unit),
                    series: Vec::new(),
                });
                panels.last_mut().expect("just pushed")
            }
        };
        match panel.series.iter_mut().find(|s| s.name == r.system) {
            Some(s) => s.points.push((r.threads as f64, ops)),
            None => panel.series.push(Series {
                name: r.system.clone(),
                points: vec![(r.threads as f64, ops)],
            }),
        }
    }
    if panels.is_empty() {
        return Err(format!("no successful rows to plot in {}", path.display()));
    }
    let columns = if panels.len() >= 4 { 3 } else { panels.len() };
    // Locks and STMs differ by orders of magnitude: a log axis keeps
    // every line readable.
    write_svg_with(path, &panels, columns, PlotOptions { log_y: true })
}
