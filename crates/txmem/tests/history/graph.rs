//! The dependency graph of a history and its search for cycles.
//!
//! A history is a set of transactions and *registers*: objects whose
//! versions are totally ordered and known, each version with the
//! transaction that wrote it (the interpreter recovers them from unique
//! values). A transaction's read names the version it saw, exactly or as
//! a bound, or as one of several versions when the value alone cannot tell
//! them apart (an absent key before its insert or after its removal).
//!
//! Edges (Adya): `ww` from the writer of a version to the writer of the
//! next; `wr` from the writer of a version to a reader of it; `rw` from a
//! reader of a version to the writer of the next. In a serializable
//! history every edge points forward in the serial order, so a cycle is a
//! violation. Aborted attempts enter as read-only transactions: opacity
//! asks that each of them, too, fits somewhere in that order.
//!
//! A read that names several versions gets its edges once the order known
//! so far rules out all but one of them; if it rules out all of them, the
//! read fits nowhere.

use std::collections::{HashSet, VecDeque};
use std::fmt::Write;

/// A transaction's index in [`History::txs`].
pub type TxId = usize;

/// A transaction: a committed one, or an aborted attempt checked as a
/// read-only transaction.
#[derive(Clone, Debug)]
pub struct TxInfo {
    pub thread: usize,
    /// The transaction's number on its thread.
    pub seq: usize,
    /// 1 for the first attempt.
    pub attempt: usize,
    pub committed: bool,
    /// What it did, one line per operation, for reports (unless the
    /// history renders it, see [`History::render`]).
    pub ops: Vec<String>,
}

/// A version of a register and the transaction that wrote it (`None` for
/// the initial version, or where no committed transaction wrote it, which
/// the interpreter reports).
#[derive(Clone, Debug)]
pub struct Version {
    pub writer: Option<TxId>,
    pub label: String,
}

/// An object with totally ordered, known versions.
#[derive(Clone, Debug)]
pub struct Register {
    pub name: String,
    pub versions: Vec<Version>,
}

/// What a read saw, as version indices of its register.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Seen {
    Exact(usize),
    /// That version or a later one (an element was there: it was pushed).
    AtLeast(usize),
    /// That version or an earlier one.
    AtMost(usize),
    /// One of these versions; the value cannot tell which.
    OneOf(Vec<usize>),
}

#[derive(Clone, Debug)]
pub struct Read {
    pub tx: TxId,
    pub reg: usize,
    pub seen: Seen,
}

/// Something wrong that needs no graph to show (a value nobody wrote, a
/// lost write, an attempt contradicting its own writes).
#[derive(Clone, Debug)]
pub struct Anomaly {
    pub txs: Vec<TxId>,
    pub what: String,
}

#[derive(Default)]
pub struct History<'a> {
    pub txs: Vec<TxInfo>,
    pub registers: Vec<Register>,
    pub reads: Vec<Read>,
    pub anomalies: Vec<Anomaly>,
    /// What a transaction did, rendered when a report needs it (instead
    /// of [`TxInfo::ops`]).
    pub render: Option<Box<dyn Fn(TxId) -> Vec<String> + 'a>>,
}

