//! Flask's Table II workloads (`flask-app`): every app checks its own result on small and
//! 16-core machines, runs are deterministic, and the three classes behave as Flask's
//! figures need (SPEC private, NPB shared, servers migratory and beyond a small directory).

use txmem_sim::config::ProtocolKind;
use txmem_sim::workloads::flask_app::{FlaskApp, FlaskClass};
use txmem_sim::workloads::{run, RunResult, WorkloadConfig, WorkloadError, WorkloadKind};
use txmem_sim::{SimConfig, Stats};

/// `app`, about `ops` memory operations in all.
fn workload(app: FlaskApp, ops: u64) -> WorkloadConfig {
    WorkloadConfig {
        kind: WorkloadKind::FlaskApp,
        flask_app: app,
        total_ops: ops,
        ..WorkloadConfig::default()
    }
}

fn run_app(cfg: &SimConfig, app: FlaskApp, ops: u64) -> RunResult {
    let r = run(cfg, &workload(app, ops)).unwrap_or_else(|e| panic!("{}: {e}", app.name()));
    assert!(!r.stats.timed_out, "{} timed out", app.name());
    r
}

/// Table I in miniature: 16 cores with 2 KB L1s, 8 KB private L2s and a 128 KB LLC, so that
/// the footprints (which scale with the caches) stay small and every level is exercised.
fn tiny16(protocol: ProtocolKind) -> SimConfig {
    let mut c = SimConfig {
        cores: 16,
        ..SimConfig::default()
    };
    c.l1.size_bytes = 2048;
    c.l1.ways = 2;
    c.l2.enabled = true;
    c.l2.cache.size_bytes = 8192;
    c.l2.cache.ways = 4;
    c.llc.size_bytes = 128 * 1024;
    c.llc.ways = 8;
    c.coherence.protocol = protocol;
    c
}

/// Coherence events (invalidations and peer transfers) per memory operation.
fn sharing_per_op(s: &Stats) -> f64 {
    (s.coherence.invalidations + s.coherence.cache_to_cache) as f64 / s.mem_ops as f64
}

fn apps(class: FlaskClass) -> impl Iterator<Item = FlaskApp> {
    FlaskApp::ALL
        .into_iter()
        .filter(move |a| a.class() == class)
}

#[test]
fn every_app_passes_its_check_on_the_default_machine_with_4_cores() {
    let cfg = SimConfig {
        cores: 4,
        ..SimConfig::default()
    };
    for app in FlaskApp::ALL {
        let r = run_app(&cfg, app, 4000);
        // The NPB grids round to whole planes and powers of two: near the budget, not on it.
        assert!(
            (2000..8000).contains(&r.stats.mem_ops),
            "{}: {} memory operations for a budget of 4000",
            app.name(),
            r.stats.mem_ops
        );
    }
}

/// Every app on 16 cores with private L2s and the invariants checked after every access.
fn every_app_passes_on_16_cores_checking_invariants(protocol: ProtocolKind) {
    let mut cfg = tiny16(protocol);
    cfg.check_invariants = true;
    for app in FlaskApp::ALL {
        run_app(&cfg, app, 10_000);
    }
}

#[test]
fn every_app_passes_on_16_cores_under_mesi_snooping() {
    every_app_passes_on_16_cores_checking_invariants(ProtocolKind::MesiSnooping);
}

#[test]
fn every_app_passes_on_16_cores_under_flask() {
    every_app_passes_on_16_cores_checking_invariants(ProtocolKind::Flask);
}

#[test]
fn runs_are_deterministic() {
    let cfg = tiny16(ProtocolKind::Flask);
    for app in FlaskApp::ALL {
        let a = run_app(&cfg, app, 6000).stats;
        let b = run_app(&cfg, app, 6000).stats;
        assert_eq!(a, b, "{}", app.name());
    }
}

#[test]
fn a_different_seed_changes_the_run_and_it_still_checks() {
    let mut cfg = tiny16(ProtocolKind::Flask);
    let a = run_app(&cfg, FlaskApp::Oltp, 6000).stats;
    cfg.seed = 7;
    let b = run_app(&cfg, FlaskApp::Oltp, 6000).stats;
    assert_ne!(a, b);
}

#[test]
fn spec_shares_far_less_than_npb() {
    let cfg = tiny16(ProtocolKind::MesiSnooping);
    let rate = |app| sharing_per_op(&run_app(&cfg, app, 30_000).stats);
    let spec: Vec<(FlaskApp, f64)> = apps(FlaskClass::Spec).map(|a| (a, rate(a))).collect();
    let npb: Vec<(FlaskApp, f64)> = apps(FlaskClass::Npb).map(|a| (a, rate(a))).collect();
    let most_spec = spec.iter().map(|p| p.1).fold(0.0, f64::max);
    let least_npb = npb.iter().map(|p| p.1).fold(f64::MAX, f64::min);
    // SPEC shares only the OS's few lines; every NPB kernel shares at its partitions' edges.
    assert!(
        most_spec > 0.0 && 4.0 * most_spec < least_npb,
        "invalidations + peer transfers per op: SPEC {spec:?}, NPB {npb:?}"
    );
}

