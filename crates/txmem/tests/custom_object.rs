//! A user-defined transactional object: the vacation benchmark's reservable
//! resource (STO thesis §7.4). Reservations of the same resource do not
//! conflict with each other; a transaction aborts only if, at commit, too few
//! units remain.

use std::sync::atomic::{AtomicU32, Ordering};
use std::thread;

use txmem::{
    try_atomically, Commit, Item, LockOutcome, TObject, TVersion, Transaction, TxError, TxResult,
};

/// Units of a resource (rooms, seats, cars) that transactions reserve.
struct Reservable {
    version: TVersion,
    remaining: AtomicU32,
}

#[derive(Debug, PartialEq)]
struct SoldOut;

impl Reservable {
    fn new(units: u32) -> Self {
        Reservable {
            version: TVersion::new(),
            remaining: AtomicU32::new(units),
        }
    }

    /// Reserves one unit. Adds a write item carrying the number of units
    /// this transaction reserves; nothing is read, so concurrent
    /// reservations commute.
    fn reserve<'env>(&'env self, tx: &mut Transaction<'env>) -> TxResult<()> {
        let id = tx.item(self, 0);
        let item = tx.item_mut(id);
        let n = item.write_value::<u32>().copied().unwrap_or(0);
        item.set_write(n + 1);
        Ok(())
    }

    fn remaining(&self) -> u32 {
        self.remaining.load(Ordering::Acquire)
    }
}

impl TObject for Reservable {
    fn lock(&self, item: &mut Item, commit: &Commit<'_>) -> LockOutcome {
        match commit.lock_version(&self.version, item) {
            LockOutcome::Acquired => {
                // The check that matters happens under the lock: refuse (as
                // a stale read) when too few units are left.
                let wanted = item.write_value::<u32>().copied().unwrap_or(0);
                if self.remaining.load(Ordering::Acquire) < wanted {
                    self.version.unlock_unchanged(item.read_version());
                    LockOutcome::Stale
                } else {
                    LockOutcome::Acquired
                }
            }
            other => other,
        }
    }
    fn check(&self, _item: &Item, _commit: &Commit<'_>) -> bool {
        true
    }
    fn install(&self, item: &mut Item, commit: &Commit<'_>) {
        let wanted = item.write_value::<u32>().copied().unwrap_or(0);
        let left = self.remaining.load(Ordering::Relaxed);
        self.remaining.store(left - wanted, Ordering::Release);
        self.version
            .unlock_to(TVersion::next_after(item.read_version(), commit.version()));
    }
    fn unlock(&self, item: &mut Item) {
        self.version.unlock_unchanged(item.read_version());
    }
}

#[test]
fn reservations_never_oversell_and_never_undersell() {
    let rooms = Reservable::new(1000);
    let per_thread = 700u32;
    let counts: Vec<u32> = thread::scope(|s| {
        let handles: Vec<_> = (0..2)
            .map(|_| {
                let rooms = &rooms;
                s.spawn(move || {
                    let mut got = 0;
                    for _ in 0..per_thread {
                        // Give up (user error) once the resource is sold out.
                        let r: Result<(), SoldOut> = try_atomically(|tx| {
                            if rooms.remaining() == 0 {
                                return Err(TxError::User(SoldOut));
                            }
                            rooms.reserve(tx)?;
                            Ok(())
                        });
                        if r.is_ok() {
                            got += 1;
                        }
                    }
                    got
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let sold: u32 = counts.iter().sum();
    assert_eq!(sold, 1000, "exactly the available units were sold");
    assert_eq!(rooms.remaining(), 0);
}

#[test]
fn reserving_more_than_available_aborts_at_commit() {
    let seats = Reservable::new(1);
    let attempts = std::cell::Cell::new(0);
    // Two reservations in one transaction need two seats: the first attempt
    // is refused at lock time; the closure then sees the sold-out state.
    let r: Result<(), SoldOut> = try_atomically(|tx| {
        attempts.set(attempts.get() + 1);
        if attempts.get() > 1 {
            return Err(TxError::User(SoldOut));
        }
        seats.reserve(tx)?;
        seats.reserve(tx)?;
        Ok(())
    });
    assert_eq!(r, Err(SoldOut));
    assert_eq!(
        seats.remaining(),
        1,
        "the refused transaction changed nothing"
    );
}

/// An object that only records the cleanups the runtime runs for it.
#[derive(Default)]
struct CleanupLog {
    calls: std::sync::Mutex<Vec<(u64, bool)>>,
}

impl CleanupLog {
    /// Writes subobject `key` and asks for a cleanup when the attempt ends.
    fn touch<'env>(&'env self, tx: &mut Transaction<'env>, key: u64) {
        let id = tx.item(self, key);
        let item = tx.item_mut(id);
        item.mark_write();
        item.set_flags(txmem::item::NEEDS_CLEANUP);
    }

    fn take(&self) -> Vec<(u64, bool)> {
        std::mem::take(&mut self.calls.lock().unwrap())
    }
}

impl TObject for CleanupLog {
    fn lock(&self, _: &mut Item, _: &Commit<'_>) -> LockOutcome {
        LockOutcome::Acquired
    }
    fn check(&self, _: &Item, _: &Commit<'_>) -> bool {
        true
    }
    fn install(&self, _: &mut Item, _: &Commit<'_>) {}
    fn unlock(&self, _: &mut Item) {}
    fn cleanup(&self, item: &mut Item, committed: bool) {
        self.calls.lock().unwrap().push((item.key(), committed));
    }
}

/// `cleanup` runs once per flagged item when each attempt ends, with the
/// attempt's outcome, for sets of one item (which commit through a path of
/// their own) and of several.
#[test]
fn cleanups_run_once_per_flagged_item_with_the_outcome() {
    let log = CleanupLog::default();
    txmem::atomically(|tx| {
        log.touch(tx, 7);
        Ok(())
    });
    assert_eq!(log.take(), [(7, true)]);

    txmem::atomically(|tx| {
        log.touch(tx, 1);
        log.touch(tx, 2);
        Ok(())
    });
    assert_eq!(log.take(), [(1, true), (2, true)]);

    let mut attempts = 0;
    txmem::atomically(|tx| {
        attempts += 1;
        log.touch(tx, 3);
        if attempts == 1 {
            return Err(tx.abort());
        }
        Ok(())
    });
    assert_eq!(log.take(), [(3, false), (3, true)]);

    let r: Result<(), &str> = try_atomically(|tx| {
        log.touch(tx, 4);
        Err(TxError::User("no"))
    });
    assert_eq!(r, Err("no"));
    assert_eq!(log.take(), [(4, false)]);
}
