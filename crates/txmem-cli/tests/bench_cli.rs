//! End-to-end tests of `txmem bench`: the binary runs every suite and
//! system with tiny durations (these tests check the plumbing and the
//! result checks, never speed), writes valid JSON, CSV and SVG, rejects bad
//! arguments with a message and the usage line, and reports a deliberately
//! broken result check (the hidden `--break-check` flag, compiled only with
//! the `test-hooks` feature these tests turn on) as a failure.

use std::process::{Command, Output};

use serde_json::Value;

mod common;
use common::{read_json, text, tmp, txmem};

/// The name of this binary's temporary directory.
const SUITE: &str = "bench";

/// The standard output of a run that must have succeeded (the whole output
/// in the failure message otherwise).
fn succeeded(o: &Output) -> String {
    assert!(o.status.success(), "{}", text(o));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// True if this machine has gcc with libitm (the harness compiles).
fn have_libitm() -> bool {
    let src = tmp(SUITE, "probe.c");
    std::fs::write(
        &src,
        "int x; int main(void){ __transaction_atomic { x++; } return 0; }",
    )
    .unwrap();
    Command::new("gcc")
        .args(["-fgnu-tm", "-o"])
        .arg(tmp(SUITE, "probe"))
        .arg(&src)
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Runs `bench ARGS --json --csv --plot --markdown` with tiny durations and
/// returns the parsed JSON, after checking the CSV, SVG and Markdown agree
/// with it.
fn run_suite(tag: &str, args: &[&str]) -> Value {
    let (json, csv, svg, md) = (
        tmp(SUITE, &format!("{tag}.json")),
        tmp(SUITE, &format!("{tag}.csv")),
        tmp(SUITE, &format!("{tag}.svg")),
        tmp(SUITE, &format!("{tag}.md")),
    );
    let out = txmem()
        .arg("bench")
        .args(args)
        .args([
            "--duration",
            "30ms",
            "--repeat",
            "1",
            "--warmup",
            "5ms",
            "--no-progress",
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
    let stdout = succeeded(&out);
    assert!(stdout.contains("vs txmem"), "no table header: {stdout}");

    let v: Value = read_json(&json);
    for key in ["suite", "version", "machine", "settings", "results"] {
        assert!(v.get(key).is_some(), "JSON lacks {key}");
    }
    for key in ["cpu", "cores", "os"] {
        assert!(v["machine"].get(key).is_some(), "machine lacks {key}");
    }
    for key in [
        "threads",
        "duration_ms",
        "repeats",
        "allocator",
        "txmem",
        "seed",
    ] {
        assert!(v["settings"].get(key).is_some(), "settings lack {key}");
    }
    assert_eq!(
        v["settings"]["txmem"]["contention_policy"],
        "backoff-exponential"
    );
    let results = v["results"].as_array().unwrap();
    assert!(!results.is_empty());
    for r in results {
        for key in [
            "workload",
            "system",
            "threads",
            "ops_per_sec",
            "ops_per_sec_min",
            "ops_per_sec_max",
            "repeats",
            "aborts_per_commit",
        ] {
            assert!(r.get(key).is_some(), "result lacks {key}: {r}");
        }
        assert_eq!(r["status"], "ok", "{r}");
        let ops = r["ops_per_sec"].as_f64().unwrap();
        assert!(ops > 0.0, "{r}");
        assert!(r["ops_per_sec_min"].as_f64().unwrap() <= ops);
        assert!(r["ops_per_sec_max"].as_f64().unwrap() >= ops);
        assert_eq!(r["repeats"], 1);
        // Multi-thread rows carry the placement probe's figure for each
        // round (a positive time, or null where it gave none).
        match r["threads"].as_u64().unwrap() {
            1 => assert!(r.get("round_trip_ns").is_none(), "{r}"),
            _ => {
                let trips = r["round_trip_ns"].as_array().expect("no round_trip_ns");
                assert_eq!(trips.len(), 1, "one figure per round: {r}");
                assert!(
                    trips
                        .iter()
                        .all(|t| t.is_null() || t.as_f64().unwrap() > 0.0),
                    "{r}"
                );
            }
        }
        if r["system"] == "txmem" {
            assert_eq!(r["ratio_to_txmem"].as_f64(), Some(1.0));
        }
    }

    let csv = std::fs::read_to_string(&csv).unwrap();
    let mut lines = csv.lines();
    let header = lines.next().unwrap();
    assert!(
        header.starts_with(
            "workload,system,threads,ops_per_sec,ops_per_sec_min,ops_per_sec_max,repeats,aborts_per_commit"
        ),
        "{header}"
    );
    assert_eq!(lines.count(), results.len(), "one CSV line per result");

    let svg = std::fs::read_to_string(&svg).unwrap();
    assert!(svg.starts_with("<svg"), "not an SVG");
    assert!(svg.contains("txmem"), "plot lacks the txmem line");

    // Markdown: a header, an alignment line, then one line per (workload,
    // system) pair, each with a cell per thread count.
    let md = std::fs::read_to_string(&md).unwrap();
    let table: Vec<&str> = md.lines().filter(|l| l.starts_with('|')).collect();
    let mut pairs: Vec<(String, String)> = results
        .iter()
        .map(|r| (r["workload"].to_string(), r["system"].to_string()))
        .collect();
    pairs.sort();
    pairs.dedup();
    assert_eq!(table.len(), 2 + pairs.len(), "{md}");
    let columns = table[0].matches('|').count();
    assert!(
        table.iter().all(|l| l.matches('|').count() == columns),
        "{md}"
    );
    assert!(
        table
            .iter()
            .any(|l| l.contains("| txmem |") && l.contains(" 1.00")),
        "no txmem line with ratio 1.00: {md}"
    );
    v
}

fn systems(v: &Value) -> Vec<String> {
    let mut s: Vec<String> = v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["system"].as_str().unwrap().to_string())
        .collect();
    s.sort();
    s.dedup();
    s
}

fn expect_systems(v: &Value, want: &[&str]) {
    let have = systems(v);
    for w in want {
        assert!(have.iter().any(|h| h == w), "no {w} row in {have:?}");
    }
    let libitm_ran = have.iter().any(|h| h == "libitm");
    assert_eq!(
        libitm_ran,
        have_libitm(),
        "libitm row iff gcc -fgnu-tm works"
    );
    if !libitm_ran {
        let skipped = v["skipped"].as_array().unwrap();
        assert!(skipped.iter().any(|s| s["system"] == "libitm"));
    }
    // The harness also runs on txmem's libitm replacement, which the
    // command's build produces beside it.
    assert_eq!(
        have.iter().any(|h| h == "txmem-itm"),
        libitm_ran,
        "txmem-itm row iff the libitm harness runs"
    );
}

const WORD_SYSTEMS: [&str; 11] = [
    "txmem",
    "txmem-words",
    "txmem-revalidate",
    "txmem-no-opacity",
    "mutex",
    "rwlock",
    "elided-mutex",
    "elided-rwlock",
    "fine-locks",
    "fast-stm",
    "stm",
];

#[test]
fn micro_runs_every_system() {
    let v = run_suite("micro", &["micro", "--filter", "tx=5", "--threads", "2"]);
    assert_eq!(v["suite"], "micro");
    expect_systems(&v, &WORD_SYSTEMS);
}

#[test]
fn bank_runs_every_system_at_each_thread_count() {
    let v = run_suite("bank", &["bank", "--threads", "1,2"]);
    expect_systems(&v, &WORD_SYSTEMS);
    let results = v["results"].as_array().unwrap();
    for t in [1, 2] {
        assert!(results
            .iter()
            .any(|r| r["system"] == "txmem" && r["threads"] == t));
    }
    assert_eq!(v["settings"]["threads"], serde_json::json!([1, 2]));
}

#[test]
fn intset_runs_every_structure() {
    let v = run_suite("intset", &["intset", "--threads", "2"]);
    let workloads: Vec<&str> = v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["workload"].as_str().unwrap())
        .collect();
    for kind in ["list", "hash", "ordered"] {
        for size in ["256", "4096"] {
            for update in ["0%", "20%", "50%"] {
                let w = format!("intset/{kind}/size={size}/");
                assert!(
                    workloads
                        .iter()
                        .any(|x| x.starts_with(&w) && x.ends_with(&format!("update={update}"))),
                    "missing {w}..update={update}"
                );
            }
        }
    }
    expect_systems(&v, &WORD_SYSTEMS);
    expect_systems(&v, &["txmem-tarray", "txmem-tarray-no-opacity"]);
    let notes: Vec<&str> = v["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["system"] == "txmem")
        .map(|r| r["note"].as_str().unwrap())
        .collect();
    for ty in ["TListSet", "THashMap", "TBTreeMap"] {
        assert!(notes.iter().any(|n| n.contains(ty)), "no txmem {ty} row");
    }
    // Every structure also runs with single-operation lookups and updates
    // (outside transactions), and passes the same check.
    for kind in ["list", "hash", "ordered"] {
        assert!(
            v["results"].as_array().unwrap().iter().any(|r| {
                r["system"] == "txmem-direct"
                    && r["workload"]
                        .as_str()
                        .unwrap()
                        .contains(&format!("/{kind}/"))
                    && r["note"]
                        .as_str()
                        .unwrap()
                        .contains("single-operation lookups and updates")
            }),
            "no txmem-direct row for {kind}"
        );
    }
}

/// Runs the coarse lock systems, plain and elided, on one small workload of
/// each suite at 2 threads, and checks the elided rows: they ran, passed
/// their result check, say in their note whether RTM was usable, and carry
/// elision counts that add up (`htm_off` forces the fallback path with
/// `TXMEM_ELIDE_HTM=off`, which a machine without RTM takes anyway).
fn check_elided_rows(htm_off: bool) {
    let tag = if htm_off { "elided-off" } else { "elided" };
    for (suite, filter) in [
        ("bank", "bank"),
        ("intset", "hash/size=256/range=512/update=20%"),
        ("micro", "tx=5"),
    ] {
        let json = tmp(SUITE, &format!("{tag}-{suite}.json"));
        let mut cmd = txmem();
        cmd.env_remove("TXMEM_ELIDE_HTM");
        if htm_off {
            cmd.env("TXMEM_ELIDE_HTM", "off");
        }
        let out = cmd
            .args(["bench", suite, "--filter", filter, "--threads", "2"])
            .args(["--duration", "30ms", "--warmup", "5ms", "--repeat", "2"])
            .args(["--no-progress", "--systems"])
            .arg("elided-mutex,elided-rwlock,mutex,rwlock")
            .arg("--json")
            .arg(&json)
            .output()
            .unwrap();
        let stdout = succeeded(&out);
        assert!(stdout.contains("elided rows"), "{stdout}");
        let v: Value = read_json(&json);
        assert_eq!(
            systems(&v),
            ["elided-mutex", "elided-rwlock", "mutex", "rwlock"],
            "{v}"
        );
        let rtm_usable = v["machine"]["rtm"] == "usable";
        assert!(!(htm_off && rtm_usable), "TXMEM_ELIDE_HTM=off ignored");
        for r in v["results"].as_array().unwrap() {
            assert_eq!(r["status"], "ok", "{r}");
            assert_eq!(r["repeats"], 2, "{r}");
            let elided = r["system"].as_str().unwrap().starts_with("elided-");
            let Some(e) = r.get("elision") else {
                assert!(!elided, "elided row without elision counts: {r}");
                continue;
            };
            assert!(elided, "elision counts on a plain lock row: {r}");
            let note = r["note"].as_str().unwrap();
            let num = |k: &str| e[k].as_u64().unwrap();
            let aborts: u64 = e["aborts"]
                .as_object()
                .unwrap()
                .values()
                .map(|a| a.as_u64().unwrap())
                .sum();
            assert_eq!(num("sections"), r["commits"].as_u64().unwrap(), "{r}");
            assert!(num("sections") > 0, "{r}");
            assert_eq!(
                num("hw_commits") + num("fallback_sections"),
                num("sections"),
                "{r}"
            );
            assert_eq!(num("hw_commits") + aborts, num("hw_attempts"), "{r}");
            assert_eq!(r["aborts"].as_u64(), Some(aborts), "{r}");
            if rtm_usable {
                assert_eq!(e["htm"], "rtm", "{r}");
                assert!(note.contains("RTM usable"), "{note}");
            } else {
                // The fallback path: no hardware transaction at all.
                assert_eq!(e["htm"], "none", "{r}");
                assert!(note.contains("RTM not usable"), "{note}");
                assert_eq!(num("hw_attempts"), 0, "{r}");
                assert_eq!(num("fallback_sections"), num("sections"), "{r}");
            }
        }
    }
}

#[test]
fn elided_locks_run_and_verify() {
    check_elided_rows(false);
}

#[test]
fn elided_locks_run_and_verify_on_their_fallback_path() {
    check_elided_rows(true);
}

#[test]
fn quick_suite_is_the_default() {
    let v = run_suite("quick", &["--threads", "1"]);
    assert_eq!(v["suite"], "quick");
    let results = v["results"].as_array().unwrap();
    for prefix in ["micro/", "bank/", "intset/"] {
        assert!(results
            .iter()
            .any(|r| r["workload"].as_str().unwrap().starts_with(prefix)));
    }
}

#[test]
fn list_names_suites_workloads_and_systems() {
    let out = txmem().args(["bench", "--list"]).output().unwrap();
    let s = succeeded(&out);
    for want in [
        "micro",
        "intset",
        "bank",
        "micro/array=1M/tx=100",
        "intset/ordered/size=4096/range=8192/update=50%",
        "bank/accounts=1024/audit=20%",
        "fast-stm",
        "fine-locks",
        "elided-mutex",
        "elided-rwlock",
    ] {
        assert!(s.contains(want), "--list lacks {want}:\n{s}");
    }
}

fn expect_usage_error(args: &[&str], message: &str) {
    let out = txmem().arg("bench").args(args).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(err.contains(message), "stderr lacks {message:?}:\n{err}");
    assert!(
        err.contains("Usage:"),
        "stderr lacks the usage line:\n{err}"
    );
}

#[test]
fn bad_arguments_fail_with_a_message_and_the_usage() {
    expect_usage_error(&["nosuch"], "unknown suite `nosuch`");
    expect_usage_error(&["bank", "--threads", "0"], "thread count 0");
    expect_usage_error(&["bank", "--threads", "two"], "not a thread count");
    expect_usage_error(&["bank", "--duration", "fast"], "not a duration");
    expect_usage_error(&["bank", "--repeat", "0"], "repeat count");
    expect_usage_error(&["bank", "--systems", "nosuch"], "unknown system `nosuch`");
    expect_usage_error(
        &["bank", "--contention", "polite"],
        "unknown contention policy",
    );
    expect_usage_error(&["bank", "--filter", "zzz"], "no benchmark rows match");
    expect_usage_error(
        &["bank", "--json", "/nonexistent-dir/x.json"],
        "does not exist",
    );
    expect_usage_error(&["bank", "--frobnicate"], "--frobnicate");
}

#[test]
fn a_broken_check_is_reported_as_a_failure() {
    let json = tmp(SUITE, "broken.json");
    let csv = tmp(SUITE, "broken.csv");
    let mut systems = vec!["txmem", "mutex", "fast-stm", "elided-rwlock"];
    if have_libitm() {
        systems.extend(["libitm", "txmem-itm"]);
    }
    for (suite, filter, message) in [
        ("bank", "bank", "bank total changed"),
        ("intset", "hash/size=256/range=512/update=20%", "set holds"),
    ] {
        let out = txmem()
            .args(["bench", suite, "--filter", filter, "--threads", "1"])
            .args([
                "--break-check",
                "txmem,fast-stm,libitm,txmem-itm,elided-rwlock",
            ])
            .args(["--duration", "20ms", "--repeat", "2", "--no-progress"])
            .arg("--systems")
            .arg(systems.join(","))
            .arg("--json")
            .arg(&json)
            .arg("--csv")
            .arg(&csv)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{}", text(&out));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("FAILED"), "{stdout}");
        let v: Value = read_json(&json);
        for r in v["results"].as_array().unwrap() {
            if r["system"] == "mutex" {
                assert_eq!(r["status"], "ok", "{r}");
                assert!(r["ops_per_sec"].as_f64().is_some());
            } else {
                assert_eq!(r["status"], "failed", "{r}");
                assert!(
                    r["ops_per_sec"].is_null(),
                    "a failed row has no figure: {r}"
                );
                assert!(
                    r["error"].as_str().unwrap().contains(message),
                    "{suite}: {r}"
                );
            }
        }
        let csv = std::fs::read_to_string(&csv).unwrap();
        assert!(csv.contains(",failed,"), "{csv}");
    }
}

#[test]
fn ctrl_c_stops_cleanly_and_prints_what_finished() {
    let json = tmp(SUITE, "interrupted.json");
    let child = txmem()
        .args(["bench", "bank", "--threads", "1", "--duration", "500ms"])
        .args([
            "--repeat",
            "2",
            "--no-progress",
            "--systems",
            "mutex,txmem,stm",
        ])
        .arg("--json")
        .arg(&json)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Repeats go round-robin across the three systems: after the warm-ups
    // (about 0.3 s) the first round runs until about 1.8 s, so at 1.6 s the
    // first two systems have one finished repeat and the third is running.
    std::thread::sleep(std::time::Duration::from_millis(1600));
    let kill = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("interrupted"), "{stdout}");
    let v: Value = read_json(&json);
    assert_eq!(v["interrupted"], true);
    let results = v["results"].as_array().unwrap();
    assert!(
        results.iter().any(|r| r["status"] == "ok"),
        "finished repeats are kept: {results:?}"
    );
    let completed: u64 = results.iter().map(|r| r["repeats"].as_u64().unwrap()).sum();
    assert!(completed < 6, "the run stopped early: {results:?}");
}

#[test]
fn libitm_rows_are_skipped_with_a_reason_without_a_compiler() {
    let json = tmp(SUITE, "no-cc.json");
    let out = txmem()
        .env("CC_LIBITM", "/nonexistent/gcc")
        .args(["bench", "bank", "--threads", "1", "--duration", "20ms"])
        .args([
            "--repeat",
            "1",
            "--no-progress",
            "--systems",
            "txmem,libitm",
        ])
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    let stdout = succeeded(&out);
    assert!(stdout.contains("skipped libitm"), "{stdout}");
    let v: Value = read_json(&json);
    assert_eq!(systems(&v), vec!["txmem".to_string()]);
    let skipped = v["skipped"].as_array().unwrap();
    assert!(
        skipped
            .iter()
            .any(|s| s["system"] == "libitm" && s["reason"].as_str().unwrap().contains("compiler")),
        "{skipped:?}"
    );
}

#[test]
fn the_set_peers_run_and_a_broken_check_fails_them() {
    let peers = "dashmap,rwlock-std,crossbeam-skiplist";
    for broken in [false, true] {
        let json = tmp(SUITE, &format!("set-peers-{broken}.json"));
        let mut cmd = txmem();
        cmd.args([
            "bench",
            "intset",
            "--filter",
            "size=256/range=512/update=20%",
        ]);
        if broken {
            cmd.args(["--break-check", peers]);
        }
        let out = cmd
            .args(["--threads", "2", "--duration", "20ms", "--repeat", "2"])
            .args(["--no-progress", "--systems", peers, "--json"])
            .arg(&json)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(broken as i32), "{}", text(&out));
        let v: Value = read_json(&json);
        let rows: Vec<(String, String)> = v["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                assert_eq!(r["status"], if broken { "failed" } else { "ok" }, "{r}");
                if broken {
                    let error = r["error"].as_str().unwrap();
                    assert!(error.contains("outside the key range"), "{r}");
                }
                let workload = r["workload"].as_str().unwrap();
                let kind = workload.split('/').nth(1).unwrap().to_string();
                (kind, r["system"].as_str().unwrap().to_string())
            })
            .collect();
        // rwlock-std for every structure, dashmap for the hash set,
        // crossbeam-skiplist for the ordered set.
        for kind in ["list", "hash", "ordered"] {
            assert!(
                rows.contains(&(kind.into(), "rwlock-std".into())),
                "{rows:?}"
            );
        }
        assert!(
            rows.contains(&("hash".into(), "dashmap".into())),
            "{rows:?}"
        );
        assert!(
            rows.contains(&("ordered".into(), "crossbeam-skiplist".into())),
            "{rows:?}"
        );
        assert_eq!(rows.len(), 5, "{rows:?}");
    }
}
