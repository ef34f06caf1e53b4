//! The exit report: the profile's rows grouped by lock, busiest first, each site named by
//! the function (and source line) that called the lock function.
//!
//! Written to standard error, or to the file `TXMEM_ELIDE_STATS_FILE` names, from the
//! library's destructor, which runs after the program's own destructors. A process made by
//! `fork` without `exec` inherits the tables but not the duty: only the process that loaded
//! the library reports. `TXMEM_ELIDE_STATS_TOP` caps the locks shown (10 by default).

use super::{losses, rows, Site, CAUSE_NAMES};
use core::sync::atomic::{AtomicI32, Ordering};
use std::collections::BTreeMap;
use std::fmt::Write as _;

static OWNER: AtomicI32 = AtomicI32::new(0);

/// Makes this process the one that reports.
pub(super) fn arm() {
    // SAFETY: getpid cannot fail.
    OWNER.store(unsafe { libc::getpid() }, Ordering::Relaxed);
}

#[used]
#[link_section = ".fini_array"]
static FINI: extern "C" fn() = at_exit;

extern "C" fn at_exit() {
    let owner = OWNER.load(Ordering::Relaxed);
    // SAFETY: getpid cannot fail.
    if owner == 0 || owner != unsafe { libc::getpid() } {
        return;
    }
    // The report's own allocations and file calls must not be profiled.
    let _ = super::guarded(|| {
        let text = render();
        emit(&text);
    });
}

