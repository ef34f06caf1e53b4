//! From recorded attempts to a [`History`] of registers, versions and
//! reads.
//!
//! How versions are recovered:
//!
//! * A *list register* (a box, an array slot, a map key, the queue's pop
//!   log) only ever has unique elements appended to it, so its versions are
//!   the prefixes of its last list: the final value, or for a removed map
//!   key the list its remover took out. A map key starts absent, lives
//!   through its prefixes, and may end *removed*; keys are fresh, never
//!   inserted again, so an absent read is either before the insert or after
//!   the removal (the graph settles which from the order).
//! * A *set element* is inserted once and removed at most once: absent,
//!   present, removed.
//! * The *queue*'s order is the pop log (every transaction that pops a
//!   committed element appends it there) followed by what is left at the
//!   end. Its tail is a register whose version `t` is "the first `t`
//!   elements pushed". A look at the front, made just after reading the
//!   log (`p` popped), names a tail version: an element `e` means `e` was
//!   pushed (at least its position + 1) and must be the `p`-th element; an
//!   empty queue means exactly `p` pushed; a length `n`, exactly `p + n`.
//!
//! A transaction's read of something it wrote itself is checked against
//! its own write and adds no edge.
//!
//! A scan or a whole-list read also reads every key (element) it does not
//! return as absent. Only keys whose lifetime (from its creator's start to
//! its remover's end) overlaps the reader's in real time are taken: the
//! others only add edges that agree with real time, and leaving out reads
//! never makes a cycle where there is none.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};

use super::graph::{History, Seen, TxId, TxInfo};
use super::record::{Attempt, Event, Order, Short, Shown};

/// What the interpreter needs to know of the collection.
pub struct Spec {
    /// List registers present from the start, holding `[]` (boxes, array
    /// slots, the pop log); the others (map keys) start absent.
    pub preset: Vec<u32>,
    /// A register's name in reports.
    pub name: fn(u32) -> String,
    /// The pop log's key, for a queue.
    pub log: Option<u32>,
    /// Check the aborted attempts too (opaque modes).
    pub aborted: bool,
}

/// The collection's committed state once every thread is done.
#[derive(Default)]
pub struct Final {
    /// The list registers present.
    pub lists: BTreeMap<u32, Vec<u32>>,
    /// A set's elements.
    pub set: Vec<u32>,
    /// A queue's elements, front first.
    pub queue: Vec<u32>,
}

pub fn interpret<'a>(spec: &Spec, attempts: &'a [Attempt], fin: &Final) -> History<'a> {
    let chosen: Vec<&Attempt> = attempts
        .iter()
        .filter(|a| a.committed || spec.aborted)
        .collect();
    let mut b = Builder {
        spec,
        h: History::default(),
        appended: HashMap::new(),
        removed: HashMap::new(),
        inserter: HashMap::new(),
        remover: HashMap::new(),
        pushes: Vec::new(),
        pusher: HashMap::new(),
        lists: BTreeMap::new(),
        map_keys: Lifetimes::default(),
        set_elems: Lifetimes::default(),
        elements: BTreeMap::new(),
        queue_pos: HashMap::new(),
        tail: None,
        window: chosen.iter().map(|a| (a.begin, a.end)).collect(),
    };
    for a in &chosen {
        b.h.txs.push(TxInfo {
            thread: a.thread,
            seq: a.seq,
            attempt: a.attempt,
            committed: a.committed,
            ops: Vec::new(), // rendered on demand (`History::render`)
        });
    }
    for (t, a) in chosen.iter().enumerate() {
        if a.committed {
            b.writes(t, a);
        }
    }
    b.list_registers(&chosen, fin);
    b.set_registers(&chosen, fin);
    if let Some(log) = spec.log {
        b.queue(fin, log);
    }
    for (t, a) in chosen.iter().enumerate() {
        b.reads(t, a);
    }
    let mut h: History<'a> = b.h;
    let name = spec.name;
    h.render = Some(Box::new(move |t| {
        chosen[t]
            .events
            .iter()
            .map(|e| Shown(e, name).to_string())
            .collect()
    }));
    h
}

/// A list register's known versions.
struct ListReg {
    reg: usize,
    /// Its last list: version `i` is the first `i` elements (version 0: the
    /// initial `[]` or absent).
    chain: Vec<u32>,
    /// Removed after its last list (one more version).
    removed: bool,
    preset: bool,
}

