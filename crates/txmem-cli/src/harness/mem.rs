//! One workload body, many systems: the word-memory abstraction.
//!
//! Every workload keeps its state in an array of 64-bit words (accounts,
//! array elements, `next` links of a set) and expresses each operation as a
//! [`Body`] that reads and writes words through [`Mem`]. Each system is a
//! [`Backend`] that runs a body atomically its own way: a txmem transaction
//! over a `TArray<u64>`, a `fast-stm`/`stm` transaction over `TVar<u64>`s,
//! or plain atomics under a coarse or fine-grained lock. The bodies are
//! generic (monomorphised per backend), so every system runs the same code
//! with no dynamic dispatch per access, and the comparison measures the
//! synchronization, not differences between hand-written variants. The one
//! bulk operation, [`Mem::sum`] (the bank's audit), is where a typed STM may
//! use its datatype's own operation; every other backend loops over `read`.

use crate::harness::spec::{AbortCounting, Tally};

/// The word every workload stores (signed values are stored two's-complement).
pub type Word = u64;

/// "No node": the null link of set structures.
pub const NIL: Word = u64::MAX;

/// The attempt cannot continue (a conflict the system reported, or an
/// inconsistent state the body noticed); the backend restarts it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Conflict;

/// Word access inside one atomic attempt.
pub trait Mem {
    /// Reads word `i`.
    fn read(&mut self, i: usize) -> Result<Word, Conflict>;
    /// Writes word `i`.
    fn write(&mut self, i: usize, v: Word) -> Result<(), Conflict>;
    /// The wrapping sum of the words in `range`: reads each, as a loop of
    /// [`read`](Self::read) does (the default). A typed backend may run it
    /// as one operation of its datatype (txmem: `TArray::fold`), which is
    /// the point of a typed STM; the reads and guarantees are the same.
    #[inline]
    fn sum(&mut self, range: std::ops::Range<usize>) -> Result<Word, Conflict> {
        let mut total: Word = 0;
        for i in range {
            total = total.wrapping_add(self.read(i)?);
        }
        Ok(total)
    }
}

/// One operation of a workload, runnable by any backend.
///
/// `run` must be deterministic given `self` (random choices are made before
/// the attempt), since backends may run it several times.
pub trait Body {
    /// What the operation returns.
    type Out;
    /// The operation.
    fn run<M: Mem>(&self, m: &mut M) -> Result<Self::Out, Conflict>;
    /// True if the operation never writes (readers may share a RW lock).
    fn read_only(&self) -> bool;
    /// The fine-grained locks the operation needs (ids in the workload's
    /// lock space, any order, duplicates allowed). Only called for
    /// workloads whose [`Layout::fine_locks`] is `Some`.
    fn lock_ids(&self, out: &mut Vec<usize>);
}

/// A system that runs bodies atomically over an array of words.
pub trait Backend: Sync + Send {
    /// Runs `body` atomically, retrying until it commits, and returns its result.
    fn atomic<B: Body>(&self, tally: &mut Tally, body: &B) -> B::Out;
    /// Reads word `i` outside any operation (only while no thread runs).
    fn load(&self, i: usize) -> Word;
    /// How this backend's aborts are counted.
    fn abort_counting(&self) -> AbortCounting;
}

/// The shape a workload needs from a backend.
#[derive(Clone, Debug)]
pub struct Layout {
    /// Initial words.
    pub init: Vec<Word>,
    /// Number of fine-grained locks, or `None` if the workload has no
    /// fine-grained locking scheme.
    pub fine_locks: Option<usize>,
    /// The workload runs long read-only transactions against writers: a
    /// backend that can keep each word's previous value for their
    /// snapshots does (txmem's `TArray::with_snapshot_history`).
    pub snapshot_history: bool,
}

/// Writes one word (used to sabotage a state for the failure test).
pub struct Poke {
    /// The word.
    pub index: usize,
    /// Its new value.
    pub value: Word,
}

impl Body for Poke {
    type Out = ();
    fn run<M: Mem>(&self, m: &mut M) -> Result<(), Conflict> {
        m.write(self.index, self.value)
    }
    fn read_only(&self) -> bool {
        false
    }
    fn lock_ids(&self, out: &mut Vec<usize>) {
        out.push(self.index);
    }
}
