//! Shared SVG line plots (plotters), used by `txmem bench` and `txmem sim`.
//!
//! A figure is a grid of [`Panel`]s; each panel has its own axes and one
//! line per [`Series`]. Callers build plain data and call [`write_svg`]; they
//! never touch plotters directly, so both subcommands draw alike.

use std::path::Path;

use plotters::prelude::*;

/// One line of a panel: a name for the legend and its points.
#[derive(Clone, Debug)]
pub struct Series {
    /// Legend label.
    pub name: String,
    /// Points in x order (unsorted input is sorted before drawing).
    pub points: Vec<(f64, f64)>,
}

/// One chart of a figure.
#[derive(Clone, Debug)]
pub struct Panel {
    /// Title above the chart.
    pub title: String,
    /// X axis label.
    pub x_label: String,
    /// Y axis label.
    pub y_label: String,
    /// The lines.
    pub series: Vec<Series>,
}

/// Pixel size of one panel.
const PANEL_W: u32 = 560;
const PANEL_H: u32 = 380;

/// Figure-wide drawing options.
#[derive(Clone, Copy, Debug, Default)]
pub struct PlotOptions {
    /// Logarithmic y axis (for series that span orders of magnitude, e.g.
    /// a lock and an STM on one chart). Non-positive points are dropped.
    pub log_y: bool,
}

/// Writes `panels` as one SVG file, `columns` panels per row.
///
/// Every series name gets the same colour in every panel (colours are
/// assigned by first appearance across the figure), so one system is one
/// colour throughout.
pub fn write_svg(path: &Path, panels: &[Panel], columns: usize) -> Result<(), String> {
    write_svg_with(path, panels, columns, PlotOptions::default())
}

/// [`write_svg`] with options.
pub fn write_svg_with(
    path: &Path,
    panels: &[Panel],
    columns: usize,
    options: PlotOptions,
) -> Result<(), String> {
    if panels.is_empty() {
        return Err("nothing to plot".into());
    }
    let columns = columns.clamp(1, panels.len());
    let rows = panels.len().div_ceil(columns);
    let size = (PANEL_W * columns as u32, PANEL_H * rows as u32);

    let mut names: Vec<&str> = Vec::new();
    for s in panels.iter().flat_map(|p| &p.series) {
        if !names.contains(&s.name.as_str()) {
            names.push(&s.name);
        }
    }
    let colour = |name: &str| {
        let i = names.iter().position(|n| *n == name).unwrap_or(0);
        Palette99::pick(i).to_rgba()
    };

    let root = SVGBackend::new(path, size).into_drawing_area();
    let err = |e: &dyn std::fmt::Display| format!("cannot draw {}: {e}", path.display());
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let areas = root.split_evenly((rows, columns));
    for (panel, area) in panels.iter().zip(areas.iter()) {
        draw_panel(panel, area, &colour, options).map_err(|e| err(&e))?;
    }
    root.present().map_err(|e| err(&e))?;
    Ok(())
}

