//! Property tests of the policy state machines against simple reference models.

use proptest::prelude::*;
use txmem_htm::policy::{
    CoarsenConfig, CoarsenEvent, CoarsenPolicy, RetryAction, RetryConfig, RetryEvent, RetryPolicy,
};
use txmem_htm::AbortStatus;

fn status() -> impl Strategy<Value = AbortStatus> {
    prop_oneof![
        Just(AbortStatus::conflict()),
        Just(AbortStatus::conflict().with_retry(false)),
        Just(AbortStatus::capacity()),
        Just(AbortStatus::capacity().with_retry(true)),
        Just(AbortStatus::lock_busy()),
        Just(AbortStatus::explicit(3)),
        Just(AbortStatus::other()),
        Just(AbortStatus::other().with_retry(true)),
    ]
}

/// The retry policy's rules, restated per section.
struct RetryModel {
    max: u32,
    grow: u32,
    busy_max: u32,
    limit: u32,
}

impl RetryModel {
    /// Outcome of one section: actions after each abort, and whether it ended on the lock.
    fn section(&mut self, aborts: &[AbortStatus]) -> (Vec<RetryAction>, bool) {
        let budget = self.limit;
        let (mut tries, mut busy) = (0, 0);
        let mut actions = Vec::new();
        for s in aborts {
            let a = if s.is_lock_busy() {
                busy += 1;
                if busy <= self.busy_max {
                    RetryAction::WaitThenAttempt
                } else {
                    RetryAction::Fallback
                }
            } else {
                tries += 1;
                self.limit = 1;
                let transient = s.retry_hint() && !s.is_capacity();
                if transient && tries < budget {
                    RetryAction::Attempt
                } else {
                    RetryAction::Fallback
                }
            };
            actions.push(a);
            if a == RetryAction::Fallback {
                return (actions, true);
            }
        }
        self.limit = (self.limit + self.grow).min(self.max);
        (actions, false)
    }
}

proptest! {
    #[test]
    fn retry_policy_matches_model(
        max in 1u32..8,
        grow in 0u32..3,
        busy_max in 0u32..4,
        sections in prop::collection::vec(prop::collection::vec(status(), 0..10), 1..30),
    ) {
        let cfg = RetryConfig { max_attempts: max, grow_by: grow, max_busy_waits: busy_max };
        let mut p = RetryPolicy::new(cfg);
        let mut model = RetryModel { max, grow, busy_max, limit: max };
        for aborts in &sections {
            let budget = p.limit();
            prop_assert!((1..=max).contains(&budget));
            prop_assert_eq!(p.on(RetryEvent::Start), RetryAction::Attempt);
            let (expected, fell_back) = model.section(aborts);
            let mut hardware_attempts = 1;
            for (s, want) in aborts.iter().zip(&expected) {
                let got = p.on(RetryEvent::Abort(*s));
                prop_assert_eq!(got, *want);
                if got != RetryAction::Fallback {
                    hardware_attempts += 1;
                }
            }
            // A section never makes more attempts than its budget plus its busy waits.
            prop_assert!(hardware_attempts <= budget + busy_max + 1);
            let end = if fell_back { RetryEvent::FallbackAcquired } else { RetryEvent::Commit };
            prop_assert_eq!(p.on(end), RetryAction::Done);
            prop_assert!(!p.in_section());
            prop_assert_eq!(p.limit(), model.limit);
        }
    }

    #[test]
    fn coarsen_policy_invariants_and_model(
        threshold in 1u32..6,
        max in 1u32..33,
        events in prop::collection::vec(
            prop_oneof![
                (1u32..40).prop_map(|n| CoarsenEvent::Committed { sections: n }),
                status().prop_map(CoarsenEvent::Aborted),
            ],
            1..100,
        ),
    ) {
        let mut p = CoarsenPolicy::new(CoarsenConfig { threshold, max_group: max });
        // Reference model: (group, ceiling, streak).
        let (mut g, mut c, mut k) = (1u32, max, 0u32);
        for e in events {
            let before = p.group_size();
            let got = p.on(e);
            match e {
                CoarsenEvent::Committed { sections } => {
                    k += 1;
                    if g == c && c < max && k >= threshold {
                        c = (c * 2).min(max);
                    }
                    if g == 1 {
                        if k >= threshold {
                            g = 2.min(c);
                        }
                    } else if sections >= g {
                        g = (g * 2).min(c);
                    }
                    prop_assert!(got >= before, "a commit never shrinks the group");
                }
                CoarsenEvent::Aborted(s) if s.is_lock_busy() => {
                    prop_assert_eq!(got, before, "busy aborts are neutral");
                }
                CoarsenEvent::Aborted(s) if s.is_capacity() => {
                    g = (g / 2).max(1);
                    c = g;
                    k = 0;
                    prop_assert_eq!(got, (before / 2).max(1), "capacity halves");
                }
                CoarsenEvent::Aborted(_) => {
                    g = 1;
                    k = 0;
                    prop_assert_eq!(got, 1, "other aborts stop coarsening");
                }
            }
            prop_assert_eq!((got, p.ceiling(), p.streak()), (g, c, k));
            prop_assert!(1 <= got && got <= p.ceiling() && p.ceiling() <= max);
        }
    }
}
