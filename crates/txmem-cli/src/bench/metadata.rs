//! The `settings` object of a report: every setting needed to rerun the
//! measurement, and the versions of what was measured.

use std::sync::Arc;

use serde_json::json;

use super::settings::Settings;
use crate::harness::peers::libitm::Libitm;
use crate::harness::rtm::rtm_verdict;
use crate::harness::versions::PEER_VERSIONS;
use crate::measure::args::fmt_duration;
use crate::measure::metadata::{git_commit, note_broken_checks};

/// The settings object of the report of a run with `settings`.
pub fn settings_json(
    settings: &Settings,
    libitm: &Result<Arc<Libitm>, String>,
) -> serde_json::Value {
    let s = &settings.measure;
    let policy = &settings.policy;
    let peers: serde_json::Map<String, serde_json::Value> = PEER_VERSIONS
        .iter()
        .map(|(name, version)| (name.to_string(), json!(version)))
        .collect();
    let mut json = json!({
        "command": std::env::args().collect::<Vec<_>>().join(" "),
        "threads": s.threads,
        "duration_ms": s.duration.as_secs_f64() * 1e3,
        "duration": fmt_duration(s.duration),
        "repeats": s.repeats,
        "warmup_ms": s.warmup.as_secs_f64() * 1e3,
        "seed": s.seed,
        "systems": settings.systems,
        "filter": settings.filter,
        "build": if cfg!(debug_assertions) { "debug" } else { "release" },
        "allocator": "system (Rust's default global allocator: the platform malloc)",
        "pinning": "none (threads float)",
        "txmem": {
            "contention_policy": policy.name(),
            "contention_policy_params": format!("{policy:?}"),
            "serialize_after": txmem::DEFAULT_SERIALIZE_AFTER,
            "stats": "on (default)",
            "opacity": "per system: txmem = tl2, txmem-revalidate, txmem-no-opacity = none",
        },
        "libitm": match libitm {
            Ok(l) => json!({"compiler": l.compiler(), "flags": "-O2 -fgnu-tm -pthread", "method": l.method()}),
            Err(why) => json!({"skipped": why}),
        },
        "txmem_itm": match crate::harness::peers::libitm::txmem_itm_library() {
            Ok(lib) => json!({"library": lib, "method": crate::harness::peers::libitm::txmem_itm_method()}),
            Err(why) => json!({"skipped": why}),
        },
        "peers": peers,
        "elision": elision_settings(),
        "git_commit": git_commit(),
    });
    note_broken_checks(&mut json, &settings.measure);
    json
}

/// How the elided-lock rows run: the backend, whether it elides here, and
/// the retry configuration every thread starts with.
fn elision_settings() -> serde_json::Value {
    use txmem_elide::htm::{DefaultHtm, Htm};
    let htm = DefaultHtm::INIT;
    json!({
        "crate": "txmem-elide (workspace)",
        "backend": htm.name(),
        "elides": htm.available(),
        "rtm": rtm_verdict(),
        "retry_config": format!("{:?}", txmem_elide::policy::RetryConfig::DEFAULT),
        "stats": "per-thread counters summed around each timed repeat; per-lock counts off",
    })
}
