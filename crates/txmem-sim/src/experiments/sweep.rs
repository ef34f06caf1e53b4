//! Sweeps: run a workload for every value of one parameter (and optionally every value of
//! a second, "series" parameter).

use super::{run_one, ExperimentError, Progress, Row, RunConfig};
use crate::config::parse_scalar;
use serde_json::Map;

/// What to sweep.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SweepSpec {
    /// Dotted parameter path (see [`RunConfig::set`]).
    pub param: String,
    /// Values, as strings.
    pub values: Vec<String>,
    /// Optional second parameter: one series (plot line) per value.
    pub series_param: Option<String>,
    /// Values of the series parameter.
    pub series_values: Vec<String>,
}

/// Short column name of a parameter path (`htm.policy` -> `policy`).
pub fn short_name(path: &str) -> &str {
    path.rsplit('.').next().unwrap_or(path)
}

/// Runs the sweep. Every configuration is built and validated before the first run, so a
/// bad value fails fast.
pub fn sweep(
    base: &RunConfig,
    spec: &SweepSpec,
    progress: Progress<'_>,
) -> Result<Vec<Row>, ExperimentError> {
    if spec.values.is_empty() {
        return Err(ExperimentError::Run(format!(
            "no values to sweep for `{}`",
            spec.param
        )));
    }
    let series: Vec<Option<&String>> = match &spec.series_param {
        Some(_) if !spec.series_values.is_empty() => spec.series_values.iter().map(Some).collect(),
        _ => vec![None],
    };
    let mut plan = Vec::new();
    for s in &series {
        for v in &spec.values {
            let mut rc = base.clone();
            let mut params = Map::new();
            if let (Some(sp), Some(sv)) = (&spec.series_param, s) {
                rc.set(sp, sv)?;
                params.insert(short_name(sp).to_string(), parse_scalar(sv));
            }
            rc.set(&spec.param, v)?;
            rc.validate()?;
            params.insert(short_name(&spec.param).to_string(), parse_scalar(v));
            plan.push((rc, params));
        }
    }
    let total = plan.len();
    let mut rows = Vec::with_capacity(total);
    for (i, (rc, params)) in plan.into_iter().enumerate() {
        let label = params
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ");
        let metrics = run_one(&rc).map_err(|e| ExperimentError::Run(format!("{label}: {e}")))?;
        rows.push(Row { params, metrics });
        progress(i + 1, total, &label);
    }
    Ok(rows)
}
