//! Contention management: what a transaction does after it aborts.
//!
//! txmem locks at commit time, so a transaction never waits for another in
//! the middle of its execution; contention shows up as aborts. A policy
//! decides how long to wait before the next attempt and may give a starving
//! transaction precedence:
//!
//! | policy | after an abort | precedence |
//! |---|---|---|
//! | [`Immediate`](ContentionPolicy::Immediate) | retry at once | none |
//! | [`Backoff`](ContentionPolicy::Backoff) | spin for a [`Backoff`] delay | none |
//! | [`Hourglass`](ContentionPolicy::Hourglass) | exponential backoff | after `threshold` consecutive aborts the transaction takes the global hourglass: no new transaction may *begin* until it commits (running ones finish) |
//! | [`Karma`](ContentionPolicy::Karma) | exponential backoff, shortened by priority | priority = work done in aborted attempts (items accessed, summed); see below |
//! | [`Timestamp`](ContentionPolicy::Timestamp) | exponential backoff, shortened by priority | priority = age (a global ticket taken at the first abort; older is higher) |
//!
//! Priority policies adapted to commit-time locking: after
//! [`PRIORITY_PUBLISH_AFTER`] consecutive aborts a transaction publishes its
//! priority as the global *priority floor*. A writer about to lock its write
//! set whose priority is below the floor waits (bounded, about
//! [`PRIORITY_WAIT_SPINS`] spins) for the floor to drop before locking, so the
//! starving high-priority transaction can commit first; it clears the floor
//! when it commits. Read-only transactions are never delayed.
//!
//! Independently of the policy, [`TxOptions::serialize_after`](crate::TxOptions::serialize_after)
//! runs a transaction irrevocably (alone among writers) after N consecutive aborts.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::clock;
use crate::error::AbortCause;

/// A backoff schedule, in spin-loop iterations (each a `pause`-like hint;
/// beyond about 10,000 the thread yields instead of spinning).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backoff {
    /// Wait `min(base * 2^(k-1), max)` spins after the k-th consecutive abort,
    /// jittered uniformly in [half, full].
    Exponential {
        /// Spins after the first abort.
        base: u32,
        /// Upper bound.
        max: u32,
    },
    /// Wait `min(step * k, max)` spins after the k-th consecutive abort.
    Linear {
        /// Spins added per consecutive abort.
        step: u32,
        /// Upper bound.
        max: u32,
    },
    /// Wait a uniformly random number of spins in `[0, max)`.
    Random {
        /// Upper bound.
        max: u32,
    },
}

impl Backoff {
    /// The default exponential schedule: 32 spins doubling up to 32,768.
    pub const DEFAULT: Backoff = Backoff::Exponential {
        base: 32,
        max: 1 << 15,
    };

    /// The delay (in spins) after the `consecutive`-th abort, given a random word.
    pub fn delay(&self, consecutive: u32, random: u64) -> u32 {
        let k = consecutive.max(1);
        match *self {
            Backoff::Exponential { base, max } => {
                let full = base
                    .saturating_mul(1u32.checked_shl(k - 1).unwrap_or(u32::MAX))
                    .min(max);
                let half = full / 2;
                half + (random % (full - half + 1) as u64) as u32
            }
            Backoff::Linear { step, max } => step.saturating_mul(k).min(max),
            Backoff::Random { max } => {
                if max == 0 {
                    0
                } else {
                    (random % max as u64) as u32
                }
            }
        }
    }
}

/// A contention-management policy (see the [module docs](self) for what each does).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ContentionPolicy {
    /// Retry at once.
    Immediate,
    /// Back off according to the schedule.
    Backoff(Backoff),
    /// Exponential backoff; after `threshold` consecutive aborts, hold the
    /// hourglass so no new transaction begins until this one commits.
    Hourglass {
        /// Consecutive aborts before taking the hourglass.
        threshold: u32,
    },
    /// Priority by work done in aborted attempts.
    Karma,
    /// Priority by age.
    Timestamp,
}

impl ContentionPolicy {
    /// Exponential backoff with [`Backoff::DEFAULT`].
    pub const DEFAULT: ContentionPolicy = ContentionPolicy::Backoff(Backoff::DEFAULT);

