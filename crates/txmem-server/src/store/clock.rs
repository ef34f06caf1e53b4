//! The server's clock and memcached's expiry times.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Expiry times up to this many seconds are relative to now; larger ones
/// are absolute Unix times (memcached's rule).
pub const RELATIVE_LIMIT: i64 = 60 * 60 * 24 * 30;

const NANOS: u64 = 1_000_000_000;

/// Server time: nanoseconds since the server started (never 0, so 0 can
/// mean "never" in expiry fields), monotonic whatever the wall clock does.
#[derive(Debug)]
pub struct Clock {
    start: Instant,
    unix_start: Duration,
    /// How far the clock was moved forward ([`Clock::advance`]).
    skew: std::sync::atomic::AtomicU64,
}

impl Default for Clock {
    fn default() -> Self {
        Clock::new()
    }
}

impl Clock {
    /// A clock starting now.
    pub fn new() -> Clock {
        Clock {
            start: Instant::now(),
            unix_start: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default(),
            skew: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// Now, in server nanoseconds.
    pub fn now(&self) -> u64 {
        self.start.elapsed().as_nanos() as u64
            + 1
            + self.skew.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Now, in Unix seconds.
    pub fn unix_now(&self) -> u64 {
        (self.unix_start.as_nanos() as u64 + self.now()) / NANOS
    }

    /// Seconds since the server started.
    pub fn uptime(&self) -> u64 {
        self.now() / NANOS
    }

    /// The deadline a client's expiry time stands for, in server
    /// nanoseconds: 0 (never) for 0; already past for a negative time or an
    /// absolute time not in the future; otherwise relative seconds up to 30
    /// days, absolute Unix seconds beyond.
    pub fn deadline(&self, exptime: i64) -> u64 {
        let now = self.now();
        match exptime {
            0 => 0,
            t if t < 0 => 1,
            t if t <= RELATIVE_LIMIT => now.saturating_add(t as u64 * NANOS),
            t => {
                let unix = self.unix_now();
                if t as u64 <= unix {
                    1
                } else {
                    // Saturating: a client may send any i64, and a time past
                    // the clock's range is as good as never.
                    now.saturating_add((t as u64 - unix).saturating_mul(NANOS))
                }
            }
        }
    }

    /// Seconds left before `expires` (a deadline), rounded up; -1 for never.
    pub fn ttl(&self, expires: u64) -> i64 {
        if expires == 0 {
            return -1;
        }
        let left = expires.saturating_sub(self.now());
        left.div_ceil(NANOS) as i64
    }

    /// Whole seconds since `t` (server nanoseconds).
    pub fn seconds_since(&self, t: u64) -> u64 {
        self.now().saturating_sub(t) / NANOS
    }

    /// Moves the clock forward (tests of expiry; memcached's `debugtime`
    /// when `--debug-time` allows it).
    pub fn advance(&self, by: Duration) {
        self.skew
            .fetch_add(by.as_nanos() as u64, std::sync::atomic::Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expiry_times_follow_memcached() {
        let c = Clock::new();
        assert_eq!(c.deadline(0), 0);
        assert!(c.deadline(-1) <= c.now());
        let rel = c.deadline(10);
        assert!(rel > c.now() + 9 * NANOS && rel <= c.now() + 10 * NANOS);
        assert_eq!(c.ttl(rel), 10);
        // Absolute: an hour from now, and a time in the past.
        let abs = c.deadline(c.unix_now() as i64 + 3600);
        assert!(abs > c.now() + 3598 * NANOS && abs <= c.now() + 3600 * NANOS);
        assert!(c.deadline(RELATIVE_LIMIT + 1) <= c.now());
        // The far future saturates rather than overflowing.
        assert_eq!(c.deadline(i64::MAX), u64::MAX);
        assert_eq!(c.ttl(0), -1);
        c.advance(Duration::from_secs(11));
        assert!(rel <= c.now());
    }
}
