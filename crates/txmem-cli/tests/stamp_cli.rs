//! End-to-end tests of `txmem stamp`: the binary runs the applications on
//! their `dev` inputs, verifies each run, prints a row per variant and
//! thread count with the speedup over the sequential run, writes JSON, and
//! rejects unknown applications and variants with the usage line.

mod common;
use common::{read_json, text, tmp, txmem};

/// The name of this binary's temporary directory.
const SUITE: &str = "stamp";

#[test]
fn kmeans_runs_every_variant_and_writes_json() {
    let json = tmp(SUITE, "kmeans.json");
    let out = txmem()
        .args([
            "stamp",
            "kmeans",
            "--threads",
            "1,2",
            "--repeat",
            "1",
            "--json",
        ])
        .arg(&json)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    for want in ["seq ", "typed ", "words ", "speedup"] {
        assert!(stdout.contains(want), "missing `{want}` in\n{stdout}");
    }
    let doc = read_json(&json);
    let rows = doc["results"].as_array().expect("results");
    // seq once, typed and words at 1 and 2 threads.
    assert_eq!(rows.len(), 5, "{doc:#}");
    for r in rows {
        assert!(r["seconds"].as_f64().unwrap() > 0.0);
        let transactional = r["variant"] != "seq";
        assert_eq!(r["commits"].as_u64().unwrap() > 0, transactional, "{r:#}");
        if transactional {
            assert!(r["speedup_over_seq"].as_f64().unwrap() > 0.0);
        }
    }
    assert_eq!(doc["failed"].as_array().map(Vec::len), Some(0));
}

#[test]
fn unknown_applications_and_variants_are_usage_errors() {
    let out = txmem().args(["stamp", "nope"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("unknown application `nope`"),
        "{}",
        text(&out)
    );
    assert!(text(&out).contains("Usage: txmem stamp"), "{}", text(&out));
    let out = txmem()
        .args(["stamp", "kmeans", "--variant", "fast"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("unknown variant `fast`"),
        "{}",
        text(&out)
    );
}

#[test]
fn all_runs_every_application() {
    let out = txmem()
        .args(["stamp", "all", "--variant", "seq", "--repeat", "1"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    for app in txmem_stamp::names() {
        assert!(
            stdout.contains(&format!("{app}: ")),
            "no `{app}` in\n{stdout}"
        );
    }
}
