//! Helpers shared by the integration tests (`mod common;` in each file).

use std::sync::mpsc;
use std::thread;
use std::time::Duration;

/// Runs `f` on its own thread and returns its result, failing the test with
/// `what` if `f` panics or takes longer than `secs` (a hang would otherwise
/// stall the whole test run).
#[allow(dead_code)] // (not every test binary uses every helper)
pub fn within<T: Send + 'static>(
    secs: u64,
    what: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(secs))
        .unwrap_or_else(|e| panic!("{what} ({e})"))
}

/// Runs `f` as [`txmem::atomically`] does and returns its value with the
/// number of attempts that aborted for a reason of this transaction's own
/// (a conflict, a failed validation, a busy lock...): every abort recorded
/// at the caller's call site except those from another transaction's
/// irrevocability.
///
/// For tests that assert how often a transaction aborts while other tests
/// of the same binary stress the runtime: a stress transaction that keeps
/// aborting is eventually serialized (run irrevocably), and while it runs,
/// every other writer's commit aborts with
/// [`AbortCause::Irrevocable`](txmem::AbortCause::Irrevocable) and retries.
#[allow(dead_code)] // (not every test binary uses every helper)
#[track_caller]
pub fn atomically_counting_own_aborts<'env, R>(
    f: impl FnMut(&mut txmem::Transaction<'env>) -> txmem::TxResult<R>,
) -> (R, u64) {
    let here = std::panic::Location::caller();
    let site = format!("{}:{}:{}", here.file(), here.line(), here.column());
    let own_aborts = || {
        txmem::stats::site_profile().find(&site).map_or(0, |s| {
            s.total_aborts() - s.aborts_by(txmem::AbortCause::Irrevocable)
        })
    };
    let commits = || {
        txmem::stats::site_profile()
            .find(&site)
            .map_or(0, |s| s.commits)
    };
    let (before, commits_before) = (own_aborts(), commits());
    // (`atomically` records the caller of this function as its call site.)
    let value = txmem::atomically(f);
    assert_eq!(
        commits() - commits_before,
        1,
        "the statistics did not record the commit at {site}"
    );
    (value, own_aborts() - before)
}
