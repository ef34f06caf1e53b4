//! The machine pieces behind Flask's experiments: an exclusive L2, the mesh's distances and
//! contention, and the protocols' traffic on it.

use txmem_sim::config::{ProtocolKind, Topology};
use txmem_sim::{Sim, SimConfig, Stats};

/// One core sweeping `lines` consecutive lines twice.
fn sweep_twice(cfg: SimConfig, lines: u64) -> Stats {
    let mut sim = Sim::new(cfg).unwrap();
    let base = sim.alloc_lines(lines);
    sim.spawn(0, move |cpu| async move {
        for _ in 0..2 {
            for i in 0..lines {
                cpu.load(base + 64 * i).await;
            }
        }
    });
    sim.run().unwrap()
}

#[test]
fn an_exclusive_l2_holds_the_l1_s_lines_besides_its_own() {
    let mut cfg = SimConfig {
        cores: 1,
        ..SimConfig::default()
    };
    cfg.l2.enabled = true;
    cfg.l2.cache.size_bytes = 64 * 1024;
    cfg.l2.cache.ways = 16;
    // 16 KB L1 + 64 KB L2: 1,280 lines in all; sweep 1,200.
    let lines = 1200;
    cfg.l2.exclusive = true;
    let exclusive = sweep_twice(cfg.clone(), lines);
    cfg.l2.exclusive = false;
    let inclusive = sweep_twice(cfg, lines);
    // The second sweep: every line is still in the exclusive pair, and none in the
    // inclusive L2 (1,024 lines, LRU, swept in order).
    assert_eq!(exclusive.cache.llc.hits + exclusive.cache.llc.misses, lines);
    assert!(
        inclusive.cache.llc.hits + inclusive.cache.llc.misses >= 2 * lines - 10,
        "{:?}",
        inclusive.cache
    );
    assert!(exclusive.total_cycles < inclusive.total_cycles);
}

/// Cycles for core 0 to read one line from memory whose home is `tile`, on Flask's machine.
fn first_read(home: u64) -> u64 {
    let cfg = SimConfig::flask();
    let mut sim = Sim::new(cfg).unwrap();
    let base = sim.alloc_lines(64);
    // Lines are homed by `line % 16`; `base` is line-aligned.
    let line0 = base / 64;
    let addr = 64 * (line0 + (home + 16 - line0 % 16) % 16);
    sim.spawn(0, move |cpu| async move {
        cpu.load(addr).await;
    });
    sim.run().unwrap().total_cycles
}

#[test]
fn a_farther_home_takes_longer_on_the_mesh() {
    let near = first_read(0);
    let mid = first_read(5);
    let far = first_read(15);
    assert!(near < mid && mid < far, "{near} {mid} {far}");
}

/// Every core reading and writing random lines of a shared array on Flask's machine under
/// `protocol`.
fn shared_traffic(protocol: ProtocolKind) -> Stats {
    let mut cfg = SimConfig::flask();
    cfg.coherence.protocol = protocol;
    cfg.check_invariants = true;
    let mut sim = Sim::new(cfg).unwrap();
    let base = sim.alloc_lines(512);
    for core in 0..16 {
        sim.spawn(core, move |cpu| async move {
            for _ in 0..300 {
                let a = base + 64 * cpu.random_below(512);
                if cpu.random_below(4) == 0 {
                    cpu.fetch_add(a, 1).await;
                } else {
                    cpu.load_overlapped(a).await;
                }
            }
        });
    }
    sim.run().unwrap()
}

#[test]
fn broadcasts_load_the_mesh_more_than_a_directory() {
    let token = shared_traffic(ProtocolKind::TokenB);
    let flask = shared_traffic(ProtocolKind::Flask);
    assert_eq!(SimConfig::flask().network.topology, Topology::Mesh);
    // TokenB multicasts every miss: more flits cross more links, and they wait more.
    assert!(
        token.network.flit_hops > flask.network.flit_hops,
        "{:?}",
        token.network
    );
    assert!(token.network.contention_cycles > flask.network.contention_cycles);
    // Both deliver data and control over the same network; MESI's bus sends nothing there.
    assert!(flask.network.data_bytes > 0 && flask.network.control_bytes > 0);
    assert!(flask.coherence.home_waits > 0 || token.coherence.transient_retries > 0);
}
