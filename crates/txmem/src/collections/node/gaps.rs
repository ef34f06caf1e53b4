//! The gap versions of a sorted chain of nodes (the sorted lists): each
//! node's gap covers the interval after it; searches, scans, and links and
//! unlinks under per-gap locks.

use std::ptr;
use std::sync::atomic::{AtomicPtr, Ordering};

use crossbeam_epoch::Guard;

use crate::error::TxResult;
use crate::tx::Transaction;
use crate::version::TVersion;

use super::{retire, NodeCollection};
use crate::collections::{inconsistent, still_current, struct_wait};

/// Gap flag: the node was unlinked (its gap no longer means anything).
pub(in crate::collections) const UNLINKED: u64 = 0b010;

/// A position in a [`GapChain`]: the last node before a searched key (null
/// for the head), its gap word, and its successor at that word.
pub(in crate::collections) struct Pos<N> {
    pub pred: *const N,
    pub gap: u64,
    pub next: *const N,
}

/// A sorted chain of nodes in which every node (and the head) has a *gap*
/// version covering the interval up to its successor. Gap items are keyed
/// by `address | 1` (the head's by 1). Readers search without locks and
/// validate against gap words.
///
/// # The gap lock
///
/// A node's link changes only while its gap word is locked (the
/// word's own lock bit, taken with [`TVersion::try_lock_at`]): linking a
/// node after `p` locks `p`'s gap; unlinking `n` locks its predecessor's
/// gap, then its own. Whoever holds a gap lock holds it for a pointer
/// splice and never waits for anything while holding it (a second lock that
/// is busy makes it release the first and start over), so waiting for a
/// gap lock always ends, and two structural changes cannot deadlock.
///
/// # What a gap word means
///
/// * A link bumps the predecessor's gap (`next_after(word, 0)`): a read of
///   that interval made before the link is invalid after it. The new node's
///   gap starts at the predecessor's new version.
/// * Unlinking a removed node bumps its predecessor's gap to at least the
///   removal's commit version, and the node's own gap too, flagged
///   [`UNLINKED`]; a search standing on such a node starts again.
/// * Unlinking an abandoned placeholder (whose insert never committed)
///   bumps its predecessor's gap past the placeholder's own gap version.
///   No transaction saw the placeholder as present, but while it was linked
///   its gap took the changes committed in the interval after it (a
///   removal of its successor bumps the placeholder's gap, not the
///   predecessor's); the predecessor's gap now covers that interval and
///   must not look older than those changes.
///
/// So a gap's version is never older than a committed removal in its
/// interval. That is what lets an opaque reader accept a gap word at or
/// below its snapshot bound without revalidating: a removal committed after
/// the snapshot shows up as a newer word.
///
/// # Reaching nodes safely
///
/// Every node a search reaches was linked, and before the node it is
/// looking for, at some moment after the search started: the head is
/// always linked; the successor of a linked node is linked; and an unlinked
/// node keeps the successor it had when it was unlinked (no link after it
/// is possible: its gap is flagged). Nodes are retired through the epoch
/// only once unlinked, so a search that is pinned from its start never
/// reaches freed memory.
pub(in crate::collections) trait GapChain: NodeCollection {
    /// The gap version after `n` (the head's for null).
    fn gap(&self, n: *const Self::Node) -> &TVersion;

    /// The link after `n` (the head's for null).
    fn link(&self, n: *const Self::Node) -> &AtomicPtr<Self::Node>;

