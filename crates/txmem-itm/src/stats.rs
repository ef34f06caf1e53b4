//! Statistics per transaction site, printed at exit when TXMEM_ITM_STATS=1.

use std::collections::HashMap;
use std::ffi::CStr;
use std::fmt::Write as _;
use std::sync::Mutex;

/// Why a transaction aborted (and will run again).
///
/// The vocabulary is `txmem::AbortCause`'s, by name rather than by type (this crate does not
/// depend on `txmem`; see ARCHITECTURE.md): a cause that means what one of `txmem`'s means
/// carries its name, and one that `txmem` counts under a single name but this runtime splits
/// by where it happened adds where (`LockBusyOnRead`, ...). The printed labels are this
/// runtime's own and stay as they were.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum AbortCause {
    /// A read found its word's orec locked by a committing writer (`txmem`'s `LockBusy`,
    /// at a read).
    LockBusyOnRead,
    /// A read found a newer version and the read set no longer validated: the attempt could
    /// not go on consistently (`txmem`'s `Opacity`).
    Opacity,
    /// A write (eager) found its word's orec locked by another transaction (`txmem`'s
    /// `LockBusy`, at a write).
    LockBusyOnWrite,
    /// Commit could not lock an orec of its write set (`txmem`'s `LockBusy`, at commit).
    LockBusyAtCommit,
    /// Commit-time validation of the read set failed (`txmem`'s `Validation`).
    Validation,
    /// Validation failed while upgrading to irrevocable, so the rerun starts serial
    /// (`txmem`'s `Opacity`, which its `become_irrevocable` reports for the same failure).
    OpacityOnUpgrade,
}

impl AbortCause {
    /// Every cause, in counter order.
    pub const ALL: [AbortCause; 6] = [
        AbortCause::LockBusyOnRead,
        AbortCause::Opacity,
        AbortCause::LockBusyOnWrite,
        AbortCause::LockBusyAtCommit,
        AbortCause::Validation,
        AbortCause::OpacityOnUpgrade,
    ];

    /// The name TXMEM_ITM_STATS prints.
    pub fn label(self) -> &'static str {
        match self {
            AbortCause::LockBusyOnRead => "read-locked",
            AbortCause::Opacity => "read-validate",
            AbortCause::LockBusyOnWrite => "write-locked",
            AbortCause::LockBusyAtCommit => "commit-locked",
            AbortCause::Validation => "commit-validate",
            AbortCause::OpacityOnUpgrade => "upgrade-validate",
        }
    }
}

/// Something that happened to a transaction, counted against its site.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Event {
    Begin,
    Commit,
    Cancel,
    Abort(AbortCause),
    /// Ran serial because TXMEM_ITM_METHOD=serial.
    SerialMethod,
    /// Started serial irrevocable: the compiler said it goes irrevocable, or it has no
    /// instrumented code.
    StartedIrrevocable,
    /// Became serial irrevocable while running (relaxed code reaching unsafe code).
    SwitchedMidFlight,
    /// Restarted serial after too many consecutive aborts.
    AfterAborts,
    /// Closed the hourglass after too many consecutive aborts (TXMEM_ITM_CM=hourglass).
    HourglassClosed,
}

#[derive(Clone, Copy, Default, Debug)]
pub(crate) struct SiteStats {
    pub txns: u64,
    pub commits: u64,
    pub cancels: u64,
    pub aborts: [u64; 6],
    pub serial_method: u64,
    pub started_irrevocable: u64,
    pub switched: u64,
    pub after_aborts: u64,
    pub hourglass: u64,
}

impl SiteStats {
    pub fn add(&mut self, e: Event) {
        match e {
            Event::Begin => self.txns += 1,
            Event::Commit => self.commits += 1,
            Event::Cancel => self.cancels += 1,
            Event::Abort(c) => {
                let i = AbortCause::ALL.iter().position(|&x| x == c).unwrap_or(0);
                self.aborts[i] += 1;
            }
            Event::SerialMethod => self.serial_method += 1,
            Event::StartedIrrevocable => self.started_irrevocable += 1,
            Event::SwitchedMidFlight => self.switched += 1,
            Event::AfterAborts => self.after_aborts += 1,
            Event::HourglassClosed => self.hourglass += 1,
        }
    }

    fn merge(&mut self, o: &SiteStats) {
        self.txns += o.txns;
        self.commits += o.commits;
        self.cancels += o.cancels;
        for (a, b) in self.aborts.iter_mut().zip(o.aborts.iter()) {
            *a += b;
        }
        self.serial_method += o.serial_method;
        self.started_irrevocable += o.started_irrevocable;
        self.switched += o.switched;
        self.after_aborts += o.after_aborts;
        self.hourglass += o.hourglass;
    }

