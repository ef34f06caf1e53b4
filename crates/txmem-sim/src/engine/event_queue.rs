//! The event queue, ordered by (time, sequence number): a calendar of the near future
//! and a heap for the rest (see [`EventQueue`]).
//!
//! An event is one 16-byte value, `time << 64 | seq << 9 | timer << 8 | core`, compared as
//! one integer. Sequence numbers are unique, so the order is total: equal times pop in
//! scheduling order.

use super::time::Cycle;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

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

/// Buckets of the near-future calendar (a power of two).
const WINDOW: usize = 1024;

/// End of a bucket list.
const NIL: u32 = u32::MAX;

/// A bucket list node.
#[derive(Clone, Copy, Debug)]
struct Node {
    ev: Event,
    next: u32,
}

/// Events in (time, sequence) order; equal times pop in scheduling order, so runs are
/// deterministic.
///
/// Simulated time only moves forward and almost every event is due within a few hundred
/// cycles, so the queue is a calendar: events due within 1,024 cycles (`WINDOW`) of the last
/// popped time sit in the bucket of their time (modulo the window), each bucket a list in
/// scheduling order, with a bitmap of the non-empty buckets; the earliest event is the head
/// of the first non-empty bucket from the current time on. Scheduling and taking an event
/// cost O(1). Events due later than the window wait in a binary heap, and every pop takes
/// the earlier of the two candidates, so the order is exactly (time, sequence).
#[derive(Debug)]
pub struct EventQueue {
    /// Per bucket, first and last node of its list (`NIL` when empty). Fixed-size arrays
    /// indexed by a bucket number masked to the window: no bounds checks.
    heads: Box<[u32; WINDOW]>,
    tails: Box<[u32; WINDOW]>,
    /// Bit `b` set when bucket `b` is not empty.
    occupied: [u64; WINDOW / 64],
    /// Bit `w` set when word `w` of `occupied` is not zero.
    summary: u64,
    /// List nodes; the free ones are chained from `free`.
    nodes: Vec<Node>,
    free: u32,
    /// Events in buckets.
    near: usize,
    /// The first non-empty bucket from the current time on (meaningful when `near > 0`).
    first: usize,
    /// Time of the last popped event: every bucketed event is due in
    /// `base..base + WINDOW`.
    base: Cycle,
    /// Events due later than the window (or, never in practice, before `base`).
    far: BinaryHeap<Reverse<Event>>,
    next_seq: u64,
}