    /// The last node satisfying `before`, by a traversal from the head
    /// consistent with that node's gap word; the search starts again if the
    /// node it stands on is unlinked. The caller is pinned.
    #[inline]
    fn locate(&self, before: impl Fn(&Self::Node) -> bool) -> Pos<Self::Node> {
        let mut spins = 0;
        'restart: loop {
            let mut pred: *const Self::Node = ptr::null();
            loop {
                // Walk by links alone: any path of links is sorted and
                // leads back into the chain (see "Reaching nodes safely"),
                // so only the node the walk stops at needs its gap read.
                // (An inner loop, so that the compiler sees `pred` is a
                // node, not the head, on every step after the first.)
                let mut nx = self.link(pred).load(Ordering::Acquire) as *const Self::Node;
                // SAFETY: reached through published links while pinned.
                while !nx.is_null() && before(unsafe { &*nx }) {
                    pred = nx;
                    nx = self.link(pred).load(Ordering::Acquire);
                }
                let g = self.gap(pred);
                let w = g.load();
                if TVersion::is_locked(w) {
                    struct_wait(&mut spins);
                    continue;
                }
                if w & UNLINKED != 0 {
                    continue 'restart;
                }
                // The successor again, now that the gap word is known.
                let nx = self.link(pred).load(Ordering::Acquire) as *const Self::Node;
                // SAFETY: as above.
                if !nx.is_null() && before(unsafe { &*nx }) {
                    pred = nx;
                    continue;
                }
                if g.load() == w {
                    return Pos {
                        pred,
                        gap: w,
                        next: nx,
                    };
                }
            }
        }
    }

    /// Records a read of the gap after `pred` at `word`.
    #[inline]
    fn record_gap<'env>(
        &'env self,
        tx: &mut Transaction<'env>,
        pred: *const Self::Node,
        word: u64,
    ) -> TxResult<()> {
        let id = tx.item(self, pred as u64 | 1);
        tx.record_read(id, word)?;
        still_current(tx, word, self.gap(pred).load())
    }

    /// Reads the gap after `n` consistently with its successor, records it
    /// and returns the successor: one step of a scan. The caller is pinned
    /// and reached `n` while pinned.
    ///
    /// A node unlinked since the scan stepped onto it is passed over only
    /// in an irrevocable scan (which relies on no gap). Any other unlink,
    /// even of an abandoned placeholder, moved the predecessor's gap that
    /// the scan recorded, and the frozen link may skip changes committed
    /// after the scan's snapshot: the attempt aborts.
    fn record_gap_after<'env>(
        &'env self,
        tx: &mut Transaction<'env>,
        n: *const Self::Node,
    ) -> TxResult<*const Self::Node> {
        let g = self.gap(n);
        let mut spins = 0;
        loop {
            let w = g.load();
            if TVersion::is_locked(w) {
                struct_wait(&mut spins);
                continue;
            }
            if w & UNLINKED != 0 {
                if tx.is_irrevocable() {
                    return Ok(self.link(n).load(Ordering::Acquire) as *const Self::Node);
                }
                return Err(inconsistent());
            }
            let nx = self.link(n).load(Ordering::Acquire) as *const Self::Node;
            if g.load() == w {
                self.record_gap(tx, n, w)?;
                return Ok(nx);
            }
        }
    }

    /// Links `node` after `pos.pred` if that gap still holds `pos.gap`
    /// (which `locate` returned, so it is neither locked nor unlinked), and
    /// bumps the gap; returns the predecessor's new gap word, or `None` (and
    /// changes nothing) if the gap moved. The new node's link and gap word
    /// are set here; `node` must not be shared yet.
    ///
    /// Every change of a node's link moves its gap word (see the trait
    /// docs), so a gap locked at `pos.gap` still leads to `pos.next`.
    #[inline]
    fn link_after(&self, pos: &Pos<Self::Node>, node: *mut Self::Node) -> Option<u64> {
        let g = self.gap(pos.pred);
        if !g.try_lock_at(pos.gap) {
            return None;
        }
        let new_gap = TVersion::next_after(pos.gap, 0);
        debug_assert!(ptr::eq(
            self.link(pos.pred).load(Ordering::Relaxed),
            pos.next
        ));
        self.link(node)
            .store(pos.next as *mut Self::Node, Ordering::Relaxed);
        // The new node's gap takes over part of the predecessor's interval,
        // and must not look older than the removals committed in it (see
        // the trait docs): a fresh gap at version 0 would let a reader whose
        // snapshot predates such a removal read the gap without the opacity
        // check noticing. The predecessor's new gap is at least every such
        // commit version (the clock is not: no-clock modes commit at
        // versions above it). When gaps run ahead of the clock, the first
        // reader to extend its snapshot over one moves the clock up
        // (`Transaction::record_read`).
        self.gap(node).unlock_to(TVersion::version_of(new_gap));
        // Release: a reader that loads the link sees the node initialized.
        self.link(pos.pred).store(node, Ordering::Release);
        g.unlock_to(new_gap);
        Some(new_gap)
    }

    /// Records in the transaction a placeholder it has just linked with
    /// [`link_after`](Self::link_after) (which returned `new_gap`), as
    /// [`adopt_placeholder`](NodeCollection::adopt_placeholder) does, and
    /// keeps the transaction's phantom protection: if it had read the
    /// predecessor's gap, the read moves to the new word and a read of the
    /// new node's gap is recorded at its first word. The two gaps together
    /// cover the interval the transaction read; without the second, another
    /// transaction could commit an insert after the new node, inside that
    /// interval, unnoticed.
    fn adopt_link<'env>(
        &'env self,
        tx: &mut Transaction<'env>,
        pos: &Pos<Self::Node>,
        node: *const Self::Node,
        new_gap: u64,
        absent: bool,
    ) -> TxResult<()> {
        let key = pos.pred as u64 | 1;
        if self.adopt_placeholder(tx, node, key, (pos.gap, new_gap), absent)? {
            let id = tx.item(self, node as u64 | 1);
            // No opacity check needed: while the predecessor's gap was
            // locked, the new node's interval was part of an interval this
            // transaction had read at the current version. If another link
            // after the node came in since, this read is stale and fails
            // validation.
            tx.keep_read(id, TVersion::version_of(new_gap));
        }
        Ok(())
    }

    /// Unlinks `np` if it is linked right after `pred` and both gap locks
    /// can be taken at once, and retires it; false (nothing changed) otherwise.
    /// With a commit version the gap before it is bumped to at least that
    /// version; its own gap is bumped and flagged [`UNLINKED`].
    ///
    /// Never waits: a busy lock makes it release what it took and fail, so
    /// that the caller waits holding nothing.
    ///
    /// # Safety
    ///
    /// The caller owns the removal of `np` (a committed removal, or its own
    /// abandoned placeholder), which is linked, and nobody else unlinks it;
    /// `pred` was reached while pinned (or is null: the head); the caller
    /// is pinned by `guard`.
    unsafe fn try_splice_out(
        &self,
        pred: *const Self::Node,
        np: *const Self::Node,
        cv: Option<u64>,
        guard: &Guard,
    ) -> bool {
        let pgap = self.gap(pred);
        let pw = pgap.load();
        if TVersion::is_locked(pw) || pw & UNLINKED != 0 || !pgap.try_lock_at(pw) {
            return false;
        }
        // Under `pred`'s gap lock its link is stable; and `pred` is linked
        // (its gap is not flagged), so `np` following it is linked too.
        let stored = self.link(pred).load(Ordering::Relaxed);
        if !ptr::eq(stored, np) {
            pgap.unlock_unchanged(pw);
            return false;
        }
        let ngap = self.gap(np);
        let nw = ngap.load();
        debug_assert_eq!(nw & UNLINKED, 0, "only the owner unlinks a node");
        if TVersion::is_locked(nw) || !ngap.try_lock_at(nw) {
            pgap.unlock_unchanged(pw);
            return false;
        }
        // `np`'s link is stable too now (its gap is locked).
        self.link(pred)
            .store(self.link(np).load(Ordering::Relaxed), Ordering::Release);
        ngap.unlock_to(TVersion::next_after(nw, cv.unwrap_or(0)) | UNLINKED);
        // The predecessor's gap now covers `np`'s interval too, so it must
        // move past every change that interval saw. For a committed removal
        // the commit version does that. An abandoned placeholder changed no
        // committed contents itself, but while it was linked, commits may
        // have changed the interval after it (a removal of its successor
        // bumps *its* gap): a reader that recorded the predecessor's gap
        // and the placeholder's could otherwise find the predecessor's gap
        // unchanged and miss them. So its unlink bumps the predecessor's
        // gap past its own gap's version as well.
        let past = match cv {
            Some(cv) => cv,
            None => TVersion::version_of(nw),
        };
        pgap.unlock_to(TVersion::next_after(pw, past));
        // SAFETY: unreachable from the chain now, and retired only by the
        // owner of its removal (per the contract). The link's own pointer
        // is freed, not `np` (see `NodeCollection::unlink`).
        unsafe { retire::<Self>(guard, stored as *const Self::Node) };
        true
    }
}
