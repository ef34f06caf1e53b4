//! The adaptive retry policy (XSync §4.2.1), as a state machine.
//!
//! A thread keeps one [`RetryPolicy`]. Its *limit* is the number of hardware attempts the
//! next critical section gets before it takes the fallback lock:
//!
//! * every abort (other than "lock busy") immediately drops the limit to 1, so that under
//!   contention threads stop wasting time on doomed transactions;
//! * every elided commit raises the limit by [`RetryConfig::grow_by`], up to
//!   [`RetryConfig::max_attempts`], so that elision recovers once contention passes.
//!
//! Within one section, which starts with the limit current at that moment as its budget:
//!
//! * a *transient* abort (retry hint set, not capacity or nesting overflow) retries while the
//!   budget lasts;
//! * a *persistent* abort (capacity, nesting overflow, no retry hint — which includes RTM's
//!   explicit aborts) goes straight to the fallback lock: running the same section again
//!   would fail the same way;
//! * a *lock-busy* abort (the section found the fallback lock held) waits outside the
//!   transaction until the lock is free and then retries, without using up the budget and
//!   without lowering the limit. Waiting outside avoids the lemming effect, where threads
//!   retrying against a held lock abort immediately, exhaust their attempts and pile onto the
//!   lock themselves. At most [`RetryConfig::max_busy_waits`] waits per section, so a lock
//!   that is never free still lets the section make progress by queueing for it.
//!
//! ```
//! use txmem_htm::AbortStatus;
//! use txmem_htm::policy::{RetryAction, RetryConfig, RetryEvent, RetryPolicy};
//!
//! let mut p = RetryPolicy::new(RetryConfig { max_attempts: 3, grow_by: 1, max_busy_waits: 2 });
//! assert_eq!(p.on(RetryEvent::Start), RetryAction::Attempt);
//! assert_eq!(p.on(RetryEvent::Abort(AbortStatus::conflict())), RetryAction::Attempt);
//! assert_eq!(p.limit(), 1); // dropped for later sections
//! assert_eq!(p.on(RetryEvent::Abort(AbortStatus::capacity())), RetryAction::Fallback);
//! assert_eq!(p.on(RetryEvent::FallbackAcquired), RetryAction::Done);
//! assert_eq!(p.on(RetryEvent::Start), RetryAction::Attempt);
//! assert_eq!(p.on(RetryEvent::Commit), RetryAction::Done);
//! assert_eq!(p.limit(), 2);
//! ```

use crate::AbortStatus;

/// Parameters of the adaptive retry policy.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct RetryConfig {
    /// Largest number of hardware attempts per section (the limit's ceiling and its initial
    /// value). At least 1.
    pub max_attempts: u32,
    /// How much each elided commit raises the limit.
    pub grow_by: u32,
    /// How many times one section may wait for a busy fallback lock before queueing for it.
    pub max_busy_waits: u32,
}

impl RetryConfig {
    /// The defaults: 5 attempts, grow by 1 per commit, 16 busy waits per section.
    pub const DEFAULT: RetryConfig = RetryConfig {
        max_attempts: 5,
        grow_by: 1,
        max_busy_waits: 16,
    };
}

impl Default for RetryConfig {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// An input to the retry policy.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum RetryEvent {
    /// A critical section starts (outermost lock acquisition).
    Start,
    /// The current hardware attempt aborted with this status.
    Abort(AbortStatus),
    /// The section committed in hardware.
    Commit,
    /// The section acquired the fallback lock (after a [`RetryAction::Fallback`]).
    FallbackAcquired,
}

/// What the caller should do next.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum RetryAction {
    /// Begin a hardware transaction.
    Attempt,
    /// Wait, outside any transaction, until the fallback lock is free; then begin a hardware
    /// transaction.
    WaitThenAttempt,
    /// Acquire the fallback lock and run the section non-speculatively.
    Fallback,
    /// The section is over (after `Commit` or `FallbackAcquired`), or the event was not
    /// expected in the current state and was ignored.
    Done,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct Section {
    budget: u32,
    attempts: u32,
    busy_waits: u32,
    falling_back: bool,
}

/// Per-thread adaptive retry state (see the module documentation).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    cfg: RetryConfig,
    limit: u32,
    successive_commits: u64,
    successive_aborts: u64,
    section: Option<Section>,
}

impl RetryPolicy {
    /// A fresh policy; the limit starts at `cfg.max_attempts` (raised to 1 if 0).
    pub const fn new(cfg: RetryConfig) -> Self {
        let max = if cfg.max_attempts == 0 {
            1
        } else {
            cfg.max_attempts
        };
        RetryPolicy {
            cfg: RetryConfig {
                max_attempts: max,
                ..cfg
            },
            limit: max,
            successive_commits: 0,
            successive_aborts: 0,
            section: None,
        }
    }

    /// The configuration.
    pub const fn config(&self) -> RetryConfig {
        self.cfg
    }

    /// The number of hardware attempts the next section will get.
    pub const fn limit(&self) -> u32 {
        self.limit
    }

    /// Elided commits since the last abort.
    pub const fn successive_commits(&self) -> u64 {
        self.successive_commits
    }

    /// Aborts (other than lock-busy) since the last elided commit.
    pub const fn successive_aborts(&self) -> u64 {
        self.successive_aborts
    }