fn us(ns: u64) -> String {
    let v = ns as f64 / 1000.0;
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

fn quartet(h: &super::Hist) -> String {
    format!(
        "{}/{}/{}/{}",
        us(h.quantile(0.5)),
        us(h.quantile(0.9)),
        us(h.quantile(0.99)),
        us(h.max())
    )
}

/// The function that made the call returning to `ret`, with its source line when the
/// program has debug information; the module and offset otherwise.
pub(crate) fn symbolize(ret: usize) -> String {
    let pc = ret.saturating_sub(1);
    let mut frames: Vec<String> = Vec::new();
    backtrace::resolve(pc as *mut libc::c_void, |sym| {
        let name = sym.name().map(|n| n.to_string()).unwrap_or_default();
        let at = match (sym.filename(), sym.lineno()) {
            (Some(f), Some(l)) => {
                let f = f.to_string_lossy();
                let short = f.rsplit('/').take(2).collect::<Vec<_>>();
                format!(
                    " ({}:{l})",
                    short.into_iter().rev().collect::<Vec<_>>().join("/")
                )
            }
            _ => String::new(),
        };
        frames.push(format!("{name}{at}"));
    });
    // Innermost first: the outermost frame is the function the call physically sits in.
    if let Some(outer) = frames.last() {
        if !outer.is_empty() {
            return outer.clone();
        }
    }
    // SAFETY: `Dl_info` is plain C data (pointers and an address); all
    // zeros (null pointers) is a valid value of it.
    let mut info: libc::Dl_info = unsafe { core::mem::zeroed() };
    // SAFETY: dladdr fills `info` for an address inside a loaded object, or returns 0.
    if unsafe { libc::dladdr(pc as *const libc::c_void, &mut info) } != 0
        && !info.dli_fname.is_null()
    {
        // SAFETY: dli_fname is a NUL-terminated path when non-null.
        let f = unsafe { std::ffi::CStr::from_ptr(info.dli_fname) }.to_string_lossy();
        return format!("{}+{:#x}", f, pc - info.dli_fbase as usize);
    }
    format!("{pc:#x}")
}

struct Lock {
    sites: Vec<&'static Site>,
    acquisitions: u64,
    contended: u64,
    wait_ns: u64,
    hold_ns: u64,
}

fn render() -> String {
    let mut locks: BTreeMap<usize, Lock> = BTreeMap::new();
    for s in rows() {
        let (lock, _) = s.key();
        let l = locks.entry(lock).or_insert(Lock {
            sites: Vec::new(),
            acquisitions: 0,
            contended: 0,
            wait_ns: 0,
            hold_ns: 0,
        });
        l.acquisitions += s.acquisitions.load(Ordering::Relaxed);
        l.contended += s.contended.load(Ordering::Relaxed);
        l.wait_ns += s.wait.sum();
        l.hold_ns += s.hold.sum();
        l.sites.push(s);
    }
    let mut order: Vec<(usize, Lock)> = locks.into_iter().collect();
    order.sort_by_key(|(_, l)| core::cmp::Reverse((l.contended, l.wait_ns, l.acquisitions)));
    let top = std::env::var("TXMEM_ELIDE_STATS_TOP")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10usize);
    let mode = crate::real::mode();
    let verdict = txmem_elide::htm::Rtm::detection().verdict;
    let mut out = String::new();
    // SAFETY: getpid cannot fail.
    let pid = unsafe { libc::getpid() };
    let _ = writeln!(
        out,
        "txmem-elide lock profile (pid {pid}): {} locks, {} sites; elision {} (RTM: {verdict:?}); times in microseconds",
        order.len(),
        order.iter().map(|(_, l)| l.sites.len()).sum::<usize>(),
        if mode.elide { "on" } else { "off" },
    );
    let (dropped, untracked) = losses();
    if dropped + untracked > 0 {
        let _ = writeln!(
            out,
            "  not recorded: {dropped} acquisitions (site table full), {untracked} hold times (too many locks held)"
        );
    }
    for (addr, l) in order.iter().take(top) {
        let _ = writeln!(
            out,
            "lock {addr:#x}: {} acquisitions, {} contended, waited {} us, held {} us in all",
            l.acquisitions,
            l.contended,
            us(l.wait_ns),
            us(l.hold_ns)
        );
        let _ = writeln!(
            out,
            "  {:>10} {:>9} {:>8} {:>29} {:>29}  site",
            "acquired", "contended", "failed", "wait p50/p90/p99/max", "hold p50/p90/p99/max"
        );
        let mut sites = l.sites.clone();
        sites.sort_by_key(|s| core::cmp::Reverse(s.acquisitions.load(Ordering::Relaxed)));
        for s in sites {
            let _ = writeln!(
                out,
                "  {:>10} {:>9} {:>8} {:>29} {:>29}  {}{}",
                s.acquisitions.load(Ordering::Relaxed),
                s.contended.load(Ordering::Relaxed),
                s.try_failures.load(Ordering::Relaxed),
                quartet(&s.wait),
                quartet(&s.hold),
                symbolize(s.key().1),
                if s.shared.load(Ordering::Relaxed) > 0 {
                    format!(" [{} shared]", s.shared.load(Ordering::Relaxed))
                } else {
                    String::new()
                }
            );
            let attempts = s.tx_attempts.load(Ordering::Relaxed);
            if attempts > 0 {
                let aborts: Vec<String> = s
                    .tx_aborts
                    .iter()
                    .zip(CAUSE_NAMES)
                    .filter(|(c, _)| c.load(Ordering::Relaxed) > 0)
                    .map(|(c, n)| format!("{n} {}", c.load(Ordering::Relaxed)))
                    .collect();
                let _ = writeln!(
                    out,
                    "  {:>10} RTM: {attempts} attempts, {} commits, {} fallbacks; aborts: {}",
                    "",
                    s.tx_commits.load(Ordering::Relaxed),
                    s.fallbacks.load(Ordering::Relaxed),
                    if aborts.is_empty() {
                        "none".into()
                    } else {
                        aborts.join(", ")
                    }
                );
            }
        }
    }
    if order.len() > top {
        let _ = writeln!(out, "({} quieter locks not shown)", order.len() - top);
    }
    out
}

fn emit(text: &str) {
    if let Some(path) = std::env::var_os("TXMEM_ELIDE_STATS_FILE") {
        if std::fs::write(&path, text).is_ok() {
            return;
        }
    }
    let mut rest = text.as_bytes();
    while !rest.is_empty() {
        // SAFETY: writes from a valid buffer of the given length.
        let n = unsafe { libc::write(2, rest.as_ptr() as *const libc::c_void, rest.len()) };
        if n <= 0 {
            return;
        }
        rest = &rest[n as usize..];
    }
}