    fn line(&self, name: &str) -> String {
        let mut s = format!(
            "{:<40} txns={} commits={} cancels={} aborts={}",
            name,
            self.txns,
            self.commits,
            self.cancels,
            self.aborts.iter().sum::<u64>()
        );
        for (c, n) in AbortCause::ALL.iter().zip(self.aborts.iter()) {
            if *n > 0 {
                let _ = write!(s, " {}={}", c.label(), n);
            }
        }
        let _ = write!(
            s,
            " serial: method={} started-irrevocable={} switched-mid-flight={} after-aborts={} \
             hourglass-closed={}",
            self.serial_method,
            self.started_irrevocable,
            self.switched,
            self.after_aborts,
            self.hourglass
        );
        s
    }
}

/// "function+0xoff (object)" for a code address, or the bare address.
fn symbolize(addr: usize) -> String {
    // SAFETY: dladdr only reads the address and fills `info`; the strings it points to belong
    // to loaded objects and are copied before returning.
    unsafe {
        let mut info: libc::Dl_info = std::mem::zeroed();
        if addr != 0 && libc::dladdr(addr as *const libc::c_void, &mut info) != 0 {
            let obj = if info.dli_fname.is_null() {
                String::from("?")
            } else {
                CStr::from_ptr(info.dli_fname)
                    .to_string_lossy()
                    .into_owned()
            };
            let obj = obj.rsplit('/').next().unwrap_or("?").to_string();
            if !info.dli_sname.is_null() {
                let name = CStr::from_ptr(info.dli_sname).to_string_lossy();
                let off = addr - info.dli_saddr as usize;
                return format!("{name}+{off:#x} ({obj})");
            }
            let off = addr - info.dli_fbase as usize;
            return format!("{obj}+{off:#x}");
        }
    }
    format!("{addr:#x}")
}

/// The per-thread line: for each descriptor that ran a transaction (one thread's or, one
/// after another, those of threads that ended and left it to the next), its commits and
/// aborts, then the mean and the (population) variance of the aborts across them: the spread
/// by which Fig 11 of the GCC-TM study tells an algorithm that starves some threads.
fn per_thread_line(threads: &[SiteStats]) -> String {
    let aborts: Vec<u64> = threads.iter().map(|t| t.aborts.iter().sum()).collect();
    let list = |v: &[u64]| v.iter().map(u64::to_string).collect::<Vec<_>>().join(",");
    let commits: Vec<u64> = threads.iter().map(|t| t.commits).collect();
    let n = threads.len().max(1) as f64;
    let mean = aborts.iter().sum::<u64>() as f64 / n;
    let variance = aborts
        .iter()
        .map(|&a| (a as f64 - mean).powi(2))
        .sum::<f64>()
        / n;
    format!(
        "per-thread n={} commits={} aborts={} aborts-mean={mean:.2} aborts-variance={variance:.2}",
        threads.len(),
        list(&commits),
        list(&aborts),
    )
}

/// Sums the counters of every thread (each descriptor's `per_site`) and prints the table on
/// stderr: the totals, a per-thread line, and a line per site.
pub(crate) fn print<'a>(per_site: impl Iterator<Item = &'a Mutex<HashMap<usize, SiteStats>>>) {
    let mut sites: HashMap<usize, SiteStats> = HashMap::new();
    let mut threads = Vec::new();
    for map in per_site {
        let map = map.lock().unwrap_or_else(|e| e.into_inner());
        let mut thread = SiteStats::default();
        for (site, s) in map.iter() {
            sites.entry(*site).or_default().merge(s);
            thread.merge(s);
        }
        if thread.txns > 0 {
            threads.push(thread);
        }
    }
    let mut total = SiteStats::default();
    for s in sites.values() {
        total.merge(s);
    }
    let method = crate::config::get().method.name();
    let cm = match crate::config::get().contention {
        crate::config::ContentionPolicy::None => "none",
        crate::config::ContentionPolicy::Backoff => "backoff",
        crate::config::ContentionPolicy::Hourglass => "hourglass",
    };
    let gate = crate::fence::kind();
    let mut out = format!("txmem-itm stats: method={method} cm={cm} gate-fence={gate}\n");
    let _ = writeln!(out, "txmem-itm stats: {}", total.line("total"));
    let _ = writeln!(out, "txmem-itm stats: {}", per_thread_line(&threads));
    let mut list: Vec<_> = sites.into_iter().collect();
    list.sort_by_key(|(site, _)| *site);
    for (site, s) in list {
        let _ = writeln!(out, "txmem-itm stats: {}", s.line(&symbolize(site)));
    }
    eprint!("{out}");
}
