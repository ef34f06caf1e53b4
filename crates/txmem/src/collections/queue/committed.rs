//! Committed (non-transactional) reads of a `TQueue`: its length and its
//! elements, read outside any transaction.

use std::sync::atomic::Ordering;

use crate::version::TVersion;

use super::blocks::Block;
use super::TQueue;

impl<T: Clone + Send + Sync + 'static> TQueue<T> {
    /// The number of committed elements, outside any transaction. The push
    /// and pop counters are read one after the other, so under concurrent
    /// commits this is an estimate (never more than the capacity).
    pub fn load_len(&self) -> usize {
        let popped = self.popped.load(Ordering::Acquire);
        let pushed = self.pushed.load(Ordering::Acquire);
        pushed.saturating_sub(popped) as usize
    }

    /// The committed elements, front first, outside any transaction (a
    /// consistent snapshot: retried while commits change the queue).
    pub fn load_vec(&self) -> Vec<T> {
        let guard = crossbeam_epoch::pin();
        loop {
            let p1 = self.popv.load();
            let u1 = self.pushv.load();
            if TVersion::is_locked(p1) || TVersion::is_locked(u1) {
                std::hint::spin_loop();
                continue;
            }
            let popped = self.popped.load(Ordering::Acquire);
            let mut block = self.head.load(Ordering::Acquire).cast_const();
            let pushed = self.pushed.load(Ordering::Acquire);
            let mut out = Vec::new();
            for i in popped..pushed {
                // SAFETY: as in `nth` (pinned by `guard`): elements before
                // `pushed` are written and linked, and a block found is
                // allocated while the pin lasts.
                unsafe {
                    block = Block::find(block, i);
                    if block.is_null() {
                        break; // an outdated head: the check below fails
                    }
                    out.push((*Block::element(block, i)).clone());
                }
            }
            if self.popv.load() == p1 && self.pushv.load() == u1 {
                drop(guard);
                return out;
            }
        }
    }
}
