//! End-to-end tests of `txmem db`: the binary runs YCSB workloads on tiny
//! tables with tiny durations (these tests check the plumbing and the
//! checks, never speed), writes JSON with a row per kind, CSV, Markdown
//! and SVG, rejects bad arguments with a message naming the value and the
//! usage line, runs TPC-C's mix on a small database, and reports a database
//! broken before its check (the hidden `--break-check` flag, compiled only
//! with the `test-hooks` feature these tests turn on) as a failure.

use std::process::Command;

use serde_json::Value;

mod common;
use common::{read_json, text, tmp, txmem};

/// The name of this binary's temporary directory.
const SUITE: &str = "db";

/// `txmem db ycsb` on a small table with tiny durations, plus `args`
/// (one repeat unless `args` say otherwise).
fn ycsb(args: &[&str]) -> Command {
    let mut cmd = txmem();
    cmd.args(["db", "ycsb", "--records", "2000", "--duration", "30ms"])
        .args(["--warmup", "5ms", "--no-progress"])
        .args(args);
    if !args.contains(&"--repeat") {
        cmd.args(["--repeat", "1"]);
    }
    cmd
}

#[test]
fn ycsb_reports_every_row_with_its_kinds() {
    let (json, csv, svg, md) = (
        tmp(SUITE, "a.json"),
        tmp(SUITE, "a.csv"),
        tmp(SUITE, "a.svg"),
        tmp(SUITE, "a.md"),
    );
    let out = ycsb(&[
        "--workload",
        "a,e",
        "--ops-per-txn",
        "4",
        "--threads",
        "1,2",
    ])
    .arg("--json")
    .arg(&json)
    .arg("--csv")
    .arg(&csv)
    .arg("--plot")
    .arg(&svg)
    .arg("--markdown")
    .arg(&md)
    .output()
    .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    for want in [
        "txmem db ycsb",
        "txn/s",
        "p50",
        "p99",
        "  update ",
        "  scan ",
    ] {
        assert!(stdout.contains(want), "table lacks {want:?}:\n{stdout}");
    }

    let v = read_json(&json);
    assert_eq!(v["suite"], "ycsb");
    let s = &v["settings"];
    assert_eq!(s["benchmark"], "ycsb");
    assert_eq!(s["threads"], serde_json::json!([1, 2]));
    assert_eq!(s["txmem"]["opacity"], serde_json::json!(["tl2"]));
    let workloads = s["workloads"].as_array().unwrap();
    assert_eq!(workloads.len(), 2);
    assert_eq!(workloads[0]["records"], 2000);
    assert_eq!(workloads[1]["index"], "ordered");

    let results = v["results"].as_array().unwrap();
    assert_eq!(results.len(), 4, "2 workloads × 2 thread counts");
    for r in results {
        assert_eq!(r["status"], "ok", "{r}");
        assert_eq!(r["system"], "txmem", "{r}");
        assert!(r["ops_per_sec"].as_f64().unwrap() > 0.0, "{r}");
        let workload = r["workload"].as_str().unwrap();
        let want_kinds = if workload.starts_with("ycsb-a/") {
            ["read", "update"]
        } else {
            assert!(workload.starts_with("ycsb-e/"), "{workload}");
            ["scan", "insert"]
        };
        let kinds = r["kinds"].as_array().expect("per-kind rows");
        let names: Vec<&str> = kinds.iter().map(|k| k["kind"].as_str().unwrap()).collect();
        assert_eq!(names, want_kinds, "{r}");
        let commits: u64 = kinds.iter().map(|k| k["commits"].as_u64().unwrap()).sum();
        assert_eq!(commits, r["commits"].as_u64().unwrap(), "{r}");
        let aborts: u64 = kinds.iter().map(|k| k["aborts"].as_u64().unwrap()).sum();
        assert_eq!(Some(aborts), r["aborts"].as_u64(), "{r}");
        let l = &r["latency_ns"];
        assert!(l["samples"].as_u64().unwrap() > 0, "{r}");
        assert!(
            l["p50"].as_u64().unwrap() <= l["p99"].as_u64().unwrap(),
            "{r}"
        );
        assert!(
            l["p99"].as_u64().unwrap() <= l["max"].as_u64().unwrap(),
            "{r}"
        );
    }

    let csv = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(csv.lines().count(), 1 + results.len(), "{csv}");
    let md = std::fs::read_to_string(&md).unwrap();
    assert!(md.starts_with("`txmem db ycsb`"), "{md}");
    let svg = std::fs::read_to_string(&svg).unwrap();
    assert!(
        svg.starts_with("<svg") && svg.contains("ycsb-a/"),
        "not the plot"
    );
}

