//! The systems a benchmark row can run: txmem in its configurations and
//! every peer. One closed list, so that `--systems` is checked when the
//! command line is read and a row can never name a system that does not
//! exist.

use std::fmt;
use std::str::FromStr;

use txmem::Opacity;

/// A system measured by the benchmark suites.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum System {
    /// txmem, TL2 opacity: the reference every ratio is relative to.
    Txmem,
    /// txmem, opacity by revalidating the read set.
    TxmemRevalidate,
    /// txmem without opacity.
    TxmemNoOpacity,
    /// txmem's typed collections, each operation a transaction of its own
    /// outside `atomically` (committed reads, single-operation writes).
    TxmemDirect,
    /// txmem's untyped word STM (`TWords`).
    TxmemWords,
    /// The intset word arena over a `TArray<u64>`, TL2 opacity.
    TxmemTarray,
    /// The intset word arena over a `TArray<u64>`, revalidation.
    TxmemTarrayRevalidate,
    /// The intset word arena over a `TArray<u64>`, no opacity.
    TxmemTarrayNoOpacity,
    /// One coarse `parking_lot::Mutex`.
    Mutex,
    /// One coarse `parking_lot::RwLock`.
    RwLock,
    /// One coarse `txmem_elide::ElidedMutex`.
    ElidedMutex,
    /// One coarse `txmem_elide::ElidedRwLock`.
    ElidedRwLock,
    /// One mutex per element or bucket.
    FineLocks,
    /// The `fast-stm` crate.
    FastStm,
    /// The `stm` crate.
    Stm,
    /// GCC's libitm, in a child process.
    Libitm,
    /// The same libitm harness on txmem's `libtxmem_itm.so`, preloaded in libitm's place.
    TxmemItm,
    /// TinySTM's own `bank` program, in a child process (`TINYSTM_BANK`).
    Tinystm,
    /// A std collection behind a `std::sync::RwLock`.
    RwLockStd,
    /// The `dashmap` crate's `DashSet`, with its default hasher (SipHash).
    Dashmap,
    /// The `dashmap` crate's `DashSet` with foldhash, the hasher `THashMap`
    /// defaults to: the maps compared without the hashers' difference.
    DashmapFoldhash,
    /// The `crossbeam-skiplist` crate's `SkipSet`.
    CrossbeamSkiplist,
    /// The `async-stm` crate: `TVar`s and queues behind an async
    /// `atomically` (the `async` suite).
    AsyncStm,
}

impl System {
    /// Every system, in the order `--list` describes them.
    pub const ALL: [System; 23] = [
        System::Txmem,
        System::TxmemRevalidate,
        System::TxmemNoOpacity,
        System::TxmemDirect,
        System::TxmemWords,
        System::TxmemTarray,
        System::TxmemTarrayRevalidate,
        System::TxmemTarrayNoOpacity,
        System::Mutex,
        System::RwLock,
        System::ElidedMutex,
        System::ElidedRwLock,
        System::FineLocks,
        System::FastStm,
        System::Stm,
        System::Libitm,
        System::TxmemItm,
        System::Tinystm,
        System::RwLockStd,
        System::Dashmap,
        System::DashmapFoldhash,
        System::CrossbeamSkiplist,
        System::AsyncStm,
    ];

    /// The name on the command line and in every report.
    pub fn name(self) -> &'static str {
        match self {
            System::Txmem => "txmem",
            System::TxmemRevalidate => "txmem-revalidate",
            System::TxmemNoOpacity => "txmem-no-opacity",
            System::TxmemDirect => "txmem-direct",
            System::TxmemWords => "txmem-words",
            System::TxmemTarray => "txmem-tarray",
            System::TxmemTarrayRevalidate => "txmem-tarray-revalidate",
            System::TxmemTarrayNoOpacity => "txmem-tarray-no-opacity",
            System::Mutex => "mutex",
            System::RwLock => "rwlock",
            System::ElidedMutex => "elided-mutex",
            System::ElidedRwLock => "elided-rwlock",
            System::FineLocks => "fine-locks",
            System::FastStm => "fast-stm",
            System::Stm => "stm",
            System::Libitm => "libitm",
            System::TxmemItm => "txmem-itm",
            System::Tinystm => "tinystm",
            System::RwLockStd => "rwlock-std",
            System::Dashmap => "dashmap",
            System::DashmapFoldhash => "dashmap-foldhash",
            System::CrossbeamSkiplist => "crossbeam-skiplist",
            System::AsyncStm => "async-stm",
        }
    }

    /// The member of this txmem family (`txmem` or `txmem-tarray`) that
    /// runs with `opacity`; other systems have no opacity variants and are
    /// returned unchanged.
    pub fn with_opacity(self, opacity: Opacity) -> System {
        match (self, opacity) {
            (System::Txmem, Opacity::Revalidate) => System::TxmemRevalidate,
            (System::Txmem, Opacity::None) => System::TxmemNoOpacity,
            (System::TxmemTarray, Opacity::Revalidate) => System::TxmemTarrayRevalidate,
            (System::TxmemTarray, Opacity::None) => System::TxmemTarrayNoOpacity,
            (s, _) => s,
        }
    }
}

impl fmt::Display for System {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Reports name the system as a string.
impl serde::Serialize for System {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl FromStr for System {
    type Err = String;

    fn from_str(s: &str) -> Result<System, String> {
        System::ALL
            .into_iter()
            .find(|x| x.name() == s.trim())
            .ok_or_else(|| {
                let names: Vec<&str> = System::ALL.iter().map(|x| x.name()).collect();
                format!(
                    "unknown system `{s}` (expected one of: {})",
                    names.join(", ")
                )
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for s in System::ALL {
            assert_eq!(s.name().parse::<System>(), Ok(s));
        }
        let err = "nosuch".parse::<System>().unwrap_err();
        assert!(err.contains("unknown system `nosuch`") && err.contains("dashmap"));
    }

    #[test]
    fn opacity_variants_of_each_family() {
        assert_eq!(
            System::Txmem.with_opacity(Opacity::None),
            System::TxmemNoOpacity
        );
        assert_eq!(
            System::TxmemTarray.with_opacity(Opacity::Revalidate),
            System::TxmemTarrayRevalidate
        );
        assert_eq!(System::Txmem.with_opacity(Opacity::Tl2), System::Txmem);
    }
}
