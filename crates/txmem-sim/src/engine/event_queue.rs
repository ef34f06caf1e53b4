//! The event queue: a binary min-heap keyed by (time, sequence number).
//!
//! An event is one 16-byte value, `time << 64 | seq << 9 | timer << 8 | core`, so that the
//! heap compares and moves whole events with plain integer operations. Sequence numbers are
//! unique, so the order is total: equal times pop in scheduling order.

use super::time::Cycle;

/// What an event does when its time comes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum EventKind {
    /// The core's pending operation completes, unless the core has scheduled a later
    /// wake-up since (then this one is stale: compare [`Event::seq`] with the sequence
    /// number [`EventQueue::push`] returned for the latest one).
    Wake,
    /// The core's periodic timer fires.
    Timer,
}

const TIMER_BIT: u64 = 1 << 8;

/// One scheduled event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Event(u128);

impl Event {
    #[inline]
    fn new(time: Cycle, seq: u64, core: usize, kind: EventKind) -> Event {
        debug_assert!(core < 256 && seq < 1 << 55);
        let timer = match kind {
            EventKind::Wake => 0,
            EventKind::Timer => TIMER_BIT,
        };
        Event((u128::from(time) << 64) | u128::from((seq << 9) | timer | core as u64))
    }

    /// When it happens.
    #[inline]
    pub fn time(&self) -> Cycle {
        (self.0 >> 64) as u64
    }

    #[inline]
    fn low(&self) -> u64 {
        self.0 as u64
    }

    /// The core concerned.
    #[inline]
    pub fn core(&self) -> usize {
        (self.low() & 0xFF) as usize
    }

    /// Scheduling sequence number (unique: the tie-breaker between equal times).
    #[inline]
    pub fn seq(&self) -> u64 {
        self.low() >> 9
    }

    /// What happens.
    #[inline]
    pub fn kind(&self) -> EventKind {
        if self.low() & TIMER_BIT != 0 {
            EventKind::Timer
        } else {
            EventKind::Wake
        }
    }
}

/// Min-heap of events; equal times pop in scheduling order, so runs are deterministic.
///
/// The executor pops an event and the core it wakes usually schedules its next one soon
/// after, so a popped root is only marked taken: the next push fills the hole and sifts
/// down once, instead of a sift for the pop and another for the push.
#[derive(Debug, Default)]
pub struct EventQueue {
    heap: Vec<Event>,
    /// `heap[0]` was popped already (a hole waiting for the next push).
    root_taken: bool,
    next_seq: u64,
}

impl EventQueue {
    /// An empty queue.
    pub fn new() -> Self {
        EventQueue::default()
    }

    /// Schedules `kind` for `core` (< 256) at `time`; returns the event's sequence number.
    #[inline]
    pub fn push(&mut self, time: Cycle, core: usize, kind: EventKind) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        let ev = Event::new(time, seq, core, kind);
        if self.root_taken {
            self.root_taken = false;
            self.sift_down(0, ev);
        } else {
            self.sift_up(ev);
        }
        seq
    }

    /// Appends `ev` and moves it up to its place.
    #[inline]
    fn sift_up(&mut self, ev: Event) {
        let mut i = self.heap.len();
        self.heap.push(ev);
        while i > 0 {
            let parent = (i - 1) / 2;
            let p = self.heap[parent];
            if p <= ev {
                break;
            }
            self.heap[i] = p;
            i = parent;
        }
        self.heap[i] = ev;
    }

    /// Puts `ev` into the hole at `i` and moves it down to its place.
    #[inline]
    fn sift_down(&mut self, mut i: usize, ev: Event) {
        let n = self.heap.len();
        loop {
            let mut c = 2 * i + 1;
            if c >= n {
                break;
            }
            if c + 1 < n && self.heap[c + 1] < self.heap[c] {
                c += 1;
            }
            let m = self.heap[c];
            if ev <= m {
                break;
            }
            self.heap[i] = m;
            i = c;
        }
        self.heap[i] = ev;
    }

    /// Removes and returns the earliest event.
    #[inline]
    pub fn pop(&mut self) -> Option<Event> {
        if self.root_taken {
            // Close the hole left by the previous pop with the last event.
            let last = self.heap.pop().expect("a taken root is in the heap");
            if self.heap.is_empty() {
                self.root_taken = false;
                return None;
            }
            self.sift_down(0, last);
        }
        let top = *self.heap.first()?;
        self.root_taken = true;
        Some(top)
    }

    /// Time of the earliest event, if any.
    #[inline]
    pub fn next_time(&self) -> Option<Cycle> {
        let h = &self.heap;
        let first = if self.root_taken {
            // The smaller child of the hole.
            match (h.get(1), h.get(2)) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, _) => a,
            }
        } else {
            h.first()
        };
        first.map(Event::time)
    }

    /// Number of pending events.
    pub fn len(&self) -> usize {
        self.heap.len() - usize::from(self.root_taken)
    }

    /// Whether no event is pending.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::rng::SplitMix64;

    #[test]
    fn pops_in_time_then_sequence_order() {
        let mut q = EventQueue::new();
        q.push(5, 0, EventKind::Timer);
        q.push(3, 1, EventKind::Wake);
        q.push(5, 2, EventKind::Wake);
        q.push(1, 3, EventKind::Timer);
        let order: Vec<(u64, usize, EventKind)> = std::iter::from_fn(|| q.pop())
            .map(|e| (e.time(), e.core(), e.kind()))
            .collect();
        assert_eq!(
            order,
            vec![
                (1, 3, EventKind::Timer),
                (3, 1, EventKind::Wake),
                (5, 0, EventKind::Timer),
                (5, 2, EventKind::Wake)
            ]
        );
        assert!(q.is_empty());
    }

    #[test]
    fn pops_like_a_sorted_list() {
        let mut rng = SplitMix64::new(3);
        let mut q = EventQueue::new();
        let mut model = std::collections::BTreeSet::new();
        for _ in 0..5000 {
            if rng.below(3) > 0 {
                let (t, c) = (rng.below(50), rng.below(256) as usize);
                let kind = if rng.below(2) == 0 {
                    EventKind::Wake
                } else {
                    EventKind::Timer
                };
                let seq = q.push(t, c, kind);
                model.insert((t, seq, c, kind));
            }
            assert_eq!(q.next_time(), model.first().map(|e| e.0));
            if rng.below(2) == 0 {
                let got = q.pop().map(|e| (e.time(), e.seq(), e.core(), e.kind()));
                assert_eq!(got, model.pop_first());
            }
            assert_eq!(q.len(), model.len());
        }
    }
}
