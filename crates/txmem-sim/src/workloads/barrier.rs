//! A sense-reversing barrier in simulated memory, for workloads that run in phases.
//!
//! Two lines: an arrival counter that every thread increments with `fetch_add`, and a sense
//! word that the last arrival flips while the others spin on it (asleep, with
//! `park_spinners`, until the flip reaches their copy). The counter is reset before the flip,
//! so no thread can arrive at the next episode before it is zero again.

use crate::cpu::Cpu;
use crate::simulation::executor::Sim;

/// A barrier for a fixed number of parties, laid out in simulated memory. Cheap to copy;
/// each thread waits through its own [`BarrierWaiter`].
#[derive(Clone, Copy, Debug)]
pub struct Barrier {
    count: u64,
    sense: u64,
    parties: u64,
}

impl Barrier {
    /// A barrier for `parties` threads (at least 1), on two fresh lines of `sim`'s memory.
    pub fn new(sim: &mut Sim, parties: usize) -> Barrier {
        assert!(parties > 0, "a barrier needs at least one party");
        let lb = sim.config().line_bytes;
        let count = sim.alloc_lines(2);
        Barrier {
            count,
            // Its own line, so that arrivals do not take the spinners' line away.
            sense: count + lb,
            parties: parties as u64,
        }
    }

    /// Lines the barrier occupies (for sizing simulated memory).
    pub const LINES: u64 = 2;

    /// One thread's handle, starting at the first episode.
    pub fn waiter(&self) -> BarrierWaiter {
        BarrierWaiter {
            barrier: *self,
            sense: 0,
            episodes: 0,
        }
    }
}

/// One thread's side of a [`Barrier`]: the sense it waits for next.
#[derive(Clone, Debug)]
pub struct BarrierWaiter {
    barrier: Barrier,
    sense: u64,
    episodes: u64,
}

impl BarrierWaiter {
    /// Waits until every party has arrived. A fence comes first, so the caller's overlapped
    /// accesses complete before it arrives, as the atomic of a real barrier would order them.
    pub async fn wait(&mut self, cpu: &Cpu) {
        let b = self.barrier;
        self.sense ^= 1;
        self.episodes += 1;
        cpu.fence().await;
        if cpu.fetch_add(b.count, 1).await + 1 == b.parties {
            cpu.store(b.count, 0).await;
            cpu.store(b.sense, self.sense).await;
        } else {
            let want = self.sense;
            cpu.spin_until(b.sense, |v| v == want).await;
        }
    }

    /// Episodes this thread has passed.
    pub fn episodes(&self) -> u64 {
        self.episodes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SimConfig;
    use std::cell::RefCell;
    use std::rc::Rc;

    #[test]
    fn no_thread_leaves_an_episode_before_every_thread_arrived() {
        let mut sim = Sim::new(SimConfig {
            cores: 4,
            check_invariants: true,
            ..SimConfig::default()
        })
        .unwrap();
        let barrier = Barrier::new(&mut sim, 4);
        let arrived = sim.alloc_lines(1);
        let seen = Rc::new(RefCell::new(Vec::new()));
        for c in 0..4 {
            let (mut w, seen) = (barrier.waiter(), seen.clone());
            sim.spawn(c, move |cpu| async move {
                for e in 0..5u64 {
                    // Unequal work, so that threads arrive at different times.
                    cpu.compute(100 * (c as u64 + 1) * (e + 1)).await;
                    cpu.fetch_add(arrived, 1).await;
                    w.wait(&cpu).await;
                    // Everyone of this episode has arrived, and no one of the next has.
                    let n = cpu.load(arrived).await;
                    seen.borrow_mut().push((e, n));
                    w.wait(&cpu).await;
                }
                assert_eq!(w.episodes(), 10);
            });
        }
        sim.run().unwrap();
        let seen = seen.borrow();
        assert_eq!(seen.len(), 20);
        for &(e, n) in seen.iter() {
            assert_eq!(n, 4 * (e + 1));
        }
    }
}