#[test]
fn every_workload_and_opacity_mode_runs_and_passes_its_check() {
    let json = tmp(SUITE, "all.json");
    let out = ycsb(&["--workload", "b,c,d,f", "--threads", "2"])
        .args([
            "--opacity",
            "tl2,revalidate,none",
            "--distribution",
            "uniform",
        ])
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let v = read_json(&json);
    let rows: Vec<(String, String)> = v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            assert_eq!(r["status"], "ok", "{r}");
            let w = r["workload"].as_str().unwrap();
            assert!(w.contains("/uniform/"), "{w}");
            (
                w[..6].to_string(),
                r["system"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(rows.len(), 12, "{rows:?}");
    for w in ["ycsb-b", "ycsb-c", "ycsb-d", "ycsb-f"] {
        for s in ["txmem", "txmem-revalidate", "txmem-no-opacity"] {
            assert!(rows.contains(&(w.into(), s.into())), "no {w} {s}: {rows:?}");
        }
    }
}

#[test]
fn json_and_plot_without_a_file_name_use_default_names() {
    let dir = tmp(SUITE, "defaults");
    std::fs::create_dir_all(&dir).unwrap();
    let out = ycsb(&["--workload", "c", "--threads", "1", "--json", "--plot"])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let v = read_json(&dir.join("txmem-db.json"));
    assert_eq!(v["results"][0]["kinds"][0]["kind"], "read");
    assert!(dir.join("txmem-db.svg").is_file());
}

fn expect_usage_error(args: &[&str], message: &str) {
    let out = txmem().arg("db").args(args).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(err.contains(message), "stderr lacks {message:?}:\n{err}");
    assert!(err.contains("Usage: txmem db"), "no usage line:\n{err}");
}

#[test]
fn bad_arguments_fail_with_a_message_naming_the_value_and_the_usage() {
    fn y<'a>(extra: &[&'a str]) -> Vec<&'a str> {
        [&["ycsb"], extra].concat()
    }
    expect_usage_error(&y(&["--workload", "g"]), "unknown YCSB workload `g`");
    expect_usage_error(&y(&["--workload", "a,a"]), "workload `a` given twice");
    expect_usage_error(&y(&["--records", "0"]), "record count 0 out of range");
    expect_usage_error(&y(&["--records", "many"]), "`many` is not a record count");
    expect_usage_error(&y(&["--value-size", "0"]), "`0` is not a value size");
    expect_usage_error(&y(&["--theta", "1.5"]), "`1.5` is not a zipfian θ");
    expect_usage_error(
        &y(&["--distribution", "zipf"]),
        "unknown key distribution `zipf`",
    );
    expect_usage_error(&y(&["--ops-per-txn", "0"]), "`0` is not an operation count");
    expect_usage_error(&y(&["--index", "skiplist"]), "unknown index `skiplist`");
    expect_usage_error(
        &y(&["--workload", "e", "--index", "hash"]),
        "needs the ordered index",
    );
    expect_usage_error(
        &y(&["--opacity", "strict"]),
        "unknown opacity mode `strict`",
    );
    expect_usage_error(&y(&["--opacity", "none,none"]), "`none` given twice");
    expect_usage_error(&y(&["--threads", "0"]), "thread count 0");
    expect_usage_error(&y(&["--duration", "soon"]), "not a duration");
    expect_usage_error(&y(&["--json", "/nonexistent-dir/x.json"]), "does not exist");
    expect_usage_error(
        &["tpcc", "--warehouses", "0"],
        "`0` is not a warehouse count",
    );
    expect_usage_error(&["tpcc", "--items", "lots"], "`lots` is not an item count");
    expect_usage_error(
        &["tpcc", "--customers", "0"],
        "`0` is not a count per district",
    );
    expect_usage_error(&["mongo"], "mongo");
    expect_usage_error(
        &y(&["--read-my-writes", "maybe"]),
        "`maybe` is not on or off",
    );
    expect_usage_error(&y(&["--untracked-reads", "1"]), "`1` is not on or off");
    expect_usage_error(
        &y(&["--index-cutoff", "never"]),
        "`never` is not an item count or off",
    );
}

