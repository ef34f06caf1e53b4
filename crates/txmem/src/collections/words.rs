//! `TWords`: an untyped, word-based STM object (the thesis' `TUntyped`).

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use crate::error::TxResult;
use crate::item::Item;
use crate::object::{Commit, LockOutcome, TObject};
use crate::sync::Mutex;
use crate::tx::Transaction;
use crate::version::TVersion;

/// The index of a word in a [`TWords`] arena.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct WordAddr(pub usize);

impl WordAddr {
    /// The word `n` places after this one.
    #[inline]
    pub const fn offset(self, n: usize) -> WordAddr {
        WordAddr(self.0 + n)
    }
}

/// The pending writes of one lock stripe: one word (the common case, stored
/// inline in the item) or several.
type OneWrite = (u64, u64);
type ManyWrites = Vec<(u64, u64)>;

/// Untyped transactional memory: reads and writes of individual aligned
/// 64-bit words, each guarded by a versioned lock chosen by hashing the
/// word's address into a fixed table (the design of word-based STMs such as
/// TL2, and of the STO thesis' `TUntyped`).
///
/// It serves two purposes: it is the baseline of the *typed versus untyped*
/// comparison (a data structure built from words tracks every word it
/// touches — every `next` pointer of a list walk — where a typed collection
/// tracks one abstract item per operation), and it is the engine for callers
/// that can only name memory by address (the C interface).
///
/// Words live either in the object's own arena (safe API: [`WordAddr`]
/// indices, [`alloc`](Self::alloc) / [`free`](Self::free)) or anywhere in
/// memory (the `unsafe` `*_raw` API).
///
/// | operation | read set | write set |
/// |---|---|---|
/// | [`read`](Self::read) | the word's lock stripe | — |
/// | [`write`](Self::write) | nothing | the word (installed at commit under the stripe lock) |
///
/// Two accesses conflict when they touch words in the same stripe and one
/// of them writes: real conflicts on the same word, plus false conflicts
/// when different words hash to the same stripe (rare with the default
/// 2^20 stripes).
///
/// ```
/// use txmem::{atomically, TWords};
/// let mem = TWords::new(1024);
/// let a = mem.alloc(2);
/// atomically(|tx| { mem.write(tx, a, 7)?; mem.write(tx, a.offset(1), 8) });
/// let sum = atomically(|tx| Ok(mem.read(tx, a)? + mem.read(tx, a.offset(1))?));
/// assert_eq!(sum, 15);
/// assert_eq!(mem.load(a), 7);
/// ```
pub struct TWords {
    words: Box<[AtomicU64]>,
    locks: Box<[TVersion]>,
    lock_shift: u32,
    bump: AtomicUsize,
    free: Mutex<HashMap<usize, Vec<usize>>>,
}

impl TWords {
    /// An arena of `capacity` zeroed words and 2^20 lock stripes.
    pub fn new(capacity: usize) -> Self {
        Self::with_stripes(capacity, 20)
    }

    /// An arena of `capacity` words and `2^log2_stripes` lock stripes
    /// (`log2_stripes` is clamped to 4..=28).
    pub fn with_stripes(capacity: usize, log2_stripes: u32) -> Self {
        let log2 = log2_stripes.clamp(4, 28);
        TWords {
            words: (0..capacity).map(|_| AtomicU64::new(0)).collect(),
            locks: (0..1usize << log2).map(|_| TVersion::new()).collect(),
            lock_shift: 64 - log2,
            bump: AtomicUsize::new(0),
            free: Mutex::new(HashMap::new()),
        }
    }

    /// The number of words in the arena.
    pub fn capacity(&self) -> usize {
        self.words.len()
    }

    /// Allocates `n` consecutive words (reusing freed blocks of the same
    /// size first). Not transactional: allocate before or inside a
    /// transaction, and free on abort if needed.
    ///
    /// # Panics
    /// If the arena is exhausted; see [`try_alloc`](Self::try_alloc).
    pub fn alloc(&self, n: usize) -> WordAddr {
        self.try_alloc(n).unwrap_or_else(|| {
            panic!(
                "TWords arena exhausted: cannot allocate {n} words (capacity {})",
                self.words.len()
            )
        })
    }

    /// Allocates `n` consecutive words, or `None` if the arena is exhausted.
    pub fn try_alloc(&self, n: usize) -> Option<WordAddr> {
        if let Some(a) = self.free.lock().get_mut(&n).and_then(Vec::pop) {
            return Some(WordAddr(a));
        }
        let mut cur = self.bump.load(Ordering::Relaxed);
        loop {
            let end = cur.checked_add(n)?;
            if end > self.words.len() {
                return None;
            }
            match self
                .bump
                .compare_exchange_weak(cur, end, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return Some(WordAddr(cur)),
                Err(c) => cur = c,
            }
        }
    }

    /// Returns `n` words at `addr` for reuse by a later [`alloc`](Self::alloc)
    /// of the same size. Call it only once no committed state refers to the
    /// block (for example from [`Transaction::on_commit`] of the transaction
    /// that unlinked it). Reuse is safe against transactions still reading
    /// the old contents: the new owner writes the words transactionally,
    /// which changes their versions, so such readers abort.
    pub fn free(&self, addr: WordAddr, n: usize) {
        self.free.lock().entry(n).or_default().push(addr.0);
    }

    #[inline]
    fn word(&self, addr: WordAddr) -> &AtomicU64 {
        let cap = self.words.len();
        self.words
            .get(addr.0)
            .unwrap_or_else(|| panic!("TWords address {} out of bounds (capacity {cap})", addr.0))
    }

