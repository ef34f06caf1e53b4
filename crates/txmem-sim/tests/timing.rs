//! Exact timings derived from the configured latencies.

mod common;

use txmem_sim::{Sim, SimConfig};

#[test]
fn atomic_adds_on_one_core_cost_one_miss_then_hits() {
    let cfg = SimConfig {
        cores: 1,
        ..SimConfig::default()
    };
    let mut sim = Sim::new(cfg.clone()).unwrap();
    let a = sim.alloc_lines(1);
    sim.spawn(0, move |cpu| async move {
        for _ in 0..10 {
            cpu.fetch_add(a, 1).await;
        }
    });
    let s = sim.run().unwrap();
    // First access: L1 (1) + bus request and data (2 + 8) + LLC (16) + memory (200).
    let miss = cfg.l1.latency
        + cfg.coherence.bus_request_cycles
        + cfg.coherence.bus_data_cycles
        + cfg.llc.latency
        + cfg.memory_latency;
    assert_eq!(miss, 227);
    assert_eq!(s.total_cycles, miss + 9 * cfg.l1.latency);
    assert_eq!(sim.read(a), 10);
    assert_eq!((s.cache.l1.hits, s.cache.l1.misses), (9, 1));
    assert_eq!((s.cache.llc.hits, s.cache.llc.misses), (0, 1));
    assert_eq!(s.coherence.get_m, 1);
    assert_eq!(s.coherence.bus_transactions, 1);
}

#[test]
fn uncontended_transactions_cost_begin_plus_accesses() {
    let cfg = SimConfig {
        cores: 1,
        ..SimConfig::default()
    };
    let mut sim = Sim::new(cfg).unwrap();
    let a = sim.alloc_lines(1);
    sim.spawn(0, move |cpu| async move {
        for _ in 0..10 {
            cpu.transaction(|cpu| async move {
                let v = cpu.load(a).await;
                cpu.store(a, v + 1).await;
            })
            .await;
        }
    });
    let s = sim.run().unwrap();
    // xbegin 1 + load miss 227 + store to an Exclusive line 1 (silent upgrade), then
    // 9 x (1 + 1 + 1); commits cost 0 by default.
    assert_eq!(s.total_cycles, 229 + 9 * 3);
    assert_eq!(s.tx.commits, 10);
    assert_eq!(s.tx.restarts, 0);
    assert_eq!(s.tx.write_set_lines.count, 10);
    assert_eq!(s.tx.write_set_bytes.sum, 80);
    assert_eq!(s.tx.read_set_bytes.sum, 80);
    assert_eq!(s.coherence.get_s, 1);
    assert_eq!(s.coherence.upgrades + s.coherence.get_m, 0);
}

#[test]
fn commit_and_abort_penalties_are_charged() {
    let mut cfg = SimConfig {
        cores: 1,
        ..SimConfig::default()
    };
    cfg.htm.commit_penalty = 100;
    cfg.htm.abort_penalty = 1000;
    let mut sim = Sim::new(cfg).unwrap();
    let a = sim.alloc_lines(1);
    sim.spawn(0, move |cpu| async move {
        cpu.transaction(|cpu| async move { cpu.store(a, 1).await })
            .await;
        let r = cpu.xbegin(|cpu| async move { cpu.xabort(7).await }).await;
        assert_eq!(r.unwrap_err().code(), Some(7));
    });
    let s = sim.run().unwrap();
    // tx 1: begin 1 + store miss 227 + commit 100; tx 2: begin 1 + abort penalty 1000.
    assert_eq!(s.total_cycles, 1 + 227 + 100 + 1 + 1000);
    assert_eq!(s.tx.aborts.explicit, 1);
}

#[test]
fn bus_contention_serializes_misses() {
    // Two cores miss on different lines at time 0: the second waits for the bus.
    let cfg = SimConfig {
        cores: 2,
        ..SimConfig::default()
    };
    let mut sim = Sim::new(cfg).unwrap();
    let a = sim.alloc_lines(1);
    let b = sim.alloc_lines(1);
    sim.spawn(0, move |cpu| async move { cpu.store(a, 1).await });
    sim.spawn(1, move |cpu| async move { cpu.store(b, 1).await });
    let s = sim.run().unwrap();
    assert_eq!(s.per_core[0].cycles, 227);
    assert_eq!(s.per_core[1].cycles, 237);
    assert_eq!(s.coherence.bus_wait_cycles, 10);
}
