//! Model checking of the version-lock and commit protocol with loom.
//!
//! Run with:
//! `RUSTFLAGS="--cfg txmem_loom" cargo test -p txmem --release --test loom`
//! (the README's test command does this in its own target directory).
//! Loom explores the interleavings of every atomic operation of the read
//! protocol, the lock/validate/install commit and the clock, for two or three
//! threads running real `atomically` transactions over `TCounter`s (whose
//! values live in loom atomics).

#![cfg(txmem_loom)]

use loom::sync::Arc;
use loom::thread;
use txmem::{ContentionPolicy, Opacity, TBox, TCounter, TxOptions};

fn options(mode: Opacity) -> TxOptions {
    // No backoff spinning and no serialization: loom needs every wait to be
    // visible to it.
    TxOptions::new()
        .opacity(mode)
        .contention(ContentionPolicy::Immediate)
        .serialize_after(None)
}

fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(3);
    builder.check(f);
}

/// A transfer between two counters races an auditor: the committed total
/// never changes, the auditor never sees a torn total (opacity), and the
/// transfer is applied exactly once. The reads go to the read log (the
/// audit's, and the transfer's before it writes), or with `untracked` off
/// to items.
fn transfer_vs_audit(mode: Opacity, untracked: bool) {
    transfer_vs_audit_declared(mode, untracked, false);
}

/// [`transfer_vs_audit`] with the audit declared read-only or not: a
/// declared audit's first attempt is a snapshot attempt (no read log, the
/// TL2 check whatever the mode), its later ones snapshot attempts with a
/// ticked clock, then ordinary ones.
fn transfer_vs_audit_declared(mode: Opacity, untracked: bool, read_only: bool) {
    let options = move |mode| options(mode).untracked_reads(untracked);
    model(move || {
        let x = Arc::new(TCounter::new(10));
        let y = Arc::new(TCounter::new(10));
        let transfer = {
            let (x, y) = (x.clone(), y.clone());
            thread::spawn(move || {
                options(mode).run(|tx| {
                    let a = x.get(tx)?;
                    let b = y.get(tx)?;
                    x.add(tx, -1)?;
                    y.add(tx, 1)?;
                    Ok(a + b)
                })
            })
        };
        // Every participant runs on a spawned thread: loom then explores
        // preemptions before each one's first operation too.
        let audit = {
            let (x, y) = (x.clone(), y.clone());
            thread::spawn(move || {
                let mut torn = false;
                let total = options(mode).read_only(read_only).run(|tx| {
                    let s = x.get(tx)? + y.get(tx)?;
                    // (A snapshot attempt is opaque in every mode.)
                    torn |= s != 20 && tx.opacity() != Opacity::None;
                    Ok(s)
                });
                (total, torn)
            })
        };
        let seen_by_transfer = transfer.join().unwrap();
        let (total, torn) = audit.join().unwrap();
        assert_eq!(total, 20, "a committed audit saw a wrong total");
        assert_eq!(seen_by_transfer, 20);
        assert!(!torn, "an opaque attempt observed an inconsistent state");
        assert_eq!(
            (x.load(), y.load()),
            (9, 11),
            "the transfer applied exactly once"
        );
    });
}

#[test]
fn transfer_vs_audit_tl2() {
    transfer_vs_audit(Opacity::Tl2, true);
    transfer_vs_audit(Opacity::Tl2, false);
}

#[test]
fn transfer_vs_audit_revalidate() {
    transfer_vs_audit(Opacity::Revalidate, true);
    transfer_vs_audit(Opacity::Revalidate, false);
}

#[test]
fn transfer_vs_audit_no_opacity() {
    transfer_vs_audit(Opacity::None, true);
}

#[test]
fn transfer_vs_read_only_audit() {
    transfer_vs_audit_declared(Opacity::Tl2, true, true);
    transfer_vs_audit_declared(Opacity::None, true, true);
}

