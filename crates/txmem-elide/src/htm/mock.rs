//! A scriptable HTM backend for deterministic tests.
//!
//! Each thread has its own script, installed with [`MockHtm::install`]. The script decides
//! the outcome of every outermost `begin` *at the moment of the begin*: either the section
//! runs (and will commit at `end`), or the begin fails at once with a scripted
//! [`AbortStatus`]. Since the mock cannot roll memory back, it never aborts a section that
//! has started running; an explicit [`Htm::abort`] is honoured only right after `begin`,
//! before the section has done anything, which is how the elided locks use it.
//!
//! To keep the locks sound while the mock "elides" them, mock sections run one at a time
//! process-wide (a global lock is held from `begin` to `end`), and a thread that acquires a
//! fallback lock waits in [`Htm::fallback_acquired`] until no mock section is running. That
//! is the simulated counterpart of hardware aborting the subscribers of a lock.

use super::{AbortStatus, Capabilities, Htm, Unsupported};
use lock_api::RawMutex as _;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::sync::Arc;

/// The most events a thread's log keeps (later events are counted but not logged).
pub const MOCK_LOG_CAPACITY: usize = 4096;

/// What the mock does at one outermost `begin`.
#[derive(Clone)]
pub enum MockOutcome {
    /// The section runs and commits at `end`.
    Commit,
    /// The begin fails with this status.
    Abort(AbortStatus),
    /// While the predicate returns true, every begin fails with the status; the first begin
    /// for which it returns false moves on to the next scripted outcome. Example: "conflict
    /// until the lock is free".
    AbortWhile(AbortStatus, Arc<dyn Fn() -> bool + Send + Sync>),
}

impl core::fmt::Debug for MockOutcome {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            MockOutcome::Commit => f.write_str("Commit"),
            MockOutcome::Abort(s) => f.debug_tuple("Abort").field(s).finish(),
            MockOutcome::AbortWhile(s, _) => f.debug_tuple("AbortWhile").field(s).finish(),
        }
    }
}

/// A per-thread script: a queue of outcomes for successive outermost begins, then a default
/// outcome for every begin after the queue is exhausted.
///
/// ```
/// use txmem_elide::htm::{AbortStatus, Htm, MockHtm, MockScript};
///
/// // Commit twice, then abort the 3rd begin with a capacity overflow, then commit forever.
/// MockHtm::install(MockScript::new().commits(2).abort(AbortStatus::capacity()));
/// for _ in 0..2 {
///     MockHtm.begin().unwrap();
///     assert!(MockHtm.test());
///     MockHtm.end();
/// }
/// assert_eq!(MockHtm.begin(), Err(AbortStatus::capacity()));
/// assert!(MockHtm.begin().is_ok());
/// MockHtm.end();
/// assert_eq!(MockHtm::stats().commits, 3);
/// ```
#[derive(Clone, Debug)]
pub struct MockScript {
    queue: VecDeque<MockOutcome>,
    then: MockOutcome,
    caps: Capabilities,
}

impl Default for MockScript {
    fn default() -> Self {
        Self::new()
    }
}

impl MockScript {
    /// An empty script: every begin commits. Suspend/resume and rollback-only transactions
    /// are available (see [`MockScript::capabilities`]).
    pub fn new() -> Self {
        MockScript {
            queue: VecDeque::new(),
            then: MockOutcome::Commit,
            caps: Capabilities {
                suspend_resume: true,
                rollback_only: true,
            },
        }
    }

    /// A script whose every begin fails with `status`.
    pub fn always(status: AbortStatus) -> Self {
        Self::new().then(MockOutcome::Abort(status))
    }

    /// Appends `n` committing begins.
    pub fn commits(mut self, n: usize) -> Self {
        self.queue.extend((0..n).map(|_| MockOutcome::Commit));
        self
    }

    /// Appends one begin that fails with `status`.
    pub fn abort(self, status: AbortStatus) -> Self {
        self.aborts(status, 1)
    }

