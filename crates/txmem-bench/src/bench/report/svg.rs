//! The plot: throughput against threads, one panel per workload, one line
//! per system (failed rows are left out), drawn with the shared helper.

use std::path::Path;

use crate::bench::report::Report;
use crate::plot::{write_svg, Panel, Series};

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
                    y_label: "ops/s (median)".into(),
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
    write_svg(path, &panels, columns)
}