struct Builder<'s> {
    spec: &'s Spec,
    h: History<'static>,
    /// Committed appends: element → (writer, key).
    appended: HashMap<u32, (TxId, u32)>,
    /// Committed removals: key → (remover, the list it removed).
    removed: HashMap<u32, (TxId, Vec<u32>)>,
    inserter: HashMap<u32, TxId>,
    remover: HashMap<u32, TxId>,
    /// Each committed transaction's pushes that it did not pop itself.
    pushes: Vec<(TxId, Vec<u32>)>,
    pusher: HashMap<u32, TxId>,
    lists: BTreeMap<u32, ListReg>,
    /// Map keys some committed transaction created (the keys a scan reads
    /// as absent when it does not find them).
    map_keys: Lifetimes,
    /// Set elements some committed transaction inserted.
    set_elems: Lifetimes,
    /// Set element → (register, has a removal version).
    elements: BTreeMap<u32, (usize, bool)>,
    /// Queue element → its position in the queue's order.
    queue_pos: HashMap<u32, usize>,
    tail: Option<usize>,
    /// When each transaction began and ended.
    window: Vec<(u64, u64)>,
}

impl Builder<'_> {
    /// Collects what committed transaction `t` wrote.
    fn writes(&mut self, t: TxId, a: &Attempt) {
        let mut cur: HashMap<u32, Option<Vec<u32>>> = HashMap::new();
        let mut pending: VecDeque<u32> = VecDeque::new();
        for ev in &a.events {
            match ev {
                Event::Get { key, value } => {
                    cur.entry(*key).or_insert_with(|| value.clone());
                }
                Event::Put { key, value } => {
                    let before = cur.get(key).cloned().flatten();
                    match value {
                        Some(l) => {
                            let before = before.unwrap_or_default();
                            if !l.starts_with(&before) {
                                self.h.anomaly(
                                    vec![t],
                                    format!(
                                        "T{t} wrote {} = {} over {} (the workload only appends)",
                                        (self.spec.name)(*key),
                                        Short(l),
                                        Short(&before)
                                    ),
                                );
                            }
                            for &e in l.get(before.len()..).unwrap_or_default() {
                                self.appended.insert(e, (t, *key));
                            }
                        }
                        None => {
                            let list = before.unwrap_or_default();
                            if let Some((other, _)) = self.removed.insert(*key, (t, list)) {
                                self.h.anomaly(
                                    vec![other, t],
                                    format!(
                                        "T{other} and T{t} both removed {}",
                                        (self.spec.name)(*key)
                                    ),
                                );
                            }
                        }
                    }
                    cur.insert(*key, value.clone());
                }
                Event::Mark { elem, present } => {
                    let by = if *present {
                        &mut self.inserter
                    } else {
                        &mut self.remover
                    };
                    if let Some(other) = by.insert(*elem, t) {
                        self.h.anomaly(
                            vec![other, t],
                            format!(
                                "T{other} and T{t} both {} element {elem}",
                                if *present { "inserted" } else { "removed" }
                            ),
                        );
                    }
                }
                Event::Push { elem } => pending.push_back(*elem),
                Event::Front {
                    got: Some(e),
                    popped: true,
                    ..
                } if pending.front() == Some(e) => {
                    pending.pop_front();
                }
                _ => {}
            }
        }
        if !pending.is_empty() {
            for &e in &pending {
                self.pusher.insert(e, t);
            }
            self.pushes.push((t, pending.into()));
        }
    }

    fn list_registers(&mut self, chosen: &[&Attempt], fin: &Final) {
        let mut keys: BTreeSet<u32> = self.spec.preset.iter().copied().collect();
        keys.extend(fin.lists.keys());
        keys.extend(self.appended.values().map(|&(_, k)| k));
        keys.extend(self.removed.keys());
        for a in chosen {
            for ev in &a.events {
                match ev {
                    Event::Get { key, .. } | Event::Put { key, .. } => {
                        keys.insert(*key);
                    }
                    Event::Scan { found, .. } => keys.extend(found.iter().map(|(k, _)| *k)),
                    _ => {}
                }
            }
        }
        let mut spans = Vec::new();
        let mut by_key: HashMap<u32, Vec<(u32, TxId)>> = HashMap::new();
        for (&e, &(t, k)) in &self.appended {
            by_key.entry(k).or_default().push((e, t));
        }
        for key in keys {
            let name = (self.spec.name)(key);
            let preset = self.spec.preset.contains(&key);
            let removal = self.removed.get(&key).cloned();
            let (chain, removed) = match (fin.lists.get(&key), &removal) {
                (Some(l), Some((t, _))) => {
                    self.h.anomaly(
                        vec![*t],
                        format!("T{t} removed {name}, yet it is there at the end"),
                    );
                    (l.clone(), false)
                }
                (Some(l), None) => (l.clone(), false),
                (None, Some((_, l))) => (l.clone(), true),
                (None, None) => {
                    if preset {
                        self.h
                            .anomaly(vec![], format!("{name} is missing at the end"));
                    }
                    (Vec::new(), false)
                }
            };
            let reg = self
                .h
                .add_register(name.clone(), if preset { "[]" } else { "absent" });
            let mut at = HashMap::new();
            for (i, &e) in chain.iter().enumerate() {
                if at.insert(e, i).is_some() {
                    self.h
                        .anomaly(vec![], format!("{name} holds {e} twice: {}", Short(&chain)));
                }
                let writer = match self.appended.get(&e) {
                    Some(&(t, k)) if k == key => Some(t),
                    _ => {
                        self.h.anomaly(
                            vec![],
                            format!(
                                "{name} holds {e}, which no committed transaction appended to it"
                            ),
                        );
                        None
                    }
                };
                self.h
                    .add_version(reg, writer, Short(&chain[..=i]).to_string());
            }
            if let Some(&(t, _)) = removal.as_ref().filter(|_| removed) {
                self.h.add_version(reg, Some(t), "removed".into());
            }
            for &(e, t) in by_key.get(&key).into_iter().flatten() {
                if !at.contains_key(&e) {
                    self.h.anomaly(
                        vec![t],
                        format!(
                            "T{t} appended {e} to {name} and committed, but its last version {} lacks it",
                            if removed { format!("(removed) {}", Short(&chain)) } else { Short(&chain).to_string() }
                        ),
                    );
                }
            }
            if !preset && !chain.is_empty() {
                let creator = self.appended.get(&chain[0]).map(|&(t, _)| t);
                let remover = removal.as_ref().filter(|_| removed).map(|&(t, _)| t);
                spans.push(self.span(creator, remover, key));
            }
            self.lists.insert(
                key,
                ListReg {
                    reg,
                    chain,
                    removed,
                    preset,
                },
            );
        }
        self.map_keys = Lifetimes::new(spans);
    }

    fn set_registers(&mut self, chosen: &[&Attempt], fin: &Final) {
        let mut elems: BTreeSet<u32> = self.inserter.keys().copied().collect();
        elems.extend(self.remover.keys());
        elems.extend(&fin.set);
        for a in chosen {
            for ev in &a.events {
                match ev {
                    Event::Has { elem, .. } | Event::Mark { elem, .. } => {
                        elems.insert(*elem);
                    }
                    Event::Elements { found } => elems.extend(found),
                    _ => {}
                }
            }
        }
        let in_final: BTreeSet<u32> = fin.set.iter().copied().collect();
        for e in elems {
            let ins = self.inserter.get(&e).copied();
            let rem = self.remover.get(&e).copied();
            let reg = self
                .h
                .add_register(format!("element {e}"), "absent (not yet inserted)");
            self.h.add_version(reg, ins, "present".into());
            if let Some(r) = rem {
                self.h.add_version(reg, Some(r), "absent (removed)".into());
                if ins.is_none() {
                    self.h.anomaly(
                        vec![r],
                        format!(
                            "T{r} removed element {e}, which no committed transaction inserted"
                        ),
                    );
                }
            }
            let should_be = ins.is_some() && rem.is_none();
            if in_final.contains(&e) != should_be {
                self.h.anomaly(
                    ins.into_iter().chain(rem).collect(),
                    format!(
                        "element {e} is {} at the end, though {}",
                        if should_be { "absent" } else { "present" },
                        match (ins, rem) {
                            (Some(i), Some(r)) => format!("T{i} inserted it and T{r} removed it"),
                            (Some(i), None) => format!("T{i} inserted it"),
                            _ => "no committed transaction inserted it".into(),
                        }
                    ),
                );
            }
            self.elements.insert(e, (reg, rem.is_some()));
        }
        let spans = self
            .inserter
            .iter()
            .map(|(&e, &ins)| self.span(Some(ins), self.remover.get(&e).copied(), e))
            .collect();
        self.set_elems = Lifetimes::new(spans);
    }

    /// The queue's order and its tail register.
    fn queue(&mut self, fin: &Final, log: u32) {
        let mut order = self.lists[&log].chain.clone();
        order.extend(&fin.queue);
        for (i, &e) in order.iter().enumerate() {
            if let Some(j) = self.queue_pos.insert(e, i) {
                self.h.anomaly(
                    vec![],
                    format!("{e} entered the queue twice (positions {j} and {i})"),
                );
            }
        }
        let tail = self
            .h
            .add_register("the queue's tail".into(), "nothing pushed");
        for (i, &e) in order.iter().enumerate() {
            let writer = self.pusher.get(&e).copied();
            if writer.is_none() {
                self.h.anomaly(
                    vec![],
                    format!("the queue held {e}, which no committed transaction pushed"),
                );
            }
            self.h
                .add_version(tail, writer, format!("{} pushed (last {e})", i + 1));
        }
        for (t, pushed) in std::mem::take(&mut self.pushes) {
            let at: Vec<Option<usize>> = pushed
                .iter()
                .map(|e| self.queue_pos.get(e).copied())
                .collect();
            let consecutive =
                at[0].is_some_and(|p| at.iter().enumerate().all(|(i, q)| *q == Some(p + i)));
            if !consecutive {
                self.h.anomaly(
                    vec![t],
                    format!(
                        "T{t} committed pushes {pushed:?}, which entered the queue at positions {at:?} (not in a row, or lost)"
                    ),
                );
            }
        }
        self.tail = Some(tail);
    }

    /// Adds the reads of transaction `t`.
    fn reads(&mut self, t: TxId, a: &Attempt) {
        let mut own_lists: HashMap<u32, Option<Vec<u32>>> = HashMap::new();
        let mut own_marks: HashMap<u32, bool> = HashMap::new();
        let mut pending: VecDeque<u32> = VecDeque::new();
        let mut prev: Option<&Event> = None;
        for ev in &a.events {
            match ev {
                Event::Get { key, value } => self.list_read(t, &own_lists, *key, value.as_ref()),
                Event::Put { key, value } => {
                    own_lists.insert(*key, value.clone());
                }
                Event::Scan {
                    range,
                    order,
                    found,
                } => {
                    self.check_scan(t, *range, *order, found);
                    for (k, l) in found {
                        self.list_read(t, &own_lists, *k, Some(l));
                    }
                    let within = |k: &u32| range.is_none_or(|(lo, hi)| (lo..=hi).contains(k));
                    let (begin, end) = self.window[t];
                    let mut absent: BTreeSet<u32> = self.map_keys.overlapping(begin, end);
                    absent.retain(within);
                    absent.extend(own_lists.keys().copied().filter(within));
                    for (k, _) in found {
                        absent.remove(k);
                    }
                    for k in absent {
                        self.list_read(t, &own_lists, k, None);
                    }
                }
                Event::Count { n } => {
                    let listed = match prev {
                        Some(Event::Scan {
                            range: None, found, ..
                        }) => Some(found.len()),
                        Some(Event::Elements { found }) => Some(found.len()),
                        _ => None,
                    };
                    if let Some(m) = listed.filter(|m| m != n) {
                        self.h.anomaly(
                            vec![t],
                            format!("T{t} counted {n} right after enumerating {m}"),
                        );
                    }
                }
                Event::Has { elem, present } => self.set_read(t, &own_marks, *elem, *present),
                Event::Mark { elem, present } => {
                    own_marks.insert(*elem, *present);
                }
                Event::Elements { found } => {
                    if !found.windows(2).all(|w| w[0] < w[1]) {
                        self.h.anomaly(
                            vec![t],
                            format!("T{t} listed elements out of order or twice: {found:?}"),
                        );
                    }
                    let found_set: BTreeSet<u32> = found.iter().copied().collect();
                    for &e in &found_set {
                        self.set_read(t, &own_marks, e, true);
                    }
                    let (begin, end) = self.window[t];
                    let mut absent = self.set_elems.overlapping(begin, end);
                    absent.extend(own_marks.keys());
                    for e in absent.difference(&found_set) {
                        self.set_read(t, &own_marks, *e, false);
                    }
                }
                Event::Push { elem } => pending.push_back(*elem),
                Event::Front {
                    log_len,
                    got,
                    popped,
                } => self.front_read(t, &mut pending, *log_len, *got, *popped),
                Event::QueueLen { log_len, n } => {
                    if *n < pending.len() {
                        self.h.anomaly(
                            vec![t],
                            format!(
                                "T{t} counted {n} elements with {} of its own pushes pending",
                                pending.len()
                            ),
                        );
                    } else {
                        self.tail_read(t, Seen::Exact(log_len + n - pending.len()));
                    }
                }
                Event::Impossible(what) => {
                    self.h.anomaly(vec![t], format!("T{t}: {what}"));
                }
            }
            prev = Some(ev);
        }
    }

    /// The lifetime of `key`, from the start of `from` (or the beginning)
    /// to the end of `to` (or forever).
    fn span(&self, from: Option<TxId>, to: Option<TxId>, key: u32) -> Span {
        Span {
            start: from.map_or(0, |f| self.window[f].0),
            end: to.map_or(u64::MAX, |r| self.window[r].1),
            key,
        }
    }

    fn list_read(
        &mut self,
        t: TxId,
        own: &HashMap<u32, Option<Vec<u32>>>,
        key: u32,
        value: Option<&Vec<u32>>,
    ) {
        let name = || (self.spec.name)(key);
        let show = |v: Option<&Vec<u32>>| v.map_or("absent".into(), |l| Short(l).to_string());
        if let Some(mine) = own.get(&key) {
            if mine.as_ref() != value {
                let what = format!(
                    "T{t} read {} = {} after writing {}",
                    name(),
                    show(value),
                    mine.as_ref()
                        .map_or("absent (removed)".into(), |l| Short(l).to_string())
                );
                self.h.anomaly(vec![t], what);
            }
            return;
        }
        let r = &self.lists[&key];
        let seen = match value {
            None if r.preset => None,
            None if r.removed => Some(Seen::OneOf(vec![0, r.chain.len() + 1])),
            None => Some(Seen::Exact(0)),
            Some(l) if l.is_empty() && !r.preset => None,
            Some(l) if r.chain.starts_with(l) => Some(Seen::Exact(l.len())),
            Some(_) => None,
        };
        let reg = r.reg;
        match seen {
            Some(Seen::Exact(v))
                if v > 0 && self.h.registers[reg].versions[v].writer == Some(t) =>
            {
                let what = format!(
                    "T{t} read {} = {} before it wrote that version itself",
                    name(),
                    show(value)
                );
                self.h.anomaly(vec![t], what);
            }
            Some(seen) => self.h.read(t, reg, seen),
            None => {
                let what = format!(
                    "T{t} read {} = {}, which is no version of it (its last list: {})",
                    name(),
                    show(value),
                    Short(&r.chain)
                );
                self.h.anomaly(vec![t], what);
            }
        }
    }

    fn set_read(&mut self, t: TxId, own: &HashMap<u32, bool>, elem: u32, present: bool) {
        if let Some(&mine) = own.get(&elem) {
            if mine != present {
                self.h.anomaly(
                    vec![t],
                    format!(
                        "T{t} saw element {elem} {} after it {} it",
                        if present { "present" } else { "absent" },
                        if mine { "inserted" } else { "removed" }
                    ),
                );
            }
            return;
        }
        let (reg, removed) = self.elements[&elem];
        let seen = match (present, removed) {
            (true, _) if !self.inserter.contains_key(&elem) => {
                self.h.anomaly(
                    vec![t],
                    format!("T{t} saw element {elem}, which no committed transaction inserted"),
                );
                return;
            }
            (true, _) => Seen::Exact(1),
            (false, true) => Seen::OneOf(vec![0, 2]),
            (false, false) => Seen::Exact(0),
        };
        self.h.read(t, reg, seen);
    }

    fn front_read(
        &mut self,
        t: TxId,
        pending: &mut VecDeque<u32>,
        log_len: usize,
        got: Option<u32>,
        popped: bool,
    ) {
        match got {
            // Its own push: the committed queue looked exhausted.
            Some(e) if pending.front() == Some(&e) => {
                if popped {
                    pending.pop_front();
                }
                self.tail_read(t, Seen::Exact(log_len));
            }
            Some(e) if pending.contains(&e) => self.h.anomaly(
                vec![t],
                format!("T{t} got its own push {e} before its earlier pushes {pending:?}"),
            ),
            Some(e) => match self.queue_pos.get(&e) {
                Some(&p) if p == log_len => self.tail_read(t, Seen::AtLeast(p + 1)),
                Some(&p) => self.h.anomaly(
                    vec![t],
                    format!(
                        "T{t} found {e} at the front, the queue's element {p}, after the pop log showed {log_len} popped"
                    ),
                ),
                None => self.h.anomaly(
                    vec![t],
                    format!("T{t} found {e} in the queue, which no committed transaction pushed"),
                ),
            },
            None if !pending.is_empty() => self.h.anomaly(
                vec![t],
                format!("T{t} found the queue empty with its own pushes {pending:?} pending"),
            ),
            None => self.tail_read(t, Seen::Exact(log_len)),
        }
    }

    fn tail_read(&mut self, t: TxId, seen: Seen) {
        let tail = self.tail.expect("a queue history");
        let versions = self.h.registers[tail].versions.len();
        match seen {
            Seen::Exact(v) | Seen::AtLeast(v) if v >= versions => self.h.anomaly(
                vec![t],
                format!(
                    "T{t} saw {v} elements pushed, more than ever were ({})",
                    versions - 1
                ),
            ),
            seen => self.h.read(t, tail, seen),
        }
    }

    fn check_scan(
        &mut self,
        t: TxId,
        range: Option<(u32, u32)>,
        order: Order,
        found: &[(u32, Vec<u32>)],
    ) {
        let keys: Vec<u32> = found.iter().map(|(k, _)| *k).collect();
        let sorted = match order {
            Order::Ascending => keys.windows(2).all(|w| w[0] < w[1]),
            Order::Descending => keys.windows(2).all(|w| w[0] > w[1]),
            Order::Any => keys.iter().collect::<BTreeSet<_>>().len() == keys.len(),
        };
        let inside = range.is_none_or(|(lo, hi)| keys.iter().all(|k| (lo..=hi).contains(k)));
        if !sorted || !inside {
            self.h.anomaly(
                vec![t],
                format!("T{t} scanned {range:?} ({order:?}) and got keys {keys:?}"),
            );
        }
    }
}