    #[inline]
    fn stripe(&self, a: u64) -> u64 {
        ((a >> 3).wrapping_mul(0x9E37_79B9_7F4A_7C15)) >> self.lock_shift
    }

    /// Reads the word at `addr` (read-my-writes).
    #[inline]
    pub fn read<'env>(&'env self, tx: &mut Transaction<'env>, addr: WordAddr) -> TxResult<u64> {
        let w = self.word(addr);
        self.read_at(tx, w)
    }

    /// Writes `value` to the word at `addr` (visible to others at commit).
    #[inline]
    pub fn write<'env>(
        &'env self,
        tx: &mut Transaction<'env>,
        addr: WordAddr,
        value: u64,
    ) -> TxResult<()> {
        let w = self.word(addr);
        self.write_at(tx, w, value);
        Ok(())
    }

    /// Reads an arbitrary word of memory transactionally.
    ///
    /// # Safety
    /// `word` must point to a live, aligned `AtomicU64` that stays live
    /// until this transaction and every other transaction accessing it
    /// through this `TWords` have finished, and every concurrent write of
    /// that word must go through this `TWords`.
    pub unsafe fn read_raw<'env>(
        &'env self,
        tx: &mut Transaction<'env>,
        word: *const AtomicU64,
    ) -> TxResult<u64> {
        // SAFETY: the caller guarantees `word` is live for the transaction.
        self.read_at(tx, unsafe { &*word })
    }

    /// Writes an arbitrary word of memory transactionally (at commit).
    ///
    /// # Safety
    /// As for [`read_raw`](Self::read_raw); the word must stay live until
    /// this transaction has committed or aborted.
    pub unsafe fn write_raw<'env>(
        &'env self,
        tx: &mut Transaction<'env>,
        word: *const AtomicU64,
        value: u64,
    ) -> TxResult<()> {
        // SAFETY: the caller guarantees `word` is live for the transaction.
        self.write_at(tx, unsafe { &*word }, value);
        Ok(())
    }

    #[inline]
    fn read_at<'env>(&'env self, tx: &mut Transaction<'env>, w: &AtomicU64) -> TxResult<u64> {
        let a = w as *const AtomicU64 as u64;
        let s = self.stripe(a);
        let id = tx.item(self, s);
        let it = tx.item_ref(id);
        if it.is_write() {
            if let Some(&(wa, v)) = it.write_value::<OneWrite>() {
                if wa == a {
                    return Ok(v);
                }
            } else if let Some(ws) = it.write_value::<ManyWrites>() {
                if let Some(&(_, v)) = ws.iter().find(|(wa, _)| *wa == a) {
                    return Ok(v);
                }
            }
        }
        tx.observe(id, &self.locks[s as usize], || w.load(Ordering::Acquire))
    }

    #[inline]
    fn write_at<'env>(&'env self, tx: &mut Transaction<'env>, w: &AtomicU64, value: u64) {
        let a = w as *const AtomicU64 as u64;
        let s = self.stripe(a);
        let id = tx.item(self, s);
        let item = tx.item_mut(id);
        if !item.is_write() {
            item.set_write::<OneWrite>((a, value));
            return;
        }
        if let Some(one) = item.value.get_mut::<OneWrite>() {
            if one.0 == a {
                one.1 = value;
                return;
            }
            let many: ManyWrites = vec![*one, (a, value)];
            item.set_write(many);
            return;
        }
        if let Some(ws) = item.value.get_mut::<ManyWrites>() {
            match ws.iter_mut().find(|(wa, _)| *wa == a) {
                Some(slot) => slot.1 = value,
                None => ws.push((a, value)),
            }
        }
    }

    /// The committed value of the word at `addr`, outside any transaction.
    pub fn load(&self, addr: WordAddr) -> u64 {
        let w = self.word(addr);
        let lock = &self.locks[self.stripe(w as *const AtomicU64 as u64) as usize];
        loop {
            let v1 = lock.load();
            if TVersion::is_locked(v1) {
                std::hint::spin_loop();
                continue;
            }
            let x = w.load(Ordering::Acquire);
            if lock.load() == v1 {
                return x;
            }
        }
    }
}

impl TObject for TWords {
    fn lock(&self, item: &mut Item, commit: &Commit<'_>) -> LockOutcome {
        commit.lock_version(&self.locks[item.key() as usize], item)
    }

    fn check(&self, item: &Item, _: &Commit<'_>) -> bool {
        self.locks[item.key() as usize].still_valid(item.read_version(), item.is_locked())
    }

    fn install(&self, item: &mut Item, commit: &Commit<'_>) {
        let store = |(a, v): (u64, u64)| {
            // SAFETY: addresses in items come from `&AtomicU64`s that the
            // safe API borrows from the arena (which outlives the
            // transaction) or that `*_raw` callers keep live until commit.
            unsafe { &*(a as *const AtomicU64) }.store(v, Ordering::Release);
        };
        if let Some(one) = item.value.take::<OneWrite>() {
            store(one);
        } else if let Some(many) = item.value.take::<ManyWrites>() {
            many.into_iter().for_each(store);
        }
        self.locks[item.key() as usize]
            .unlock_to(TVersion::next_after(item.read_version(), commit.version()));
    }

    fn unlock(&self, item: &mut Item) {
        self.locks[item.key() as usize].unlock_unchanged(item.read_version());
    }
}

impl fmt::Debug for TWords {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TWords")
            .field("capacity", &self.words.len())
            .field("stripes", &self.locks.len())
            .field("allocated", &self.bump.load(Ordering::Relaxed))
            .finish()
    }
}
