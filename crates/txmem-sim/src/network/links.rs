//! Occupancy of links over time, in windows of [`WINDOW`] cycles.
//!
//! A link carries one flit per cycle. A message takes consecutive cycles from the first
//! free cycle at or after its head's arrival, in the window of that time or a later one.
//! Requests are served when they are issued, so a reservation can lie ahead of later ones (a
//! response leaving memory hundreds of cycles from now); windows keep the free time before it
//! usable, where a single "busy until" time per link would make every later message queue
//! behind it. Within a window, cycles are taken from its start, so a message that finds a
//! window partly taken goes after what is there.

use crate::engine::time::Cycle;

/// Cycles per window; a window carries this many flits.
pub const WINDOW: Cycle = 8;

/// Windows remembered per link: reservations more than `RING * WINDOW` cycles apart share
/// a slot, and the later one treats the slot as full until the earlier one's time has passed.
const RING: usize = 256;

/// Per window of every link: the first cycle of the window still free.
#[derive(Debug)]
pub struct LinkTable {
    /// Per link and slot: the window the slot holds.
    window: Vec<u64>,
    /// Per link and slot: cycles of that window taken from its start (0..=WINDOW).
    taken: Vec<u8>,
}

impl LinkTable {
    /// A table for `links` links, all free.
    pub fn new(links: usize) -> Self {
        LinkTable {
            window: vec![u64::MAX; links * RING],
            taken: vec![0; links * RING],
        }
    }

    /// The slot of window `w` of `link`, emptied if it held an older window; `None` if it
    /// holds a later one.
    #[inline]
    fn slot(&mut self, link: usize, w: u64) -> Option<usize> {
        let slot = link * RING + (w as usize % RING);
        let held = self.window[slot];
        if held == w {
            return Some(slot);
        }
        if held != u64::MAX && held > w {
            return None;
        }
        self.window[slot] = w;
        self.taken[slot] = 0;
        Some(slot)
    }

    /// Reserves `flits` consecutive cycles of `link` for a message whose head arrives at
    /// `at`; returns when the head leaves (at least `at`).
    pub fn reserve(&mut self, link: usize, at: Cycle, flits: u32) -> Cycle {
        let mut w = at / WINDOW;
        loop {
            let Some(slot) = self.slot(link, w) else {
                w += 1;
                continue;
            };
            let start = at.max(w * WINDOW + Cycle::from(self.taken[slot]));
            if start >= (w + 1) * WINDOW {
                w += 1;
                continue;
            }
            let end = start + Cycle::from(flits);
            self.taken[slot] = (end - w * WINDOW).min(WINDOW) as u8;
            // A long message's tail takes the start of the windows after.
            let mut next = w + 1;
            while end > next * WINDOW {
                if let Some(s) = self.slot(link, next) {
                    let spill = (end - next * WINDOW).min(WINDOW) as u8;
                    self.taken[s] = (self.taken[s] + spill).min(WINDOW as u8);
                }
                next += 1;
            }
            return start;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_free_link_sends_at_once_and_a_busy_one_queues() {
        let mut t = LinkTable::new(2);
        assert_eq!(t.reserve(0, 3, 5), 3);
        // Cycles 3..8 are taken: the next message goes after them, its tail into window 1.
        assert_eq!(t.reserve(0, 3, 3), 8);
        assert_eq!(t.reserve(0, 4, 1), 11);
        // Another link is independent.
        assert_eq!(t.reserve(1, 4, 8), 4);
    }

    #[test]
    fn a_reservation_far_ahead_leaves_the_present_free() {
        let mut t = LinkTable::new(1);
        assert_eq!(t.reserve(0, 1000, 8), 1000);
        assert_eq!(t.reserve(0, 10, 8), 10);
        // Slots holding later windows (here windows 1 and 2 again, a ring later) are not
        // reused for earlier ones: the message goes to window 3.
        let far = 10 + (RING as Cycle) * WINDOW;
        assert_eq!(t.reserve(0, far, 8), far);
        assert_eq!(t.reserve(0, 10, 1), 3 * WINDOW);
    }
}
