//! [`Resource`]: one item of a reservation table as an
//! application-defined transactional object (the STO thesis' STO+
//! vacation).
//!
//! With the record as a map value, a reservation reads the item's counts
//! and writes them back, so two clients reserving the same item conflict
//! and one aborts, although both could have succeeded. A reservation only
//! needs a free unit to exist when it commits, not a particular count. So
//! [`Resource::reserve`] records "one more unit wanted" as a write with no
//! read, and the object checks availability at commit, under its lock:
//! concurrent reservations of one item commit one after another. A
//! reservation that finds no unit left at commit is refused as a stale
//! read would be, so the transaction reruns and chooses again.
//!
//! Releases ([`Resource::release`]) are blind too. Operations that need
//! the exact state (retiring an item only if unused, adding capacity) read
//! it with an ordinary tracked read ([`Resource::read`]) and replace it
//! ([`Resource::write`]); they conflict with every reservation of the
//! item, as they must.

use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

use txmem::{Commit, Item, LockOutcome, TObject, TVersion, Transaction, TxResult};

use super::Record;

/// An item's state: absent, or present with a record.
pub type Slot = Option<Record>;

/// What a transaction will do to a resource when it commits.
#[derive(Clone, Copy, Debug)]
enum Pending {
    /// Reserve this many more units (negative: release), applied to
    /// whatever state is current at commit.
    Delta(i64),
    /// Replace the state with this one (the item was also read, so the
    /// commit validates that read).
    Set(Slot),
}

/// `slot` with `n` more units reserved, if that leaves it valid (present,
/// no negative count).
fn apply(slot: Slot, n: i64) -> Option<Slot> {
    if n == 0 {
        return Some(slot);
    }
    let r = slot?.reserved(n);
    (r.free >= 0 && r.used >= 0).then_some(Some(r))
}

/// One item of a reservation table, present or not.
///
/// The fields are written only under `version`'s lock (at install), and
/// read either through [`Transaction::observe`] (tracked) or by
/// [`peek`](Self::peek) (a consistent but untracked hint).
#[derive(Debug)]
pub struct Resource {
    version: TVersion,
    present: AtomicBool,
    used: AtomicI64,
    free: AtomicI64,
    total: AtomicI64,
    price: AtomicI64,
}

impl Resource {
    /// A resource in state `slot`.
    pub fn new(slot: Slot) -> Resource {
        let r = slot.unwrap_or(Record {
            used: 0,
            free: 0,
            total: 0,
            price: 0,
        });
        Resource {
            version: TVersion::new(),
            present: AtomicBool::new(slot.is_some()),
            used: AtomicI64::new(r.used),
            free: AtomicI64::new(r.free),
            total: AtomicI64::new(r.total),
            price: AtomicI64::new(r.price),
        }
    }

    /// The fields, as stored (callers make the read consistent).
    fn load_fields(&self) -> Slot {
        self.present.load(Ordering::Acquire).then(|| Record {
            used: self.used.load(Ordering::Acquire),
            free: self.free.load(Ordering::Acquire),
            total: self.total.load(Ordering::Acquire),
            price: self.price.load(Ordering::Acquire),
        })
    }

    fn store_fields(&self, slot: Slot) {
        let r = slot.unwrap_or(Record {
            used: 0,
            free: 0,
            total: 0,
            price: 0,
        });
        self.used.store(r.used, Ordering::Release);
        self.free.store(r.free, Ordering::Release);
        self.total.store(r.total, Ordering::Release);
        self.price.store(r.price, Ordering::Release);
        self.present.store(slot.is_some(), Ordering::Release);
    }

    /// The last committed state, read consistently but not tracked: a hint
    /// that may change right after (what reservations choose by), and the
    /// final state once no transaction runs.
    pub fn peek(&self) -> Slot {
        loop {
            let v = self.version.load();
            if TVersion::is_locked(v) {
                std::hint::spin_loop();
                continue;
            }
            let slot = self.load_fields();
            if self.version.load() == v {
                return slot;
            }
        }
    }