/// When a key (or set element) lived, in real time.
#[derive(Clone, Copy, Debug)]
struct Span {
    start: u64,
    end: u64,
    key: u32,
}

/// Keys by when they lived, to find those alive during a reader's
/// attempt without looking at all of them: the clock's range is cut into
/// slots, each listing the keys alive at some point of it.
#[derive(Default)]
struct Lifetimes {
    slot: u64,
    slots: Vec<Vec<Span>>,
}

impl Lifetimes {
    const SLOTS: u64 = 1024;

    fn new(spans: Vec<Span>) -> Self {
        let horizon = spans
            .iter()
            .map(|s| if s.end == u64::MAX { s.start } else { s.end })
            .max()
            .unwrap_or(0)
            + 1;
        let slot = horizon.div_ceil(Self::SLOTS).max(1);
        let mut slots = vec![Vec::new(); Self::SLOTS as usize + 1];
        for s in spans {
            let last = (s.end / slot).min(Self::SLOTS);
            for i in s.start / slot..=last {
                slots[i as usize].push(s);
            }
        }
        Lifetimes { slot, slots }
    }

    /// The keys alive at some point between `begin` and `end`.
    fn overlapping(&self, begin: u64, end: u64) -> BTreeSet<u32> {
        let mut out = BTreeSet::new();
        if self.slots.is_empty() {
            return out;
        }
        let last = (end / self.slot).min(Self::SLOTS);
        for i in (begin / self.slot).min(Self::SLOTS)..=last {
            for s in &self.slots[i as usize] {
                if s.start <= end && s.end >= begin {
                    out.insert(s.key);
                }
            }
        }
        out
    }
}