impl Default for EventQueue {
    fn default() -> Self {
        EventQueue {
            heads: Box::new([NIL; WINDOW]),
            tails: Box::new([NIL; WINDOW]),
            occupied: [0; WINDOW / 64],
            summary: 0,
            nodes: Vec::new(),
            free: NIL,
            near: 0,
            first: 0,
            base: 0,
            far: BinaryHeap::new(),
            next_seq: 0,
        }
    }
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
        if time.wrapping_sub(self.base) < WINDOW as u64 {
            self.push_near(ev);
        } else {
            self.push_far(ev);
        }
        seq
    }

    /// Puts `ev`, due beyond the calendar window, in the heap (rare: kept out of line so
    /// that the common path saves no registers for it).
    #[cold]
    #[inline(never)]
    fn push_far(&mut self, ev: Event) {
        self.far.push(Reverse(ev));
    }

    /// A new list node holding `ev` (the free list is empty: rare once warmed up).
    #[cold]
    #[inline(never)]
    fn new_node(&mut self, ev: Event) -> u32 {
        self.nodes.push(Node { ev, next: NIL });
        (self.nodes.len() - 1) as u32
    }

    /// Appends `ev` to its bucket.
    #[inline]
    fn push_near(&mut self, ev: Event) {
        let n = if self.free != NIL {
            let n = self.free;
            self.free = self.nodes[n as usize].next;
            self.nodes[n as usize] = Node { ev, next: NIL };
            n
        } else {
            self.new_node(ev)
        };
        let b = ev.time() as usize & (WINDOW - 1);
        let cursor = self.base as usize;
        if self.near == 0
            || b.wrapping_sub(cursor) & (WINDOW - 1)
                < self.first.wrapping_sub(cursor) & (WINDOW - 1)
        {
            self.first = b;
        }
        match self.tails[b] {
            NIL => {
                self.heads[b] = n;
                self.occupied[b / 64] |= 1 << (b % 64);
                self.summary |= 1 << (b / 64);
            }
            t => self.nodes[t as usize].next = n,
        }
        self.tails[b] = n;
        self.near += 1;
    }

    /// The first non-empty bucket from the current time on (there must be one), found in
    /// the bitmap.
    fn first_bucket(&self) -> usize {
        let c = self.base as usize & (WINDOW - 1);
        let (w0, bit) = (c / 64, c % 64);
        let head = self.occupied[w0] & (!0u64 << bit);
        if head != 0 {
            return w0 * 64 + head.trailing_zeros() as usize;
        }
        // The next non-empty word after the cursor's, else (wrapping around) the first one,
        // which may be the cursor's own word (its buckets before the cursor).
        let later = self.summary & (!1u64 << w0);
        let w = if later != 0 {
            later.trailing_zeros()
        } else {
            self.summary.trailing_zeros()
        } as usize;
        let w = w % (WINDOW / 64);
        debug_assert!(self.occupied[w] != 0, "no bucket holds an event");
        w * 64 + self.occupied[w].trailing_zeros() as usize
    }

    /// The earliest bucketed event and its bucket, if any.
    #[inline]
    fn first_near(&self) -> Option<(Event, usize)> {
        if self.near == 0 {
            return None;
        }
        // (Masked: `first` is a bucket number already; the mask spares the bounds check.)
        let b = self.first & (WINDOW - 1);
        debug_assert_eq!(b, self.first_bucket());
        Some((self.nodes[self.heads[b] as usize].ev, b))
    }

    /// Removes and returns the earliest event.
    #[inline]
    pub fn pop(&mut self) -> Option<Event> {
        let near = self.first_near();
        let far = self.far.peek().map(|r| r.0);
        let take_near = match (near, far) {
            (Some((e, _)), Some(f)) => e < f,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => return None,
        };
        let ev = match near {
            Some((e, b)) if take_near => {
                let h = self.heads[b];
                let next = self.nodes[h as usize].next;
                self.heads[b] = next;
                if next == NIL {
                    self.tails[b] = NIL;
                    let w = &mut self.occupied[b / 64];
                    *w &= !(1 << (b % 64));
                    if *w == 0 {
                        self.summary &= !(1 << (b / 64));
                    }
                }
                self.nodes[h as usize].next = self.free;
                self.free = h;
                self.near -= 1;
                self.base = e.time();
                if next == NIL && self.near > 0 {
                    self.first = self.first_bucket();
                }
                e
            }
            _ => self.far.pop()?.0,
        };
        debug_assert!(ev.time() >= self.base);
        self.base = ev.time();
        Some(ev)
    }

    /// Time of the earliest event, if any.
    #[inline]
    pub fn next_time(&self) -> Option<Cycle> {
        let near = self.first_near().map(|(e, _)| e);
        let far = self.far.peek().map(|r| r.0);
        match (near, far) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
        .map(|e| e.time())
    }

    /// Number of pending events.
    pub fn len(&self) -> usize {
        self.near + self.far.len()
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
        let mut now = 0;
        for _ in 0..50_000 {
            if rng.below(3) > 0 {
                // Mostly near events, some beyond the calendar window; never in the past.
                let ahead = match rng.below(10) {
                    0 => rng.below(5 * WINDOW as u64),
                    1 => WINDOW as u64 - 1 + rng.below(3),
                    _ => rng.below(40),
                };
                let (t, c) = (now + ahead, rng.below(256) as usize);
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
                if let Some(g) = got {
                    now = g.0;
                }
            }
            assert_eq!(q.len(), model.len());
        }
    }
}
