//! The `settings` object of a `txmem db` report: every setting needed to
//! rerun the measurement.

use serde_json::json;

use crate::db::settings::{DbSettings, DbWorkload};
use crate::harness::kinds::LATENCY_STRIDE;
use crate::measure::args::fmt_duration;
use crate::measure::metadata::{git_commit, note_broken_checks};

/// The settings object of the report of a run with `settings`.
pub fn settings_json(settings: &DbSettings) -> serde_json::Value {
    let s = &settings.measure;
    let policy = &settings.policy;
    let workloads: Vec<serde_json::Value> = settings.workloads.iter().map(workload_json).collect();
    let opacity: Vec<&str> = settings.opacity.iter().map(|o| o.name()).collect();
    let mut json = json!({
        "command": std::env::args().collect::<Vec<_>>().join(" "),
        "benchmark": settings.benchmark,
        "workloads": workloads,
        "threads": s.threads,
        "duration_ms": s.duration.as_secs_f64() * 1e3,
        "duration": fmt_duration(s.duration),
        "repeats": s.repeats,
        "warmup_ms": s.warmup.as_secs_f64() * 1e3,
        "seed": s.seed,
        "build": if cfg!(debug_assertions) { "debug" } else { "release" },
        "allocator": "system (Rust's default global allocator: the platform malloc)",
        "pinning": "none (threads float)",
        "load": "a fresh database per (workload, opacity mode, thread count), loaded before the warm-up",
        "check": "the workload's consistency check after every timed repeat",
        "txmem": {
            "opacity": opacity,
            "contention_policy": policy.name(),
            "contention_policy_params": format!("{policy:?}"),
            "serialize_after": txmem::DEFAULT_SERIALIZE_AFTER,
            "untracked_reads": settings.untracked_reads,
            "read_my_writes": settings.read_my_writes,
            "item_index_cutoff": if settings.index_cutoff == usize::MAX {
                serde_json::Value::from("off")
            } else {
                serde_json::Value::from(settings.index_cutoff)
            },
            "stats": "on (default)",
        },
        "latency": {
            "timed": format!("one transaction in {LATENCY_STRIDE} per thread"),
            "histogram": "hdrhistogram, 3 significant digits, nanoseconds",
        },
        "git_commit": git_commit(),
    });
    note_broken_checks(&mut json, &settings.measure);
    json
}

/// One workload's parameters.
fn workload_json(w: &DbWorkload) -> serde_json::Value {
    match w {
        DbWorkload::Ycsb(c) => json!({
            "benchmark": "ycsb",
            "name": c.name(),
            "workload": c.mix.letter(),
            "proportions": c.mix.proportions().iter()
                .map(|(op, percent)| (op.name().to_string(), json!(percent)))
                .collect::<serde_json::Map<_, _>>(),
            "records": c.record_count,
            "value_size": c.value_size,
            "distribution": c.distribution().name(),
            "theta": c.theta,
            "ops_per_txn": c.ops_per_txn,
            "max_scan_len": c.max_scan_len,
            "index": c.index().name(),
            "map": c.index().map_type(),
        }),
        DbWorkload::Tpcc(t) => t.json(),
    }
}