    /// The policy's name as used in tables and JSON.
    pub fn name(&self) -> &'static str {
        match self {
            ContentionPolicy::Immediate => "immediate",
            ContentionPolicy::Backoff(Backoff::Exponential { .. }) => "backoff-exponential",
            ContentionPolicy::Backoff(Backoff::Linear { .. }) => "backoff-linear",
            ContentionPolicy::Backoff(Backoff::Random { .. }) => "backoff-random",
            ContentionPolicy::Hourglass { .. } => "hourglass",
            ContentionPolicy::Karma => "karma",
            ContentionPolicy::Timestamp => "timestamp",
        }
    }

    /// Every policy with default parameters (for sweeps and tests).
    pub fn all() -> Vec<ContentionPolicy> {
        vec![
            ContentionPolicy::Immediate,
            ContentionPolicy::Backoff(Backoff::DEFAULT),
            ContentionPolicy::Backoff(Backoff::Linear {
                step: 64,
                max: 1 << 14,
            }),
            ContentionPolicy::Backoff(Backoff::Random { max: 1 << 12 }),
            ContentionPolicy::Hourglass { threshold: 8 },
            ContentionPolicy::Karma,
            ContentionPolicy::Timestamp,
        ]
    }

    fn backoff(&self) -> Option<Backoff> {
        match self {
            ContentionPolicy::Immediate => None,
            ContentionPolicy::Backoff(b) => Some(*b),
            _ => Some(Backoff::DEFAULT),
        }
    }

    pub(crate) const fn uses_priority(&self) -> bool {
        matches!(self, ContentionPolicy::Karma | ContentionPolicy::Timestamp)
    }
}

impl Default for ContentionPolicy {
    fn default() -> Self {
        Self::DEFAULT
    }
}

impl std::str::FromStr for ContentionPolicy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Ok(match s {
            "immediate" => ContentionPolicy::Immediate,
            "backoff" | "backoff-exponential" | "exponential" => {
                ContentionPolicy::Backoff(Backoff::DEFAULT)
            }
            "backoff-linear" | "linear" => ContentionPolicy::Backoff(Backoff::Linear {
                step: 64,
                max: 1 << 14,
            }),
            "backoff-random" | "random" => {
                ContentionPolicy::Backoff(Backoff::Random { max: 1 << 12 })
            }
            "hourglass" => ContentionPolicy::Hourglass { threshold: 8 },
            "karma" => ContentionPolicy::Karma,
            "timestamp" => ContentionPolicy::Timestamp,
            other => {
                return Err(format!(
                    "unknown contention policy `{other}` (expected immediate, backoff-exponential, \
                     backoff-linear, backoff-random, hourglass, karma or timestamp)"
                ))
            }
        })
    }
}

/// Consecutive aborts after which a priority policy publishes its priority.
pub const PRIORITY_PUBLISH_AFTER: u32 = 4;
/// Upper bound of a lower-priority writer's wait for the priority floor.
pub const PRIORITY_WAIT_SPINS: u32 = 1 << 14;

static PRIORITY_FLOOR: AtomicU64 = AtomicU64::new(0);
static TICKETS: AtomicU64 = AtomicU64::new(1);

/// Per-transaction contention state, kept across the attempts of one
/// `atomically` call.
#[derive(Debug, Default)]
pub(crate) struct ContentionManager {
    pub consecutive: u32,
    priority: u64,
    published: bool,
    pub holds_hourglass: bool,
    rng: u64,
}

impl ContentionManager {
    pub fn reset(&mut self, seed: u64) {
        *self = ContentionManager {
            rng: seed | 1,
            ..ContentionManager::default()
        };
    }