fn draw_panel<DB: DrawingBackend>(
    panel: &Panel,
    area: &DrawingArea<DB, plotters::coord::Shift>,
    colour: &dyn Fn(&str) -> RGBAColor,
    options: PlotOptions,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let keep = |&&(_, y): &&(f64, f64)| !options.log_y || y > 0.0;
    let points = || {
        panel
            .series
            .iter()
            .flat_map(|s| s.points.iter())
            .filter(keep)
    };
    let (mut x0, mut x1) = (f64::INFINITY, f64::NEG_INFINITY);
    let (mut y0, mut y1): (f64, f64) = (f64::INFINITY, 0.0);
    for &(x, y) in points() {
        x0 = x0.min(x);
        x1 = x1.max(x);
        y0 = y0.min(y);
        y1 = y1.max(y);
    }
    if !x0.is_finite() {
        (x0, x1) = (0.0, 1.0);
    }
    if x1 - x0 < 1e-9 {
        // A single x value (one thread count): give the axis some width.
        x0 -= 0.5;
        x1 += 0.5;
    }
    // Integer x values (thread counts, core counts) get one label each.
    let integer_span = (x1 - x0).round() as usize;
    let x_labels = if integer_span <= 16 {
        integer_span + 1
    } else {
        10
    };
    let pad = (x1 - x0) * 0.05;
    let (x0, x1) = (x0 - pad, x1 + pad);
    let y1 = if y1 > 0.0 { y1 * 1.1 } else { 1.0 };

    let builder = || {
        let mut b = ChartBuilder::on(area);
        b.caption(&panel.title, ("sans-serif", 15))
            .margin(10)
            .x_label_area_size(35)
            .y_label_area_size(60);
        b
    };
    // The two axis kinds are different types; the drawing is the same.
    macro_rules! draw {
        ($chart:expr) => {{
            let mut chart = $chart;
            chart
                .configure_mesh()
                .x_labels(x_labels)
                .light_line_style(TRANSPARENT)
                .x_desc(panel.x_label.as_str())
                .y_desc(panel.y_label.as_str())
                .y_label_formatter(&|v| human(*v))
                .x_label_formatter(&|v| {
                    if (v - v.round()).abs() < 1e-9 {
                        format!("{}", v.round() as i64)
                    } else {
                        String::new()
                    }
                })
                .draw()?;
            for s in &panel.series {
                let mut pts: Vec<(f64, f64)> = s.points.iter().filter(keep).copied().collect();
                pts.sort_by(|a, b| a.0.total_cmp(&b.0));
                let c = colour(&s.name);
                chart
                    .draw_series(LineSeries::new(pts.iter().copied(), c.stroke_width(2)))?
                    .label(s.name.as_str())
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 16, y)], c.stroke_width(2))
                    });
                chart.draw_series(pts.iter().map(|&p| Circle::new(p, 3, c.filled())))?;
            }
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::UpperRight)
                .background_style(WHITE.mix(0.8))
                .border_style(BLACK.mix(0.3))
                .label_font(("sans-serif", 11))
                .draw()?;
        }};
    }
    if options.log_y {
        let y0 = if y0.is_finite() { y0 / 1.5 } else { 1.0 };
        draw!(builder().build_cartesian_2d(x0..x1, (y0..y1 * 1.5).log_scale())?);
    } else {
        draw!(builder().build_cartesian_2d(x0..x1, 0.0..y1)?);
    }
    Ok(())
}

/// 12345678 -> "12.3M": short axis labels.
pub fn human(v: f64) -> String {
    let a = v.abs();
    if a >= 1e9 {
        format!("{:.1}G", v / 1e9)
    } else if a >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if a >= 1e3 {
        format!("{:.0}k", v / 1e3)
    } else {
        format!("{v:.0}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_an_svg_with_every_series_name() {
        let dir = std::env::temp_dir().join(format!("txmem-plot-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("p.svg");
        let panel = |t: &str| Panel {
            title: t.into(),
            x_label: "threads".into(),
            y_label: "ops/s".into(),
            series: vec![
                Series {
                    name: "alpha".into(),
                    points: vec![(1.0, 10.0), (2.0, 18.0)],
                },
                Series {
                    name: "beta".into(),
                    points: vec![(1.0, 5.0)],
                },
            ],
        };
        write_svg(&path, &[panel("one"), panel("two"), panel("three")], 2).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..40.min(svg.len())]);
        for want in ["alpha", "beta", "three"] {
            assert!(svg.contains(want), "missing {want}");
        }
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn log_axis_drops_non_positive_points() {
        let dir = std::env::temp_dir().join(format!("txmem-plot-log-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("log.svg");
        let panel = Panel {
            title: "spread".into(),
            x_label: "threads".into(),
            y_label: "ops/s".into(),
            series: vec![Series {
                name: "wide".into(),
                points: vec![(1.0, 0.0), (2.0, 1e3), (4.0, 1e7)],
            }],
        };
        write_svg_with(&path, &[panel], 1, PlotOptions { log_y: true }).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        assert!(
            svg.contains("10.0M") || svg.contains("1.0M"),
            "no log ticks"
        );
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn human_units() {
        assert_eq!(human(12_345_678.0), "12.3M");
        assert_eq!(human(950.0), "950");
    }
}
