//! The event queue: events kept sorted by (time, sequence number).
//!
//! The queue is small (about one live wake-up per core, a timer per core, and the stale
//! wake-ups that dooms leave behind), so a sorted array beats a binary heap: popping is
//! reading the head, and a new event is placed by a binary search and a short move of the
//! entries after it. Keys are unique, so the order is the same total order a heap would
//! produce.

use super::time::Cycle;
use std::cmp::Ordering;

/// What an event does when its time comes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    /// The operation `token` of `core` completes (stale if the core moved on).
    Wake {
        /// Operation token the wake-up belongs to.
        token: u64,
    },
    /// The core's periodic timer fires.
    Timer,
}

const TIMER: u64 = u64::MAX;

/// One scheduled event, packed into 24 bytes: the heap moves these around a lot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event {
    /// When it happens.
    pub time: Cycle,
    /// Scheduling sequence number (tie-breaker) << 8 | core.
    seq_core: u64,
    /// Wake token, or `TIMER`.
    token: u64,
}

impl Event {
    /// The core concerned.
    #[inline]
    pub fn core(&self) -> usize {
        (self.seq_core & 0xFF) as usize
    }

    /// Scheduling sequence number.
    #[inline]
    pub fn seq(&self) -> u64 {
        self.seq_core >> 8
    }

    /// What happens.
    #[inline]
    pub fn kind(&self) -> EventKind {
        if self.token == TIMER {
            EventKind::Timer
        } else {
            EventKind::Wake { token: self.token }
        }
    }

    #[inline]
    fn key(&self) -> u128 {
        (u128::from(self.time) << 64) | u128::from(self.seq_core)
    }
}

impl Ord for Event {
    #[inline]
    fn cmp(&self, other: &Self) -> Ordering {
        // Reversed (earlier events are greater), as a max-heap of events would want.
        other.key().cmp(&self.key())
    }
}

impl PartialOrd for Event {
    #[inline]
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Priority queue of events, earliest first; equal times pop in scheduling order, so runs are
/// deterministic.
#[derive(Debug, Default)]
pub struct EventQueue {
    /// `events[head..]` are the pending events in ascending key order; `events[..head]` are
    /// popped ones not yet compacted away.
    events: Vec<Event>,
    head: usize,
    next_seq: u64,
}

/// Popped entries tolerated at the front before they are compacted away.
const COMPACT_AT: usize = 64;

impl EventQueue {
    /// An empty queue.
    pub fn new() -> Self {
        EventQueue::default()
    }

    /// Schedules `kind` for `core` (< 256) at `time`.
    #[inline]
    pub fn push(&mut self, time: Cycle, core: usize, kind: EventKind) {
        debug_assert!(core < 256);
        let seq = self.next_seq;
        self.next_seq += 1;
        let token = match kind {
            EventKind::Wake { token } => {
                debug_assert_ne!(token, TIMER);
                token
            }
            EventKind::Timer => TIMER,
        };
        let ev = Event {
            time,
            seq_core: (seq << 8) | core as u64,
            token,
        };
        if self.head >= COMPACT_AT {
            self.events.drain(..self.head);
            self.head = 0;
        }
        // The new key is larger than every pending key of the same time (sequence numbers
        // grow), so it goes after all keys not greater than it.
        let key = ev.key();
        let pos = self.head + self.events[self.head..].partition_point(|e| e.key() < key);
        self.events.insert(pos, ev);
    }

    /// Removes and returns the earliest event.
    #[inline]
    pub fn pop(&mut self) -> Option<Event> {
        let ev = *self.events.get(self.head)?;
        self.head += 1;
        if self.head == self.events.len() {
            self.events.clear();
            self.head = 0;
        }
        Some(ev)
    }

    /// Time of the earliest event, if any.
    #[inline]
    pub fn next_time(&self) -> Option<Cycle> {
        self.events.get(self.head).map(|e| e.time)
    }

    /// Number of pending events.
    pub fn len(&self) -> usize {
        self.events.len() - self.head
    }

    /// Whether no event is pending.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pops_in_time_then_sequence_order() {
        let mut q = EventQueue::new();
        q.push(5, 0, EventKind::Timer);
        q.push(3, 1, EventKind::Wake { token: 1 });
        q.push(5, 2, EventKind::Wake { token: 2 });
        q.push(1, 3, EventKind::Timer);
        let order: Vec<(u64, usize, EventKind)> = std::iter::from_fn(|| q.pop())
            .map(|e| (e.time, e.core(), e.kind()))
            .collect();
        assert_eq!(
            order,
            vec![
                (1, 3, EventKind::Timer),
                (3, 1, EventKind::Wake { token: 1 }),
                (5, 0, EventKind::Timer),
                (5, 2, EventKind::Wake { token: 2 })
            ]
        );
        assert!(q.is_empty());
    }

    #[test]
    fn matches_a_binary_heap() {
        use std::collections::BinaryHeap;
        let mut q = EventQueue::new();
        let mut heap = BinaryHeap::new();
        let mut x = 12345u64;
        let mut pushed = 0u64;
        for i in 0..5000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if !x.is_multiple_of(3) || q.is_empty() {
                let t = i / 4 + x % 50;
                let core = (x >> 8) as usize % 8;
                q.push(t, core, EventKind::Wake { token: i + 1 });
                heap.push(std::cmp::Reverse((t, pushed, core)));
                pushed += 1;
            } else {
                let e = q.pop().unwrap();
                let std::cmp::Reverse((t, seq, core)) = heap.pop().unwrap();
                assert_eq!((e.time, e.seq(), e.core()), (t, seq, core));
                assert_eq!(q.len(), heap.len());
            }
            assert_eq!(q.next_time(), heap.peek().map(|r| r.0 .0));
        }
    }
}
