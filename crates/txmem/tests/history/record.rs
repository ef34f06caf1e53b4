//! What a transaction saw and did, recorded per attempt.
//!
//! Every value is unique: list elements, map keys, set elements and queue
//! elements are drawn once, so a value names the transaction that wrote
//! it, and a list names its own version (the prefix order of appends).

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

use txmem::{Transaction, TxOptions, TxResult};

/// One operation's outcome, as the program saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// A list register read (a box, an array slot, a map key): its whole
    /// list, or `None` if absent (map keys only).
    Get { key: u32, value: Option<Vec<u32>> },
    /// A list register written: its whole new list, or `None` if removed.
    Put { key: u32, value: Option<Vec<u32>> },
    /// Many map keys read at once: every key of the history in `range`
    /// (inclusive; all keys if `None`) that is not in `found` was read
    /// absent. `found` must be in `order`.
    Scan {
        range: Option<(u32, u32)>,
        order: Order,
        found: Vec<(u32, Vec<u32>)>,
    },
    /// A set element's presence read.
    Has { elem: u32, present: bool },
    /// A set element inserted (`true`) or removed.
    Mark { elem: u32, present: bool },
    /// All elements of a set, ascending: every element of the history not
    /// in `found` was read absent.
    Elements { found: Vec<u32> },
    /// A count (`len`), taken right after an enumeration (`Scan` of
    /// everything, `Elements`), which it must agree with.
    Count { n: usize },
    /// A value pushed onto the queue.
    Push { elem: u32 },
    /// A look at the queue's front (`popped`: it was removed), made just
    /// after reading the pop log, which was `log_len` long.
    Front {
        log_len: usize,
        got: Option<u32>,
        popped: bool,
    },
    /// The queue's length, made just after reading the pop log.
    QueueLen { log_len: usize, n: usize },
    /// A result no correct execution gives (a fresh key already present).
    Impossible(String),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    Ascending,
    Descending,
    /// Any order (hash map iteration).
    Any,
}

/// One attempt of one transaction.
#[derive(Clone, Debug)]
pub struct Attempt {
    pub thread: usize,
    pub seq: usize,
    /// 1 for the first attempt.
    pub attempt: usize,
    pub committed: bool,
    /// When it began and ended, on a clock shared by all threads (an
    /// aborted attempt ends when the next one begins).
    pub begin: u64,
    pub end: u64,
    pub events: Vec<Event>,
}

static CLOCK: AtomicU64 = AtomicU64::new(0);

/// The shared clock's next tick.
pub fn tick() -> u64 {
    CLOCK.fetch_add(1, Ordering::SeqCst)
}

/// Runs `body` as one transaction with `opts` and returns every attempt it
/// took, with what each recorded; the last one committed (`run` returns
/// once an attempt commits, and each call of the closure is an attempt).
pub fn record<'env>(
    opts: &TxOptions,
    thread: usize,
    seq: usize,
    mut body: impl FnMut(&mut Transaction<'env>, &mut Vec<Event>) -> TxResult<()>,
) -> Vec<Attempt> {
    let mut attempts: Vec<(u64, Vec<Event>)> = Vec::new();
    opts.run(|tx| {
        attempts.push((tick(), Vec::new()));
        body(tx, &mut attempts.last_mut().expect("just pushed").1)
    });
    committed_last(thread, seq, attempts, tick())
}

/// A transaction of its own outside `atomically` (`TBox::update`,
/// `load`) that ran between `begin` and now: one attempt, committed.
pub fn single(thread: usize, seq: usize, begin: u64, events: Vec<Event>) -> Vec<Attempt> {
    committed_last(thread, seq, vec![(begin, events)], tick())
}

fn committed_last(
    thread: usize,
    seq: usize,
    attempts: Vec<(u64, Vec<Event>)>,
    end: u64,
) -> Vec<Attempt> {
    let n = attempts.len();
    let ends: Vec<u64> = attempts.iter().skip(1).map(|a| a.0).chain([end]).collect();
    attempts
        .into_iter()
        .zip(ends)
        .enumerate()
        .map(|(i, ((begin, events), end))| Attempt {
            thread,
            seq,
            attempt: i + 1,
            committed: i + 1 == n,
            begin,
            end,
            events,
        })
        .collect()
}

/// A list for reports: short ones whole, long ones by their length and
/// last elements (a version is known by its length and its last element).
pub struct Short<'a>(pub &'a [u32]);

impl fmt::Display for Short<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = self.0;
        if v.len() <= 6 {
            write!(f, "{v:?}")
        } else {
            let tail: Vec<String> = v[v.len() - 3..].iter().map(u32::to_string).collect();
            write!(f, "[{} elements: .., {}]", v.len(), tail.join(", "))
        }
    }
}

fn opt_list(v: &Option<Vec<u32>>) -> String {
    match v {
        Some(l) => Short(l).to_string(),
        None => "absent".to_string(),
    }
}

/// An event for reports, naming list registers with `name`.
pub struct Shown<'a>(pub &'a Event, pub fn(u32) -> String);

impl fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = self.1;
        match self.0 {
            Event::Get { key, value } => write!(f, "get {} = {}", name(*key), opt_list(value)),
            Event::Put { key, value: None } => write!(f, "remove {}", name(*key)),
            Event::Put { key, value } => write!(f, "put {} = {}", name(*key), opt_list(value)),
            Event::Scan {
                range,
                order,
                found,
            } => {
                match range {
                    Some((lo, hi)) => write!(f, "scan {lo}..={hi} {order:?}: ")?,
                    None => write!(f, "iterate: ")?,
                }
                let shown: Vec<String> = found
                    .iter()
                    .map(|(k, l)| format!("{k}={}", Short(l)))
                    .collect();
                write!(f, "{{{}}}", shown.join(", "))
            }
            Event::Has { elem, present } => write!(f, "contains {elem} = {present}"),
            Event::Mark {
                elem,
                present: true,
            } => write!(f, "insert {elem}"),
            Event::Mark {
                elem,
                present: false,
            } => write!(f, "remove {elem}"),
            Event::Elements { found } => write!(f, "elements = {found:?}"),
            Event::Count { n } => write!(f, "len = {n}"),
            Event::Push { elem } => write!(f, "push {elem}"),
            Event::Front {
                log_len,
                got,
                popped,
            } => write!(
                f,
                "{} = {got:?} (pop log length {log_len})",
                if *popped { "try_pop" } else { "peek" }
            ),
            Event::QueueLen { log_len, n } => {
                write!(f, "len = {n} (pop log length {log_len})")
            }
            Event::Impossible(what) => write!(f, "impossible: {what}"),
        }
    }
}
