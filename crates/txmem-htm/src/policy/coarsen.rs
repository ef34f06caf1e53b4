//! The adaptive transaction-coarsening policy (XSync §4.2.2), as a state machine.
//!
//! Coarsening merges several consecutive critical sections into one hardware transaction,
//! so that the cost of entering and leaving a transaction is paid once per group instead of
//! once per section. It pays off only while contention is low, and a bigger group needs more
//! transactional buffer space, so the group size adapts:
//!
//! * it starts at 1 (every section is its own transaction);
//! * after [`CoarsenConfig::threshold`] successive commits, it becomes 2;
//! * every commit of a *full* group (as many sections as the group size) doubles it, up to a
//!   *ceiling* (initially [`CoarsenConfig::max_group`]);
//! * a capacity abort halves it and lowers the ceiling to the halved size, so the policy does
//!   not immediately grow back into the same overflow; the ceiling doubles again (up to the
//!   maximum) after `threshold` successive commits with the group at the ceiling;
//! * any other abort (a conflict, an explicit abort, an interrupt) stops coarsening: the group
//!   returns to 1 and `threshold` successive commits are needed to start again;
//! * a lock-busy abort changes nothing (it says nothing about the group's size).
//!
//! ```
//! use txmem_htm::AbortStatus;
//! use txmem_htm::policy::{CoarsenConfig, CoarsenEvent, CoarsenPolicy};
//!
//! let mut p = CoarsenPolicy::new(CoarsenConfig { threshold: 2, max_group: 8 });
//! assert_eq!(p.on(CoarsenEvent::Committed { sections: 1 }), 1);
//! assert_eq!(p.on(CoarsenEvent::Committed { sections: 1 }), 2); // threshold reached
//! assert_eq!(p.on(CoarsenEvent::Committed { sections: 2 }), 4); // full group: double
//! assert_eq!(p.on(CoarsenEvent::Aborted(AbortStatus::capacity())), 2); // halve
//! assert_eq!(p.on(CoarsenEvent::Aborted(AbortStatus::conflict())), 1); // stop
//! ```

use crate::AbortStatus;

/// Parameters of the coarsening policy.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct CoarsenConfig {
    /// Successive commits needed before coarsening starts (and before a lowered ceiling is
    /// relaxed).
    pub threshold: u32,
    /// Largest number of sections merged into one transaction. At least 1.
    pub max_group: u32,
}

impl CoarsenConfig {
    /// The defaults: start after 8 successive commits, merge at most 16 sections.
    pub const DEFAULT: CoarsenConfig = CoarsenConfig {
        threshold: 8,
        max_group: 16,
    };
}

impl Default for CoarsenConfig {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// An input to the coarsening policy.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum CoarsenEvent {
    /// A hardware transaction covering `sections` consecutive sections committed.
    Committed {
        /// How many sections the committed transaction covered (at least 1).
        sections: u32,
    },
    /// A (possibly coarsened) hardware transaction aborted.
    Aborted(AbortStatus),
}

/// Per-thread coarsening state (see the module documentation).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct CoarsenPolicy {
    cfg: CoarsenConfig,
    group: u32,
    ceiling: u32,
    streak: u32,
}

impl CoarsenPolicy {
    /// A fresh policy (group size 1, ceiling `max_group`).
    pub const fn new(cfg: CoarsenConfig) -> Self {
        let max = if cfg.max_group == 0 { 1 } else { cfg.max_group };
        CoarsenPolicy {
            cfg: CoarsenConfig {
                max_group: max,
                ..cfg
            },
            group: 1,
            ceiling: max,
            streak: 0,
        }
    }

    /// The configuration.
    pub const fn config(&self) -> CoarsenConfig {
        self.cfg
    }

    /// How many sections the next hardware transaction should cover.
    pub const fn group_size(&self) -> u32 {
        self.group
    }

    /// The current upper bound on the group size (lowered by capacity aborts).
    pub const fn ceiling(&self) -> u32 {
        self.ceiling
    }

    /// Successive commits since the last abort or stop.
    pub const fn streak(&self) -> u32 {
        self.streak
    }

