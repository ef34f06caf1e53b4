//! The word arena: the intset structures built from 64-bit words, so that
//! every word-backed system (txmem over `TArray` or `TWords`, the locks,
//! `fast-stm`, `stm`) runs the same algorithm.
//!
//! One node per possible key (node `k` is key `k`; word `k` is its `next`
//! link, per level for the skip list), so no allocation happens inside
//! transactions. Traversals check that keys strictly increase and restart
//! if not: systems without opacity (`fast-stm`, `stm`, `txmem-no-opacity`)
//! may read an inconsistent state before they validate, and must not loop
//! on it. The check after timing: every chain is sorted, every key is where
//! it belongs, and the size equals the initial size plus the committed net
//! inserts.

use rand::rngs::SmallRng;

use crate::harness::mem::Poke;
use crate::harness::mem::{Backend, Body, Conflict, Layout, Mem, Word, NIL};
use crate::harness::spec::Tally;
use crate::harness::suites::intset::workload::{record, IntSet, Kind, OpKind};
use crate::harness::workload::WordWorkload;

/// Skip-list levels: enough for 8192 keys with a 1/4 promotion rate.
const MAX_LEVEL: usize = 8;

/// The arena's layout.
impl IntSet {
    /// Hash buckets: one per initial element (load factor about 1).
    fn buckets(&self) -> usize {
        self.size
    }

    /// Index of the head node, whose links are the list heads.
    fn head(&self) -> usize {
        self.range
    }

    /// Words per skip-list level (every key plus the head).
    fn stride(&self) -> usize {
        self.range + 1
    }
}

/// A key's skip-list height, a pure function of the key (so every system
/// builds the same shape): 1 + (trailing zeros of a hash) / 2, i.e. each
/// level keeps about a quarter of the one below.
fn level_of(key: usize) -> usize {
    let h = (key as u64)
        .wrapping_add(1)
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        >> 32;
    let tz = if h == 0 {
        64
    } else {
        h.trailing_zeros() as usize
    };
    1 + (tz / 2).min(MAX_LEVEL - 1)
}

/// One operation on the arena, run through a backend's [`Mem`].
struct SetOp<'a> {
    set: &'a IntSet,
    op: OpKind,
    key: usize,
}

impl SetOp<'_> {
    /// Follows links at `base + node` from `start` while keys are below the
    /// target; returns (pred, succ). Restarts on a link that does not
    /// strictly increase (only an unvalidated, inconsistent read yields one).
    #[inline]
    fn find<M: Mem>(
        &self,
        m: &mut M,
        base: usize,
        start: usize,
    ) -> Result<(usize, Word), Conflict> {
        let range = self.set.range;
        let mut pred = start;
        let mut cur = m.read(base + pred)?;
        while cur != NIL {
            let c = cur as usize;
            // Head nodes sit at indices >= range and carry no key.
            if c >= range || (pred < range && c <= pred) {
                return Err(Conflict);
            }
            if c >= self.key {
                break;
            }
            pred = c;
            cur = m.read(base + pred)?;
        }
        Ok((pred, cur))
    }

    #[inline]
    fn chain<M: Mem>(&self, m: &mut M, base: usize, head_word: usize) -> Result<bool, Conflict> {
        // `head_word` is the word holding the chain's first link; searching
        // from a virtual predecessor at `head_word - base` reads it first.
        let start = head_word - base;
        let (pred, succ) = self.find(m, base, start)?;
        let present = succ == self.key as Word;
        let link = |n: usize| if n == start { head_word } else { base + n };
        match self.op {
            OpKind::Contains => Ok(present),
            OpKind::Insert if present => Ok(false),
            OpKind::Insert => {
                m.write(base + self.key, succ)?;
                m.write(link(pred), self.key as Word)?;
                Ok(true)
            }
            OpKind::Remove if !present => Ok(false),
            OpKind::Remove => {
                let next = m.read(base + self.key)?;
                m.write(link(pred), next)?;
                Ok(true)
            }
        }
    }

    #[inline]
    fn skip<M: Mem>(&self, m: &mut M) -> Result<bool, Conflict> {
        let stride = self.set.stride();
        let mut preds = [0usize; MAX_LEVEL];
        let mut succs = [NIL; MAX_LEVEL];
        let mut pred = self.set.head();
        for l in (0..MAX_LEVEL).rev() {
            let (p, s) = self.find(m, l * stride, pred)?;
            preds[l] = p;
            succs[l] = s;
            pred = p;
        }
        let present = succs[0] == self.key as Word;
        let height = level_of(self.key);
        match self.op {
            OpKind::Contains => Ok(present),
            OpKind::Insert if present => Ok(false),
            OpKind::Insert => {
                for l in 0..height {
                    m.write(l * stride + self.key, succs[l])?;
                    m.write(l * stride + preds[l], self.key as Word)?;
                }
                Ok(true)
            }
            OpKind::Remove if !present => Ok(false),
            OpKind::Remove => {
                for l in 0..height {
                    if succs[l] != self.key as Word {
                        return Err(Conflict);
                    }
                    let next = m.read(l * stride + self.key)?;
                    m.write(l * stride + preds[l], next)?;
                }
                Ok(true)
            }
        }
    }
}