/// The STO knobs reach the rows: the JSON settings record them, the notes
/// name those off their defaults, and the rows still pass their checks.
#[test]
fn the_sto_knobs_are_recorded_and_the_checks_pass() {
    let json = tmp(SUITE, "knobs.json");
    let out = ycsb(&[
        "--workload",
        "f",
        "--untracked-reads",
        "off",
        "--read-my-writes",
        "off",
        "--index-cutoff",
        "off",
        "--threads",
        "2",
        "--json",
        json.to_str().unwrap(),
    ])
    .output()
    .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let v = read_json(&json);
    let knobs = &v["settings"]["txmem"];
    assert_eq!(knobs["untracked_reads"], Value::Bool(false), "{v}");
    assert_eq!(knobs["read_my_writes"], Value::Bool(false), "{v}");
    assert_eq!(knobs["item_index_cutoff"], Value::from("off"), "{v}");
    let note = v["results"][0]["note"].as_str().unwrap_or_default();
    assert!(
        note.contains("untracked reads off")
            && note.contains("read-my-writes off")
            && note.contains("no item index"),
        "{note}"
    );
}

/// `txmem db tpcc` on a small database (60 customers and orders per
/// district, 1,000 items), one warehouse per thread.
fn tpcc(args: &[&str]) -> Command {
    let mut cmd = txmem();
    cmd.args([
        "db",
        "tpcc",
        "--items",
        "1000",
        "--customers",
        "60",
        "--orders",
        "60",
    ])
    .args([
        "--duration",
        "40ms",
        "--warmup",
        "5ms",
        "--repeat",
        "1",
        "--no-progress",
    ])
    .args(args);
    cmd
}

#[test]
fn tpcc_runs_the_mix_and_reports_each_transaction_kind() {
    let json = tmp(SUITE, "tpcc.json");
    let out = tpcc(&["--threads", "1,2", "--json", json.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let v = read_json(&json);
    let rows = v["results"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "{v}");
    for r in rows {
        assert_eq!(r["status"], "ok", "{r}");
        let kinds: Vec<&str> = r["kinds"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| k["kind"].as_str().unwrap())
            .collect();
        for k in [
            "NewOrder",
            "Payment",
            "OrderStatus",
            "Delivery",
            "StockLevel",
        ] {
            assert!(kinds.contains(&k), "no {k} in {kinds:?}");
        }
    }
    assert_eq!(
        v["settings"]["workloads"][0]["customers_per_district"], 60,
        "{v}"
    );
}

#[test]
fn a_broken_tpcc_database_fails_with_the_condition_named() {
    let out = tpcc(&["--threads", "1", "--break-check", "txmem"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("FAILED") && stdout.contains("condition 2"),
        "{stdout}"
    );
}

#[test]
fn a_broken_database_fails_its_row_and_the_command() {
    let json = tmp(SUITE, "broken.json");
    let out = ycsb(&["--workload", "a", "--threads", "1", "--repeat", "2"])
        .args(["--opacity", "tl2,none", "--break-check", "txmem"])
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("FAILED"), "{stdout}");
    let v = read_json(&json);
    assert_eq!(v["settings"]["break_check"], serde_json::json!(["txmem"]));
    for r in v["results"].as_array().unwrap() {
        if r["system"] == "txmem" {
            assert_eq!(r["status"], "failed", "{r}");
            assert!(
                r["ops_per_sec"].is_null(),
                "a failed row has no figure: {r}"
            );
            assert!(r.get("kinds").is_none(), "nor per-kind figures: {r}");
            let error = r["error"].as_str().unwrap();
            assert!(error.contains("record 0 holds the record of key 1"), "{r}");
        } else {
            assert_eq!(r["status"], "ok", "{r}");
            assert_eq!(r["repeats"], 2, "{r}");
        }
    }
}
