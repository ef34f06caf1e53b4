//! The settings of what happens around the operations of a CPU: timer interrupts and the
//! per-hardware-thread TLB.

use serde::{Deserialize, Serialize};

/// What the hardware does to a running transaction when an interrupt arrives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum InterruptMode {
    /// Suspend it with `xpush` before the handler and resume it with `xpop` after (TxLinux).
    Xpush,
    /// Abort it with cause `interrupt` (most commercial HTMs).
    Abort,
}

/// Per-core periodic timer interrupts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct InterruptConfig {
    /// Timer period in cycles; 0 disables interrupts.
    pub period: u64,
    /// Treatment of a transaction running when the interrupt is taken.
    pub mode: InterruptMode,
    /// Cycles to enter and to leave the handler.
    pub entry_cycles: u64,
}

impl Default for InterruptConfig {
    fn default() -> Self {
        InterruptConfig {
            period: 0,
            mode: InterruptMode::Xpush,
            entry_cycles: 20,
        }
    }
}

/// Per-hardware-thread translation lookaside buffer, the source of `paging` aborts.
///
/// Off by default, so machines without it behave exactly as before. When enabled, every
/// load and store looks its page up in the issuing hardware thread's TLB (set-associative,
/// LRU); a miss costs `miss_latency` cycles, and a miss inside a transaction aborts it
/// with probability `tx_miss_abort_ppm` / 1 000 000 — the way a page fault (or, on
/// POWER8, a translation the hardware cannot do transactionally) aborts a real HTM
/// transaction. Such aborts report cause `other` (page faults are `other` in RTM's
/// vocabulary) and are counted in `tx.aborts.paging` as well.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TlbConfig {
    /// Whether the TLB is modelled at all.
    pub enabled: bool,
    /// Entries per hardware thread.
    pub entries: u32,
    /// Associativity (`entries / ways` must be a power of two).
    pub ways: u32,
    /// Page size in bytes (a power of two, at least `line_bytes`).
    pub page_bytes: u64,
    /// Cycles added by a miss (page walk).
    pub miss_latency: u64,
    /// Chance, in parts per million, that a miss inside a transaction aborts it:
    /// 1 000 000 always, 0 never.
    pub tx_miss_abort_ppm: u32,
    /// Whether a miss that aborts its transaction still installs the translation. `true`
    /// (a TLB miss: the walk completes, the retry hits); `false` models a page fault the
    /// hardware suppresses inside a transaction, so every transactional retry misses again
    /// until the page is touched non-transactionally (HLE thrashing on page faults). Then a
    /// transaction that always aborts on the miss needs a non-transactional fallback (a
    /// retry budget, as lock elision has): `Cpu::transaction` retries transient aborts
    /// without end.
    pub fill_on_abort: bool,
}

impl Default for TlbConfig {
    fn default() -> Self {
        // Haswell's L1 DTLB: 64 entries, 4-way, 4 KB pages.
        TlbConfig {
            enabled: false,
            entries: 64,
            ways: 4,
            page_bytes: 4096,
            miss_latency: 30,
            tx_miss_abort_ppm: 1_000_000,
            fill_on_abort: true,
        }
    }
}
