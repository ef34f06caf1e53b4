//! The transaction runtime: what runs between `atomically` and the objects'
//! [`TObject`](crate::TObject) callbacks.
//!
//! Each file holds one part, and each depends only on those listed before
//! it:
//!
//! | file | holds |
//! |---|---|
//! | `index` | the hash index over a large tracking set |
//! | `commit/lock` | what an object sees at commit: `Commit`, `LockOutcome`, the standard lock step |
//! | `state` | `TxState`, a thread's reused transaction state, and the tracking set |
//! | `savepoint` | `or_else`: undoing a branch's changes to the tracking set |
//! | `words` | the word log: writes of inline word values, buffered without items, and their part in the commit |
//! | `handlers` | `on_commit` / `on_abort` handlers |
//! | `read` | the read protocol: consistent reads, the opacity check of each mode, snapshot extension, read-set validation |
//! | `irrevocable` | irrevocability: the token, the gate, becoming irrevocable midway |
//! | `attempt` | beginning and finishing one attempt |
//! | `commit` | the commit protocol: lock, commit version, validate, install, wake |
//! | `transaction` | [`Transaction`], the public API inside a transaction |
//! | `context` | the thread-local context and the state of the running call |
//! | `single` | single-operation writes, committed as transactions of their own |
//! | `blocking` | blocking `retry`: waiting for a change to what was read |
//! | `abandon` | ending without a commit: the program's error, a panic |
//! | `run` | `atomically` and the retry loop |
//! | `future` | `atomically_async`: the retry loop as a future, `retry` suspending the task |
//!
//! Why the protocol steps are `impl TxState` blocks in their own files
//! rather than one type per step: they share the per-thread state, and the
//! hot ones inline into each other and into the program's closure
//! (`#[inline(always)]` from `Transaction::observe` down to the version
//! check), so that an increment transaction compiles to one straight
//! sequence.

mod abandon;
mod attempt;
mod blocking;
pub(crate) mod commit;
mod context;
mod future;
mod handlers;
mod index;
mod irrevocable;
mod read;
mod run;
mod savepoint;
mod single;
mod state;
mod transaction;
mod words;

pub use future::{atomically_async, read_only_async, TxFuture};
pub use index::{item_index_cutoff, set_item_index_cutoff, HASH_CUTOFF};
pub use run::{atomically, read_only, try_atomically};
pub(crate) use single::{assert_outside_transaction, commit_single, commit_version};
pub(crate) use transaction::ReadVia;
pub use transaction::{ItemId, Transaction};
