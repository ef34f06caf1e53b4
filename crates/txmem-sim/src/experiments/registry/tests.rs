//! The named experiments: each is found and builds valid configurations, sweeps give the
//! same rows in parallel and resumed, Flask's experiment normalizes to TokenB, and defaults
//! apply only where the user left the default.

use super::*;

#[test]
fn every_experiment_is_findable_and_builds_valid_configs() {
    for e in EXPERIMENTS {
        assert_eq!(find(e.name).unwrap().name, e.name);
        let s = e.sweep_spec();
        let mut rc = RunConfig::default();
        for (p, v) in e.defaults {
            rc.set(p, v).unwrap();
        }
        if let Some(p) = &s.series_param {
            for v in &s.series_values {
                rc.set(p, v).unwrap();
            }
        }
        for v in &s.values {
            rc.set(&s.param, v).unwrap();
            rc.validate().unwrap();
        }
    }
    assert!(matches!(find("nope"), Err(ExperimentError::Unknown(_))));
}

/// The same rows whether the points run one at a time or four at once, and a sweep
/// interrupted after some points resumes from its checkpoint without running them again.
#[test]
fn parallel_and_resumed_sweeps_give_the_same_rows() {
    let e = find("policies").unwrap();
    let mut base = RunConfig::default();
    base.sim.cores = 4;
    base.workload.increments = 30;
    let deterministic = |r: &Report| -> Vec<_> {
        r.results
            .iter()
            .map(|row| {
                let mut m = row.metrics.clone();
                m.retain(|k, _| !k.starts_with("host_"));
                (row.params.clone(), m)
            })
            .collect()
    };
    let quiet = &mut |_: usize, _: usize, _: &str| {};
    let one = e
        .run_values(&base, None, &Runner::sequential(), quiet)
        .unwrap();
    let four = Runner {
        jobs: 4,
        checkpoint: None,
    };
    let many = e.run_values(&base, None, &four, quiet).unwrap();
    assert_eq!(deterministic(&one), deterministic(&many));

    let path = std::env::temp_dir().join(format!("txmem-sim-ckpt-{}.jsonl", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let resumable = Runner {
        jobs: 2,
        checkpoint: Some(path.clone()),
    };
    // "Interrupted" after the first three policies: a sweep of only those.
    let first: Vec<String> = e.sweep_spec().values[..3].to_vec();
    e.run_values(&base, Some(&first), &resumable, quiet)
        .unwrap();
    let mut ran = Vec::new();
    let resumed = e
        .run_values(&base, None, &resumable, &mut |_, _, label: &str| {
            ran.push(label.to_string())
        })
        .unwrap();
    assert_eq!(deterministic(&one), deterministic(&resumed));
    let total = e.sweep_spec().values.len();
    assert_eq!(ran.len(), 1 + total - 3, "{ran:?}");
    assert_eq!(ran[0], "resumed from the checkpoint");
    // A cut-off last line is run again; any other bad line is an error.
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str("{\"config\": {");
    std::fs::write(&path, &text).unwrap();
    e.run_values(&base, None, &resumable, quiet).unwrap();
    std::fs::write(&path, format!("garbage\n{text}")).unwrap();
    let err = e.run_values(&base, None, &resumable, quiet).unwrap_err();
    assert!(err.to_string().contains("line 1"), "{err}");
    let _ = std::fs::remove_file(&path);
}

/// The Flask experiment: Flask's cycles barely move from 160% to 5% while the sparse
/// directory's grow, and only Flask reports a false-positive rate.
#[test]
fn the_flask_experiment_runs_every_workload_and_normalizes_to_tokenb() {
    let e = find("flask").unwrap();
    let mut base = RunConfig::default();
    base.workload.total_ops = 20_000;
    let vals = vec!["160".to_string(), "5".to_string()];
    let r = e
        .run_values(&base, Some(&vals), &Runner::parallel(), &mut |_, _, _| {})
        .unwrap();
    // Flask's machine, every workload and the mean of each point.
    assert_eq!(r.config["sim"]["cores"], 16);
    assert_eq!(r.results.len(), (10 + 1) * 4 * 2);
    let row = |app: &str, protocol: &str, pct: u64| {
        r.results
            .iter()
            .find(|x| {
                x.params["flask_app"] == app
                    && x.params["protocol"] == protocol
                    && x.params["directory_coverage_pct"] == pct
            })
            .unwrap()
            .metrics
            .clone()
    };
    let get = |m: &serde_json::Map<String, serde_json::Value>, k: &str| m[k].as_f64().unwrap();
    for app in ["oltp", "apache", "mean"] {
        assert_eq!(get(&row(app, "tokenb", 5), "norm_cycles"), 1.0);
        let s5 = row(app, "sparse-directory", 5);
        assert!(get(&s5, "directory_recalls") > 0.0, "{app}");
    }
    // On average a small sparse directory slows the workloads down.
    let (s160, s5) = (
        row("mean", "sparse-directory", 160),
        row("mean", "sparse-directory", 5),
    );
    assert!(get(&s5, "cycles") > get(&s160, "cycles"), "{s5:?}");
    // The mean of a ratio is geometric: between the smallest and the largest.
    let norms: Vec<f64> = crate::workloads::flask_app::FlaskApp::ALL
        .iter()
        .map(|a| get(&row(a.name(), "flask", 5), "norm_cycles"))
        .collect();
    let mean = get(&row("mean", "flask", 5), "norm_cycles");
    let (lo, hi) = norms
        .iter()
        .fold((f64::MAX, 0.0f64), |(l, h), &v| (l.min(v), h.max(v)));
    assert!(lo <= mean && mean <= hi, "{mean} outside {norms:?}");
    assert!(row("mean", "flask", 5)["false_positive_rate"]
        .as_f64()
        .is_some());
}

#[test]
fn defaults_apply_only_where_the_user_left_the_default() {
    let e = find("rwle-hashmap").unwrap();
    let mut base = RunConfig::default();
    base.sim.cores = 2;
    base.workload.buckets = 4;
    base.workload.items_per_bucket = 10;
    let vals = vec!["2".to_string()];
    let r = e
        .run_values(&base, Some(&vals), &Runner::parallel(), &mut |_, _, _| {})
        .unwrap();
    assert_eq!(r.results.len(), 6, "one row per lock");
    let sections = |m: &serde_json::Map<String, serde_json::Value>| {
        m["read_sections"].as_u64().unwrap() + m["write_sections"].as_u64().unwrap()
    };
    assert_eq!(sections(&r.results[0].metrics), 4000);
    // rwle-fair sets one list of 200 items, unless the user chose the shape.
    let fair = find("rwle-fair").unwrap();
    base.workload.total_ops = 30;
    let r = fair
        .run_values(&base, Some(&vals), &Runner::parallel(), &mut |_, _, _| {})
        .unwrap();
    assert_eq!(r.results.len(), 2);
    assert_eq!(sections(&r.results[0].metrics), 30);
    assert_eq!(r.config["workload"]["buckets"], 4);
    let r = fair
        .run_values(
            &RunConfig {
                sim: base.sim.clone(),
                ..RunConfig::default()
            },
            Some(&vals),
            &Runner::sequential(),
            &mut |_, _, _| {},
        )
        .unwrap();
    assert_eq!(r.config["workload"]["buckets"], 1);
    assert_eq!(r.config["workload"]["items_per_bucket"], 200);
}
