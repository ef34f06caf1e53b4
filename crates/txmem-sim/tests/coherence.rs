//! Coherence invariants checked at every step (`check_invariants`): at most one writer or
//! many readers per line, private caches agree with the protocol, and every load returns the
//! last committed store. Random programs of loads, stores, CAS and transactions.

mod common;

use common::small;
use proptest::prelude::*;
use txmem_sim::config::{Detection, Granularity, Versioning};
use txmem_sim::Sim;

#[derive(Clone, Debug)]
enum Step {
    Load(u64),
    Store(u64, u64),
    Cas(u64, u64),
    Add(u64),
    Tx(Vec<(u64, bool)>),
    Think(u64),
}

fn step() -> impl Strategy<Value = Step> {
    // 48 words over 24 lines spread across the small L1 sets (so evictions happen).
    let addr = 0u64..48;
    prop_oneof![
        addr.clone().prop_map(Step::Load),
        (addr.clone(), 0u64..5).prop_map(|(a, v)| Step::Store(a, v)),
        (addr.clone(), 0u64..5).prop_map(|(a, v)| Step::Cas(a, v)),
        addr.clone().prop_map(Step::Add),
        proptest::collection::vec((addr, any::<bool>()), 1..5).prop_map(Step::Tx),
        (0u64..30).prop_map(Step::Think),
    ]
}

fn addr_of(base: u64, i: u64) -> u64 {
    // Word i lives in line i / 2, lines 512 bytes apart (a few L1 sets, many conflicts).
    base + (i / 2) * 512 + (i % 2) * 8
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]
    #[test]
    fn invariants_hold_at_every_step(
        programs in proptest::collection::vec(proptest::collection::vec(step(), 1..25), 2..5),
        mode in 0usize..3,
        word in any::<bool>(),
        l2 in any::<bool>(),
    ) {
        let mut cfg = small(programs.len());
        (cfg.htm.versioning, cfg.htm.detection) = [
            (Versioning::Eager, Detection::Eager),
            (Versioning::Lazy, Detection::Eager),
            (Versioning::Lazy, Detection::Lazy),
        ][mode];
        if word {
            cfg.htm.granularity = Granularity::Word;
        }
        if l2 {
            cfg.l2.enabled = true;
            cfg.l2.cache.size_bytes = 4096;
            cfg.l2.cache.ways = 2;
        }
        let mut sim = Sim::new(cfg).unwrap();
        let base = sim.alloc(24 * 512, 512);
        let adds = sim.alloc_lines(1);
        let mut expected_adds = 0;
        for (core, prog) in programs.into_iter().enumerate() {
            expected_adds += prog.iter().filter(|s| matches!(s, Step::Add(_))).count() as u64;
            sim.spawn(core, move |cpu| async move {
                for s in prog {
                    match s {
                        Step::Load(a) => { cpu.load(addr_of(base, a)).await; }
                        Step::Store(a, v) => cpu.store(addr_of(base, a), v).await,
                        Step::Cas(a, v) => { cpu.cas(addr_of(base, a), v, v + 1).await; }
                        Step::Add(a) => {
                            cpu.fetch_add(addr_of(base, a), 0).await;
                            cpu.fetch_add(adds, 1).await;
                        }
                        Step::Tx(ops) => {
                            let ops = ops.clone();
                            cpu.transaction(|cpu| {
                                let ops = ops.clone();
                                async move {
                                    for (a, w) in ops {
                                        let v = cpu.load(addr_of(base, a)).await;
                                        if w {
                                            cpu.store(addr_of(base, a), v + 1).await;
                                        }
                                    }
                                }
                            })
                            .await;
                        }
                        Step::Think(c) => cpu.compute(c).await,
                    }
                }
            });
        }
        // Invariants are asserted inside the simulator after every access.
        let s = sim.run().unwrap();
        prop_assert_eq!(sim.read(adds), expected_adds);
        prop_assert!(!s.timed_out);
    }
}