/// Two counters of 10, a thread moving 1 from the first to the second in a
/// transaction of blind adds in opacity mode `mode`, and a thread running
/// `racer` on the two counters meanwhile. Returns what `racer` returned and
/// the counters' final values.
fn race_blind_transfer<R: Send + 'static>(
    mode: Opacity,
    racer: impl FnOnce(&TCounter, &TCounter) -> R + Send + 'static,
) -> (R, (i64, i64)) {
    let x = Arc::new(TCounter::new(10));
    let y = Arc::new(TCounter::new(10));
    let transfer = {
        let (x, y) = (x.clone(), y.clone());
        thread::spawn(move || {
            options(mode).run(|tx| {
                x.add(tx, -1)?;
                y.add(tx, 1)
            })
        })
    };
    let racer = {
        let (x, y) = (x.clone(), y.clone());
        thread::spawn(move || racer(&x, &y))
    };
    transfer.join().unwrap();
    let result = racer.join().unwrap();
    (result, (x.load(), y.load()))
}

/// An audit that begins with the snapshot bound its thread kept from an
/// earlier commit (TL2 transactions do not read the clock at begin) races
/// a transfer: however stale the bound, the audit never observes a torn
/// total, and a read of a version newer than the bound extends the
/// snapshot only if the earlier reads still hold.
#[test]
fn an_audit_with_a_cached_snapshot_bound_sees_no_torn_total() {
    model(|| {
        let ((total, torn), end) = race_blind_transfer(Opacity::Tl2, |x, y| {
            // Commits a write first, so the thread's bound is that commit's
            // version, older than the transfer's.
            let z = TCounter::new(0);
            options(Opacity::Tl2).run(|tx| z.add(tx, 1));
            let mut torn = false;
            let total = options(Opacity::Tl2).run(|tx| {
                let s = x.get(tx)? + y.get(tx)?;
                torn |= s != 20;
                Ok(s)
            });
            (total, torn)
        });
        assert_eq!(total, 20, "a committed audit saw a wrong total");
        assert!(!torn, "an attempt with a cached bound saw a torn total");
        assert_eq!(end, (9, 11), "the transfer applied once");
    });
}

/// An irrevocable audit races a transfer in opacity mode `mode`: the audit
/// runs exactly once and, although an irrevocable commit validates nothing,
/// sees either both halves of the transfer or neither; the transfer commits
/// once, before or after it. (A TL2 transfer ticks the clock word that holds
/// the irrevocability gate; a no-clock one reads it, which loom checks as an
/// RMW: see `clock::now_seqcst`.)
fn irrevocable_audit_vs_transfer(mode: Opacity) {
    model(move || {
        let ((total, runs), end) = race_blind_transfer(mode, |x, y| {
            let mut runs = 0;
            let total = options(Opacity::Tl2).irrevocable(true).run(|tx| {
                runs += 1;
                let s = x.get(tx)? + y.get(tx)?;
                // A write, so that the commit takes the full path.
                x.add(tx, 0)?;
                Ok(s)
            });
            (total, runs)
        });
        assert_eq!(runs, 1, "an irrevocable transaction ran twice");
        assert_eq!(total, 20, "an irrevocable transaction saw a torn total");
        assert_eq!(end, (9, 11), "the transfer applied once");
    });
}

#[test]
fn an_irrevocable_audit_sees_no_torn_total() {
    irrevocable_audit_vs_transfer(Opacity::Tl2);
}

#[test]
fn an_irrevocable_audit_sees_no_torn_total_against_a_no_clock_commit() {
    irrevocable_audit_vs_transfer(Opacity::None);
}

