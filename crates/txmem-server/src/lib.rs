//! A memcached-compatible server whose every request is a txmem
//! transaction.
//!
//! The memcached study in the seeds (Ruan et al., ASPLOS'14) moved
//! memcached's locks into GCC transactions and found the transactions
//! serialized: relaxed transactions turning irrevocable mid-flight, a
//! global lock taken by every transaction, serialization after 100 aborts.
//! This server is the design that study pointed to. Its cache is
//! synchronized by txmem transactions alone (see [`store`]); no request
//! takes a lock or runs irrevocably, and `stats txmem` shows it: commits,
//! aborts by cause, and the three kinds of serialization, per call site.
//!
//! It speaks memcached's text protocol, its meta commands and its binary
//! protocol ([`protocol`]), so ordinary memcached clients use it unchanged.
//!
//! ```no_run
//! use txmem_server::{Server, Settings};
//! let server = Server::bind(Settings { port: 0, ..Settings::default() }).unwrap();
//! println!("listening on {}", server.local_addr().unwrap());
//! server.run_until(async { tokio::signal::ctrl_c().await.ok(); }).unwrap();
//! ```

#![warn(missing_docs)]

pub mod net;
pub mod protocol;
pub mod report;
mod settings;
pub mod stats;
pub mod store;

use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

pub use net::{Server, ServerHandle};
pub use settings::{parse_size, ContentionPolicy, Protocol, Settings, MIN_ITEM_SIZE};

use stats::ServerStats;
use store::{Store, StoreConfig};

/// The version `version` and `stats` report: memcached's protocol version
/// this server follows, and txmem's.
pub const VERSION: &str = concat!("1.6.18-txmem-", env!("CARGO_PKG_VERSION"));

/// Connection counts.
#[derive(Debug, Default)]
pub struct Connections {
    current: AtomicU64,
    total: AtomicU64,
    rejected: AtomicU64,
    idle_kicks: AtomicU64,
}

impl Connections {
    /// Open connections.
    pub fn current(&self) -> u64 {
        self.current.load(Ordering::Relaxed)
    }
    /// Connections accepted since start.
    pub fn total(&self) -> u64 {
        self.total.load(Ordering::Relaxed)
    }
    /// Connections refused for being over the limit.
    pub fn rejected(&self) -> u64 {
        self.rejected.load(Ordering::Relaxed)
    }
    /// Connections closed for being idle past `--idle-timeout`.
    pub fn idle_kicks(&self) -> u64 {
        self.idle_kicks.load(Ordering::Relaxed)
    }
}

/// What every connection shares: the store, the counters, the settings.
pub struct Shared {
    /// The cache.
    pub store: Store,
    /// Request counters.
    pub stats: ServerStats,
    /// The settings the server started with.
    pub settings: Settings,
    /// Connection counts.
    pub connections: Connections,
    /// txmem's counters at the last `stats reset` (txmem's own counters
    /// cannot be reset; `stats txmem` reports the difference).
    txmem_base: Mutex<txmem::stats::Stats>,
    /// Completes [`Server::run_until`] when a client sends `shutdown`.
    shutdown: tokio::sync::Notify,
}

impl Shared {
    /// The state of a server with `settings`.
    pub fn new(settings: Settings) -> Shared {
        let store = Store::new(StoreConfig {
            memory_limit: settings.memory_mb.saturating_mul(1 << 20),
            max_item_size: settings.max_item_size,
            // One shard per worker, one for the maintenance thread, and
            // room for the threads of an embedding program.
            shards: settings.threads + 2,
            options: settings.contention.options(),
            evict: settings.evict,
            cas: settings.cas,
            coarse_flush: !settings.cas,
        });
        Shared {
            store,
            stats: ServerStats::default(),
            settings,
            connections: Connections::default(),
            txmem_base: Mutex::new(txmem::stats::snapshot()),
            shutdown: tokio::sync::Notify::new(),
        }
    }

    /// Stops the server as its shutdown future would (the `shutdown`
    /// command, allowed by `-A`).
    pub fn request_shutdown(&self) {
        // A stored permit: the server sees it even if it is not waiting.
        self.shutdown.notify_one();
    }

    /// txmem's counters since start or the last `stats reset`.
    pub fn txmem_stats(&self) -> txmem::stats::Stats {
        txmem::stats::snapshot() - *self.txmem_base.lock()
    }

    /// `stats reset`: zeroes the request counters and restarts txmem's.
    pub fn reset_stats(&self) {
        self.stats.reset();
        *self.txmem_base.lock() = txmem::stats::snapshot();
    }
}