    /// Reserves one unit: a write without a read. The transaction aborts
    /// at commit (and reruns) if the item is gone or has no free unit by
    /// then.
    pub fn reserve<'env>(&'env self, tx: &mut Transaction<'env>) -> TxResult<()> {
        self.add_delta(tx, 1);
        Ok(())
    }

    /// Releases one unit held by the caller's customer: a write without a
    /// read.
    pub fn release<'env>(&'env self, tx: &mut Transaction<'env>) -> TxResult<()> {
        self.add_delta(tx, -1);
        Ok(())
    }

    fn add_delta<'env>(&'env self, tx: &mut Transaction<'env>, n: i64) {
        let id = tx.item(self, 0);
        let item = tx.item_mut(id);
        let next = match item.write_value::<Pending>().copied() {
            None => Pending::Delta(n),
            Some(Pending::Delta(d)) => Pending::Delta(d + n),
            // A replaced state is exact, so the delta applies now; an
            // invalid result is kept as it is and refused at commit.
            Some(Pending::Set(slot)) => Pending::Set(apply(slot, n).unwrap_or(slot)),
        };
        item.set_write(next);
    }

    /// The exact state as this transaction sees it (a tracked read, with
    /// its own pending changes applied).
    pub fn read<'env>(&'env self, tx: &mut Transaction<'env>) -> TxResult<Slot> {
        let id = tx.item(self, 0);
        let pending = tx.item_ref(id).write_value::<Pending>().copied();
        if let Some(Pending::Set(slot)) = pending {
            return Ok(slot);
        }
        let committed = tx.observe(id, &self.version, || self.load_fields())?;
        Ok(match pending {
            // An invalid own delta would be refused at commit anyway; show
            // the committed state meanwhile.
            Some(Pending::Delta(d)) => apply(committed, d).unwrap_or(committed),
            _ => committed,
        })
    }

    /// Replaces the state; call [`read`](Self::read) first in the same
    /// transaction, so that the replacement is validated against it.
    pub fn write<'env>(&'env self, tx: &mut Transaction<'env>, slot: Slot) -> TxResult<()> {
        let id = tx.item(self, 0);
        tx.item_mut(id).set_write(Pending::Set(slot));
        Ok(())
    }

    /// The state a commit would install over `current`, if valid.
    fn next_state(item: &Item, current: Slot) -> Option<Slot> {
        match item.write_value::<Pending>().copied() {
            Some(Pending::Delta(d)) => apply(current, d),
            Some(Pending::Set(slot)) => slot
                .is_none_or(|r| r.free >= 0 && r.used >= 0 && r.used + r.free == r.total)
                .then_some(slot),
            None => Some(current),
        }
    }
}

/// The commit protocol's calls for a resource's (single) item.
impl TObject for Resource {
    fn lock(&self, item: &mut Item, commit: &Commit<'_>) -> LockOutcome {
        match commit.lock_version(&self.version, item) {
            LockOutcome::Acquired => {
                // Under the lock the fields cannot change, so this check
                // and `install` see the same state.
                if Self::next_state(item, self.load_fields()).is_some() {
                    LockOutcome::Acquired
                } else {
                    // Sold out (or gone) since the transaction chose it:
                    // refuse like a stale read, so the transaction reruns.
                    self.version.unlock_unchanged(item.read_version());
                    LockOutcome::Stale
                }
            }
            other => other,
        }
    }

    fn check(&self, item: &Item, _commit: &Commit<'_>) -> bool {
        self.version
            .still_valid(item.read_version(), item.is_locked())
    }

    fn install(&self, item: &mut Item, commit: &Commit<'_>) {
        let current = self.load_fields();
        // `lock` checked validity under this same lock.
        let next = Self::next_state(item, current).unwrap_or(current);
        self.store_fields(next);
        self.version
            .unlock_to(TVersion::next_after(item.read_version(), commit.version()));
    }

    fn unlock(&self, item: &mut Item) {
        self.version.unlock_unchanged(item.read_version());
    }
}
