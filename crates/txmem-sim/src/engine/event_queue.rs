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

/// One scheduled event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event {
    /// When it happens.
    pub time: Cycle,
    /// Tie-breaker: order of scheduling.
    pub seq: u64,
    /// The core concerned.
    pub core: u32,
    /// What happens.
    pub kind: EventKind,
}

impl Ord for Event {
    fn cmp(&self, other: &Self) -> Ordering {
        // Reversed so that `BinaryHeap` (a max-heap) pops the earliest event first.
        (other.time, other.seq).cmp(&(self.time, self.seq))
    }
}

impl PartialOrd for Event {
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

    /// Schedules `kind` for `core` at `time`.
    pub fn push(&mut self, time: Cycle, core: usize, kind: EventKind) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.heap.push(Event {
            time,
            seq,
            core: core as u32,
            kind,
        });
    }

    /// Removes and returns the earliest event.
    pub fn pop(&mut self) -> Option<Event> {
        self.heap.pop()
    }

    /// Time of the earliest event, if any.
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
        let order: Vec<(u64, u32)> = std::iter::from_fn(|| q.pop())
            .map(|e| (e.time, e.core))
            .collect();
        assert_eq!(order, vec![(1, 3), (3, 1), (5, 0), (5, 2)]);
    }
}