    /// True between `Start` and the section's `Commit` or `FallbackAcquired`.
    pub const fn in_section(&self) -> bool {
        self.section.is_some()
    }

    /// Hardware attempts the current section has made and seen abort (0 outside a section).
    pub fn section_aborts(&self) -> u32 {
        self.section.map_or(0, |s| s.attempts)
    }

    /// Feeds one event and returns the next action.
    ///
    /// A `Start` inside a section abandons the old section (as after a panic) and starts a
    /// new one. Other events outside a section, and `Abort` after a `Fallback` decision, are
    /// ignored and answered with `Done` / `Fallback` respectively.
    #[inline]
    pub fn on(&mut self, event: RetryEvent) -> RetryAction {
        match event {
            RetryEvent::Start => {
                self.section = Some(Section {
                    budget: self.limit,
                    attempts: 0,
                    busy_waits: 0,
                    falling_back: false,
                });
                RetryAction::Attempt
            }
            RetryEvent::Abort(status) => {
                let Some(mut s) = self.section else {
                    return RetryAction::Done;
                };
                if s.falling_back {
                    return RetryAction::Fallback;
                }
                let action = if status.is_lock_busy() {
                    s.busy_waits += 1;
                    if s.busy_waits <= self.cfg.max_busy_waits {
                        RetryAction::WaitThenAttempt
                    } else {
                        RetryAction::Fallback
                    }
                } else {
                    s.attempts += 1;
                    self.limit = 1;
                    self.successive_commits = 0;
                    self.successive_aborts += 1;
                    if status.is_transient() && s.attempts < s.budget {
                        RetryAction::Attempt
                    } else {
                        RetryAction::Fallback
                    }
                };
                s.falling_back = action == RetryAction::Fallback;
                self.section = Some(s);
                action
            }
            RetryEvent::Commit => {
                if self.section.take().is_some() {
                    self.successive_commits += 1;
                    self.successive_aborts = 0;
                    self.limit = self
                        .limit
                        .saturating_add(self.cfg.grow_by)
                        .min(self.cfg.max_attempts);
                }
                RetryAction::Done
            }
            RetryEvent::FallbackAcquired => {
                self.section = None;
                RetryAction::Done
            }
        }
    }
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self::new(RetryConfig::DEFAULT)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(max: u32) -> RetryConfig {
        RetryConfig {
            max_attempts: max,
            grow_by: 1,
            max_busy_waits: 2,
        }
    }

    #[test]
    fn commit_grows_limit_to_max() {
        let mut p = RetryPolicy::new(cfg(4));
        p.on(RetryEvent::Start);
        p.on(RetryEvent::Abort(AbortStatus::conflict()));
        assert_eq!(p.limit(), 1);
        assert_eq!(p.on(RetryEvent::Commit), RetryAction::Done);
        for expected in [3, 4, 4] {
            p.on(RetryEvent::Start);
            p.on(RetryEvent::Commit);
            assert_eq!(p.limit(), expected);
        }
        assert_eq!(p.successive_commits(), 4);
    }

    #[test]
    fn conflicts_retry_until_budget_then_fallback() {
        let mut p = RetryPolicy::new(cfg(3));
        assert_eq!(p.on(RetryEvent::Start), RetryAction::Attempt);
        let c = RetryEvent::Abort(AbortStatus::conflict());
        assert_eq!(p.on(c), RetryAction::Attempt);
        assert_eq!(p.on(c), RetryAction::Attempt);
        assert_eq!(p.on(c), RetryAction::Fallback);
        assert_eq!(p.section_aborts(), 3);
        assert_eq!(p.on(RetryEvent::FallbackAcquired), RetryAction::Done);
        // The next section gets only one attempt.
        p.on(RetryEvent::Start);
        assert_eq!(p.on(c), RetryAction::Fallback);
    }

    #[test]
    fn persistent_aborts_fall_back_at_once() {
        for s in [
            AbortStatus::capacity(),
            AbortStatus::explicit(3),
            AbortStatus::other(),
            AbortStatus::debug(),
            AbortStatus::conflict().with_retry(false),
        ] {
            let mut p = RetryPolicy::new(cfg(8));
            p.on(RetryEvent::Start);
            assert_eq!(p.on(RetryEvent::Abort(s)), RetryAction::Fallback, "{s:?}");
        }
    }

    #[test]
    fn lock_busy_waits_without_spending_budget() {
        let mut p = RetryPolicy::new(cfg(2));
        p.on(RetryEvent::Start);
        let busy = RetryEvent::Abort(AbortStatus::lock_busy());
        assert_eq!(p.on(busy), RetryAction::WaitThenAttempt);
        assert_eq!(p.on(busy), RetryAction::WaitThenAttempt);
        assert_eq!(p.limit(), 2);
        assert_eq!(p.section_aborts(), 0);
        // Third busy abort exceeds max_busy_waits = 2.
        assert_eq!(p.on(busy), RetryAction::Fallback);
    }

    #[test]
    fn stray_events_are_ignored() {
        let mut p = RetryPolicy::new(cfg(2));
        assert_eq!(p.on(RetryEvent::Commit), RetryAction::Done);
        assert_eq!(p.limit(), 2);
        assert_eq!(
            p.on(RetryEvent::Abort(AbortStatus::conflict())),
            RetryAction::Done
        );
        assert_eq!(p.limit(), 2);
        assert_eq!(RetryPolicy::new(cfg(0)).limit(), 1);
    }
}