    fn next_random(&mut self) -> u64 {
        // xorshift64*: cheap per-thread jitter.
        let mut x = self.rng;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rng = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Before a writer of a priority policy locks its write set: defer
    /// (bounded) to a higher published priority. `cm` is the transaction's
    /// state, `None` before its first abort (priority 0).
    #[inline]
    pub fn defer_to_priority(cm: Option<&ContentionManager>) {
        let own = cm.map_or(0, |c| c.priority);
        let mut spins = 0;
        while spins < PRIORITY_WAIT_SPINS {
            let floor = PRIORITY_FLOOR.load(Ordering::Relaxed);
            if floor == 0 || floor <= own {
                return;
            }
            std::hint::spin_loop();
            spins += 1;
        }
    }

    /// After an aborted attempt that touched `items` items: update the
    /// priority, possibly take the hourglass, and wait out the backoff.
    pub fn after_abort(&mut self, policy: &ContentionPolicy, cause: AbortCause, items: usize) {
        self.consecutive += 1;
        if matches!(cause, AbortCause::Retry | AbortCause::Snapshot) {
            // A blocking retry already waited for a change; a snapshot
            // attempt lost to no one (its rerun logs its reads).
            return;
        }
        match policy {
            ContentionPolicy::Karma => self.priority += items as u64 + 1,
            ContentionPolicy::Timestamp if self.priority == 0 => {
                self.priority = u64::MAX - TICKETS.fetch_add(1, Ordering::Relaxed)
            }
            ContentionPolicy::Hourglass { threshold }
                if self.consecutive >= *threshold && !self.holds_hourglass =>
            {
                self.holds_hourglass = clock::try_take_hourglass();
            }
            _ => {}
        }
        if policy.uses_priority() && self.consecutive >= PRIORITY_PUBLISH_AFTER {
            PRIORITY_FLOOR.fetch_max(self.priority, Ordering::Relaxed);
            self.published = true;
        }
        let Some(backoff) = policy.backoff() else {
            return;
        };
        if self.holds_hourglass {
            return;
        }
        let random = self.next_random();
        let mut spins = backoff.delay(self.consecutive, random);
        if policy.uses_priority() && self.published {
            // The published (highest) priorities retry soonest.
            spins /= 4;
        }
        spin_or_yield(spins);
    }

    /// Releases whatever precedence the transaction holds: before it sleeps
    /// in `retry`, and when its contention state drops (the call ended, by
    /// a commit, an error or a panic).
    #[inline]
    pub fn finish(&mut self) {
        if self.holds_hourglass | self.published {
            self.release_precedence();
        }
    }

    #[cold]
    fn release_precedence(&mut self) {
        if self.holds_hourglass {
            clock::release_hourglass();
            self.holds_hourglass = false;
        }
        if self.published {
            let _ = PRIORITY_FLOOR.compare_exchange(
                self.priority,
                0,
                Ordering::Relaxed,
                Ordering::Relaxed,
            );
            self.published = false;
        }
    }
}

/// A transaction's contention state dies with its `atomically` call, also
/// when a panic unwinds out of it: the precedence it held goes with it (a
/// leaked hourglass would keep every other transaction from beginning).
impl Drop for ContentionManager {
    fn drop(&mut self) {
        self.finish();
    }
}

fn spin_or_yield(spins: u32) {
    if spins > 10_000 {
        std::thread::yield_now();
        return;
    }
    for _ in 0..spins {
        std::hint::spin_loop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exponential_doubles_up_to_max_with_jitter() {
        let b = Backoff::Exponential { base: 10, max: 100 };
        for r in [0u64, 1, 7, u64::MAX] {
            let d1 = b.delay(1, r);
            assert!((5..=10).contains(&d1), "{d1}");
            let d3 = b.delay(3, r);
            assert!((20..=40).contains(&d3), "{d3}");
            assert!(b.delay(40, r) <= 100);
        }
    }

    #[test]
    fn linear_and_random() {
        assert_eq!(Backoff::Linear { step: 5, max: 12 }.delay(2, 0), 10);
        assert_eq!(Backoff::Linear { step: 5, max: 12 }.delay(3, 0), 12);
        assert!(Backoff::Random { max: 8 }.delay(1, 12345) < 8);
        assert_eq!(Backoff::Random { max: 0 }.delay(1, 5), 0);
    }

    #[test]
    fn policies_parse_by_name() {
        for p in ContentionPolicy::all() {
            let parsed: ContentionPolicy = p.name().parse().unwrap();
            assert_eq!(parsed.name(), p.name());
        }
        let err = "bogus".parse::<ContentionPolicy>().unwrap_err();
        assert!(err.contains("bogus"));
    }
}
