//! `intset`: integer sets in the style of TinySTM's intset benchmark.
//! Three structures (sorted linked list, hash set, ordered set), initial
//! sizes 256 and 4096, keys drawn from a range twice the size, update rates
//! 0/20/50% (an update is an insert or a remove with equal odds; the rest
//! are lookups). The word-backed rows build them as a sorted linked list, a
//! hash set of sorted chains and a skip list; the other rows use a library's
//! own set or map of the kind.
//!
//! The word-backed structures live in an arena with one node per possible
//! key (node `k` is key `k`; word `k` is its `next` link, per level for the
//! skip list), so no allocation happens inside transactions and every system
//! runs the same algorithm. Traversals check that keys strictly increase
//! and restart if not: systems without opacity (`fast-stm`, `stm`,
//! `txmem-no-opacity`) may read an inconsistent state before they validate,
//! and must not loop on it. The check after timing: every chain is sorted,
//! every key is where it belongs, and the size equals the initial size plus
//! the committed net inserts.
//!
//! Systems: `txmem` (and `txmem-revalidate`, `txmem-no-opacity`) are txmem's
//! typed collections — `TListSet`, `THashMap`, `TBTreeMap` — which track one
//! abstract item per operation ([`intset_typed`](super::intset_typed)).
//! `txmem-tarray` and `txmem-words` run the word arena above through a
//! `TArray<u64>` and the untyped `TWords`: the typed-versus-untyped
//! comparison, where every `next` link walked is a tracked read. The set
//! peers ([`peers::sets`](crate::bench::peers::sets)) are `dashmap`,
//! `crossbeam-skiplist` and the std collection behind an `RwLock`
//! (`rwlock-std`); the `mutex`/`rwlock`/`fine-locks` rows run the arena's
//! algorithm under locks.

use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

use crate::bench::mem::{Backend, Body, Conflict, Layout, Mem, Poke, Word, NIL};
use crate::bench::peers::sets;
use crate::bench::spec::{Plan, Tally};
use crate::bench::suites::intset_typed as typed;
use crate::bench::suites::SuiteConfig;
use crate::bench::txmem_sys::{self, opacity_variants, Store};
use crate::bench::workload::{add_rows, WordWorkload};

pub const SIZES: [usize; 2] = [256, 4096];
pub const UPDATE_PERCENTS: [u32; 3] = [0, 20, 50];
/// Skip-list levels: enough for 8192 keys with a 1/4 promotion rate.
const MAX_LEVEL: usize = 8;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    List,
    Hash,
    Ordered,
}

impl Kind {
    pub const ALL: [Kind; 3] = [Kind::List, Kind::Hash, Kind::Ordered];
    pub fn name(self) -> &'static str {
        match self {
            Kind::List => "list",
            Kind::Hash => "hash",
            Kind::Ordered => "ordered",
        }
    }
}

/// Parameters of one intset workload.
#[derive(Clone, Copy, Debug)]
pub struct IntSet {
    pub kind: Kind,
    pub size: usize,
    pub range: usize,
    pub update_percent: u32,
    /// Seed of the initial contents (the same for every system).
    pub seed: u64,
}

impl IntSet {
    pub fn name(&self) -> String {
        format!(
            "intset/{}/size={}/range={}/update={}%",
            self.kind.name(),
            self.size,
            self.range,
            self.update_percent
        )
    }

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

    /// The initial keys: `size` distinct keys from the range, sorted.
    pub fn initial_keys(&self) -> Vec<usize> {
        let mut all: Vec<usize> = (0..self.range).collect();
        all.shuffle(&mut SmallRng::seed_from_u64(self.seed));
        let mut keys = all[..self.size].to_vec();
        keys.sort_unstable();
        keys
    }
}

impl IntSet {
    /// The next operation: a uniform key; an update (insert or remove, even
    /// odds) with probability `update_percent`, else a lookup.
    #[inline]
    pub fn draw(&self, rng: &mut SmallRng) -> (OpKind, usize) {
        let key = rng.random_range(0..self.range);
        let op = if rng.random_range(0..100) < self.update_percent {
            if rng.random::<bool>() {
                OpKind::Insert
            } else {
                OpKind::Remove
            }
        } else {
            OpKind::Contains
        };
        (op, key)
    }

