//! The typed variant's shared state: txmem's datatypes.
//!
//! * Parent and child sets are `u64` bitmasks in two `TArray<u64>`s, one
//!   element per variable (inputs have at most 64 variables). STAMP keeps
//!   sorted lists; a bitmask is the same set in one word, so the cycle
//!   check's depth-first search reads one item per variable it visits, and
//!   an insertion writes one element of each array. Per-element versions
//!   mean an insertion conflicts only with a search that visited the
//!   parent it adds to.
//! * Local scores are a `TArray<f64>`, so insertions into different
//!   variables never conflict on a shared total; the total is their sum.
//! * Tasks are variable numbers in a `TQueue<u32>` (STAMP orders them by
//!   score gain; a FIFO queue gives every variable a turn in round robin).

use txmem::{atomically, TArray, TQueue, Transaction, TxResult};

use super::learn::Shared;
use super::net::Learned;

/// Shared state over txmem's datatypes.
pub struct Typed {
    parents: TArray<u64>,
    children: TArray<u64>,
    scores: TArray<f64>,
    tasks: TQueue<u32>,
}

impl Typed {
    /// The empty network with local scores `empty` and every variable's
    /// task queued.
    pub fn new(empty: &[f64]) -> Typed {
        let n = empty.len();
        let state = Typed {
            parents: TArray::new(n, 0),
            children: TArray::new(n, 0),
            scores: TArray::from_fn(n, |v| empty[v]),
            tasks: TQueue::new(),
        };
        atomically(|tx| (0..n as u32).try_for_each(|v| state.tasks.push(tx, v)));
        state
    }

    /// `from`'s descendants, stopping early once `target` is among them.
    fn reach<'env>(
        &'env self,
        tx: &mut Transaction<'env>,
        from: usize,
        target: Option<usize>,
    ) -> TxResult<u64> {
        let (mut seen, mut stack) = (0u64, vec![from]);
        while let Some(x) = stack.pop() {
            let mut new = self.children.get(tx, x)? & !seen;
            seen |= new;
            if target.is_some_and(|t| seen & (1 << t) != 0) {
                break;
            }
            while new != 0 {
                stack.push(new.trailing_zeros() as usize);
                new &= new - 1;
            }
        }
        Ok(seen)
    }
}

impl Shared for Typed {
    fn pop(&self) -> Option<usize> {
        atomically(|tx| self.tasks.try_pop(tx)).map(|v| v as usize)
    }

    fn parents_now(&self, v: usize) -> u64 {
        self.parents.load(v)
    }

    fn score_now(&self, v: usize) -> f64 {
        self.scores.load(v)
    }

    fn descendants(&self, v: usize) -> u64 {
        atomically(|tx| self.reach(tx, v, None))
    }

    fn insert(&self, u: usize, v: usize, score: f64, requeue: bool) -> bool {
        atomically(|tx| {
            if self.reach(tx, v, Some(u))? & (1 << u) != 0 {
                self.tasks.push(tx, v as u32)?;
                return Ok(false);
            }
            self.parents.modify(tx, v, |p| p | 1 << u)?;
            self.children.modify(tx, u, |c| c | 1 << v)?;
            self.scores.set(tx, v, score)?;
            if requeue {
                self.tasks.push(tx, v as u32)?;
            }
            Ok(true)
        })
    }

    fn learned(&self) -> Learned {
        let n = self.parents.len();
        Learned {
            parents: (0..n).map(|v| self.parents.load(v)).collect(),
            children: (0..n).map(|v| self.children.load(v)).collect(),
            score: (0..n).map(|v| self.scores.load(v)).sum(),
        }
    }
}
