//! Irrevocability: at most one transaction at a time runs without the
//! possibility of aborting, so it may do what cannot be undone.
//!
//! The pieces: a token serializes irrevocable transactions; the gate (the
//! low bit of the clock word, see `clock`) keeps every other writer from
//! committing while one runs; an attempt becomes irrevocable at its start
//! (`TxState::begin`) or midway (`become_irrevocable`, which checks the
//! reads made before and waits out writers that passed the gate first).
//! Elsewhere it is a test at the spot it changes: a committer that finds
//! the gate closed unlocks and aborts (`commit`) or waits (`single`); an
//! irrevocable reader waits for locks without a bound (`read`), and so does
//! its commit ([`Commit::must_succeed`](crate::Commit::must_succeed)); the
//! run loop restarts an attempt irrevocably when asked or after too many
//! aborts, and lets the gate open before retrying an attempt that found it
//! closed (`run`).
//!
//! Why the gate shares the clock word: a committer reads the clock after
//! locking anyway, so ordinary transactions pay nothing while no
//! irrevocable one runs.

use super::state::TxState;
use crate::clock;
use crate::error::{Abort, AbortCause, TxResult};

/// How many times `become_irrevocable` re-checks a read that fails (a
/// writer past the gate may still hold its lock) before it restarts the
/// attempt irrevocably. Small under loom, whose models bound their branches.
#[cfg(not(txmem_loom))]
const UPGRADE_WAITS: u32 = 1000;
#[cfg(txmem_loom)]
const UPGRADE_WAITS: u32 = 2;

crate::sync::protocol_static! {
    /// Serializes irrevocable transactions: at most one runs at a time.
    static IRREVOCABLE_TOKEN: crate::sync::TokenLock = crate::sync::TokenLock::new(());
}

impl TxState {
    /// Closes the irrevocability gate: from now on no other transaction
    /// commits until [`release_irrevocability`](Self::release_irrevocability).
    ///
    /// So an irrevocable attempt never validates its reads (nor does a
    /// collection re-check the structure words it records): what it reads
    /// stays current until it commits. A writer that passed the gate before
    /// it closed had locked everything it changes first, and an irrevocable
    /// reader waits for such locks (without a bound), so it sees those
    /// writes installed. Reads made before the gate closed are checked once,
    /// by `become_irrevocable`. Structure words (a leaf's or bucket's
    /// version, a gap) still change while the gate is closed, as running
    /// transactions place placeholders and committers already past the gate
    /// unlink what they removed, but neither changes a committed key: the
    /// placeholders' inserts commit after this transaction, and the removals
    /// were already visible to it. Validating such words would fail an
    /// attempt that must not fail.
    pub(super) fn acquire_irrevocability(&mut self) {
        self.hold_irrevocability(crate::sync::take_token(&IRREVOCABLE_TOKEN));
    }

    /// [`acquire_irrevocability`](Self::acquire_irrevocability) if no other
    /// transaction is irrevocable; false (nothing done) otherwise.
    fn try_acquire_irrevocability(&mut self) -> bool {
        match crate::sync::try_take_token(&IRREVOCABLE_TOKEN) {
            Some(token) => {
                self.hold_irrevocability(token);
                true
            }
            None => false,
        }
    }

    fn hold_irrevocability(&mut self, token: crate::sync::Token) {
        let closed = clock::try_close_irrevocable();
        assert!(
            closed,
            "txmem: the irrevocable gate is only closed by the token holder"
        );
        self.irrevocable = Some(token);
        self.rare = true;
    }

    /// Opens the gate and hands the token on: at the end of the attempt, or
    /// before a serialized transaction's blocking wait.
    pub(crate) fn release_irrevocability(&mut self) {
        if let Some(token) = self.irrevocable.take() {
            // Open the gate before handing the token on, or the next holder
            // could find the gate still closed and then see it opened.
            clock::open_irrevocable();
            drop(token);
        }
    }

    /// The upgrade behind
    /// [`Transaction::become_irrevocable`](crate::Transaction::become_irrevocable).
    pub(super) fn become_irrevocable(&mut self) -> TxResult<()> {
        self.user_irrevocable = true;
        if self.irrevocable.is_some() {
            return Ok(());
        }
        if self.snapshot {
            // Its unlogged reads cannot be checked: restart irrevocably.
            self.wants_irrevocable = true;
            return Err(Self::snapshot_missed());
        }
        if !self.try_acquire_irrevocability() {
            // Another transaction is irrevocable, and it may be waiting for
            // a placeholder of ours: never wait for it holding anything.
            // Restart irrevocably (the restart waits for the token after the
            // cleanup has unlinked our placeholders).
            self.wants_irrevocable = true;
            return Err(Abort::new(AbortCause::Irrevocable));
        }
        // Writers that passed the gate before it closed hold their locks
        // until they install; wait for them, then check our reads.
        let ctx = self.commit_ctx(0);
        let settled = self.items.iter().filter(|it| it.is_read()).all(|it| {
            // SAFETY: objects outlive the transaction.
            let obj = unsafe { it.object.as_ref() };
            waits_until(|| obj.check(it, &ctx))
        }) && self
            .reads
            .iter()
            .all(|r| waits_until(|| self.logged_read_holds(r)))
            && self
                .words
                .iter()
                .all(|w| waits_until(|| self.word_read_holds(w)));
        if !settled {
            self.wants_irrevocable = true;
            return Err(Abort::new(AbortCause::Opacity));
        }
        self.start = clock::now().time();
        Ok(())
    }
}

/// Waits, yielding, until `holds` (a read still current once the writers
/// that passed the closing gate have installed); false if it still does
/// not after `UPGRADE_WAITS` tries.
fn waits_until(holds: impl Fn() -> bool) -> bool {
    let mut tries = 0;
    while !holds() {
        tries += 1;
        if tries > UPGRADE_WAITS {
            return false;
        }
        crate::sync::yield_now();
    }
    true
}