/// A transaction reads a counter, becomes irrevocable, then moves what it
/// read to the other counter, while a transfer races it. The upgrade checks
/// the reads made before it (and restarts the attempt irrevocably if they
/// went stale), so the code after it runs exactly once and moves the
/// current amount, although the irrevocable commit validates nothing.
#[test]
fn become_irrevocable_checks_the_reads_before_it() {
    model(|| {
        let ((moved, after_upgrade), end) = race_blind_transfer(Opacity::Tl2, |x, y| {
            let mut after_upgrade = 0;
            let moved = options(Opacity::Tl2).run(|tx| {
                let a = x.get(tx)?;
                tx.become_irrevocable()?;
                after_upgrade += 1;
                x.add(tx, -a)?;
                y.add(tx, a)?;
                Ok(a)
            });
            (moved, after_upgrade)
        });
        assert_eq!(after_upgrade, 1, "code after become_irrevocable ran twice");
        // Mover first: it moved 10 and the transfer then took 1 from x.
        // Transfer first: the mover moved the 9 left.
        let expected = if moved == 10 { (-1, 21) } else { (0, 20) };
        assert_eq!(
            end, expected,
            "moved {moved}: a stale read survived the upgrade"
        );
    });
}

/// A single-operation add races an irrevocable transaction that reads the
/// counter twice: the add waits for the gate or lands before the first read,
/// so both reads agree (an irrevocable attempt does not check repeated reads
/// itself: nothing may change under it).
#[test]
fn a_single_operation_add_waits_for_an_irrevocable_transaction() {
    model(|| {
        let c = Arc::new(TCounter::new(0));
        let adder = {
            let c = c.clone();
            thread::spawn(move || c.add_now(1))
        };
        let reader = {
            let c = c.clone();
            thread::spawn(move || {
                options(Opacity::Tl2)
                    .irrevocable(true)
                    .run(|tx| Ok((c.get(tx)?, c.get(tx)?)))
            })
        };
        assert_eq!(adder.join().unwrap(), 1);
        let (first, second) = reader.join().unwrap();
        assert_eq!(
            first, second,
            "a single-operation add landed inside an irrevocable transaction"
        );
        assert_eq!(c.load(), 1);
    });
}

/// Two read-modify-write transactions on one counter: no lost update.
#[test]
fn read_modify_write_races_lose_nothing() {
    model(|| {
        let c = Arc::new(TCounter::new(0));
        let handles: Vec<_> = (0..2)
            .map(|_| {
                let c = c.clone();
                thread::spawn(move || {
                    options(Opacity::Tl2).run(|tx| {
                        let v = c.get(tx)?;
                        c.add(tx, v + 1 - v) // observe, then add: a read-write item
                    })
                })
            })
            .collect();
        handles.into_iter().for_each(|h| h.join().unwrap());
        assert_eq!(c.load(), 2);
    });
}

/// A transfer between two boxes of numbers, whose writes go to the word log
/// (`tx::words`), races an auditor, as in [`transfer_vs_audit`]. With
/// `read_first` the transfer reads both boxes and then writes both: the
/// read of the first stays in the read log and is validated there against
/// the transfer's own lock, the second's is taken over by its write (locked
/// at the version read); otherwise each box is a `modify`, whose read every
/// write takes over.
fn word_transfer_vs_audit(mode: Opacity, read_first: bool) {
    model(move || {
        let x = Arc::new(TBox::new(10i64));
        let y = Arc::new(TBox::new(10i64));
        let transfer = {
            let (x, y) = (x.clone(), y.clone());
            thread::spawn(move || {
                options(mode).run(|tx| {
                    if read_first {
                        let (a, b) = (x.get(tx)?, y.get(tx)?);
                        x.set(tx, a - 1)?;
                        y.set(tx, b + 1)
                    } else {
                        x.modify(tx, |a| a - 1)?;
                        y.modify(tx, |b| b + 1)
                    }
                })
            })
        };
        let audit = {
            let (x, y) = (x.clone(), y.clone());
            thread::spawn(move || {
                let mut torn = false;
                let total = options(mode).run(|tx| {
                    let s = x.get(tx)? + y.get(tx)?;
                    torn |= s != 20 && tx.opacity() != Opacity::None;
                    Ok(s)
                });
                (total, torn)
            })
        };
        transfer.join().unwrap();
        let (total, torn) = audit.join().unwrap();
        assert_eq!(total, 20, "a committed audit saw a wrong total");
        assert!(!torn, "an opaque attempt observed an inconsistent state");
        assert_eq!((x.load(), y.load()), (9, 11), "the transfer applied once");
    });
}

