//! Memory-level parallelism: the window of overlapped accesses a core has in flight.
//!
//! An out-of-order core does not wait for a miss before issuing the next independent access;
//! it waits when its miss-handling resources are full, or when an instruction needs the data.
//! Simulated code says which accesses are independent by issuing them as *overlapped*
//! ([`crate::Cpu::load_overlapped`], [`crate::Cpu::store_overlapped`]). Each still takes
//! effect when issued, like every access here; only its latency is hidden: the core goes on
//! one cycle later, with the access's completion time in its window. When the window holds
//! `max_outstanding` accesses still in flight, the next one waits for the earliest to
//! complete. A fence, and the end of the thread, wait for all of them.
//!
//! Inside a transaction an overlapped access blocks like any other: commit would have to wait
//! for it, and a conflict must abort the transaction before its next instruction.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::{Machine, Outcome};
use crate::engine::time::Cycle;

/// The accesses one core has in flight.
#[derive(Debug, Default)]
pub struct MissWindow {
    /// Completion times of the accesses in flight (earliest first).
    in_flight: BinaryHeap<Reverse<Cycle>>,
    /// When the last access in flight completes.
    last: Cycle,
    /// The core waited for a full window, so the access it re-issues has not been counted.
    waited: bool,
}

impl MissWindow {
    /// Drops accesses completed by `now`; returns how many remain.
    fn retire(&mut self, now: Cycle) -> usize {
        while self.in_flight.peek().is_some_and(|&Reverse(t)| t <= now) {
            self.in_flight.pop();
        }
        self.in_flight.len()
    }

    /// When every access in flight has completed (at least `now`).
    pub fn drained(&self, now: Cycle) -> Cycle {
        self.last.max(now)
    }
}

impl Machine {
    /// If `core`'s window is full, the cycles until its earliest access completes (the
    /// overlapped access must wait that long before issuing).
    pub(super) fn window_full(&mut self, core: usize) -> Option<Cycle> {
        let max = self.cfg.max_outstanding as usize;
        let c = &mut self.cores[core];
        if c.window.retire(c.now) < max {
            return None;
        }
        let Reverse(t) = *c
            .window
            .in_flight
            .peek()
            .expect("a full window is not empty");
        c.window.waited = true;
        self.stats.window_full_waits += 1;
        Some(t - c.now)
    }

    /// Whether the re-issued access is the one that waited for a full window (and so must
    /// still be counted); clears the mark.
    pub(super) fn take_window_wait(&mut self, core: usize) -> bool {
        std::mem::take(&mut self.cores[core].window.waited)
    }

    /// Turns a completed access into an overlapped one: its latency goes into the window and
    /// the core goes on after one issue cycle.
    pub(super) fn overlap(&mut self, core: usize, out: Outcome) -> Outcome {
        match out {
            Outcome::Done(v, lat) => {
                self.stats.overlapped += 1;
                let c = &mut self.cores[core];
                let done = c.now + lat;
                c.window.in_flight.push(Reverse(done));
                c.window.last = c.window.last.max(done);
                Outcome::Done(v, 1)
            }
            other => other,
        }
    }

    /// The cycles a fence on `core` waits for its overlapped accesses (at least an L1 hit).
    pub(super) fn fence_cycles(&mut self, core: usize) -> Cycle {
        let c = &mut self.cores[core];
        let wait = c.window.drained(c.now) - c.now;
        c.window.retire(c.now + wait);
        wait.max(self.cfg.l1.latency)
    }
}