    /// Appends `n` begins that fail with `status`.
    pub fn aborts(mut self, status: AbortStatus, n: usize) -> Self {
        self.queue
            .extend((0..n).map(|_| MockOutcome::Abort(status)));
        self
    }

    /// Appends a phase in which begins fail with `status` while `predicate` holds.
    pub fn abort_while(
        mut self,
        status: AbortStatus,
        predicate: impl Fn() -> bool + Send + Sync + 'static,
    ) -> Self {
        self.queue
            .push_back(MockOutcome::AbortWhile(status, Arc::new(predicate)));
        self
    }

    /// Sets the outcome of every begin after the queue is exhausted (default: commit).
    pub fn then(mut self, outcome: MockOutcome) -> Self {
        self.then = outcome;
        self
    }

    /// Sets which optional capabilities the mock claims.
    pub fn capabilities(mut self, caps: Capabilities) -> Self {
        self.caps = caps;
        self
    }
}

/// One entry of a thread's mock log.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum MockEvent {
    /// An outermost begin and its scripted result.
    Begin(Result<(), AbortStatus>),
    /// A begin inside an active section (flat nesting; always succeeds).
    NestedBegin,
    /// An `end`; `true` when it committed the outermost section.
    End(bool),
    /// An explicit abort right after a begin.
    Abort(u8),
    /// The section was suspended.
    Suspend,
    /// The section was resumed.
    Resume,
}

/// Counters of a thread's mock activity since the last [`MockHtm::install`].
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct MockStats {
    /// Outermost begins.
    pub begins: u64,
    /// Outermost sections committed.
    pub commits: u64,
    /// Begins that failed plus explicit aborts.
    pub aborts: u64,
}

struct MockThread {
    script: MockScript,
    depth: u32,
    suspended: bool,
    log: Vec<MockEvent>,
    stats: MockStats,
}

impl MockThread {
    fn record(&mut self, e: MockEvent) {
        if self.log.len() < MOCK_LOG_CAPACITY {
            self.log.push(e);
        }
    }
}

thread_local! {
    static THREAD: RefCell<MockThread> = RefCell::new(MockThread {
        script: MockScript::new(),
        depth: 0,
        suspended: false,
        log: Vec::new(),
        stats: MockStats::default(),
    });
}

/// Serializes mock sections process-wide (see the module documentation).
static SERIAL: parking_lot::RawMutex = parking_lot::RawMutex::INIT;

/// The scriptable mock backend (see the module documentation).
#[derive(Copy, Clone, Debug, Default)]
pub struct MockHtm;

impl MockHtm {
    /// Installs `script` for the current thread and clears its log and counters.
    ///
    /// # Panics
    ///
    /// Panics if the thread is inside a mock section.
    pub fn install(script: MockScript) {
        THREAD.with(|t| {
            let mut t = t.borrow_mut();
            assert_eq!(t.depth, 0, "MockHtm::install inside a mock section");
            t.script = script;
            t.log.clear();
            t.stats = MockStats::default();
        })
    }

    /// The current thread's log since the last install (at most [`MOCK_LOG_CAPACITY`]).
    pub fn events() -> Vec<MockEvent> {
        THREAD.with(|t| t.borrow().log.clone())
    }

    /// The current thread's counters since the last install.
    pub fn stats() -> MockStats {
        THREAD.with(|t| t.borrow().stats)
    }

    fn decide() -> MockOutcome {
        loop {
            let front = THREAD.with(|t| {
                let t = t.borrow();
                t.script
                    .queue
                    .front()
                    .cloned()
                    .unwrap_or(t.script.then.clone())
            });
            match front {
                MockOutcome::AbortWhile(status, pred) => {
                    // Evaluated with no borrow held: the predicate may inspect anything.
                    if pred() {
                        return MockOutcome::Abort(status);
                    }
                    THREAD.with(|t| t.borrow_mut().script.queue.pop_front());
                }
                other => {
                    THREAD.with(|t| t.borrow_mut().script.queue.pop_front());
                    return other;
                }
            }
        }
    }

