//! The per-call-site profile: which `atomically` call aborts, why, how often.

use std::fmt;
use std::panic::Location;
use std::ptr;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::Arc;

use super::counters::Counter;
use super::Serialization;
use crate::error::AbortCause;
use crate::sync::Mutex;

/// Call sites tracked per thread; further sites share one overflow row.
const SITES_PER_THREAD: usize = 64;

/// The counters of one call site in one thread's table.
#[derive(Default, Debug)]
pub(crate) struct SiteCounters {
    commits: Counter,
    aborts: [Counter; AbortCause::COUNT],
    serialized: Counter,
    started_irrevocable: Counter,
    switched_irrevocable: Counter,
}

impl SiteCounters {
    #[inline]
    pub fn commit(&self) {
        self.commits.add(1);
    }

    #[inline]
    pub fn abort(&self, cause: AbortCause) {
        self.aborts[cause.index()].add(1);
    }

    #[inline]
    pub fn serialized(&self) {
        self.serialized.add(1);
    }

    /// Counts an irrevocable commit that was asked for (not serialized by
    /// the runtime, which [`serialized`](Self::serialized) counts).
    pub fn irrevocable(&self, why: Serialization) {
        match why {
            Serialization::Started => self.started_irrevocable.add(1),
            Serialization::Switched => self.switched_irrevocable.add(1),
            Serialization::AfterAborts => {}
        }
    }
}

/// One thread's table of call sites, filled by that thread only.
pub(crate) struct SiteTable {
    keys: [AtomicPtr<Location<'static>>; SITES_PER_THREAD],
    rows: [SiteCounters; SITES_PER_THREAD],
    overflow: SiteCounters,
}

static TABLES: Mutex<Vec<Arc<SiteTable>>> = Mutex::new(Vec::new());

impl SiteTable {
    pub fn register() -> Arc<SiteTable> {
        let t = Arc::new(SiteTable {
            keys: std::array::from_fn(|_| AtomicPtr::new(ptr::null_mut())),
            rows: std::array::from_fn(|_| SiteCounters::default()),
            overflow: SiteCounters::default(),
        });
        // Tables of exited threads stay registered: their rows are still part
        // of the profile (a table is a few KiB; threads are not unbounded in
        // the programs this targets).
        TABLES.lock().push(t.clone());
        t
    }

    /// Finds or creates the row for `site` (open addressing on the pointer);
    /// sites beyond the table's capacity share one overflow row.
    pub fn row(&self, site: &'static Location<'static>) -> &SiteCounters {
        let key = site as *const Location<'static> as *mut Location<'static>;
        let start = ((key as usize) >> 4).wrapping_mul(0x9E37_79B9) % SITES_PER_THREAD;
        for i in 0..SITES_PER_THREAD {
            let idx = (start + i) % SITES_PER_THREAD;
            let cur = self.keys[idx].load(Ordering::Relaxed);
            if cur == key {
                return &self.rows[idx];
            }
            if cur.is_null() {
                self.keys[idx].store(key, Ordering::Release);
                return &self.rows[idx];
            }
        }
        &self.overflow
    }
}

/// The statistics of one call site.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SiteStats {
    /// `file:line:column` of the call, or `"(other sites)"` for the overflow row.
    pub location: String,
    /// Commits.
    pub commits: u64,
    /// Aborts, indexed like [`AbortCause::ALL`].
    pub aborts: [u64; AbortCause::COUNT],
    /// Attempts serialized (run irrevocably) after too many aborts.
    pub serialized: u64,
    /// Commits of transactions that ran irrevocably from their start.
    pub started_irrevocable: u64,
    /// Commits of transactions that became irrevocable mid-flight.
    pub switched_irrevocable: u64,
}

impl SiteStats {
    /// All aborts at this site.
    pub fn total_aborts(&self) -> u64 {
        self.aborts.iter().sum()
    }
    /// Aborts at this site with the given cause.
    pub fn aborts_by(&self, cause: AbortCause) -> u64 {
        self.aborts[cause.index()]
    }
}

/// The per-call-site profile, sorted by aborts (most first).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SiteProfile {
    /// One entry per call site.
    pub sites: Vec<SiteStats>,
}

impl SiteProfile {
    /// The row of the site whose location string ends with `suffix`
    /// (e.g. `"bank.rs:42:5"`).
    pub fn find(&self, suffix: &str) -> Option<&SiteStats> {
        self.sites.iter().find(|s| s.location.ends_with(suffix))
    }
}

fn add_row(out: &mut Vec<SiteStats>, location: String, c: &SiteCounters) {
    let row = match out.iter_mut().position(|s| s.location == location) {
        Some(i) => &mut out[i],
        None => {
            out.push(SiteStats {
                location,
                commits: 0,
                aborts: [0; AbortCause::COUNT],
                serialized: 0,
                started_irrevocable: 0,
                switched_irrevocable: 0,
            });
            out.last_mut().expect("just pushed")
        }
    };
    row.commits += c.commits.get();
    for (i, a) in c.aborts.iter().enumerate() {
        row.aborts[i] += a.get();
    }
    row.serialized += c.serialized.get();
    row.started_irrevocable += c.started_irrevocable.get();
    row.switched_irrevocable += c.switched_irrevocable.get();
}

pub(crate) fn profile() -> SiteProfile {
    let tables = TABLES.lock();
    let mut sites = Vec::new();
    for t in tables.iter() {
        for (k, row) in t.keys.iter().zip(&t.rows) {
            let p = k.load(Ordering::Acquire);
            if p.is_null() {
                continue;
            }
            // SAFETY: keys are only ever set from `&'static Location`.
            let loc = unsafe { &*p };
            add_row(
                &mut sites,
                format!("{}:{}:{}", loc.file(), loc.line(), loc.column()),
                row,
            );
        }
        let o = &t.overflow;
        if o.commits.get() + o.aborts.iter().map(Counter::get).sum::<u64>() > 0 {
            add_row(&mut sites, "(other sites)".to_string(), o);
        }
    }
    sites.sort_by(|a, b| {
        b.total_aborts()
            .cmp(&a.total_aborts())
            .then(b.commits.cmp(&a.commits))
    });
    SiteProfile { sites }
}

impl fmt::Display for SiteProfile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let width = self
            .sites
            .iter()
            .map(|s| s.location.len())
            .max()
            .unwrap_or(4)
            .max(4);
        write!(f, "{:<width$} {:>10} {:>10}", "site", "commits", "aborts")?;
        for c in AbortCause::ALL {
            write!(f, " {:>11}", c.name())?;
        }
        writeln!(
            f,
            " {:>10} {:>10} {:>10}",
            "serialized", "started", "switched"
        )?;
        for s in &self.sites {
            write!(
                f,
                "{:<width$} {:>10} {:>10}",
                s.location,
                s.commits,
                s.total_aborts()
            )?;
            for c in AbortCause::ALL {
                write!(f, " {:>11}", s.aborts_by(c))?;
            }
            writeln!(
                f,
                " {:>10} {:>10} {:>10}",
                s.serialized, s.started_irrevocable, s.switched_irrevocable
            )?;
        }
        Ok(())
    }
}