impl Body for SetOp<'_> {
    type Out = bool;
    #[inline]
    fn run<M: Mem>(&self, m: &mut M) -> Result<bool, Conflict> {
        match self.set.kind {
            Kind::List => self.chain(m, 0, self.set.head()),
            Kind::Hash => {
                let bucket = self.key % self.set.buckets();
                self.chain(m, 0, self.set.head() + bucket)
            }
            Kind::Ordered => self.skip(m),
        }
    }
    fn read_only(&self) -> bool {
        self.op == OpKind::Contains
    }
    fn lock_ids(&self, out: &mut Vec<usize>) {
        // Only the hash set has a fine-grained scheme: one lock per bucket.
        out.push(self.key % self.set.buckets());
    }
}

impl WordWorkload for IntSet {
    fn layout(&self) -> Layout {
        let keys = self.initial_keys();
        let (words, fine_locks) = match self.kind {
            Kind::List => (self.range + 1, None),
            Kind::Hash => (self.range + self.buckets(), Some(self.buckets())),
            Kind::Ordered => (self.stride() * MAX_LEVEL, None),
        };
        let mut init = vec![NIL; words];
        match self.kind {
            Kind::List => link_sorted(&mut init, 0, self.head(), &keys),
            Kind::Hash => {
                let mut per_bucket = vec![Vec::new(); self.buckets()];
                for &k in &keys {
                    per_bucket[k % self.buckets()].push(k);
                }
                for (b, chain) in per_bucket.iter().enumerate() {
                    link_sorted(&mut init, 0, self.head() + b, chain);
                }
            }
            Kind::Ordered => {
                for l in 0..MAX_LEVEL {
                    let at: Vec<usize> =
                        keys.iter().copied().filter(|&k| level_of(k) > l).collect();
                    let base = l * self.stride();
                    link_sorted(&mut init, base, base + self.head(), &at);
                }
            }
        }
        Layout {
            init,
            fine_locks,
            snapshot_history: false,
        }
    }

    #[inline]
    fn op<B: Backend>(&self, b: &B, rng: &mut SmallRng, tally: &mut Tally) {
        let (op, key) = self.draw(rng);
        let changed = b.atomic(tally, &SetOp { set: self, op, key });
        record(tally, op, changed);
    }

    fn verify<B: Backend>(&self, b: &B, total: &Tally) -> Result<(), String> {
        let expected = self.size as i64 + total.delta;
        let chain = |head_word: usize, base: usize| -> Result<Vec<usize>, String> {
            let mut out = Vec::new();
            let mut cur = b.load(head_word);
            while cur != NIL {
                let c = cur as usize;
                if c >= self.range {
                    return Err(format!("link to {c} outside the key range"));
                }
                if out.last().is_some_and(|&p| c <= p) {
                    return Err(format!("chain not strictly increasing at key {c}"));
                }
                out.push(c);
                cur = b.load(base + c);
            }
            Ok(out)
        };
        let count = match self.kind {
            Kind::List => chain(self.head(), 0)?.len(),
            Kind::Hash => {
                let mut n = 0;
                for bucket in 0..self.buckets() {
                    let keys = chain(self.head() + bucket, 0)?;
                    if let Some(k) = keys.iter().find(|&&k| k % self.buckets() != bucket) {
                        return Err(format!("key {k} in bucket {bucket}"));
                    }
                    n += keys.len();
                }
                n
            }
            Kind::Ordered => {
                let stride = self.stride();
                let bottom = chain(self.head(), 0)?;
                for l in 1..MAX_LEVEL {
                    let base = l * stride;
                    let at = chain(base + self.head(), base)?;
                    let want: Vec<usize> = bottom
                        .iter()
                        .copied()
                        .filter(|&k| level_of(k) > l)
                        .collect();
                    if at != want {
                        return Err(format!("skip-list level {l} disagrees with level 0"));
                    }
                }
                bottom.len()
            }
        };
        if count as i64 != expected {
            return Err(format!(
                "set holds {count} keys, expected {expected} (initial {} + net inserts {})",
                self.size, total.delta
            ));
        }
        Ok(())
    }

    fn sabotage<B: Backend>(&self, b: &B) {
        // Unlink the first key of the first chain without counting it.
        let heads = match self.kind {
            Kind::Hash => self.buckets(),
            _ => 1,
        };
        for h in self.head()..self.head() + heads {
            let first = b.load(h);
            if first != NIL {
                let next = b.load(first as usize);
                b.atomic(
                    &mut Tally::default(),
                    &Poke {
                        index: h,
                        value: next,
                    },
                );
                return;
            }
        }
    }
}

/// Links `keys` (sorted) into a chain starting at word `head_word`, with
/// node `k`'s link at `base + k`.
fn link_sorted(words: &mut [Word], base: usize, head_word: usize, keys: &[usize]) {
    let mut link = head_word;
    for &k in keys {
        words[link] = k as Word;
        link = base + k;
    }
    words[link] = NIL;
}
