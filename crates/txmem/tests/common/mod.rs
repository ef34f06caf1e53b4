//! Helpers shared by the integration tests (`mod common;` in each file).

use std::sync::mpsc;
use std::thread;
use std::time::Duration;

/// Runs `f` on its own thread and returns its result, failing the test with
/// `what` if `f` panics or takes longer than `secs` (a hang would otherwise
/// stall the whole test run).
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