    /// Feeds one event and returns the group size for the next transaction.
    #[inline]
    pub fn on(&mut self, event: CoarsenEvent) -> u32 {
        match event {
            CoarsenEvent::Committed { sections } => {
                self.streak = self.streak.saturating_add(1);
                let full = sections >= self.group;
                if self.group == self.ceiling
                    && self.ceiling < self.cfg.max_group
                    && self.streak >= self.cfg.threshold
                {
                    self.ceiling = self.ceiling.saturating_mul(2).min(self.cfg.max_group);
                }
                if self.group == 1 {
                    if self.streak >= self.cfg.threshold {
                        self.group = 2.min(self.ceiling);
                    }
                } else if full {
                    self.group = self.group.saturating_mul(2).min(self.ceiling);
                }
            }
            CoarsenEvent::Aborted(status) => {
                if status.is_lock_busy() {
                    // Nothing learned about the group size.
                } else if status.is_capacity() {
                    self.group = (self.group / 2).max(1);
                    self.ceiling = self.group;
                    self.streak = 0;
                } else {
                    self.group = 1;
                    self.streak = 0;
                }
            }
        }
        self.group
    }
}

impl Default for CoarsenPolicy {
    fn default() -> Self {
        Self::new(CoarsenConfig::DEFAULT)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn commit(p: &mut CoarsenPolicy, n: u32) -> u32 {
        p.on(CoarsenEvent::Committed { sections: n })
    }

    #[test]
    fn grows_after_threshold_and_doubles_on_full_groups() {
        let mut p = CoarsenPolicy::new(CoarsenConfig {
            threshold: 3,
            max_group: 16,
        });
        assert_eq!(commit(&mut p, 1), 1);
        assert_eq!(commit(&mut p, 1), 1);
        assert_eq!(commit(&mut p, 1), 2);
        assert_eq!(commit(&mut p, 1), 2, "a partial group does not grow");
        assert_eq!(commit(&mut p, 2), 4);
        assert_eq!(commit(&mut p, 4), 8);
        assert_eq!(commit(&mut p, 8), 16);
        assert_eq!(commit(&mut p, 16), 16, "capped at max_group");
    }

    #[test]
    fn capacity_halves_and_caps_until_relaxed() {
        let mut p = CoarsenPolicy::new(CoarsenConfig {
            threshold: 2,
            max_group: 8,
        });
        commit(&mut p, 1);
        commit(&mut p, 1);
        commit(&mut p, 2);
        assert_eq!(commit(&mut p, 4), 8);
        assert_eq!(p.on(CoarsenEvent::Aborted(AbortStatus::capacity())), 4);
        assert_eq!(p.ceiling(), 4);
        assert_eq!(commit(&mut p, 4), 4, "ceiling holds after one commit");
        assert_eq!(
            commit(&mut p, 4),
            8,
            "ceiling relaxed after threshold commits"
        );
        assert_eq!(p.ceiling(), 8);
    }

    #[test]
    fn conflict_stops_and_busy_is_neutral() {
        let mut p = CoarsenPolicy::new(CoarsenConfig {
            threshold: 1,
            max_group: 8,
        });
        assert_eq!(commit(&mut p, 1), 2);
        assert_eq!(commit(&mut p, 2), 4);
        assert_eq!(p.on(CoarsenEvent::Aborted(AbortStatus::lock_busy())), 4);
        assert_eq!(p.on(CoarsenEvent::Aborted(AbortStatus::conflict())), 1);
        assert_eq!(p.streak(), 0);
        assert_eq!(p.ceiling(), 8);
    }

    #[test]
    fn capacity_at_group_one_needs_relaxing_first() {
        let mut p = CoarsenPolicy::new(CoarsenConfig {
            threshold: 2,
            max_group: 4,
        });
        assert_eq!(p.on(CoarsenEvent::Aborted(AbortStatus::capacity())), 1);
        assert_eq!(p.ceiling(), 1);
        assert_eq!(commit(&mut p, 1), 1);
        assert_eq!(commit(&mut p, 1), 2);
        assert_eq!(p.ceiling(), 2);
    }
}
