//! The event queue: a binary min-heap keyed by (time, sequence number).

use super::time::Cycle;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

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
        // Reversed so that `BinaryHeap` (a max-heap) pops the earliest event first.
        other.key().cmp(&self.key())
    }
}

impl PartialOrd for Event {
    #[inline]
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Min-heap of events; equal times pop in scheduling order, so runs are deterministic.
#[derive(Debug, Default)]
pub struct EventQueue {
    heap: BinaryHeap<Event>,
    next_seq: u64,
}

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
        self.heap.push(Event {
            time,
            seq_core: (seq << 8) | core as u64,
            token,
        });
    }

    /// Removes and returns the earliest event.
    #[inline]
    pub fn pop(&mut self) -> Option<Event> {
        self.heap.pop()
    }

    /// Time of the earliest event, if any.
    #[inline]
    pub fn next_time(&self) -> Option<Cycle> {
        self.heap.peek().map(|e| e.time)
    }

    /// Number of pending events.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// Whether no event is pending.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
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
}