    fn depth() -> u32 {
        THREAD.with(|t| t.borrow().depth)
    }

    fn begin_inner(&self) -> Result<(), AbortStatus> {
        if Self::depth() > 0 {
            THREAD.with(|t| {
                let mut t = t.borrow_mut();
                t.depth += 1;
                t.record(MockEvent::NestedBegin);
            });
            return Ok(());
        }
        let result = match Self::decide() {
            MockOutcome::Commit => Ok(()),
            MockOutcome::Abort(s) => Err(s),
            MockOutcome::AbortWhile(s, _) => Err(s),
        };
        if result.is_ok() {
            SERIAL.lock();
        }
        THREAD.with(|t| {
            let mut t = t.borrow_mut();
            t.stats.begins += 1;
            if result.is_ok() {
                t.depth = 1;
                t.suspended = false;
            } else {
                t.stats.aborts += 1;
            }
            t.record(MockEvent::Begin(result));
        });
        result
    }
}

// SAFETY: (1) a successful outermost begin takes the process-wide SERIAL lock and `end` (or
// the only permitted abort, right after begin) releases it, so mock sections never overlap.
// (2) `fallback_acquired` takes and releases SERIAL, so a thread that has just written a
// lock word waits until any running mock section has ended; a section that begins after that
// synchronizes with the write through SERIAL and sees the lock held. (3) `test` reports the
// per-thread depth, which is nonzero exactly between a successful begin and its end (minus
// suspension, during which accesses are meant to be non-transactional). (4) `available` is
// true, so there is nothing to check.
unsafe impl Htm for MockHtm {
    const INIT: Self = MockHtm;

