//! Memory-level parallelism: overlapped accesses and the per-core window that bounds them.

use txmem_sim::{Sim, SimConfig, Stats};

const MISSES: u64 = 64;

/// One core touching `MISSES` distinct lines that are all in memory, overlapped or not, with
/// a window of `window`; ends with a fence when `fence`.
fn sweep(window: u32, overlapped: bool, fence: bool) -> (Stats, Sim) {
    let cfg = SimConfig {
        cores: 1,
        max_outstanding: window,
        ..SimConfig::default()
    };
    let mut sim = Sim::new(cfg).unwrap();
    let base = sim.alloc_lines(MISSES);
    sim.spawn(0, move |cpu| async move {
        for i in 0..MISSES {
            let a = base + 64 * i;
            if overlapped {
                cpu.store_overlapped(a, i + 1).await;
            } else {
                cpu.store(a, i + 1).await;
            }
        }
        if fence {
            cpu.fence().await;
        }
    });
    let s = sim.run().unwrap();
    for i in 0..MISSES {
        assert_eq!(sim.read(base + 64 * i), i + 1);
    }
    (s, sim)
}

#[test]
fn a_window_of_one_overlaps_nothing() {
    let (blocking, _) = sweep(1, false, false);
    let (overlapped, _) = sweep(1, true, true);
    // Each access waits for the one before; the last one's wait moves into the fence.
    assert_eq!(overlapped.total_cycles, blocking.total_cycles);
    assert_eq!(overlapped.window_full_waits, MISSES - 1);
    assert_eq!(overlapped.overlapped, MISSES);
}

#[test]
fn wider_windows_overlap_more_misses() {
    let cycles: Vec<u64> = [1, 2, 4, 16, 64]
        .iter()
        .map(|&w| sweep(w, true, true).0.total_cycles)
        .collect();
    assert!(
        cycles.windows(2).all(|p| p[1] < p[0]),
        "cycles by window 1, 2, 4, 16, 64: {cycles:?}"
    );
    // 64 misses in flight at once cost little more than one memory latency plus the bus.
    assert!(cycles[4] * 8 < cycles[0], "{cycles:?}");
}

#[test]
fn a_full_window_makes_the_next_access_wait_and_counts_it_once() {
    let (s, _) = sweep(8, true, true);
    assert_eq!(s.window_full_waits, MISSES - 8);
    // Every store once, and the fence: the waits re-issue nothing that is counted again.
    assert_eq!((s.stores, s.mem_ops), (MISSES, MISSES + 1));
}

#[test]
fn the_thread_ends_when_its_overlapped_accesses_complete() {
    let (without_fence, _) = sweep(64, true, false);
    let (with_fence, _) = sweep(64, true, true);
    assert_eq!(without_fence.total_cycles, with_fence.total_cycles);
}

#[test]
fn inside_a_transaction_an_overlapped_load_blocks() {
    let run = |overlapped: bool| {
        let mut sim = Sim::new(SimConfig {
            cores: 1,
            ..SimConfig::default()
        })
        .unwrap();
        let base = sim.alloc_lines(8);
        sim.spawn(0, move |cpu| async move {
            cpu.transaction(|cpu| async move {
                let mut sum = 0;
                for i in 0..8 {
                    sum += if overlapped {
                        cpu.load_overlapped(base + 64 * i).await
                    } else {
                        cpu.load(base + 64 * i).await
                    };
                }
                cpu.store(base, sum).await;
            })
            .await;
        });
        sim.run().unwrap()
    };
    let (a, b) = (run(false), run(true));
    assert_eq!(a.total_cycles, b.total_cycles);
    assert_eq!(b.overlapped, 0);
}