impl History<'_> {
    /// What transaction `t` did, one line per operation.
    pub fn ops(&self, t: TxId) -> Vec<String> {
        match &self.render {
            Some(render) => render(t),
            None => self.txs[t].ops.clone(),
        }
    }

    pub fn add_register(&mut self, name: String, initial: &str) -> usize {
        self.registers.push(Register {
            name,
            versions: vec![Version {
                writer: None,
                label: initial.to_string(),
            }],
        });
        self.registers.len() - 1
    }

    pub fn add_version(&mut self, reg: usize, writer: Option<TxId>, label: String) {
        self.registers[reg].versions.push(Version { writer, label });
    }

    pub fn read(&mut self, tx: TxId, reg: usize, seen: Seen) {
        self.reads.push(Read { tx, reg, seen });
    }

    pub fn anomaly(&mut self, txs: Vec<TxId>, what: String) {
        self.anomalies.push(Anomaly { txs, what });
    }

    fn writer(&self, reg: usize, v: usize) -> Option<TxId> {
        self.registers[reg].versions.get(v).and_then(|x| x.writer)
    }

    /// "T12 (thread 1, tx 40, attempt 2, aborted)".
    pub fn tx_name(&self, t: TxId) -> String {
        let i = &self.txs[t];
        format!(
            "T{t} (thread {}, tx {}, attempt {}, {})",
            i.thread,
            i.seq,
            i.attempt,
            if i.committed { "committed" } else { "aborted" }
        )
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dep {
    Ww,
    Wr,
    Rw,
}

/// Why `from` precedes `to`.
#[derive(Clone, Debug)]
pub struct Edge {
    pub from: TxId,
    pub to: TxId,
    pub dep: Dep,
    pub reg: usize,
    /// The version read (`wr`, `rw`) or the earlier of the two (`ww`).
    pub version: usize,
    /// How the read named it, if not exactly (a bound, or a choice
    /// settled by the order).
    pub how: Option<Seen>,
}

/// What the checker found.
#[derive(Clone, Debug)]
pub struct Violation {
    pub kind: ViolationKind,
    /// The transactions involved (the cycle's, in order).
    pub txs: Vec<TxId>,
    /// A readable account: the edges or the anomaly, and what each
    /// transaction did.
    pub text: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ViolationKind {
    Anomaly,
    Cycle,
    /// A read that fits no version the order allows.
    Unplaceable,
}

impl Violation {
    /// True if an aborted attempt takes part (an opacity violation rather
    /// than one of serializability).
    pub fn involves_aborted(&self, h: &History) -> bool {
        self.txs.iter().any(|&t| !h.txs[t].committed)
    }
}

/// Checks a history: its anomalies, then the graph of all its
/// transactions (the committed ones alone, if a cycle goes through an
/// aborted attempt and they have one of their own). Returns
/// the violations found (cycles: a few of them, each shortest in its
/// strongly connected component); empty if none.
pub fn check(h: &History) -> Vec<Violation> {
    let mut out: Vec<Violation> = h
        .anomalies
        .iter()
        .map(|a| Violation {
            kind: ViolationKind::Anomaly,
            txs: a.txs.clone(),
            text: format!("{}\n{}", a.what, describe_txs(h, &a.txs)),
        })
        .collect();
    let everyone = vec![true; h.txs.len()];
    let found = Graph::new(h, &everyone).search();
    if found.iter().any(|v| v.involves_aborted(h)) {
        // Prefer showing that the committed transactions alone are not
        // serializable, where they are not.
        let committed: Vec<bool> = h.txs.iter().map(|t| t.committed).collect();
        let serial = Graph::new(h, &committed).search();
        if !serial.is_empty() {
            out.extend(serial);
            return out;
        }
    }
    out.extend(found);
    out
}

/// At most this many cycles are reported per search.
pub const MAX_CYCLES: usize = 3;

struct Graph<'h> {
    h: &'h History<'h>,
    /// Which transactions take part.
    member: &'h [bool],
    edges: Vec<Edge>,
    /// Edge indices leaving each transaction.
    out: Vec<Vec<usize>>,
    pairs: HashSet<u64, PairHash>,
    /// Reads naming several versions, not yet settled.
    open: Vec<usize>,
}

impl<'h> Graph<'h> {
    fn new(h: &'h History<'h>, member: &'h [bool]) -> Self {
        let mut g = Graph {
            h,
            member,
            edges: Vec::new(),
            out: vec![Vec::new(); h.txs.len()],
            pairs: HashSet::default(),
            open: Vec::new(),
        };
        for (reg, r) in h.registers.iter().enumerate() {
            for v in 0..r.versions.len().saturating_sub(1) {
                if let (Some(a), Some(b)) = (r.versions[v].writer, r.versions[v + 1].writer) {
                    g.add(a, b, Dep::Ww, reg, v, None);
                }
            }
        }
        for (i, read) in h.reads.iter().enumerate() {
            if !member[read.tx] {
                continue;
            }
            match &read.seen {
                Seen::Exact(v) => g.place(read, *v, None),
                Seen::AtLeast(v) => {
                    if let Some(w) = h.writer(read.reg, *v) {
                        g.add(w, read.tx, Dep::Wr, read.reg, *v, Some(read.seen.clone()));
                    }
                }
                Seen::AtMost(v) => {
                    if let Some(w) = h.writer(read.reg, v + 1) {
                        g.add(read.tx, w, Dep::Rw, read.reg, *v, Some(read.seen.clone()));
                    }
                }
                Seen::OneOf(_) => g.open.push(i),
            }
        }
        g
    }

    /// The edges of `read` having seen version `v`.
    fn place(&mut self, read: &Read, v: usize, how: Option<Seen>) {
        if let Some(w) = self.h.writer(read.reg, v) {
            self.add(w, read.tx, Dep::Wr, read.reg, v, how.clone());
        }
        if let Some(w) = self.h.writer(read.reg, v + 1) {
            self.add(read.tx, w, Dep::Rw, read.reg, v, how);
        }
    }

    fn add(
        &mut self,
        from: TxId,
        to: TxId,
        dep: Dep,
        reg: usize,
        version: usize,
        how: Option<Seen>,
    ) {
        // A transaction's own order needs no edge; a pair keeps its first
        // (most direct) reason.
        if from == to
            || !self.member[from]
            || !self.member[to]
            || !self.pairs.insert((from as u64) << 32 | to as u64)
        {
            return;
        }
        self.out[from].push(self.edges.len());
        self.edges.push(Edge {
            from,
            to,
            dep,
            reg,
            version,
            how,
        });
    }

    /// Looks for cycles, settling open reads while the graph stays
    /// acyclic.
    fn search(mut self) -> Vec<Violation> {
        loop {
            let cycles = self.cycles();
            if !cycles.is_empty() {
                return cycles;
            }
            if self.open.is_empty() {
                return Vec::new();
            }
            let reach = self.reachability();
            let mut settled = Vec::new();
            let mut unplaceable = Vec::new();
            let mut open = std::mem::take(&mut self.open);
            open.retain(|&i| {
                let read = &self.h.reads[i];
                let Seen::OneOf(candidates) = &read.seen else {
                    unreachable!("only OneOf reads stay open")
                };
                let fits: Vec<usize> = candidates
                    .iter()
                    .copied()
                    .filter(|&v| self.fits(&reach, read, v))
                    .collect();
                match fits.len() {
                    0 => unplaceable.push(i),
                    1 => settled.push((i, fits[0])),
                    _ => return true,
                }
                false
            });
            self.open = open;
            if !unplaceable.is_empty() {
                return unplaceable
                    .into_iter()
                    .take(MAX_CYCLES)
                    .map(|i| self.unplaceable(&reach, i))
                    .collect();
            }
            if settled.is_empty() {
                return Vec::new();
            }
            for (i, v) in settled {
                let read = &self.h.reads[i];
                self.place(read, v, Some(read.seen.clone()));
            }
        }
    }

    /// Whether `read` may have seen version `v` given the order so far:
    /// not if it precedes that version's writer, nor if the writer of the
    /// next version precedes it.
    fn fits(&self, reach: &Reach, read: &Read, v: usize) -> bool {
        let before_writer = self
            .h
            .writer(read.reg, v)
            .is_some_and(|w| w == read.tx || reach.reaches(read.tx, w));
        let after_next = self
            .h
            .writer(read.reg, v + 1)
            .is_some_and(|w| w != read.tx && reach.reaches(w, read.tx));
        !before_writer && !after_next
    }

    fn unplaceable(&self, reach: &Reach, i: usize) -> Violation {
        let read = &self.h.reads[i];
        let Seen::OneOf(candidates) = &read.seen else {
            unreachable!()
        };
        let reg = &self.h.registers[read.reg];
        let mut text = format!(
            "{} read {} as {}, but no such version fits the order:\n",
            self.h.tx_name(read.tx),
            reg.name,
            candidates
                .iter()
                .map(|&v| reg.versions[v].label.as_str())
                .collect::<Vec<_>>()
                .join(" or ")
        );
        let mut txs = vec![read.tx];
        for &v in candidates {
            let _ = write!(text, "- not {}: ", reg.versions[v].label);
            let (a, b) = match (self.h.writer(read.reg, v), self.h.writer(read.reg, v + 1)) {
                (Some(w), _) if w == read.tx => {
                    let _ = writeln!(text, "it wrote that version itself");
                    continue;
                }
                (Some(w), _) if reach.reaches(read.tx, w) => (read.tx, w),
                (_, Some(w)) => (w, read.tx),
                _ => unreachable!("a ruled-out version has a writer on one side"),
            };
            let path = self.path(a, b).expect("reachable");
            let _ = writeln!(
                text,
                "{} precedes {}:",
                self.h.tx_name(a),
                self.h.tx_name(b)
            );
            for &e in &path {
                let _ = writeln!(text, "    {}", self.describe_edge(e));
                txs.push(self.edges[e].to);
            }
        }
        txs.sort_unstable();
        txs.dedup();
        text.push_str(&describe_txs(self.h, &txs));
        Violation {
            kind: ViolationKind::Unplaceable,
            txs,
            text,
        }
    }

    /// The shortest path of edges from `a` to `b`.
    fn path(&self, a: TxId, b: TxId) -> Option<Vec<usize>> {
        let mut via: Vec<Option<usize>> = vec![None; self.h.txs.len()];
        let mut seen = vec![false; self.h.txs.len()];
        let mut queue = VecDeque::from([a]);
        seen[a] = true;
        while let Some(n) = queue.pop_front() {
            if n == b {
                let mut path = Vec::new();
                let mut cur = b;
                while cur != a {
                    let e = via[cur].expect("on the path");
                    path.push(e);
                    cur = self.edges[e].from;
                }
                path.reverse();
                return Some(path);
            }
            for &e in &self.out[n] {
                let m = self.edges[e].to;
                if !seen[m] {
                    seen[m] = true;
                    via[m] = Some(e);
                    queue.push_back(m);
                }
            }
        }
        None
    }

    /// A shortest cycle in each of (up to [`MAX_CYCLES`]) strongly
    /// connected components with more than one transaction.
    fn cycles(&self) -> Vec<Violation> {
        let mut found = Vec::new();
        for comp in self.components() {
            if found.len() == MAX_CYCLES {
                break;
            }
            let in_comp: HashSet<TxId> = comp.iter().copied().collect();
            // The shortest cycle through any of the first few members.
            let mut best: Option<Vec<usize>> = None;
            for &s in comp.iter().take(32) {
                if let Some(c) = self.shortest_cycle_through(s, &in_comp) {
                    if best.as_ref().is_none_or(|b| c.len() < b.len()) {
                        best = Some(c);
                    }
                }
            }
            let cycle = best.expect("a component of two or more has a cycle");
            found.push(self.describe_cycle(&cycle, comp.len()));
        }
        found
    }

    fn shortest_cycle_through(&self, s: TxId, within: &HashSet<TxId>) -> Option<Vec<usize>> {
        let mut via: Vec<Option<usize>> = vec![None; self.h.txs.len()];
        let mut queue = VecDeque::from([s]);
        while let Some(n) = queue.pop_front() {
            for &e in &self.out[n] {
                let m = self.edges[e].to;
                if !within.contains(&m) {
                    continue;
                }
                if m == s {
                    let mut cycle = vec![e];
                    let mut cur = n;
                    while cur != s {
                        let e = via[cur].expect("on the path");
                        cycle.push(e);
                        cur = self.edges[e].from;
                    }
                    cycle.reverse();
                    return Some(cycle);
                }
                if via[m].is_none() {
                    via[m] = Some(e);
                    queue.push_back(m);
                }
            }
        }
        None
    }

    fn describe_cycle(&self, cycle: &[usize], component: usize) -> Violation {
        let txs: Vec<TxId> = cycle.iter().map(|&e| self.edges[e].from).collect();
        let aborted = txs.iter().filter(|&&t| !self.h.txs[t].committed).count();
        let mut text = format!(
            "cycle of {} transactions ({}; {} transactions in its strongly connected component):\n",
            txs.len(),
            if aborted == 0 {
                "all committed: not serializable".to_string()
            } else {
                format!("{aborted} aborted attempt(s): not opaque")
            },
            component
        );
        for &e in cycle {
            let _ = writeln!(text, "  {}", self.describe_edge(e));
        }
        text.push_str(&describe_txs(self.h, &txs));
        Violation {
            kind: ViolationKind::Cycle,
            txs,
            text,
        }
    }

    fn describe_edge(&self, e: usize) -> String {
        let e = &self.edges[e];
        let reg = &self.h.registers[e.reg];
        let label = |v: usize| reg.versions[v].label.as_str();
        let (from, to) = (format!("T{}", e.from), format!("T{}", e.to));
        let saw = match &e.how {
            None => format!("= {}", label(e.version)),
            Some(Seen::AtLeast(_)) => format!("at {} or later", label(e.version)),
            Some(Seen::AtMost(_)) => format!("at {} or earlier", label(e.version)),
            Some(Seen::OneOf(vs)) => format!(
                "= {} (it saw one of {}; the order rules out the others)",
                label(e.version),
                vs.iter().map(|&v| label(v)).collect::<Vec<_>>().join(", ")
            ),
            Some(Seen::Exact(_)) => unreachable!("exact reads are described plainly"),
        };
        match e.dep {
            Dep::Ww => format!(
                "{from} -ww-> {to}: {}: {from} wrote {}, {to} the next version {}",
                reg.name,
                label(e.version),
                label(e.version + 1)
            ),
            Dep::Wr => format!(
                "{from} -wr-> {to}: {to} read {} {saw}, written by {from}",
                reg.name
            ),
            Dep::Rw => format!(
                "{from} -rw-> {to}: {from} read {} {saw}; {to} wrote the next version {}",
                reg.name,
                label(e.version + 1)
            ),
        }
    }

    /// Strongly connected components of two or more transactions
    /// (Tarjan's algorithm, iterative: histories are deep).
    fn components(&self) -> Vec<Vec<TxId>> {
        let n = self.h.txs.len();
        const NONE: usize = usize::MAX;
        let mut index = vec![NONE; n];
        let mut low = vec![0; n];
        let mut on_stack = vec![false; n];
        let mut stack = Vec::new();
        let mut next = 0;
        let mut comps = Vec::new();
        for root in 0..n {
            if index[root] != NONE || !self.member[root] {
                continue;
            }
            // (node, position in its edge list)
            let mut work = vec![(root, 0usize)];
            index[root] = next;
            low[root] = next;
            next += 1;
            stack.push(root);
            on_stack[root] = true;
            while let Some(&mut (v, ref mut pos)) = work.last_mut() {
                if let Some(&e) = self.out[v].get(*pos) {
                    *pos += 1;
                    let w = self.edges[e].to;
                    if index[w] == NONE {
                        index[w] = next;
                        low[w] = next;
                        next += 1;
                        stack.push(w);
                        on_stack[w] = true;
                        work.push((w, 0));
                    } else if on_stack[w] {
                        low[v] = low[v].min(index[w]);
                    }
                    continue;
                }
                work.pop();
                if let Some(&(parent, _)) = work.last() {
                    low[parent] = low[parent].min(low[v]);
                }
                if low[v] == index[v] {
                    let mut comp = Vec::new();
                    loop {
                        let w = stack.pop().expect("on the stack");
                        on_stack[w] = false;
                        comp.push(w);
                        if w == v {
                            break;
                        }
                    }
                    if comp.len() > 1 {
                        comp.sort_unstable();
                        comps.push(comp);
                    }
                }
            }
        }
        comps
    }

    /// Who precedes whom so far (the graph is acyclic).
    fn reachability(&self) -> Reach {
        let n = self.h.txs.len();
        // Reverse post-order of a depth-first search is a topological order;
        // fill each node's set after all of its successors'.
        let mut order = Vec::with_capacity(n);
        let mut done = vec![false; n];
        for root in 0..n {
            if done[root] {
                continue;
            }
            done[root] = true;
            let mut work = vec![(root, 0usize)];
            while let Some(&mut (v, ref mut pos)) = work.last_mut() {
                if let Some(&e) = self.out[v].get(*pos) {
                    *pos += 1;
                    let w = self.edges[e].to;
                    if !done[w] {
                        done[w] = true;
                        work.push((w, 0));
                    }
                } else {
                    order.push(v);
                    work.pop();
                }
            }
        }
        let words = n.div_ceil(64);
        let mut bits = vec![0u64; n * words];
        for &v in &order {
            bits[v * words + v / 64] |= 1 << (v % 64);
            for &e in &self.out[v] {
                let w = self.edges[e].to;
                // Rows v and w differ: there are no self-edges.
                let (row, from) = if v < w {
                    let (a, b) = bits.split_at_mut(w * words);
                    (&mut a[v * words..(v + 1) * words], &b[..words])
                } else {
                    let (a, b) = bits.split_at_mut(v * words);
                    (&mut b[..words], &a[w * words..(w + 1) * words])
                };
                for (d, s) in row.iter_mut().zip(from) {
                    *d |= *s;
                }
            }
        }
        Reach { words, bits }
    }
}

/// Hashes a pair of transactions packed into a `u64` (a multiplicative
/// hash: the pair set is the checker's hottest structure).
#[derive(Default, Clone, Copy)]
struct PairHash;

impl std::hash::BuildHasher for PairHash {
    type Hasher = PairHasher;
    fn build_hasher(&self) -> PairHasher {
        PairHasher(0)
    }
}

struct PairHasher(u64);

impl std::hash::Hasher for PairHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, _: &[u8]) {
        unreachable!("only u64 keys")
    }
    fn write_u64(&mut self, x: u64) {
        self.0 = (x ^ (x >> 29)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// For each transaction, the set of transactions it precedes (itself
/// included).
struct Reach {
    words: usize,
    bits: Vec<u64>,
}

impl Reach {
    fn reaches(&self, a: TxId, b: TxId) -> bool {
        self.bits[a * self.words + b / 64] & (1 << (b % 64)) != 0
    }
}

/// What each of `txs` did.
fn describe_txs(h: &History, txs: &[TxId]) -> String {
    let mut text = String::new();
    let mut seen = HashSet::new();
    for &t in txs {
        if seen.insert(t) {
            let _ = writeln!(text, "  {}:", h.tx_name(t));
            for op in h.ops(t) {
                let _ = writeln!(text, "      {op}");
            }
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tx(h: &mut History, committed: bool, ops: &[&str]) -> TxId {
        h.txs.push(TxInfo {
            thread: h.txs.len(),
            seq: 0,
            attempt: 1,
            committed,
            ops: ops.iter().map(|s| s.to_string()).collect(),
        });
        h.txs.len() - 1
    }

    /// Two registers x and y, each written once by `wx` and `wy`.
    fn two_registers(h: &mut History, wx: TxId, wy: TxId) -> (usize, usize) {
        let x = h.add_register("x".into(), "0");
        h.add_version(x, Some(wx), "1".into());
        let y = h.add_register("y".into(), "0");
        h.add_version(y, Some(wy), "1".into());
        (x, y)
    }

    #[test]
    fn write_skew_is_a_cycle_of_two_rw_edges() {
        let mut h = History::default();
        let a = tx(&mut h, true, &["read y = 0", "write x = 1"]);
        let b = tx(&mut h, true, &["read x = 0", "write y = 1"]);
        let (x, y) = two_registers(&mut h, a, b);
        h.read(a, y, Seen::Exact(0));
        h.read(b, x, Seen::Exact(0));
        let found = check(&h);
        assert_eq!(found.len(), 1, "{found:#?}");
        let v = &found[0];
        assert_eq!(v.kind, ViolationKind::Cycle);
        assert_eq!(v.txs.len(), 2);
        assert!(!v.involves_aborted(&h));
        assert!(
            v.text
                .contains("T0 -rw-> T1: T0 read y = 0; T1 wrote the next version 1"),
            "{}",
            v.text
        );
        assert!(
            v.text
                .contains("T1 -rw-> T0: T1 read x = 0; T0 wrote the next version 1"),
            "{}",
            v.text
        );
        assert!(
            v.text.contains("read x = 0"),
            "the report lists what each did"
        );
    }

    #[test]
    fn a_serial_history_passes() {
        let mut h = History::default();
        let a = tx(&mut h, true, &[]);
        let b = tx(&mut h, true, &[]);
        let (x, y) = two_registers(&mut h, a, b);
        h.read(a, y, Seen::Exact(0));
        h.read(b, x, Seen::Exact(1)); // b after a
        h.read(b, y, Seen::Exact(0)); // before its own write
        let c = tx(&mut h, true, &[]);
        h.read(c, x, Seen::Exact(1));
        h.read(c, y, Seen::AtLeast(1));
        assert!(check(&h).is_empty());
    }

    #[test]
    fn a_lost_update_is_a_ww_rw_cycle() {
        // Both read x = 0 and wrote the next version: b's write follows a's.
        let mut h = History::default();
        let a = tx(&mut h, true, &[]);
        let b = tx(&mut h, true, &[]);
        let x = h.add_register("x".into(), "[]");
        h.add_version(x, Some(a), "[1]".into());
        h.add_version(x, Some(b), "[1, 2]".into());
        h.read(a, x, Seen::Exact(0));
        h.read(b, x, Seen::Exact(0));
        let found = check(&h);
        assert_eq!(found.len(), 1);
        assert!(found[0].text.contains("T0 -ww-> T1"), "{}", found[0].text);
        assert!(found[0].text.contains("T1 -rw-> T0"), "{}", found[0].text);
    }

    #[test]
    fn an_aborted_attempt_is_checked_only_after_the_committed_ones() {
        // The committed history is serial (a then b); the aborted attempt
        // saw y after b but x before a: it fits nowhere.
        let mut h = History::default();
        let a = tx(&mut h, true, &[]);
        let b = tx(&mut h, true, &[]);
        let (x, y) = two_registers(&mut h, a, b);
        h.read(b, x, Seen::Exact(1));
        let r = tx(&mut h, false, &["read x = 0", "read y = 1"]);
        h.read(r, x, Seen::Exact(0));
        h.read(r, y, Seen::Exact(1));
        let found = check(&h);
        assert_eq!(found.len(), 1);
        assert!(found[0].involves_aborted(&h));
        assert!(found[0].text.contains("not opaque"), "{}", found[0].text);
        // Without the attempt, nothing.
        h.txs.pop();
        h.reads.retain(|r| r.tx != 2);
        assert!(check(&h).is_empty());
    }

    /// An element inserted by `ins` and removed by `rem`; a reader saw it
    /// absent, which is either before the insert or after the removal.
    fn lifecycle(h: &mut History, ins: TxId, rem: TxId) -> usize {
        let e = h.add_register("element 5".into(), "absent (not yet inserted)");
        h.add_version(e, Some(ins), "present".into());
        h.add_version(e, Some(rem), "absent (removed)".into());
        e
    }

    #[test]
    fn absent_reads_are_placed_by_the_order_and_can_close_a_cycle() {
        // x inserts e1; y removes e1 and inserts e2; z removes e2. r saw y's
        // write of a (so r follows x: its absent e1 is the removed one, after
        // y) and r read b before z's write of it (so r precedes z: its absent
        // e2 is the one before y's insert). r cannot be both after and
        // before y.
        let mut h = History::default();
        let x = tx(&mut h, true, &[]);
        let y = tx(&mut h, true, &[]);
        let z = tx(&mut h, true, &[]);
        let r = tx(&mut h, true, &[]);
        let e1 = lifecycle(&mut h, x, y);
        let e2 = lifecycle(&mut h, y, z);
        let (a, b) = two_registers(&mut h, x, z);
        h.read(r, e1, Seen::OneOf(vec![0, 2]));
        h.read(r, e2, Seen::OneOf(vec![0, 2]));
        h.read(r, a, Seen::Exact(1));
        h.read(r, b, Seen::Exact(0));
        let found = check(&h);
        assert_eq!(found.len(), 1, "{found:#?}");
        let v = &found[0];
        assert_eq!(v.kind, ViolationKind::Cycle);
        assert_eq!(v.txs.len(), 2);
        assert!(
            v.text
                .contains("T1 -wr-> T3: T3 read element 5 = absent (removed)"),
            "{}",
            v.text
        );
        assert!(
            v.text
                .contains("T3 -rw-> T1: T3 read element 5 = absent (not yet inserted)"),
            "{}",
            v.text
        );
        assert!(
            v.text.contains("the order rules out the others"),
            "{}",
            v.text
        );
    }

    #[test]
    fn an_absent_read_the_order_cannot_place_is_left_alone() {
        let mut h = History::default();
        let ins = tx(&mut h, true, &[]);
        let rem = tx(&mut h, true, &[]);
        let r = tx(&mut h, true, &[]);
        let e = lifecycle(&mut h, ins, rem);
        h.read(r, e, Seen::OneOf(vec![0, 2]));
        assert!(check(&h).is_empty());
        // Once r follows the insert it is after the removal: still fine.
        let (y, _) = two_registers(&mut h, ins, rem);
        h.read(r, y, Seen::Exact(1));
        assert!(check(&h).is_empty());
    }

    #[test]
    fn an_absent_read_between_insert_and_removal_fits_nowhere() {
        // r follows ins (it saw y) and precedes rem (rem read r's write of
        // w): e was present all along, yet r saw it absent.
        let mut h = History::default();
        let ins = tx(&mut h, true, &[]);
        let rem = tx(&mut h, true, &[]);
        let r = tx(&mut h, true, &[]);
        let e = lifecycle(&mut h, ins, rem);
        let (y, _) = two_registers(&mut h, ins, rem);
        let w = h.add_register("w".into(), "0");
        h.add_version(w, Some(r), "1".into());
        h.read(r, e, Seen::OneOf(vec![0, 2]));
        h.read(r, y, Seen::Exact(1));
        h.read(rem, w, Seen::Exact(1));
        let found = check(&h);
        assert_eq!(found.len(), 1, "{found:#?}");
        assert_eq!(found[0].kind, ViolationKind::Unplaceable);
        let text = &found[0].text;
        assert!(text.contains("no such version fits"), "{text}");
        assert!(
            text.contains("- not absent (not yet inserted): T0"),
            "{text}"
        );
        assert!(text.contains("- not absent (removed): T2"), "{text}");
    }

    #[test]
    fn bounds_give_one_side_of_the_edges() {
        // A queue tail: a pushed 1, b pushed 2. r saw element 2 (tail at
        // least 2) yet found the queue empty at tail 1 (exactly): a cycle
        // r -rw-> b -wr-> r.
        let mut h = History::default();
        let a = tx(&mut h, true, &[]);
        let b = tx(&mut h, true, &[]);
        let r = tx(&mut h, true, &[]);
        let t = h.add_register("tail".into(), "0 pushed");
        h.add_version(t, Some(a), "1 pushed".into());
        h.add_version(t, Some(b), "2 pushed".into());
        h.read(r, t, Seen::AtLeast(2));
        assert!(check(&h).is_empty());
        h.read(r, t, Seen::AtMost(1));
        let found = check(&h);
        assert_eq!(found.len(), 1);
        assert!(
            found[0].text.contains("at 2 pushed or later"),
            "{}",
            found[0].text
        );
        assert!(
            found[0].text.contains("at 1 pushed or earlier"),
            "{}",
            found[0].text
        );
    }

    #[test]
    fn anomalies_are_reported_with_their_transactions() {
        let mut h = History::default();
        let a = tx(&mut h, true, &["get(3) = [9]"]);
        h.anomaly(
            vec![a],
            "T0 read element 9, which no committed transaction wrote".into(),
        );
        let found = check(&h);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].kind, ViolationKind::Anomaly);
        assert!(found[0].text.contains("get(3) = [9]"));
    }

    #[test]
    fn long_cycles_are_found_in_deep_histories() {
        // A chain of 20,000 wr edges closed by one rw edge: the search is
        // iterative (no stack overflow) and reports the whole cycle.
        let mut h = History::default();
        let n = 20_000;
        let reg = h.add_register("x".into(), "0");
        for i in 0..n {
            tx(&mut h, true, &[]);
            h.add_version(reg, Some(i), format!("{}", i + 1));
        }
        for i in 1..n {
            h.read(i, reg, Seen::Exact(i));
        }
        assert!(check(&h).is_empty());
        // The first transaction read the last version.
        h.read(0, reg, Seen::Exact(n));
        let found = check(&h);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].txs.len(), n);
    }
}