#[test]
fn word_log_transfer_vs_audit() {
    for mode in [Opacity::Tl2, Opacity::Revalidate, Opacity::None] {
        word_transfer_vs_audit(mode, false);
        word_transfer_vs_audit(mode, true);
    }
}

/// Two increments of one box through the word log, each a read the write
/// takes over: no lost update (the second to lock finds the version moved
/// and aborts, or waits for the first and then does).
#[test]
fn word_log_increments_lose_nothing() {
    model(|| {
        let c = Arc::new(TBox::new(0u64));
        let handles: Vec<_> = (0..2)
            .map(|_| {
                let c = c.clone();
                thread::spawn(move || options(Opacity::Tl2).run(|tx| c.modify(tx, |v| v + 1)))
            })
            .collect();
        handles.into_iter().for_each(|h| h.join().unwrap());
        assert_eq!(c.load(), 2);
    });
}

/// Two blind increments (which must not conflict) and the final value is
/// exact. (With a third thread, adversarial schedules make retry loops
/// unbounded — the STM is obstruction-free, not wait-free — and loom's path
/// limit is hit; the three-thread properties are covered by the stress tests.)
#[test]
fn blind_increments_commute() {
    model(|| {
        let c = Arc::new(TCounter::new(0));
        let handles: Vec<_> = (0..2)
            .map(|_| {
                let c = c.clone();
                thread::spawn(move || options(Opacity::None).run(|tx| c.add(tx, 1)))
            })
            .collect();
        handles.into_iter().for_each(|h| h.join().unwrap());
        assert_eq!(c.load(), 2);
    });
}

/// A single-operation add races a read-modify-write transaction on the
/// same counter: neither update is lost.
#[test]
fn single_operation_add_races_a_transaction() {
    model(|| {
        let c = Arc::new(TCounter::new(10));
        let single = {
            let c = c.clone();
            thread::spawn(move || c.add_now(1))
        };
        let tx = {
            let c = c.clone();
            thread::spawn(move || {
                options(Opacity::Tl2).run(|tx| {
                    let v = c.get(tx)?;
                    c.add(tx, 5)?;
                    Ok(v)
                })
            })
        };
        let after_single = single.join().unwrap();
        let seen_by_tx = tx.join().unwrap();
        assert!(seen_by_tx == 10 || seen_by_tx == 11);
        assert!(after_single == 11 || after_single == 16);
        assert_eq!(c.load(), 16, "an update was lost");
    });
}

/// Two counters of 10: one thread adds 1 to `x` and then to `y`, each with
/// `add` (a transaction of its own), while another runs `before` and then
/// reads `x` then `y` in a TL2 transaction. No attempt may see `y`'s add
/// without `x`'s (the old `x` with the new `y`), and nothing is lost.
fn ordered_adds_vs_reader(add: fn(&TCounter), before: fn()) {
    model(move || {
        let x = Arc::new(TCounter::new(10));
        let y = Arc::new(TCounter::new(10));
        let writer = {
            let (x, y) = (x.clone(), y.clone());
            thread::spawn(move || {
                add(&x);
                add(&y);
            })
        };
        let reader = {
            let (x, y) = (x.clone(), y.clone());
            thread::spawn(move || {
                before();
                let mut torn = false;
                let seen = options(Opacity::Tl2).run(|tx| {
                    let a = x.get(tx)?;
                    let b = y.get(tx)?;
                    torn |= b == 11 && a == 10;
                    Ok((a, b))
                });
                (seen, torn)
            })
        };
        writer.join().unwrap();
        let ((a, b), torn) = reader.join().unwrap();
        assert!(!torn, "an attempt saw y's add without x's");
        assert!(
            !(b == 11 && a == 10),
            "committed a state that never existed"
        );
        assert_eq!((x.load(), y.load()), (11, 11));
    });
}