#[test]
fn omnetpp_misses_to_memory_far_more_than_hmmer() {
    let cfg = tiny16(ProtocolKind::MesiSnooping);
    // 2,000 operations per copy: hmmer sweeps its 4 KB (half the L2) three times.
    let hmmer = run_app(&cfg, FlaskApp::Hmmer, 30_000).stats;
    let omnetpp = run_app(&cfg, FlaskApp::Omnetpp, 30_000).stats;
    let (h2, o2) = (hmmer.cache.l2.miss_rate(), omnetpp.cache.l2.miss_rate());
    assert!(
        h2 < 0.5 && o2 > 0.9,
        "L2 miss rates: hmmer {h2}, omnetpp {o2}"
    );
    let per_op = |s: &Stats| s.cache.llc.misses as f64 / s.mem_ops as f64;
    let (h, o) = (per_op(&hmmer), per_op(&omnetpp));
    assert!(3.0 * h < o, "LLC misses per op: hmmer {h}, omnetpp {o}");
    // The chase's misses are dependent: omnetpp takes far longer for the same work.
    assert!(omnetpp.total_cycles > 5 * hmmer.total_cycles);
}

#[test]
fn server_records_migrate_from_cache_to_cache() {
    let cfg = tiny16(ProtocolKind::MesiSnooping);
    let most_spec = apps(FlaskClass::Spec)
        .map(|a| {
            let s = run_app(&cfg, a, 30_000).stats;
            s.coherence.cache_to_cache as f64 / s.mem_ops as f64
        })
        .fold(0.0, f64::max);
    for app in apps(FlaskClass::Server) {
        let s = run_app(&cfg, app, 30_000).stats;
        let c2c = s.coherence.cache_to_cache as f64 / s.mem_ops as f64;
        assert!(
            c2c > 5.0 * most_spec,
            "{}: {c2c} peer transfers per op, SPEC at most {most_spec}",
            app.name()
        );
        // Locks taken with a CAS: the records are read-modify-written.
        assert!(s.rmws > 0, "{}", app.name());
    }
}

#[test]
fn a_small_flask_directory_holds_spec_sharing_but_not_the_servers() {
    let mut cfg = tiny16(ProtocolKind::Flask);
    cfg.coherence.directory_coverage_pct = 5;
    for app in FlaskApp::ALL {
        let s = run_app(&cfg, app, 30_000).stats;
        let evictions = s.coherence.directory_evictions;
        match app.class() {
            // Only the OS's few dozen lines are actively shared: they fit.
            FlaskClass::Spec => assert_eq!(evictions, 0, "{}", app.name()),
            FlaskClass::Npb | FlaskClass::Server => {
                assert!(evictions > 0, "{}: no directory evictions", app.name())
            }
        }
    }
}

#[test]
fn spec_needs_a_core_for_the_os() {
    let cfg = SimConfig {
        cores: 1,
        ..SimConfig::default()
    };
    for app in apps(FlaskClass::Spec) {
        match run(&cfg, &workload(app, 1000)) {
            Err(WorkloadError::Check(m)) => assert!(m.contains("at least 2 CPUs"), "{m}"),
            other => panic!("{}: {:?}", app.name(), other.map(|r| r.stats.mem_ops)),
        }
    }
    // The other classes run on one core.
    for app in [FlaskApp::Mg, FlaskApp::Ft, FlaskApp::Lu, FlaskApp::Jbb] {
        run_app(&cfg, app, 2000);
    }
}

#[test]
fn unusual_machines_still_check() {
    // Smallest lines (a record or node spans several), SMT, and POWER8's 128-byte lines.
    let mut narrow = SimConfig {
        cores: 4,
        line_bytes: 8,
        ..SimConfig::default()
    };
    narrow.l1.size_bytes = 1024;
    let smt = SimConfig {
        cores: 2,
        threads_per_core: 2,
        ..SimConfig::default()
    };
    let mut power8 = SimConfig::power8();
    power8.cores = 2;
    power8.threads_per_core = 2;
    // Footprints scale with the LLC: 64 MB would make omnetpp's heaps 256 MB.
    power8.llc.size_bytes = 1 << 20;
    for cfg in [narrow, smt, power8] {
        for app in FlaskApp::ALL {
            run_app(&cfg, app, 3000);
        }
    }
}

#[test]
fn the_app_is_read_from_a_config_file() {
    let w: WorkloadConfig =
        serde_json::from_str(r#"{"kind": "flask-app", "flask_app": "omnetpp"}"#).unwrap();
    assert_eq!(w.kind, WorkloadKind::FlaskApp);
    assert_eq!(w.flask_app, FlaskApp::Omnetpp);
    assert_eq!(WorkloadKind::FlaskApp.name(), "flask-app");
    assert_eq!(WorkloadConfig::default().flask_app, FlaskApp::Hmmer);
}