    /// Checks committed keys (any order) against the expected count; in
    /// order if `sorted`.
    pub fn check_keys(&self, keys: &[usize], sorted: bool, total: &Tally) -> Result<(), String> {
        self.check_shape(keys, sorted)?;
        let expected = self.size as i64 + total.delta;
        if keys.len() as i64 != expected {
            return Err(format!(
                "set holds {} keys, expected {expected} (initial {} + net inserts {})",
                keys.len(),
                self.size,
                total.delta
            ));
        }
        Ok(())
    }

    /// Checks that committed keys are in the key range and distinct (and in
    /// order if `sorted`), without counting them.
    pub fn check_shape(&self, keys: &[usize], sorted: bool) -> Result<(), String> {
        if let Some(k) = keys.iter().find(|&&k| k >= self.range) {
            return Err(format!("key {k} outside the key range"));
        }
        if sorted {
            if let Some(w) = keys.windows(2).find(|w| w[0] >= w[1]) {
                return Err(format!("keys not strictly increasing at {}", w[1]));
            }
        } else {
            let mut v = keys.to_vec();
            v.sort_unstable();
            if let Some(w) = v.windows(2).find(|w| w[0] == w[1]) {
                return Err(format!("key {} present twice", w[0]));
            }
        }
        Ok(())
    }
}

/// Counts an operation and its effect on the set size.
#[inline]
pub fn record(tally: &mut Tally, op: OpKind, changed: bool) {
    match (op, changed) {
        (OpKind::Insert, true) => tally.delta += 1,
        (OpKind::Remove, true) => tally.delta -= 1,
        _ => {}
    }
    tally.ops += 1;
}

/// A key's skip-list height, a pure function of the key (so every system
/// builds the same shape): 1 + (trailing zeros of a hash) / 2, i.e. each
/// level keeps about a quarter of the one below.
pub fn level_of(key: usize) -> usize {
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

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpKind {
    Contains,
    Insert,
    Remove,
}

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
        Layout { init, fine_locks }
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

/// Every intset workload of the suite (or of the quick selection).
pub fn workloads(quick: bool, seed: u64) -> Vec<IntSet> {
    let mut out = Vec::new();
    for kind in Kind::ALL {
        for size in SIZES {
            for update_percent in UPDATE_PERCENTS {
                let picked = match kind {
                    Kind::List => size == 256,
                    _ => size == 4096,
                } && update_percent == 20;
                if quick && !picked {
                    continue;
                }
                out.push(IntSet {
                    kind,
                    size,
                    range: 2 * size,
                    update_percent,
                    seed,
                });
            }
        }
    }
    out
}

pub fn plan(cfg: &SuiteConfig, plan: &mut Plan) {
    for set in workloads(cfg.quick, cfg.seed) {
        let name = set.name();
        collection_rows(cfg, plan, &set);
        sets::add(plan, set);
        add_rows(
            plan,
            "intset",
            &name,
            &cfg.word_systems("txmem-tarray"),
            move || set,
        );
        cfg.add_libitm(
            plan,
            "intset",
            &name,
            &[
                "intset".to_string(),
                set.kind.name().to_string(),
                set.size.to_string(),
                set.range.to_string(),
                set.update_percent.to_string(),
                set.seed.to_string(),
            ],
        );
    }
}

/// Rows for txmem's own transactional collections: `txmem` (and its
/// opacity variants) is the typed collection for the structure, and every
/// set gets `txmem-direct`, whose lookups run outside any transaction.
fn collection_rows(cfg: &SuiteConfig, plan: &mut Plan, set: &IntSet) {
    for v in opacity_variants("txmem", Store::TArray, cfg.quick) {
        let options = txmem_sys::options(&v, &cfg.policy);
        typed::add(plan, &v.system, *set, options, false);
        if v.system == "txmem" && !cfg.quick {
            typed::add(plan, "txmem-direct", *set, options, true);
        }
    }
}
