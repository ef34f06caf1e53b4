//! How far apart the benchmark's threads run: the round-trip time of one
//! cache line between two threads.
//!
//! On a virtual machine the host may move the vCPUs at any time, between
//! hyperthreads of one physical core (a line crosses in a few nanoseconds)
//! and distant cores (a hundred or more). Every multi-threaded figure
//! depends on it, and not equally for every system: a lock-based peer whose
//! lookups write a shared lock word pays the crossing on almost every
//! operation, a transactional set only on updates. The runner measures the
//! round trip before each round of repeats, so a report can say which
//! placement its 2-thread ratios were measured in.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crossbeam_utils::CachePadded;

/// Round trips per measurement, timed in batches: a fraction of a
/// millisecond even between distant cores.
const BATCHES: u64 = 21;
const BATCH: u64 = 100;

/// Give up (no figure) past this: the two threads are not running at the
/// same time (fewer free CPUs than threads), so spinning measures the
/// scheduler instead.
const TIME_LIMIT: Duration = Duration::from_millis(50);

/// The time, in nanoseconds, for a cache line written by one thread to be
/// seen by a second and the second's answer to come back, measured now
/// between two fresh threads: the median of [`BATCHES`] batches' means, so
/// that a thread descheduled in one batch does not count. `None` on a
/// single CPU, or if the exchange took longer than [`TIME_LIMIT`].
pub fn round_trip_ns() -> Option<f64> {
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        return None;
    }
    // One counter: the first thread writes odd values, the second answers
    // with the next even value.
    let line = CachePadded::new(AtomicU64::new(0));
    let deadline = Instant::now() + TIME_LIMIT;
    let wait_for = |want: u64| {
        let mut spins = 0u32;
        while line.load(Ordering::Acquire) != want {
            std::hint::spin_loop();
            spins = spins.wrapping_add(1);
            if spins.is_multiple_of(1024) && Instant::now() > deadline {
                return false;
            }
        }
        true
    };
    std::thread::scope(|s| {
        let echo = s.spawn(|| {
            for i in 0..1 + BATCHES * BATCH {
                if !wait_for(2 * i + 1) {
                    return;
                }
                line.store(2 * i + 2, Ordering::Release);
            }
        });
        // Let the echo thread start spinning before the clock starts.
        line.store(1, Ordering::Release);
        if !wait_for(2) {
            // (The echo thread gives up at the same deadline.)
            let _ = echo.join();
            return None;
        }
        let mut means = Vec::with_capacity(BATCHES as usize);
        for b in 0..BATCHES {
            let t0 = Instant::now();
            for i in 1 + b * BATCH..1 + (b + 1) * BATCH {
                line.store(2 * i + 1, Ordering::Release);
                if !wait_for(2 * i + 2) {
                    let _ = echo.join();
                    return None;
                }
            }
            means.push(t0.elapsed().as_nanos() as f64 / BATCH as f64);
        }
        let _ = echo.join();
        crate::measure::stats::median(&means)
    })
}

/// One line summarizing the round trips measured before each round, for
/// the table and Markdown headers; `None` if none were measured.
pub fn summary(round_trips_ns: &[f64]) -> Option<String> {
    let median = crate::measure::stats::median(round_trips_ns)?;
    let min = round_trips_ns.iter().copied().fold(f64::INFINITY, f64::min);
    let max = round_trips_ns.iter().copied().fold(0.0, f64::max);
    let mut line = format!(
        "thread-to-thread cache-line round trip: median {median:.0} ns ({min:.0}–{max:.0} ns over {} rounds)",
        round_trips_ns.len()
    );
    if max > 3.0 * min {
        line.push_str(
            "; it changed during the run (the host moved the CPUs), so multi-thread figures mix placements",
        );
    }
    Some(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_round_trip_is_measured_where_two_cpus_exist() {
        if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
            assert_eq!(round_trip_ns(), None);
            return;
        }
        // A busy machine may deschedule one thread past the time limit;
        // five tries in a row all failing would mean the probe is broken.
        let ns = (0..5)
            .find_map(|_| round_trip_ns())
            .expect("no round trip measured in five tries");
        assert!(ns > 0.0 && ns < TIME_LIMIT.as_nanos() as f64, "{ns} ns");
    }

    #[test]
    fn the_summary_flags_a_placement_change() {
        assert_eq!(summary(&[]), None);
        let steady = summary(&[100.0, 120.0, 110.0]).unwrap();
        assert!(
            steady.contains("median 110 ns (100–120 ns over 3 rounds)"),
            "{steady}"
        );
        assert!(!steady.contains("changed"), "{steady}");
        let moved = summary(&[24.0, 200.0, 210.0]).unwrap();
        assert!(moved.contains("changed during the run"), "{moved}");
    }
}
