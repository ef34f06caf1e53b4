//! The words variant's shared state: one `TWords` arena, every access a
//! tracked word.
//!
//! Layout (a "pointer" is a node's word index plus 1, 0 for null):
//!
//! * per variable, a record of [`VAR_RECORD`] words: the heads of its
//!   parent list and child list, and its local score (`f64` bits);
//! * list nodes of [`NODE`] words `[variable, next]`, each list sorted by
//!   variable, as STAMP keeps its adjacency lists;
//! * the task queue: two counters (tasks ever popped, tasks ever pushed)
//!   and a ring of `vars` slots, enough since a variable has at most one
//!   task queued.
//!
//! The cycle check walks child lists node by node, so a transaction tracks
//! every node word it passes, where the typed variant reads one bitmask
//! per variable.

use txmem::{atomically, TWords, Transaction, TxResult, WordAddr};

use super::learn::Shared;
use super::net::Learned;

/// Offsets in a variable's record.
const PARENTS: usize = 0;
const CHILDREN: usize = 1;
const SCORE: usize = 2;
/// Words of a variable's record.
pub const VAR_RECORD: usize = 3;
/// Words of a list node, and the offset of its `next` word.
pub const NODE: usize = 2;
const NEXT: usize = 1;
/// Offsets of the queue's counters.
const POPPED: usize = 0;
const PUSHED: usize = 1;

fn node_at(pointer: u64) -> WordAddr {
    WordAddr(pointer as usize - 1)
}

fn pointer(node: WordAddr) -> u64 {
    node.0 as u64 + 1
}

/// Shared state over `TWords`.
pub struct Words {
    mem: TWords,
    vars: usize,
    records: WordAddr,
    /// The two counters, then the ring.
    queue: WordAddr,
}

impl Words {
    /// The empty network with local scores `empty`, every variable's task
    /// queued, and room for `limit` parents per variable (two nodes per
    /// edge) plus the spares of `threads` threads.
    pub fn new(empty: &[f64], limit: usize, threads: usize) -> Words {
        let vars = empty.len();
        let capacity = VAR_RECORD * vars + 2 + vars + 2 * NODE * (vars * limit + threads.max(1));
        // At least four stripes per word, so words rarely share one, but
        // no more: the default 2^20 stripes would be mostly untouched
        // memory for an arena of a few thousand words.
        let mem = TWords::with_stripes(capacity, capacity.next_power_of_two().trailing_zeros() + 2);
        let records = mem.alloc(VAR_RECORD * vars);
        let queue = mem.alloc(2 + vars);
        let state = Words {
            mem,
            vars,
            records,
            queue,
        };
        atomically(|tx| {
            for (v, &s) in empty.iter().enumerate() {
                state.mem.write(tx, state.field(v, SCORE), s.to_bits())?;
                state.push(tx, v)?;
            }
            Ok(())
        });
        state
    }

    fn field(&self, v: usize, offset: usize) -> WordAddr {
        self.records.offset(VAR_RECORD * v + offset)
    }

    fn push<'env>(&'env self, tx: &mut Transaction<'env>, v: usize) -> TxResult<()> {
        let pushed = self.mem.read(tx, self.queue.offset(PUSHED))?;
        let slot = self.queue.offset(2 + (pushed % self.vars as u64) as usize);
        self.mem.write(tx, slot, v as u64)?;
        self.mem.write(tx, self.queue.offset(PUSHED), pushed + 1)
    }

    /// `from`'s descendants, walking child lists, stopping early once
    /// `target` is among them.
    fn reach<'env>(
        &'env self,
        tx: &mut Transaction<'env>,
        from: usize,
        target: Option<usize>,
    ) -> TxResult<u64> {
        let (mut seen, mut stack) = (0u64, vec![from]);
        while let Some(x) = stack.pop() {
            let mut node = self.mem.read(tx, self.field(x, CHILDREN))?;
            while node != 0 {
                let at = node_at(node);
                let c = self.mem.read(tx, at)? as usize;
                if seen & (1 << c) == 0 {
                    seen |= 1 << c;
                    if target == Some(c) {
                        return Ok(seen);
                    }
                    stack.push(c);
                }
                node = self.mem.read(tx, at.offset(NEXT))?;
            }
        }
        Ok(seen)
    }

    /// Links `node` (holding `key`) into the sorted list whose head word
    /// is `head`.
    fn insert_sorted<'env>(
        &'env self,
        tx: &mut Transaction<'env>,
        head: WordAddr,
        node: WordAddr,
        key: usize,
    ) -> TxResult<()> {
        let mut link = head;
        loop {
            let next = self.mem.read(tx, link)?;
            if next == 0 || self.mem.read(tx, node_at(next))? > key as u64 {
                self.mem.write(tx, node, key as u64)?;
                self.mem.write(tx, node.offset(NEXT), next)?;
                return self.mem.write(tx, link, pointer(node));
            }
            link = node_at(next).offset(NEXT);
        }
    }

    /// The set of variables in the list whose head word is `head`, read
    /// outside transactions (its owner is not changing it).
    fn load_list(&self, head: WordAddr) -> u64 {
        let (mut set, mut node) = (0u64, self.mem.load(head));
        while node != 0 {
            set |= 1 << self.mem.load(node_at(node));
            node = self.mem.load(node_at(node).offset(NEXT));
        }
        set
    }
}

impl Shared for Words {
    fn pop(&self) -> Option<usize> {
        atomically(|tx| {
            let popped = self.mem.read(tx, self.queue.offset(POPPED))?;
            if popped == self.mem.read(tx, self.queue.offset(PUSHED))? {
                return Ok(None);
            }
            let slot = self.queue.offset(2 + (popped % self.vars as u64) as usize);
            let v = self.mem.read(tx, slot)? as usize;
            self.mem.write(tx, self.queue.offset(POPPED), popped + 1)?;
            Ok(Some(v))
        })
    }

    fn parents_now(&self, v: usize) -> u64 {
        // Only the holder of `v`'s task changes `v`'s parent list, and its
        // last change has committed.
        self.load_list(self.field(v, PARENTS))
    }

    fn score_now(&self, v: usize) -> f64 {
        f64::from_bits(self.mem.load(self.field(v, SCORE)))
    }

    fn descendants(&self, v: usize) -> u64 {
        atomically(|tx| self.reach(tx, v, None))
    }

    fn insert(&self, u: usize, v: usize, score: f64, requeue: bool) -> bool {
        // Allocated once, outside the transaction, and reused by retries.
        let (to_parents, to_children) = (self.mem.alloc(NODE), self.mem.alloc(NODE));
        let added = atomically(|tx| {
            if self.reach(tx, v, Some(u))? & (1 << u) != 0 {
                self.push(tx, v)?;
                return Ok(false);
            }
            self.insert_sorted(tx, self.field(v, PARENTS), to_parents, u)?;
            self.insert_sorted(tx, self.field(u, CHILDREN), to_children, v)?;
            self.mem.write(tx, self.field(v, SCORE), score.to_bits())?;
            if requeue {
                self.push(tx, v)?;
            }
            Ok(true)
        });
        if !added {
            self.mem.free(to_parents, NODE);
            self.mem.free(to_children, NODE);
        }
        added
    }

    fn learned(&self) -> Learned {
        let n = self.vars;
        Learned {
            parents: (0..n)
                .map(|v| self.load_list(self.field(v, PARENTS)))
                .collect(),
            children: (0..n)
                .map(|v| self.load_list(self.field(v, CHILDREN)))
                .collect(),
            score: (0..n).map(|v| self.score_now(v)).sum(),
        }
    }
}
