//! The simulated HTM reports aborts in `txmem-htm`'s vocabulary, with the details only a
//! POWER8-like or MetaTM-like machine can give (suspension, rollback-only, which footprint
//! overflowed) and the retry hint that decides `transaction()`'s serial fallback.

mod common;

use common::small;
use std::cell::Cell;
use std::rc::Rc;
use txmem_sim::htm::Footprint;
use txmem_sim::{AbortStatus, Cpu, HtmAbortCause, Sim};

/// Runs `f` on core 0 of a small one-core machine and returns the status it reports.
fn status_of<F, Fut>(f: F) -> AbortStatus
where
    F: FnOnce(Cpu, u64) -> Fut,
    Fut: std::future::Future<Output = AbortStatus> + 'static,
{
    let mut sim = Sim::new(small(1)).unwrap();
    let base = sim.alloc(8 * 1024, 1024);
    let out = Rc::new(Cell::new(None));
    let out0 = out.clone();
    let fut = f(sim.cpu(0), base);
    sim.spawn(0, move |_| async move { out0.set(Some(fut.await)) });
    sim.run().unwrap();
    out.get().expect("the thread reports a status")
}

#[test]
fn capacity_aborts_say_which_footprint_overflowed() {
    // 2 KB 2-way L1: three lines 1 KB apart do not fit in one set.
    let written = status_of(|cpu, base| async move {
        cpu.xbegin(|cpu| async move {
            for i in 0..3 {
                cpu.store(base + i * 1024, 1).await;
            }
        })
        .await
        .unwrap_err()
    });
    assert_eq!(written.cause(), HtmAbortCause::Capacity);
    assert_eq!(written.capacity_footprint(), Some(Footprint::Write));
    assert!(written.is_persistent());

    let read = status_of(|cpu, base| async move {
        cpu.xbegin(|cpu| async move {
            for i in 0..3 {
                cpu.load(base + i * 1024).await;
            }
        })
        .await
        .unwrap_err()
    });
    assert_eq!(read.capacity_footprint(), Some(Footprint::Read));
    assert!(!read.is_rollback_only());
}

#[test]
fn rollback_only_aborts_are_marked() {
    let st = status_of(|cpu, base| async move {
        cpu.xbegin_rot(|cpu| async move {
            for i in 0..3 {
                cpu.store(base + i * 1024, 1).await;
            }
        })
        .await
        .unwrap_err()
    });
    assert_eq!(st.cause(), HtmAbortCause::Capacity);
    assert!(st.is_rollback_only());
    assert!(!st.is_suspended());
}

#[test]
fn aborts_of_suspended_transactions_are_marked() {
    let mut sim = Sim::new(small(2)).unwrap();
    let x = sim.alloc_lines(1);
    let out = Rc::new(Cell::new(None));
    let out0 = out.clone();
    sim.spawn(0, move |cpu| async move {
        let r = cpu
            .xbegin(|cpu| async move {
                cpu.store(x, 1).await;
                cpu.tsuspend().await;
                cpu.compute(1000).await; // core 1 reads x meanwhile
                cpu.tresume().await;
            })
            .await;
        out0.set(r.err());
    });
    sim.spawn(1, move |cpu| async move {
        cpu.compute(300).await;
        cpu.load(x).await;
    });
    sim.run().unwrap();
    let st = out.get().expect("the suspended transaction was doomed");
    assert_eq!(st.cause(), HtmAbortCause::Conflict);
    assert!(st.is_suspended());
    assert!(st.is_transient());
}

#[test]
fn explicit_and_nesting_aborts_carry_the_simulators_hints() {
    let explicit = status_of(|cpu, _| async move {
        cpu.xbegin(|cpu| async move { cpu.xabort(9).await })
            .await
            .unwrap_err()
    });
    assert_eq!(explicit.code(), Some(9));
    // Unlike RTM's, a simulated xabort keeps the retry hint: transaction() retries it.
    assert!(explicit.is_transient());
    assert_eq!(explicit.to_string(), "explicit abort (code 9, transient)");

    let deep = status_of(|cpu, _| async move {
        // The default machine allows 8 levels of flat nesting.
        fn nest(cpu: Cpu, depth: u32) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()>>> {
            Box::pin(async move {
                if depth > 0 {
                    let _ = cpu.xbegin(move |cpu| nest(cpu, depth - 1)).await;
                }
            })
        }
        cpu.xbegin(|cpu| nest(cpu, 9)).await.unwrap_err()
    });
    assert_eq!(deep.cause(), HtmAbortCause::NestingOverflow);
    assert!(deep.is_persistent());
}