/// Single-operation adds, `x` then `y`, race an opaque reader of both.
#[test]
fn single_operation_writes_are_seen_in_commit_order() {
    ordered_adds_vs_reader(
        |c| {
            c.add_now(1);
        },
        || {},
    );
}

/// Transactions that write one item each (and so do not tick the clock), `x`
/// then `y`, race a reader whose thread first commits such a write of its
/// own, so that its snapshot bound is the one kept from a commit that did
/// not tick. (A bound taken from that commit's own version, which is past
/// the clock, would accept the torn view.)
#[test]
fn single_writes_are_seen_in_order_by_a_reader_with_a_kept_bound() {
    ordered_adds_vs_reader(
        |c| options(Opacity::Tl2).run(|tx| c.add(tx, 1)),
        || {
            let z = TCounter::new(0);
            options(Opacity::Tl2).run(|tx| z.add(tx, 1));
        },
    );
}

/// A waker flag for the async model: set when the task is woken.
struct Flag(loom::sync::atomic::AtomicBool);

impl std::task::Wake for Flag {
    fn wake(self: std::sync::Arc<Self>) {
        self.0.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

/// An async transaction that waits (`retry`) for a counter to become
/// non-zero races the commit that sets it: whatever the interleaving of
/// the waker's registration, the re-check of the reads and the commit's
/// lock, install and wake, the task is never left waiting unwoken (no lost
/// wake-up), and its next poll sees the value.
#[test]
fn an_async_retry_is_never_left_unwoken() {
    use std::future::Future;
    use std::task::{Context, Poll, Waker};
    model(|| {
        let c = Arc::new(TCounter::new(0));
        let writer = {
            let c = c.clone();
            thread::spawn(move || options(Opacity::Tl2).run(|tx| c.add(tx, 1)))
        };
        let flag = std::sync::Arc::new(Flag(loom::sync::atomic::AtomicBool::new(false)));
        let waker = Waker::from(flag.clone());
        let mut cx = Context::from_waker(&waker);
        let mut fut = options(Opacity::Tl2).run_async(|tx| {
            let v = c.get(tx)?;
            if v == 0 {
                Err(tx.retry())
            } else {
                Ok(v)
            }
        });
        let first = std::pin::Pin::new(&mut fut).poll(&mut cx);
        writer.join().unwrap();
        match first {
            Poll::Ready(v) => assert_eq!(v, 1),
            Poll::Pending => {
                assert!(
                    flag.0.load(std::sync::atomic::Ordering::SeqCst),
                    "a commit changed what the waiting task read without waking it"
                );
                assert_eq!(std::pin::Pin::new(&mut fut).poll(&mut cx), Poll::Ready(1));
            }
        }
    });
}

/// Checks that the harness can fail: loom must find this lost update.
#[test]
#[should_panic]
fn loom_sanity_finds_a_lost_update() {
    model(|| {
        let a = Arc::new(loom::sync::atomic::AtomicUsize::new(0));
        let b = a.clone();
        let t = thread::spawn(move || {
            let v = b.load(std::sync::atomic::Ordering::SeqCst);
            b.store(v + 1, std::sync::atomic::Ordering::SeqCst);
        });
        let v = a.load(std::sync::atomic::Ordering::SeqCst);
        a.store(v + 1, std::sync::atomic::Ordering::SeqCst);
        t.join().unwrap();
        assert_eq!(a.load(std::sync::atomic::Ordering::SeqCst), 2);
    });
}
