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
    /// Per link and slot: the window the slot holds (high 56 bits) and the cycles of it
    /// taken from its start (low 8 bits, 0..=WINDOW), in one word so that a reservation
    /// reads one place; `EMPTY` for a slot never used.
    slots: Vec<u64>,
    /// Per link, a run of windows `[from, to)` known to have no cycle left: a message whose
    /// head arrives in it starts its search at `to`. Under contention this spares walking the
    /// same full windows message after message. (A window never gets room back: its slot is
    /// reused only for a window a whole ring later, which makes it unusable instead.)
    full: Vec<(u64, u64)>,
}

const EMPTY: u64 = u64::MAX;

impl LinkTable {
    /// A table for `links` links, all free.
    pub fn new(links: usize) -> Self {
        LinkTable {
            slots: vec![EMPTY; links * RING],
            full: vec![(0, 0); links],
        }
    }

    /// The slot of window `w` of `link` and the cycles of it taken, emptied if it held an
    /// older window; `None` if it holds a later one.
    #[inline]
    fn slot(&mut self, link: usize, w: u64) -> Option<(usize, u64)> {
        let slot = link * RING + (w as usize % RING);
        let held = self.slots[slot];
        if held != EMPTY && held >> 8 == w {
            return Some((slot, held & 0xff));
        }
        if held != EMPTY && held >> 8 > w {
            return None;
        }
        self.slots[slot] = w << 8;
        Some((slot, 0))
    }

    /// Reserves `flits` consecutive cycles of `link` for a message whose head arrives at
    /// `at`; returns when the head leaves (at least `at`).
    #[inline]
    pub fn reserve(&mut self, link: usize, at: Cycle, flits: u32) -> Cycle {
        let first = at / WINDOW;
        let (from, to) = self.full[link];
        let mut w = if (from..to).contains(&first) {
            to
        } else {
            first
        };
        loop {
            let Some((slot, taken)) = self.slot(link, w) else {
                w += 1;
                continue;
            };
            let start = at.max(w * WINDOW + taken);
            if start >= (w + 1) * WINDOW {
                w += 1;
                continue;
            }
            let end = start + Cycle::from(flits);
            let taken = (end - w * WINDOW).min(WINDOW);
            self.slots[slot] = (w << 8) | taken;
            // Windows `first..w` were full; so is `w` if this message filled it.
            let full_to = if taken == WINDOW { w + 1 } else { w };
            if full_to > first {
                self.full[link] = if (from..=to).contains(&first) {
                    (from, to.max(full_to))
                } else {
                    (first, full_to)
                };
            }
            // A long message's tail takes the start of the windows after.
            let mut next = w + 1;
            while end > next * WINDOW {
                if let Some((s, taken)) = self.slot(link, next) {
                    let spill = (end - next * WINDOW).min(WINDOW);
                    self.slots[s] = (next << 8) | (taken + spill).min(WINDOW);
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

    #[test]
    fn a_queue_of_whole_windows_is_served_in_order() {
        let mut t = LinkTable::new(1);
        // Twenty messages of a window each, all arriving at cycle 3: one after another.
        for k in 0..20 {
            assert_eq!(t.reserve(0, 3, 8), if k == 0 { 3 } else { 8 * k + 3 });
        }
        // One arriving later inside the full run goes after it; one arriving before it still
        // finds the partly free first window full (it was taken from cycle 3 on).
        assert_eq!(t.reserve(0, 50, 1), 163);
        assert_eq!(t.reserve(0, 0, 1), 164);
    }
}
