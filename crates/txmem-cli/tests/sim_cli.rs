//! End-to-end tests of `txmem sim` with tiny configurations.

use std::path::PathBuf;
use std::process::{Command, Output};

fn txmem(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_txmem"))
        .args(args)
        .output()
        .expect("run txmem")
}

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("txmem-sim-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// The JSON report a run wrote to `path`.
fn read_json(path: &PathBuf) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn list_names_every_experiment() {
    let o = txmem(&["sim", "--list"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    for name in [
        "counter",
        "counter-array",
        "backoff",
        "stall",
        "policies",
        "xsync-counters",
        "xsync-leveldb",
        "flask",
        "flask-assoc",
        "flask-split",
        "sweep",
    ] {
        assert!(out.contains(name), "missing {name} in:\n{out}");
    }
}

#[test]
fn counter_writes_the_json_contract() {
    let json = tmp("counter.json");
    let o = txmem(&[
        "sim",
        "counter",
        "--cores",
        "2",
        "--increments",
        "20",
        "-q",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("spinlock"));
    let v = read_json(&json);
    assert_eq!(v["experiment"], "counter");
    assert!(v["version"].is_string());
    assert_eq!(v["config"]["sim"]["cores"], 2);
    assert_eq!(v["config"]["workload"]["increments"], 20);
    let results = v["results"].as_array().unwrap();
    let syncs: Vec<&str> = results
        .iter()
        .map(|r| r["params"]["sync"].as_str().unwrap())
        .collect();
    assert_eq!(syncs, ["spinlock", "tx", "atomic"]);
    for r in results {
        let m = &r["metrics"];
        assert!(m["cycles"].as_u64().unwrap() > 0);
        assert!(m
            .as_object()
            .unwrap()
            .keys()
            .any(|k| k.contains("host_ops_per_sec")));
        assert!(m["host_ops_per_sec"].as_f64().unwrap() > 0.0);
    }
    assert_eq!(results[1]["metrics"]["commits"], 40);
    assert!(v["host_ops_per_sec"].as_f64().unwrap() > 0.0);
}

#[test]
fn sweep_writes_table_json_and_svg() {
    let svg = tmp("sweep.svg");
    let json = tmp("sweep.json");
    let o = txmem(&[
        "sim",
        "sweep",
        "--param",
        "htm.backoff",
        "--values",
        "none,linear",
        "--series",
        "cores=2,3",
        "--increments",
        "10",
        "-q",
        "--plot",
        svg.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.starts_with("<svg"));
    assert!(text.contains("linear"), "x labels are drawn");
    let v = read_json(&json);
    assert_eq!(v["experiment"], "sweep");
    assert_eq!(v["results"].as_array().unwrap().len(), 4);
    assert_eq!(v["results"][3]["params"]["cores"], 3);
    assert_eq!(v["results"][3]["params"]["backoff"], "linear");
    // A numeric sweep uses a numeric axis.
    let svg2 = tmp("cores.svg");
    let o = txmem(&[
        "sim",
        "sweep",
        "--param",
        "cores",
        "--values",
        "1,2",
        "--increments",
        "5",
        "-q",
        "--plot",
        svg2.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(std::fs::read_to_string(&svg2).unwrap().starts_with("<svg"));
}

#[test]
fn experiments_take_values_and_array_size() {
    let json = tmp("array.json");
    let o = txmem(&[
        "sim",
        "counter-array",
        "--array-size",
        "3",
        "--cores",
        "2",
        "--increments",
        "10",
        "-q",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v = read_json(&json);
    let rows = v["results"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "one array size, spinlock and transaction");
    assert!(rows.iter().all(|r| r["params"]["array_size"] == 3));
    let o = txmem(&[
        "sim",
        "policies",
        "--values",
        "polka,timestamp",
        "--cores",
        "2",
        "--increments",
        "10",
        "-q",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("polka") && out.contains("timestamp") && !out.contains("karma"),
        "{out}"
    );
}

/// Flask's figure on its own machine, every workload and their means; the plot draws the
/// means.
#[test]
fn the_flask_figure_runs_every_workload_on_flask_s_machine() {
    let (json, svg) = (tmp("flask.json"), tmp("flask.svg"));
    let o = txmem(&[
        "sim",
        "flask",
        "--values",
        "5",
        "--set",
        "workload.total_ops=3000",
        "-q",
        "--json",
        json.to_str().unwrap(),
        "--plot",
        svg.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v = read_json(&json);
    assert_eq!(v["config"]["sim"]["cores"], 16);
    assert_eq!(v["config"]["sim"]["network"]["topology"], "mesh");
    let rows = v["results"].as_array().unwrap();
    // Ten workloads and their mean, four protocols, one size.
    assert_eq!(rows.len(), 11 * 4);
    let means: Vec<_> = rows
        .iter()
        .filter(|r| r["params"]["flask_app"] == "mean")
        .collect();
    assert_eq!(means.len(), 4);
    for r in &means {
        let norm = r["metrics"]["norm_cycles"].as_f64().unwrap();
        if r["params"]["protocol"] == "tokenb" {
            assert_eq!(norm, 1.0);
        }
        assert!(r["metrics"]["edp"].as_f64().unwrap() > 0.0);
    }
    let plot = std::fs::read_to_string(&svg).unwrap();
    assert!(plot.contains("mean over groups"), "{plot}");
    // A machine given on the command line wins over the experiment's.
    let o = txmem(&[
        "sim",
        "flask",
        "--preset",
        "haswell",
        "--values",
        "5",
        "--set",
        "workload.total_ops=3000",
        "-q",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(read_json(&json)["config"]["sim"]["cores"], 4);
}

#[test]
fn toml_config_is_read() {
    let cfg = tmp("run.toml");
    std::fs::write(
        &cfg,
        "[sim]\ncores = 3\n[sim.htm]\npolicy = \"polka\"\n[workload]\nincrements = 7\n",
    )
    .unwrap();
    let json = tmp("toml.json");
    let o = txmem(&[
        "sim",
        "counter",
        "--config",
        cfg.to_str().unwrap(),
        "-q",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v = read_json(&json);
    assert_eq!(v["config"]["sim"]["htm"]["policy"], "polka");
    assert_eq!(v["results"][1]["metrics"]["commits"], 21);
}

#[test]
fn presets_give_the_machine_and_xsync_counters_runs_on_it() {
    let json = tmp("xsync.json");
    let o = txmem(&[
        "sim",
        "xsync-counters",
        "--preset",
        "haswell",
        "--increments",
        "10",
        "--values",
        "64,4096",
        "-q",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v = read_json(&json);
    assert_eq!(v["config"]["sim"]["cores"], 4);
    assert_eq!(v["config"]["sim"]["threads_per_core"], 2);
    let schemes: Vec<&str> = v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["params"]["xsync_scheme"].as_str().unwrap())
        .collect();
    // Two sizes per scheme, the five schemes in the legend's order.
    assert_eq!(schemes.len(), 10);
    assert_eq!(schemes[0], "coarse");
    assert_eq!(schemes[9], "elided-fine");
    // The elided rows carry the elision statistics; every section ran once.
    let last = &v["results"][9]["metrics"];
    assert_eq!(last["sections"], 8 * 10, "{last}");

    // A preset and a configuration file both give the machine: one must go.
    let cfg = tmp("preset.toml");
    std::fs::write(&cfg, "[sim]\ncores = 2\n").unwrap();
    let o = txmem(&[
        "sim",
        "counter",
        "--preset",
        "power8",
        "--config",
        cfg.to_str().unwrap(),
    ]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("use one"), "{}", stderr(&o));
}

#[test]
fn scenarios_shape_the_hashmap_and_set_wins_over_them() {
    let json = tmp("rwle-scenario.json");
    let o = txmem(&[
        "sim",
        "rwle-hashmap",
        "--preset",
        "power8",
        "--scenario",
        "lc-hc",
        "--set",
        "workload.total_ops=60",
        "--set",
        "workload.write_pct=50",
        "--values",
        "4",
        "-q",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v = read_json(&json);
    let w = &v["config"]["workload"];
    assert_eq!(
        (w["buckets"].as_u64(), w["items_per_bucket"].as_u64()),
        (Some(1), Some(50))
    );
    let rows = v["results"].as_array().unwrap();
    assert_eq!(rows.len(), 6, "one row per lock");
    for r in rows {
        let m = &r["metrics"];
        let sections = m["read_sections"].as_u64().unwrap() + m["write_sections"].as_u64().unwrap();
        assert_eq!(sections, 60, "{m}");
        assert!(m.get("abort_class_non_tx").is_some());
    }
    // --set comes after the scenario.
    let o = txmem(&[
        "sim",
        "rwle-hashmap",
        "--scenario",
        "hc-hc",
        "--set",
        "workload.buckets=3",
        "--set",
        "workload.total_ops=10",
        "--values",
        "1",
        "-q",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v = read_json(&json);
    assert_eq!(v["config"]["workload"]["buckets"], 3);
    assert_eq!(v["config"]["workload"]["items_per_bucket"], 200);
    let o = txmem(&["sim", "rwle-hashmap", "--scenario", "hc"]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("unknown scenario `hc`"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_checkpointed_sweep_resumes_without_running_its_points_again() {
    let (json, ckpt) = (tmp("ckpt.json"), tmp("ckpt.jsonl"));
    let _ = std::fs::remove_file(&ckpt);
    let run = |values: &str, jobs: &str| {
        let o = txmem(&[
            "sim",
            "sweep",
            "--param",
            "cores",
            "--values",
            values,
            "--increments",
            "20",
            "-j",
            jobs,
            "-q",
            "--json",
            json.to_str().unwrap(),
            "--checkpoint",
            ckpt.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        read_json(&json)
    };
    let first = run("1,2", "2");
    let lines = || std::fs::read_to_string(&ckpt).unwrap().lines().count();
    assert_eq!(lines(), 2);
    let all = run("1,2,4", "1");
    assert_eq!(lines(), 3, "only the new point was run");
    for k in 0..2 {
        assert_eq!(first["results"][k], all["results"][k]);
    }
    assert_eq!(all["results"][2]["params"]["cores"], 4);
    let o = txmem(&["sim", "counter", "-j", "0"]);
    assert!(!o.status.success());
}

#[test]
fn plan_prints_points_that_points_runs() {
    let bin = env!("CARGO_BIN_EXE_txmem");
    let plan = txmem(&[
        "sim",
        "sweep",
        "--param",
        "cores",
        "--values",
        "1,2",
        "--increments",
        "10",
        "--plan",
    ]);
    assert!(plan.status.success(), "{}", stderr(&plan));
    let text = stdout(&plan);
    assert_eq!(text.lines().count(), 2, "{text}");
    let mut child = std::process::Command::new(bin)
        .args(["sim", "points"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write as _;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let done: Vec<serde_json::Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(done.len(), 2);
    assert_eq!(done[1]["params"]["cores"], 2);
    assert_eq!(done[1]["config"]["sim"]["cores"], 2);
    assert!(done[1]["metrics"]["cycles"].as_u64().unwrap() > 0);
    // An experiment's plan has its own points (the policies experiment: eight policies).
    let e = txmem(&["sim", "policies", "--plan"]);
    assert_eq!(stdout(&e).lines().count(), 8);
}

#[test]
fn bad_arguments_fail_with_a_clear_message() {
    let cases: &[(&[&str], &str)] = &[
        (&["sim", "no-such-experiment"], "unknown experiment"),
        (
            &["sim", "counter", "--set", "htm.policy=bogus"],
            "cannot set htm.policy",
        ),
        (
            &["sim", "counter", "--set", "htm.nope=1"],
            "unknown parameter",
        ),
        (&["sim", "counter", "--set", "cores"], "PATH=VALUE"),
        (&["sim", "counter", "--cores", "0"], "cores must be"),
        (&["sim", "sweep", "--values", "1,2"], "--param"),
        (&["sim", "sweep", "--param", "cores"], "--values"),
        (
            &["sim", "counter", "--param", "cores"],
            "only for `txmem sim sweep`",
        ),
        (
            &["sim", "policies", "--values", "polka,bogus"],
            "cannot set htm.policy",
        ),
        (
            &["sim", "counter", "--config", "/nonexistent/x.toml"],
            "cannot read",
        ),
        (&["sim"], "no experiment"),
        (
            &["sim", "counter", "--preset", "z80"],
            "unknown preset `z80`",
        ),
        (
            &["sim", "counter-array", "--array-size", "100000000000"],
            "raise memory_bytes",
        ),
    ];
    for (args, want) in cases {
        let o = txmem(args);
        assert!(!o.status.success(), "{args:?} should fail");
        let err = stderr(&o);
        assert!(err.contains(want), "{args:?}: expected `{want}` in: {err}");
    }
    // Lazy detection with eager versioning is rejected with an explanation.
    let o = txmem(&["sim", "counter", "--set", "htm.detection=lazy"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("versioning"));
}

#[test]
fn xsync_leveldb_runs_on_haswell_under_the_lock_and_elided() {
    let json = tmp("xsync-leveldb.json");
    let o = txmem(&[
        "sim",
        "xsync-leveldb",
        "--values",
        "1,4",
        "--set",
        "workload.total_ops=200",
        "-q",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v = read_json(&json);
    assert_eq!(v["config"]["sim"]["cores"], 4);
    assert_eq!(v["config"]["sim"]["threads_per_core"], 2);
    // Two thread counts, lock and elided, coarsening off and on (then the groups' means).
    let rows: Vec<_> = v["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["params"]["coarsen"] != "mean")
        .collect();
    assert_eq!(rows.len(), 8);
    for r in rows {
        let m = &r["metrics"];
        assert!(m["puts_per_kcycle"].as_f64().unwrap() > 0.0, "{r}");
        if r["params"]["sync"] == "elided" {
            let sections = m["sections"].as_u64().unwrap();
            let commits = m["elided_commits"].as_u64().unwrap();
            let fallbacks = m["fallbacks"].as_u64().unwrap();
            // A coarsened commit covers more than one section.
            if r["params"]["coarsen"] == false {
                assert_eq!(sections, commits + fallbacks, "{r}");
            } else {
                assert!(commits + fallbacks <= sections, "{r}");
            }
            assert!(m["conflict_aborts"].is_u64(), "{r}");
        }
    }
}