    fn name(&self) -> &'static str {
        "mock"
    }

    fn available(&self) -> bool {
        true
    }

    fn begin(&self) -> Result<(), AbortStatus> {
        self.begin_inner()
    }

    fn end(&self) {
        let release = THREAD.with(|t| {
            let mut t = t.borrow_mut();
            assert!(t.depth > 0, "MockHtm::end called outside a transaction");
            t.depth -= 1;
            let outer = t.depth == 0;
            if outer {
                t.stats.commits += 1;
                t.suspended = false;
            }
            t.record(MockEvent::End(outer));
            outer
        });
        if release {
            // SAFETY: this thread took SERIAL at the outermost begin (depth 0 -> 1) and has
            // not released it since; depth just returned to 0.
            unsafe { SERIAL.unlock() };
        }
    }

    fn abort(&self, code: u8) -> AbortStatus {
        let release = THREAD.with(|t| {
            let mut t = t.borrow_mut();
            match t.depth {
                0 => false,
                1 => {
                    t.depth = 0;
                    t.suspended = false;
                    t.stats.aborts += 1;
                    t.record(MockEvent::Abort(code));
                    true
                }
                _ => panic!(
                    "MockHtm cannot roll back: explicit abort inside a nested section \
                     (the mock only supports aborting right after the outermost begin)"
                ),
            }
        });
        if release {
            // SAFETY: depth was 1, so this thread holds SERIAL from its outermost begin.
            unsafe { SERIAL.unlock() };
        }
        AbortStatus::explicit(code)
    }

    fn test(&self) -> bool {
        THREAD.with(|t| {
            let t = t.borrow();
            t.depth > 0 && !t.suspended
        })
    }

    fn fallback_acquired(&self) {
        if Self::depth() == 0 {
            SERIAL.lock();
            // SAFETY: locked on the line above by this thread.
            unsafe { SERIAL.unlock() };
        }
    }

    fn capabilities(&self) -> Capabilities {
        THREAD.with(|t| t.borrow().script.caps)
    }

    fn suspend(&self) -> Result<(), Unsupported> {
        THREAD.with(|t| {
            let mut t = t.borrow_mut();
            if !t.script.caps.suspend_resume {
                return Err(Unsupported);
            }
            assert!(
                t.depth > 0 && !t.suspended,
                "suspend outside a running section"
            );
            t.suspended = true;
            t.record(MockEvent::Suspend);
            Ok(())
        })
    }

    fn resume(&self) -> Result<(), Unsupported> {
        THREAD.with(|t| {
            let mut t = t.borrow_mut();
            if !t.script.caps.suspend_resume {
                return Err(Unsupported);
            }
            assert!(t.suspended, "resume without suspend");
            t.suspended = false;
            t.record(MockEvent::Resume);
            Ok(())
        })
    }

    fn begin_rollback_only(&self) -> Result<Result<(), AbortStatus>, Unsupported> {
        if !self.capabilities().rollback_only {
            return Err(Unsupported);
        }
        Ok(self.begin_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};

    #[test]
    fn scripted_outcomes_in_order() {
        MockHtm::install(
            MockScript::new()
                .commits(1)
                .aborts(AbortStatus::conflict(), 2)
                .then(MockOutcome::Abort(AbortStatus::capacity())),
        );
        assert!(MockHtm.begin().is_ok());
        MockHtm.end();
        assert_eq!(MockHtm.begin(), Err(AbortStatus::conflict()));
        assert_eq!(MockHtm.begin(), Err(AbortStatus::conflict()));
        for _ in 0..3 {
            assert_eq!(MockHtm.begin(), Err(AbortStatus::capacity()));
        }
        assert_eq!(
            MockHtm::stats(),
            MockStats {
                begins: 6,
                commits: 1,
                aborts: 5
            }
        );
    }

    #[test]
    fn abort_while_predicate_holds() {
        static BUSY: AtomicBool = AtomicBool::new(true);
        MockHtm::install(
            MockScript::new().abort_while(AbortStatus::conflict(), || BUSY.load(Ordering::SeqCst)),
        );
        assert!(MockHtm.begin().is_err());
        assert!(MockHtm.begin().is_err());
        BUSY.store(false, Ordering::SeqCst);
        assert!(MockHtm.begin().is_ok());
        MockHtm.end();
        assert_eq!(MockHtm::stats().commits, 1);
    }

    #[test]
    fn nesting_is_flat_and_test_tracks_depth() {
        MockHtm::install(MockScript::new());
        assert!(!MockHtm.test());
        MockHtm.begin().unwrap();
        MockHtm.begin().unwrap();
        assert!(MockHtm.test());
        MockHtm.end();
        assert!(MockHtm.test());
        MockHtm.end();
        assert!(!MockHtm.test());
        assert_eq!(
            MockHtm::events(),
            vec![
                MockEvent::Begin(Ok(())),
                MockEvent::NestedBegin,
                MockEvent::End(false),
                MockEvent::End(true)
            ]
        );
    }

    #[test]
    fn abort_right_after_begin_reports_explicit_status() {
        MockHtm::install(MockScript::new());
        MockHtm.begin().unwrap();
        assert_eq!(MockHtm.abort(42), AbortStatus::explicit(42));
        assert!(!MockHtm.test());
        // Outside a section, abort is a no-op that still reports the status.
        assert_eq!(MockHtm.abort(1).code(), Some(1));
    }

    #[test]
    fn suspend_resume_and_rot_are_optional() {
        MockHtm::install(MockScript::new());
        MockHtm.begin().unwrap();
        MockHtm.suspend().unwrap();
        assert!(!MockHtm.test());
        MockHtm.resume().unwrap();
        assert!(MockHtm.test());
        MockHtm.end();
        assert_eq!(MockHtm.begin_rollback_only(), Ok(Ok(())));
        MockHtm.end();

        MockHtm::install(MockScript::new().capabilities(Capabilities::NONE));
        assert_eq!(MockHtm.begin_rollback_only(), Err(Unsupported));
        MockHtm.begin().unwrap();
        assert_eq!(MockHtm.suspend(), Err(Unsupported));
        MockHtm.end();
    }

    #[test]
    #[should_panic(expected = "outside a transaction")]
    fn end_without_begin_panics() {
        MockHtm::install(MockScript::new());
        MockHtm.end();
    }
}
