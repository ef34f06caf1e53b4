//! Request counters, per thread: each thread adds to its own cache line
//! (as memcached's per-worker statistics), and `stats` sums them.

use std::sync::atomic::{AtomicU64, Ordering};

use crossbeam_utils::CachePadded;

use crate::store::thread_index;

macro_rules! counters {
    ($($(#[$doc:meta])* $name:ident),* $(,)?) => {
        /// One thread's request counters.
        #[derive(Default, Debug)]
        pub struct Counters {
            $($(#[$doc])* pub $name: AtomicU64,)*
        }

        /// Request counters summed over threads.
        #[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
        pub struct Totals {
            $($(#[$doc])* pub $name: u64,)*
        }

        impl Totals {
            /// Every counter with its `stats` name, in report order.
            pub fn named(&self) -> Vec<(&'static str, u64)> {
                vec![$((stringify!($name), self.$name),)*]
            }
        }

        impl Counters {
            fn add_into(&self, t: &mut Totals) {
                $(t.$name += self.$name.load(Ordering::Relaxed);)*
            }

            fn reset(&self) {
                $(self.$name.store(0, Ordering::Relaxed);)*
            }
        }
    };
}

counters! {
    /// Retrieval requests (each key of a multi-key get counts).
    cmd_get,
    /// Storage requests.
    cmd_set,
    /// `flush_all` requests.
    cmd_flush,
    /// Touch requests (`touch`, `gat`, meta `T`).
    cmd_touch,
    /// Keys found by retrievals.
    get_hits,
    /// Keys not found by retrievals.
    get_misses,
    /// Deletes of absent keys.
    delete_misses,
    /// Deletes that removed an item.
    delete_hits,
    /// Increments of absent keys.
    incr_misses,
    /// Increments applied.
    incr_hits,
    /// Decrements of absent keys.
    decr_misses,
    /// Decrements applied.
    decr_hits,
    /// CAS writes to absent keys.
    cas_misses,
    /// CAS writes that stored.
    cas_hits,
    /// CAS writes refused for a stale identifier.
    cas_badval,
    /// Touches that found their key.
    touch_hits,
    /// Touches of absent keys.
    touch_misses,
    /// Bytes read from clients.
    bytes_read,
    /// Bytes written to clients.
    bytes_written,
    /// Times a connection stopped serving a pipeline to let others run
    /// (its request budget, `-R`, spent with requests still waiting).
    conn_yields,
}

impl Counters {
    /// The hit and miss counters of an increment (`incr`) or a decrement.
    pub fn arith(&self, incr: bool) -> (&AtomicU64, &AtomicU64) {
        if incr {
            (&self.incr_hits, &self.incr_misses)
        } else {
            (&self.decr_hits, &self.decr_misses)
        }
    }
}

/// Per-thread slots; threads beyond share slots (atomic adds keep that
/// correct, only slower).
const SLOTS: usize = 64;

/// The server's request counters.
pub struct ServerStats {
    slots: Box<[CachePadded<Counters>]>,
}

impl Default for ServerStats {
    fn default() -> Self {
        ServerStats {
            slots: (0..SLOTS).map(|_| CachePadded::default()).collect(),
        }
    }
}

impl ServerStats {
    /// This thread's counters.
    pub fn mine(&self) -> &Counters {
        &self.slots[thread_index() % SLOTS]
    }

    /// Sums every thread's counters.
    pub fn totals(&self) -> Totals {
        let mut t = Totals::default();
        for s in self.slots.iter() {
            s.add_into(&mut t);
        }
        t
    }

    /// Zeroes every counter (`stats reset`).
    pub fn reset(&self) {
        for s in self.slots.iter() {
            s.reset();
        }
    }
}

/// Adds `n` to a counter of this thread's (an atomic add: threads beyond
/// `SLOTS` may share the slot).
#[inline]
pub fn bump(c: &AtomicU64, n: u64) {
    c.fetch_add(n, Ordering::Relaxed);
}
