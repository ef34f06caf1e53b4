//! Runs the TxLinux counter microbenchmark with a spinlock and with transactions and prints
//! the main figures:
//! `cargo run --release -p txmem-sim --example counter [cores] [increments] [only] [policy]`
//! (`only`: `spinlock`, `tx` or `atomic`; `policy`: a conflict policy name, default SizeMatters).

use txmem_sim::config::PolicyKind;
use txmem_sim::workloads::{run, SyncKind, WorkloadConfig};
use txmem_sim::SimConfig;

fn main() {
    let mut args = std::env::args().skip(1);
    let cores = args.next().and_then(|a| a.parse().ok()).unwrap_or(8);
    let increments = args.next().and_then(|a| a.parse().ok()).unwrap_or(1000);
    let only = args.next();
    let policy = args.next();
    let mut cfg = SimConfig {
        cores,
        ..SimConfig::default()
    };
    if let Some(p) = policy {
        match PolicyKind::ALL
            .into_iter()
            .find(|k| k.name().eq_ignore_ascii_case(&p))
        {
            Some(k) => cfg.htm.policy = k,
            None => {
                eprintln!("unknown policy {p}");
                std::process::exit(2);
            }
        }
    }
    for sync in [SyncKind::Spinlock, SyncKind::Tx, SyncKind::Atomic] {
        if only.as_deref().is_some_and(|o| o != sync.name()) {
            continue;
        }
        let w = WorkloadConfig {
            sync,
            increments,
            ..WorkloadConfig::default()
        };
        match run(&cfg, &w) {
            Ok(r) => {
                let s = &r.stats;
                println!(
                    "{:9} cycles {:>10} commits {:>7} restarts {:>7} rate {:.3} bus {:>8} l1 miss {:.3} ops {:>8} host {:.1} Mops/s",
                    sync.name(),
                    s.total_cycles,
                    s.tx.commits,
                    s.tx.restarts,
                    s.tx.restart_rate(),
                    s.coherence.bus_transactions,
                    s.cache.l1.miss_rate(),
                    s.mem_ops,
                    r.host_ops_per_sec() / 1e6
                );
            }
            Err(e) => eprintln!("{}: {e}", sync.name()),
        }
    }
}
