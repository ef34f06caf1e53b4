//! A transactional object written by hand: seats that transactions reserve.
//!
//! With a `TBox<u32>` of free seats, every reservation would read the count
//! and write it back, so any two reservations conflict and one aborts. But
//! reservations only need the count to stay non-negative, not a particular
//! value. So this object records *how many* seats a transaction wants (a
//! write with no read), and checks availability once, at commit, under the
//! object's lock. Concurrent reservations then commit one after another
//! without aborting each other; a transaction fails only when too few seats
//! are left at the moment it commits.
//!
//! `cargo run --release -p txmem --example custom_object`

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Barrier;
use std::thread;

use txmem::{
    stats, try_atomically, AbortCause, Commit, Item, LockOutcome, TObject, TVersion, Transaction,
    TxError, TxResult,
};

/// A pool of seats. `version` is the lock and version that the commit
/// protocol works with; `free` is the state it protects.
struct Seats {
    version: TVersion,
    free: AtomicU32,
}

/// The user error a reservation ends with when the seats are gone.
#[derive(Debug)]
struct SoldOut;

impl Seats {
    fn new(n: u32) -> Self {
        Seats {
            version: TVersion::new(),
            free: AtomicU32::new(n),
        }
    }

    /// Asks for `n` more seats in this transaction. Only the transaction's
    /// own item is touched: the running total it wants is the item's write
    /// value. Nothing shared is read, so nothing here can conflict.
    fn reserve<'env>(&'env self, tx: &mut Transaction<'env>, n: u32) -> TxResult<()> {
        // One item per object (key 0): every reservation in the same
        // transaction adds to it.
        let id = tx.item(self, 0);
        let item = tx.item_mut(id);
        let wanted = item.write_value::<u32>().copied().unwrap_or(0);
        item.set_write(wanted + n);
        Ok(())
    }

    /// Seats left, as last committed (a hint: it may change right after).
    fn free(&self) -> u32 {
        self.free.load(Ordering::Acquire)
    }
}

/// What the commit protocol calls, for each item of this object in a
/// committing transaction's write set.
impl TObject for Seats {
    /// Takes the lock, then decides whether the commit may go on.
    fn lock(&self, item: &mut Item, commit: &Commit<'_>) -> LockOutcome {
        match commit.lock_version(&self.version, item) {
            LockOutcome::Acquired => {
                // Under the lock no other commit can change `free`, so this
                // check and the later `install` see the same count.
                let wanted = item.write_value::<u32>().copied().unwrap_or(0);
                if self.free.load(Ordering::Acquire) < wanted {
                    // Refuse as if a read were out of date: the transaction
                    // aborts and reruns, and the rerun sees the new count.
                    self.version.unlock_unchanged(item.read_version());
                    LockOutcome::Stale
                } else {
                    LockOutcome::Acquired
                }
            }
            // Busy or stale: let the runtime handle it as for any object.
            other => other,
        }
    }

    /// Commit-time validation of reads: there are none, so always valid.
    fn check(&self, _item: &Item, _commit: &Commit<'_>) -> bool {
        true
    }

    /// Applies the reservation and releases the lock with a new version.
    fn install(&self, item: &mut Item, commit: &Commit<'_>) {
        let wanted = item.write_value::<u32>().copied().unwrap_or(0);
        let free = self.free.load(Ordering::Relaxed);
        self.free.store(free - wanted, Ordering::Release);
        self.version
            .unlock_to(TVersion::next_after(item.read_version(), commit.version()));
    }

    /// Releases the lock unchanged when the commit fails elsewhere.
    fn unlock(&self, item: &mut Item) {
        self.version.unlock_unchanged(item.read_version());
    }
}

const SEATS: u32 = 500;
const THREADS: u32 = 4;
const REQUESTS_PER_THREAD: u32 = 150;

fn main() {
    let seats = Seats::new(SEATS);
    let before = stats::snapshot();
    // Holds every thread at the start line, so they book concurrently
    // rather than one after another as they happen to be spawned.
    let start = Barrier::new(THREADS as usize);

    // Each thread books groups of 1 to 3 seats until its requests run out.
    // Together they ask for about 1200 seats, so the show sells out.
    let booked: Vec<(u32, u32)> = thread::scope(|s| {
        let handles: Vec<_> = (0..THREADS)
            .map(|t| {
                let (seats, start) = (&seats, &start);
                s.spawn(move || {
                    start.wait();
                    let (mut granted, mut refused) = (0, 0);
                    for r in 0..REQUESTS_PER_THREAD {
                        let group = 1 + (t + r) % 3;
                        let outcome: Result<(), SoldOut> = try_atomically(|tx| {
                            // A rerun after a refused commit lands here and
                            // gives up instead of trying again forever.
                            if seats.free() < group {
                                return Err(TxError::User(SoldOut));
                            }
                            seats.reserve(tx, group)?;
                            Ok(())
                        });
                        match outcome {
                            Ok(()) => granted += group,
                            Err(SoldOut) => refused += 1,
                        }
                    }
                    (granted, refused)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });

    let delta = stats::snapshot() - before;
    let sold: u32 = booked.iter().map(|&(g, _)| g).sum();
    for (t, (granted, refused)) in booked.iter().enumerate() {
        println!("thread {t}: {granted} seats booked, {refused} requests refused");
    }
    println!(
        "{sold} of {SEATS} seats sold, {} left; {} commits, {} aborts ({} refused at commit)",
        seats.free(),
        delta.commits,
        delta.total_aborts(),
        delta.aborts_by(AbortCause::Validation)
    );
    // No overbooking, and no seat lost: what was sold plus what is left is
    // exactly what there was. Fewer than 3 may remain, when only groups too
    // large for them were still asking.
    assert_eq!(sold + seats.free(), SEATS, "seats appeared or vanished");
    assert!(
        seats.free() < 3,
        "requests were refused while seats remained"
    );
    println!("ok: no overbooking");
}
