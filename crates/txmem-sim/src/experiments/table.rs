//! Plain-text (markdown) tables of experiment rows.

use super::Row;
use serde_json::Value;

fn cell(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => "-".into(),
        Some(Value::Number(n)) if n.is_f64() => {
            let f = n.as_f64().unwrap_or(0.0);
            if f.abs() >= 1000.0 {
                format!("{f:.0}")
            } else {
                format!("{f:.3}")
            }
        }
        Some(Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
    }
}

/// Renders `rows` as a markdown table: every parameter column, then `metrics` columns.
///
/// ```
/// use serde_json::json;
/// use txmem_sim::experiments::{table::render, Row};
/// let row = Row {
///     params: json!({"sync": "tx"}).as_object().unwrap().clone(),
///     metrics: json!({"cycles": 10}).as_object().unwrap().clone(),
/// };
/// let t = render(&[row], &["cycles"]);
/// assert!(t.contains("| tx") && t.contains("cycles"));
/// ```
pub fn render(rows: &[Row], metrics: &[&str]) -> String {
    let mut header: Vec<String> = Vec::new();
    for r in rows {
        for k in r.params.keys() {
            if !header.contains(k) {
                header.push(k.clone());
            }
        }
    }
    let nparams = header.len();
    header.extend(metrics.iter().map(|s| s.to_string()));
    let body: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            header
                .iter()
                .enumerate()
                .map(|(i, k)| {
                    if i < nparams {
                        cell(r.params.get(k))
                    } else {
                        cell(r.metrics.get(k))
                    }
                })
                .collect()
        })
        .collect();
    let widths: Vec<usize> = (0..header.len())
        .map(|i| {
            body.iter()
                .map(|r| r[i].len())
                .chain([header[i].len()])
                .max()
                .unwrap_or(1)
        })
        .collect();
    let line = |cells: &[String]| {
        let mut s = String::from("|");
        for (i, c) in cells.iter().enumerate() {
            if i < nparams {
                s.push_str(&format!(" {:<w$} |", c, w = widths[i]));
            } else {
                s.push_str(&format!(" {:>w$} |", c, w = widths[i]));
            }
        }
        s.push('\n');
        s
    };
    let mut out = line(&header);
    out.push('|');
    for (i, w) in widths.iter().enumerate() {
        out.push_str(&if i < nparams {
            format!(":{}|", "-".repeat(w + 1))
        } else {
            format!("{}:|", "-".repeat(w + 1))
        });
    }
    out.push('\n');
    for r in &body {
        out.push_str(&line(r));
    }
    out
}
