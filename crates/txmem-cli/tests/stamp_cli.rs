//! End-to-end tests of `txmem stamp`: the binary runs the applications on
//! their `dev` inputs, verifies each run, prints a row per variant and
//! thread count with the speedup over the sequential run, writes JSON, and
//! rejects unknown applications and variants with the usage line; reads
//! input files in STAMP's formats and writes them with `--save-input`.

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
    for want in ["seq ", "typed ", "words ", "typed-plus ", "speedup"] {
        assert!(stdout.contains(want), "missing `{want}` in\n{stdout}");
    }
    let doc = read_json(&json);
    let rows = doc["results"].as_array().expect("results");
    // seq once, typed, words and typed-plus at 1 and 2 threads.
    assert_eq!(rows.len(), 7, "{doc:#}");
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

#[test]
fn input_files_written_by_save_input_run() {
    for (app, path) in [("labyrinth", "maze.txt"), ("yada", "mesh")] {
        let path = tmp(SUITE, path);
        let out = txmem()
            .args(["stamp", app, "--input", "dev", "--save-input"])
            .arg(&path)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out));
        assert!(text(&out).contains("wrote "), "{}", text(&out));
        let out = txmem()
            .args(["stamp", app, "--threads", "2", "--repeat", "1", "--input"])
            .arg(&path)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out));
        let stdout = String::from_utf8_lossy(&out.stdout);
        let from = format!("from {}", path.display());
        for want in [from.as_str(), "seq ", "typed ", "words "] {
            assert!(stdout.contains(want), "missing `{want}` in\n{stdout}");
        }
    }
}

#[test]
fn kmeans_reads_stamps_text_format() {
    // 200 points on a line, comma and space separated, with a blank line:
    // enough for the 160 clusters a file is clustered into.
    let path = tmp(SUITE, "points.txt");
    let mut points: String = (0..200)
        .map(|i| format!("{i} {},{}\n", i % 17, f64::from(i) / 8.0))
        .collect();
    points.insert(0, '\n');
    std::fs::write(&path, points).unwrap();
    let out = txmem()
        .args([
            "stamp",
            "kmeans",
            "--variant",
            "seq,typed",
            "--threads",
            "2",
        ])
        .args(["--repeat", "1", "--input"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("on 200 points, 2 dimensions, from"),
        "{}",
        text(&out)
    );
}

#[test]
fn input_files_are_refused_where_stamp_takes_none_and_checked_where_it_does() {
    let path = tmp(SUITE, "bad-maze.txt");
    std::fs::write(&path, "d 8 8 1\np 0 0 0 9 0 0\n").unwrap();
    let out = txmem()
        .args(["stamp", "labyrinth,genome", "--input"])
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    for want in [
        "genome has no input file, only the dev and paper inputs",
        "Usage: txmem stamp",
    ] {
        assert!(text(&out).contains(want), "{}", text(&out));
    }
    let out = txmem()
        .args(["stamp", "labyrinth", "--input"])
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let want = format!(
        "{}:2: (9, 0, 0) is outside the 8 x 8 x 1 grid",
        path.display()
    );
    assert!(text(&out).contains(&want), "{}", text(&out));
    // --save-input writes a generated input of one application.
    let out = txmem()
        .args(["stamp", "genome", "--save-input"])
        .arg(tmp(SUITE, "genome.txt"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("genome has no input file"),
        "{}",
        text(&out)
    );
}
