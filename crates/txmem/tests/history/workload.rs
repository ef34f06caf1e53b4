//! Random transactions on each collection, recorded per attempt, and the
//! driver that runs them from several threads and checks the history.
//!
//! Each transaction's operations and fresh values are drawn before it
//! runs, so that every attempt does the same; the attempts may still see
//! different values. Threads yield now and then inside transactions, so
//! that two cores interleave them a lot.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Barrier, Mutex, OnceLock};
use std::thread;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use txmem::{
    ContentionPolicy, Opacity, TArray, TBTreeMap, TBox, THashMap, TList, TListSet, TMap, TQueue,
    Transaction, TxOptions, TxResult,
};

use super::graph::{self, History, Violation, ViolationKind};
use super::interpret::{interpret, Final, Spec};
use super::record::{record, single, tick, Attempt, Event, Order};

/// One run: the mode and policy, and its size (by operation counts).
#[derive(Clone, Copy, Debug)]
pub struct Cell {
    pub mode: Opacity,
    pub policy: ContentionPolicy,
    pub threads: usize,
    pub txs_per_thread: usize,
    pub seed: u64,
    /// Declare half the transactions read-only (`TxOptions::read_only`),
    /// whether or not they write: their snapshot attempts join the history,
    /// and so do the reruns of those that wrote.
    pub read_only: bool,
}

impl Cell {
    pub fn options(&self) -> TxOptions {
        TxOptions::new().opacity(self.mode).contention(self.policy)
    }
}

/// A collection under test, with the transactions it runs.
pub trait Workload: Sync {
    /// Draws one transaction from `rng`, runs it, and returns its attempts.
    fn transaction(
        &self,
        opts: &TxOptions,
        rng: &mut SmallRng,
        thread: usize,
        seq: usize,
    ) -> Vec<Attempt>;
    /// How to read its history; `aborted`: check the aborted attempts too.
    fn spec(&self, aborted: bool) -> Spec;
    /// Its committed state, once nothing runs.
    fn final_state(&self) -> Final;
}

/// Runs `cell` on `w` from `cell.threads` threads.
pub fn run<W: Workload>(w: &W, cell: &Cell) -> Vec<Attempt> {
    let opts = cell.options();
    let start = Barrier::new(cell.threads);
    thread::scope(|s| {
        let handles: Vec<_> = (0..cell.threads)
            .map(|thread| {
                let (opts, start) = (&opts, &start);
                s.spawn(move || {
                    let mut rng = SmallRng::seed_from_u64(
                        cell.seed ^ (thread as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15),
                    );
                    start.wait();
                    let mut out = Vec::new();
                    let read_only = opts.read_only(true);
                    for seq in 0..cell.txs_per_thread {
                        let opts = if cell.read_only && rng.random_bool(0.5) {
                            &read_only
                        } else {
                            opts
                        };
                        out.extend(w.transaction(opts, &mut rng, thread, seq));
                    }
                    out
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("a workload thread panicked"))
            .collect()
    })
}

/// The history of `attempts` on `w` and what the checker finds in it.
pub fn analyse<'a, W: Workload>(
    w: &W,
    attempts: &'a [Attempt],
    mode: Opacity,
) -> (History<'a>, Vec<Violation>) {
    let h = interpret(&w.spec(mode != Opacity::None), attempts, &w.final_state());
    let found = graph::check(&h);
    (h, found)
}

/// Runs `cell` on `w` and fails with a report if the history has a cycle
/// or an anomaly.
pub fn check_cell<W: Workload>(w: W, cell: Cell) {
    let started = std::time::Instant::now();
    let attempts = run(&w, &cell);
    let ran = started.elapsed();
    let (h, found) = analyse(&w, &attempts, cell.mode);
    let committed = attempts.iter().filter(|a| a.committed).count();
    println!(
        "{:?}, {}: {committed} committed transactions, {} aborted attempts, {} reads; ran {ran:.1?}, checked {:.1?}",
        cell.mode,
        cell.policy.name(),
        attempts.len() - committed,
        h.reads.len(),
        started.elapsed() - ran
    );
    if !found.is_empty() {
        let anomalies = found
            .iter()
            .filter(|v| v.kind == ViolationKind::Anomaly)
            .count();
        let shown: Vec<&str> = found.iter().take(4).map(|v| v.text.as_str()).collect();
        panic!(
            "{:?} mode with {} ({committed} committed transactions, {} aborted attempts): \
             {anomalies} anomalies and {} cycles or unplaceable reads (the search stops at {} \
             strongly connected components); the first:\n\n{}",
            cell.mode,
            cell.policy.name(),
            attempts.len() - committed,
            found.len() - anomalies,
            graph::MAX_CYCLES,
            shown.join("\n")
        );
    }
}

/// Unique list elements and scattered unique keys, and the keys (or set
/// elements) that committed transactions left present, to aim at.
#[derive(Default)]
pub struct Fresh {
    elems: AtomicU32,
    keys: AtomicU32,
    live: Mutex<Vec<u32>>,
}

/// Keys and set elements live in `0..KEY_SPACE`; consecutive ones are far
/// apart, so that inserts land all over an ordered structure.
const KEY_SPACE: u32 = 1 << 14;

/// The `i`-th key (a bijection of `0..KEY_SPACE`: multiplication by an
/// odd number modulo a power of two).
fn scatter(i: u32) -> u32 {
    assert!(i < KEY_SPACE, "the workload ran out of fresh keys");
    i.wrapping_mul(2531) % KEY_SPACE
}

/// Operations that do not aim at a live key pick among the last this
/// many keys drawn.
const RECENT: u32 = 12;

impl Fresh {
    pub fn elem(&self) -> u32 {
        self.elems.fetch_add(1, Ordering::Relaxed) + 1
    }

    pub fn key(&self) -> u32 {
        scatter(self.keys.fetch_add(1, Ordering::Relaxed))
    }

    /// A key to operate on: mostly one that a committed transaction left
    /// present, sometimes a recently drawn one (possibly not inserted yet,
    /// or removed already).
    pub fn target(&self, rng: &mut SmallRng) -> Option<u32> {
        if rng.random_ratio(4, 5) {
            let live = self.live.lock().unwrap();
            if !live.is_empty() {
                return Some(live[rng.random_range(0..live.len())]);
            }
        }
        let n = self.keys.load(Ordering::Relaxed);
        (n > 0).then(|| scatter(n - 1 - rng.random_range(0..n.min(RECENT))))
    }

    /// One of the last keys drawn: often one whose insert is still in
    /// flight.
    pub fn recent(&self, rng: &mut SmallRng) -> Option<u32> {
        let n = self.keys.load(Ordering::Relaxed);
        (n > 0).then(|| scatter(n - 1 - rng.random_range(0..n.min(RECENT / 3))))
    }

    /// Notes what the committed attempt (the last one) of a transaction
    /// inserted and removed.
    pub fn note(&self, attempts: &[Attempt]) {
        let Some(a) = attempts.last() else { return };
        let mut live = self.live.lock().unwrap();
        for ev in &a.events {
            let (key, present) = match ev {
                Event::Put { key, value } => (*key, value.is_some()),
                Event::Mark { elem, present } => (*elem, *present),
                _ => continue,
            };
            let at = live.iter().position(|&k| k == key);
            match (at, present) {
                (None, true) => live.push(key),
                (Some(i), false) => {
                    live.swap_remove(i);
                }
                _ => {}
            }
        }
    }
}

/// Sometimes gives the core away, mid-transaction.
fn maybe_yield(rng: &mut SmallRng) {
    if rng.random_ratio(1, 6) {
        thread::yield_now();
    }
}

/// Between one and four operations drawn by `op`.
fn ops<T>(rng: &mut SmallRng, mut op: impl FnMut(&mut SmallRng) -> T) -> Vec<T> {
    let n = rng.random_range(1..=4);
    (0..n).map(|_| op(rng)).collect()
}

// ---------------------------------------------------------------------
// Boxes and arrays: list registers that always exist.

/// `n` registers holding lists, read and written inside transactions and
/// by single operations outside them.
pub trait ListStore: Sync {
    const NAME: &'static str;
    fn registers(&self) -> u32;
    fn get<'e>(&'e self, tx: &mut Transaction<'e>, k: u32) -> TxResult<Vec<u32>>;
    fn set<'e>(&'e self, tx: &mut Transaction<'e>, k: u32, v: Vec<u32>) -> TxResult<()>;
    /// A single-operation read-modify-write; returns the new value.
    fn update(&self, k: u32, f: impl FnMut(&Vec<u32>) -> Vec<u32>) -> Vec<u32>;
    /// The committed value, outside any transaction.
    fn load(&self, k: u32) -> Vec<u32>;
}

impl ListStore for Vec<TBox<Vec<u32>>> {
    const NAME: &'static str = "box";
    fn registers(&self) -> u32 {
        self.len() as u32
    }
    fn get<'e>(&'e self, tx: &mut Transaction<'e>, k: u32) -> TxResult<Vec<u32>> {
        self[k as usize].get(tx)
    }
    fn set<'e>(&'e self, tx: &mut Transaction<'e>, k: u32, v: Vec<u32>) -> TxResult<()> {
        self[k as usize].set(tx, v)
    }
    fn update(&self, k: u32, f: impl FnMut(&Vec<u32>) -> Vec<u32>) -> Vec<u32> {
        self[k as usize].update(f)
    }
    fn load(&self, k: u32) -> Vec<u32> {
        self[k as usize].load()
    }
}

impl ListStore for TArray<Vec<u32>> {
    const NAME: &'static str = "slot";
    fn registers(&self) -> u32 {
        self.len() as u32
    }
    fn get<'e>(&'e self, tx: &mut Transaction<'e>, k: u32) -> TxResult<Vec<u32>> {
        TArray::get(self, tx, k as usize)
    }
    fn set<'e>(&'e self, tx: &mut Transaction<'e>, k: u32, v: Vec<u32>) -> TxResult<()> {
        TArray::set(self, tx, k as usize, v)
    }
    fn update(&self, k: u32, f: impl FnMut(&Vec<u32>) -> Vec<u32>) -> Vec<u32> {
        TArray::update(self, k as usize, f)
    }
    fn load(&self, k: u32) -> Vec<u32> {
        TArray::load(self, k as usize)
    }
}

/// Lists interned under word-sized ids, so that registers of one word
/// (`TBox<u64>`, `TArray<u64>`: the runtime's word log) can hold the
/// list-append workload's lists: a register holds the id of its list. Each
/// write interns its list under a fresh id (0 is the empty list), so ids,
/// like the lists, are never written twice, and an id a transaction reads
/// names the list the writer meant.
pub struct Lists {
    next: AtomicU32,
    table: Box<[OnceLock<Vec<u32>>]>,
}

impl Lists {
    /// Room for this many writes (attempts that abort use ids too).
    const CAPACITY: usize = 1 << 18;

    fn new() -> Self {
        Lists {
            next: AtomicU32::new(0),
            table: (0..Self::CAPACITY).map(|_| OnceLock::new()).collect(),
        }
    }

    fn intern(&self, list: Vec<u32>) -> u64 {
        let id = self.next.fetch_add(1, Ordering::Relaxed) as usize + 1;
        assert!(id < Self::CAPACITY, "the workload ran out of list ids");
        self.table[id].set(list).expect("list ids are fresh");
        id as u64
    }

    fn list(&self, id: u64) -> Vec<u32> {
        if id == 0 {
            return Vec::new();
        }
        self.table[id as usize]
            .get()
            .expect("a register holds an id that was interned")
            .clone()
    }
}

/// Word registers: `S` holds list ids, `lists` the lists.
pub struct Words<S> {
    ids: S,
    lists: Lists,
}

impl ListStore for Words<Vec<TBox<u64>>> {
    const NAME: &'static str = "word box";
    fn registers(&self) -> u32 {
        self.ids.len() as u32
    }
    fn get<'e>(&'e self, tx: &mut Transaction<'e>, k: u32) -> TxResult<Vec<u32>> {
        Ok(self.lists.list(self.ids[k as usize].get(tx)?))
    }
    fn set<'e>(&'e self, tx: &mut Transaction<'e>, k: u32, v: Vec<u32>) -> TxResult<()> {
        self.ids[k as usize].set(tx, self.lists.intern(v))
    }
    fn update(&self, k: u32, mut f: impl FnMut(&Vec<u32>) -> Vec<u32>) -> Vec<u32> {
        let id = self.ids[k as usize].update(|&id| self.lists.intern(f(&self.lists.list(id))));
        self.lists.list(id)
    }
    fn load(&self, k: u32) -> Vec<u32> {
        self.lists.list(self.ids[k as usize].load())
    }
}

impl ListStore for Words<TArray<u64>> {
    const NAME: &'static str = "word slot";
    fn registers(&self) -> u32 {
        self.ids.len() as u32
    }
    fn get<'e>(&'e self, tx: &mut Transaction<'e>, k: u32) -> TxResult<Vec<u32>> {
        Ok(self.lists.list(self.ids.get(tx, k as usize)?))
    }
    fn set<'e>(&'e self, tx: &mut Transaction<'e>, k: u32, v: Vec<u32>) -> TxResult<()> {
        self.ids.set(tx, k as usize, self.lists.intern(v))
    }
    fn update(&self, k: u32, mut f: impl FnMut(&Vec<u32>) -> Vec<u32>) -> Vec<u32> {
        let id = self
            .ids
            .update(k as usize, |&id| self.lists.intern(f(&self.lists.list(id))));
        self.lists.list(id)
    }
    fn load(&self, k: u32) -> Vec<u32> {
        self.lists.list(self.ids.load(k as usize))
    }
}

impl Registers<Words<Vec<TBox<u64>>>> {
    /// Word boxes, whose writes go to the runtime's word log.
    pub fn word_boxes(n: u32) -> Self {
        Registers {
            store: Words {
                ids: (0..n).map(|_| TBox::new(0)).collect(),
                lists: Lists::new(),
            },
            fresh: Fresh::default(),
        }
    }
}

impl Registers<Words<TArray<u64>>> {
    /// A word array, whose writes go to the runtime's word log unless it
    /// keeps history (then through items, which save the old value).
    pub fn word_array(n: u32, history: bool) -> Self {
        let ids = TArray::new(n as usize, 0);
        Registers {
            store: Words {
                ids: if history {
                    ids.with_snapshot_history()
                } else {
                    ids
                },
                lists: Lists::new(),
            },
            fresh: Fresh::default(),
        }
    }
}

pub struct Registers<S> {
    pub store: S,
    pub fresh: Fresh,
}

impl Registers<Vec<TBox<Vec<u32>>>> {
    pub fn boxes(n: u32) -> Self {
        Registers {
            store: (0..n).map(|_| TBox::new(Vec::new())).collect(),
            fresh: Fresh::default(),
        }
    }
}

impl Registers<TArray<Vec<u32>>> {
    pub fn array(n: u32) -> Self {
        Registers {
            store: TArray::new(n as usize, Vec::new()),
            fresh: Fresh::default(),
        }
    }
}

#[derive(Clone, Copy, Debug)]
enum RegOp {
    Read(u32),
    Append(u32, u32),
}

impl<S: ListStore> Registers<S> {
    pub fn read<'e>(
        &'e self,
        tx: &mut Transaction<'e>,
        k: u32,
        ev: &mut Vec<Event>,
    ) -> TxResult<()> {
        let v = self.store.get(tx, k)?;
        ev.push(Event::Get {
            key: k,
            value: Some(v),
        });
        Ok(())
    }

    /// A broken read: the committed value, which the transaction does not
    /// track.
    pub fn read_committed(&self, k: u32, ev: &mut Vec<Event>) {
        ev.push(Event::Get {
            key: k,
            value: Some(self.store.load(k)),
        });
    }

    pub fn append<'e>(
        &'e self,
        tx: &mut Transaction<'e>,
        k: u32,
        x: u32,
        ev: &mut Vec<Event>,
    ) -> TxResult<()> {
        let mut v = self.store.get(tx, k)?;
        ev.push(Event::Get {
            key: k,
            value: Some(v.clone()),
        });
        v.push(x);
        self.store.set(tx, k, v.clone())?;
        ev.push(Event::Put {
            key: k,
            value: Some(v),
        });
        Ok(())
    }
}

impl<S: ListStore> Workload for Registers<S> {
    fn transaction(
        &self,
        opts: &TxOptions,
        rng: &mut SmallRng,
        thread: usize,
        seq: usize,
    ) -> Vec<Attempt> {
        let n = self.store.registers();
        let k = rng.random_range(0..n);
        match rng.random_range(0..100) {
            // Single operations, outside any transaction.
            0..8 => {
                let x = self.fresh.elem();
                let begin = tick();
                let new = self.store.update(k, |v| {
                    let mut v = v.clone();
                    v.push(x);
                    v
                });
                let old = new[..new.len() - 1].to_vec();
                single(
                    thread,
                    seq,
                    begin,
                    vec![
                        Event::Get {
                            key: k,
                            value: Some(old),
                        },
                        Event::Put {
                            key: k,
                            value: Some(new),
                        },
                    ],
                )
            }
            8..15 => single(
                thread,
                seq,
                tick(),
                vec![Event::Get {
                    key: k,
                    value: Some(self.store.load(k)),
                }],
            ),
            _ => {
                let script = ops(rng, |rng| {
                    let k = rng.random_range(0..n);
                    if rng.random_bool(0.5) {
                        RegOp::Read(k)
                    } else {
                        RegOp::Append(k, self.fresh.elem())
                    }
                });
                record(opts, thread, seq, |tx, ev| {
                    for op in &script {
                        maybe_yield(rng);
                        match *op {
                            RegOp::Read(k) => self.read(tx, k, ev)?,
                            RegOp::Append(k, x) => self.append(tx, k, x, ev)?,
                        }
                    }
                    Ok(())
                })
            }
        }
    }

    fn spec(&self, aborted: bool) -> Spec {
        Spec {
            preset: (0..self.store.registers()).collect(),
            name: |k| format!("{} {k}", S::NAME),
            log: None,
            aborted,
        }
    }

    fn final_state(&self) -> Final {
        Final {
            lists: (0..self.store.registers())
                .map(|k| (k, self.store.load(k)))
                .collect(),
            ..Final::default()
        }
    }
}

// ---------------------------------------------------------------------
// Maps: keys created once, appended to, removed once.

/// A map the workload runs on: the shared map surface, plus how a scan
/// picks its range and in which order whole-map reads come.
pub trait MapStore: TMap<u32, Vec<u32>> {
    /// How [`TMap::to_vec`] orders its entries.
    const ORDER: Order;
    /// Some of the entries (the ordered map: a range, either way; the hash
    /// map: all of them, in no order).
    fn scan<'e>(&'e self, tx: &mut Transaction<'e>, rng: &mut SmallRng) -> TxResult<Event>;
}

impl MapStore for THashMap<u32, Vec<u32>> {
    const ORDER: Order = Order::Any;
    fn scan<'e>(&'e self, tx: &mut Transaction<'e>, _: &mut SmallRng) -> TxResult<Event> {
        Ok(Event::Scan {
            range: None,
            order: Order::Any,
            found: self.to_vec(tx)?,
        })
    }
}

impl MapStore for TBTreeMap<u32, Vec<u32>> {
    const ORDER: Order = Order::Ascending;
    fn scan<'e>(&'e self, tx: &mut Transaction<'e>, rng: &mut SmallRng) -> TxResult<Event> {
        let lo = rng.random_range(0..KEY_SPACE);
        let hi = (lo + rng.random_range(KEY_SPACE / 16..KEY_SPACE / 3)).min(KEY_SPACE - 1);
        let rev = rng.random_bool(0.5);
        let found = if rev {
            self.range_rev(tx, lo..=hi)?
        } else {
            self.range(tx, lo..=hi)?
        };
        Ok(Event::Scan {
            range: Some((lo, hi)),
            order: if rev {
                Order::Descending
            } else {
                Order::Ascending
            },
            found,
        })
    }
}

pub struct Map<M> {
    pub map: M,
    pub fresh: Fresh,
}

#[derive(Clone, Copy, Debug)]
enum MapOp {
    Create(u32, u32),
    /// Append to a key; `true`: read it through `insert`, not `get`.
    Append(u32, u32, bool),
    Remove(u32),
    Read(u32),
    /// `or_else`: the first branch inserts into the key (`true`: with
    /// `insert`, else `insert_if_absent`), notes what it found and
    /// retries; the second reads the key. What the first branch saw is
    /// part of the transaction, and its insert is undone.
    Branch(u32, bool),
    Scan,
    /// Every entry, then the length.
    Count,
}

impl<M: MapStore> Map<M> {
    pub fn new(map: M) -> Self {
        Map {
            map,
            fresh: Fresh::default(),
        }
    }

    /// Inserts a fresh key holding `[x]`.
    pub fn create<'e>(
        &'e self,
        tx: &mut Transaction<'e>,
        k: u32,
        x: u32,
        ev: &mut Vec<Event>,
    ) -> TxResult<()> {
        if self.map.insert_if_absent(tx, k, vec![x])? {
            ev.push(Event::Get {
                key: k,
                value: None,
            });
            ev.push(Event::Put {
                key: k,
                value: Some(vec![x]),
            });
        } else {
            ev.push(Event::Impossible(format!(
                "insert of the fresh key {k} found it present"
            )));
        }
        Ok(())
    }

    pub fn read<'e>(
        &'e self,
        tx: &mut Transaction<'e>,
        k: u32,
        ev: &mut Vec<Event>,
    ) -> TxResult<()> {
        let value = self.map.get(tx, &k)?;
        ev.push(Event::Get { key: k, value });
        Ok(())
    }

    /// A broken read: the committed value, which the transaction does not
    /// track.
    pub fn read_committed(&self, k: u32, ev: &mut Vec<Event>) {
        ev.push(Event::Get {
            key: k,
            value: self.map.load(&k),
        });
    }

    /// Appends `x` to key `k`'s list: reads it with `get` and writes it
    /// blindly, or (with `swap`) reads it through `insert`'s old value, then
    /// writes it again; an absent key is then removed again (the insert
    /// placed it).
    fn append<'e>(
        &'e self,
        tx: &mut Transaction<'e>,
        k: u32,
        x: u32,
        swap: bool,
        ev: &mut Vec<Event>,
    ) -> TxResult<()> {
        let value = if swap {
            self.map.insert(tx, k, Vec::new())?
        } else {
            self.map.get(tx, &k)?
        };
        ev.push(Event::Get {
            key: k,
            value: value.clone(),
        });
        let Some(mut l) = value else {
            // (With `swap`, the insert placed the key: remove it again.)
            if swap && self.map.remove(tx, &k)? != Some(Vec::new()) {
                ev.push(Event::Impossible(format!(
                    "key {k} lost the value this transaction inserted"
                )));
            }
            return Ok(());
        };
        l.push(x);
        self.map.set(tx, k, l.clone())?;
        ev.push(Event::Put {
            key: k,
            value: Some(l),
        });
        Ok(())
    }

    /// [`MapOp::Branch`].
    fn branch<'e>(
        &'e self,
        tx: &mut Transaction<'e>,
        k: u32,
        swap: bool,
        ev: &mut Vec<Event>,
    ) -> TxResult<()> {
        // (Both branches record into the attempt's events.)
        let events = RefCell::new(std::mem::take(ev));
        let done = tx.or_else(
            |tx| {
                let ev = &mut *events.borrow_mut();
                let value = if swap {
                    self.map.insert(tx, k, Vec::new())?
                } else if self.map.insert_if_absent(tx, k, Vec::new())? {
                    None
                } else {
                    let value = self.map.get(tx, &k)?;
                    if value.is_none() {
                        ev.push(Event::Impossible(format!(
                            "insert_if_absent found key {k} present, get found it absent"
                        )));
                    }
                    value
                };
                ev.push(Event::Get { key: k, value });
                Err(tx.retry())
            },
            |tx| {
                // Between the branches: a good moment for others to commit.
                thread::yield_now();
                self.read(tx, k, &mut events.borrow_mut())
            },
        );
        *ev = events.into_inner();
        done
    }

    fn remove<'e>(&'e self, tx: &mut Transaction<'e>, k: u32, ev: &mut Vec<Event>) -> TxResult<()> {
        let value = self.map.remove(tx, &k)?;
        let removed = value.is_some();
        ev.push(Event::Get { key: k, value });
        if removed {
            ev.push(Event::Put {
                key: k,
                value: None,
            });
        }
        Ok(())
    }
}

impl<M: MapStore> Map<M> {
    /// A single-operation write outside any transaction (`insert_if_absent_now`
    /// of a fresh key, `update_now` appending, `remove_now`), recorded as a
    /// transaction of one attempt.
    fn single_write(&self, rng: &mut SmallRng, thread: usize, seq: usize) -> Vec<Attempt> {
        let begin = tick();
        let events = match (rng.random_range(0..3), self.fresh.target(rng)) {
            (0, _) | (_, None) => {
                let (k, x) = (self.fresh.key(), self.fresh.elem());
                if self.map.insert_if_absent_now(k, vec![x]) {
                    vec![
                        Event::Get {
                            key: k,
                            value: None,
                        },
                        Event::Put {
                            key: k,
                            value: Some(vec![x]),
                        },
                    ]
                } else {
                    vec![Event::Impossible(format!(
                        "insert_if_absent_now of the fresh key {k} found it present"
                    ))]
                }
            }
            (1, Some(k)) => {
                let x = self.fresh.elem();
                let new = self.map.update_now(k, |old| {
                    old.map(|l| {
                        let mut l = l.clone();
                        l.push(x);
                        l
                    })
                });
                match new {
                    Some(l) => vec![
                        Event::Get {
                            key: k,
                            value: Some(l[..l.len() - 1].to_vec()),
                        },
                        Event::Put {
                            key: k,
                            value: Some(l),
                        },
                    ],
                    None => vec![Event::Get {
                        key: k,
                        value: None,
                    }],
                }
            }
            (_, Some(k)) => {
                let value = self.map.remove_now(&k);
                let removed = value.is_some();
                let mut ev = vec![Event::Get { key: k, value }];
                if removed {
                    ev.push(Event::Put {
                        key: k,
                        value: None,
                    });
                }
                ev
            }
        };
        let attempts = single(thread, seq, begin, events);
        self.fresh.note(&attempts);
        attempts
    }
}

impl<M: MapStore> Workload for Map<M> {
    fn transaction(
        &self,
        opts: &TxOptions,
        rng: &mut SmallRng,
        thread: usize,
        seq: usize,
    ) -> Vec<Attempt> {
        if rng.random_ratio(1, 8) {
            return self.single_write(rng, thread, seq);
        }
        let script = ops(rng, |rng| {
            match (rng.random_range(0..100), self.fresh.target(rng)) {
                (0..15, _) | (_, None) => MapOp::Create(self.fresh.key(), self.fresh.elem()),
                (15..45, Some(k)) => MapOp::Append(k, self.fresh.elem(), rng.random_bool(0.5)),
                (45..60, Some(k)) => MapOp::Remove(k),
                (60..70, Some(k)) => MapOp::Read(k),
                (70..80, Some(k)) => {
                    // Mostly a key whose insert may be in flight: the
                    // interleaving that matters is another transaction
                    // inserting it between the two branches.
                    let k = if rng.random_ratio(3, 4) {
                        self.fresh.recent(rng).unwrap_or(k)
                    } else {
                        k
                    };
                    MapOp::Branch(k, rng.random_bool(0.5))
                }
                (80..95, _) => MapOp::Scan,
                _ => MapOp::Count,
            }
        });
        let attempts = record(opts, thread, seq, |tx, ev| {
            for op in &script {
                maybe_yield(rng);
                match *op {
                    MapOp::Create(k, x) => self.create(tx, k, x, ev)?,
                    MapOp::Append(k, x, swap) => self.append(tx, k, x, swap, ev)?,
                    MapOp::Remove(k) => self.remove(tx, k, ev)?,
                    MapOp::Read(k) => self.read(tx, k, ev)?,
                    MapOp::Branch(k, swap) => self.branch(tx, k, swap, ev)?,
                    MapOp::Scan => ev.push(self.map.scan(tx, rng)?),
                    MapOp::Count => {
                        let found = self.map.to_vec(tx)?;
                        ev.push(Event::Scan {
                            range: None,
                            order: M::ORDER,
                            found,
                        });
                        let n = self.map.len(tx)?;
                        ev.push(Event::Count { n });
                    }
                }
            }
            Ok(())
        });
        self.fresh.note(&attempts);
        attempts
    }

    fn spec(&self, aborted: bool) -> Spec {
        Spec {
            preset: Vec::new(),
            name: |k| format!("key {k}"),
            log: None,
            aborted,
        }
    }

    fn final_state(&self) -> Final {
        let lists = txmem::atomically(|tx| self.map.to_vec(tx));
        Final {
            lists: lists.into_iter().collect(),
            ..Final::default()
        }
    }
}

// ---------------------------------------------------------------------
// Sorted lists: elements inserted once, removed at most once.

pub trait SetStore: Sync {
    /// Inserts `x`; `Some(inserted)` if the type says whether it did.
    fn insert<'e>(&'e self, tx: &mut Transaction<'e>, x: u32) -> TxResult<Option<bool>>;
    fn remove<'e>(&'e self, tx: &mut Transaction<'e>, x: u32) -> TxResult<bool>;
    fn contains<'e>(&'e self, tx: &mut Transaction<'e>, x: u32) -> TxResult<bool>;
    fn to_vec<'e>(&'e self, tx: &mut Transaction<'e>) -> TxResult<Vec<u32>>;
    fn len<'e>(&'e self, tx: &mut Transaction<'e>) -> TxResult<usize>;
    fn load_vec(&self) -> Vec<u32>;
}

impl SetStore for TListSet<u32> {
    fn insert<'e>(&'e self, tx: &mut Transaction<'e>, x: u32) -> TxResult<Option<bool>> {
        TListSet::insert(self, tx, x).map(Some)
    }
    fn remove<'e>(&'e self, tx: &mut Transaction<'e>, x: u32) -> TxResult<bool> {
        TListSet::remove(self, tx, &x)
    }
    fn contains<'e>(&'e self, tx: &mut Transaction<'e>, x: u32) -> TxResult<bool> {
        TListSet::contains(self, tx, &x)
    }
    fn to_vec<'e>(&'e self, tx: &mut Transaction<'e>) -> TxResult<Vec<u32>> {
        TListSet::to_vec(self, tx)
    }
    fn len<'e>(&'e self, tx: &mut Transaction<'e>) -> TxResult<usize> {
        TListSet::len(self, tx)
    }
    fn load_vec(&self) -> Vec<u32> {
        TListSet::load_vec(self)
    }
}

impl SetStore for TList<u32> {
    fn insert<'e>(&'e self, tx: &mut Transaction<'e>, x: u32) -> TxResult<Option<bool>> {
        TList::insert(self, tx, x).map(|()| None)
    }
    fn remove<'e>(&'e self, tx: &mut Transaction<'e>, x: u32) -> TxResult<bool> {
        TList::remove(self, tx, &x)
    }
    fn contains<'e>(&'e self, tx: &mut Transaction<'e>, x: u32) -> TxResult<bool> {
        TList::contains(self, tx, &x)
    }
    fn to_vec<'e>(&'e self, tx: &mut Transaction<'e>) -> TxResult<Vec<u32>> {
        TList::to_vec(self, tx)
    }
    fn len<'e>(&'e self, tx: &mut Transaction<'e>) -> TxResult<usize> {
        TList::len(self, tx)
    }
    fn load_vec(&self) -> Vec<u32> {
        TList::load_vec(self)
    }
}

pub struct Set<S> {
    pub set: S,
    pub fresh: Fresh,
}

#[derive(Clone, Copy, Debug)]
enum SetOp {
    Insert(u32),
    Remove(u32),
    Contains(u32),
    /// `or_else`: the first branch inserts the element, notes whether it
    /// was there (sets only) and retries; the second reads its presence.
    Branch(u32),
    List,
    /// All elements, then the length.
    Count,
}

impl<S: SetStore> Set<S> {
    pub fn new(set: S) -> Self {
        Set {
            set,
            fresh: Fresh::default(),
        }
    }

    pub fn insert<'e>(
        &'e self,
        tx: &mut Transaction<'e>,
        x: u32,
        ev: &mut Vec<Event>,
    ) -> TxResult<()> {
        match self.set.insert(tx, x)? {
            Some(false) => ev.push(Event::Impossible(format!(
                "insert of the fresh element {x} found it present"
            ))),
            Some(true) => {
                ev.push(Event::Has {
                    elem: x,
                    present: false,
                });
                ev.push(Event::Mark {
                    elem: x,
                    present: true,
                });
            }
            None => ev.push(Event::Mark {
                elem: x,
                present: true,
            }),
        }
        Ok(())
    }

    pub fn contains<'e>(
        &'e self,
        tx: &mut Transaction<'e>,
        x: u32,
        ev: &mut Vec<Event>,
    ) -> TxResult<()> {
        let present = self.set.contains(tx, x)?;
        ev.push(Event::Has { elem: x, present });
        Ok(())
    }

    /// [`SetOp::Branch`].
    fn branch<'e>(&'e self, tx: &mut Transaction<'e>, x: u32, ev: &mut Vec<Event>) -> TxResult<()> {
        let events = RefCell::new(std::mem::take(ev));
        let done = tx.or_else(
            |tx| {
                if let Some(inserted) = self.set.insert(tx, x)? {
                    events.borrow_mut().push(Event::Has {
                        elem: x,
                        present: !inserted,
                    });
                }
                Err(tx.retry())
            },
            |tx| {
                thread::yield_now();
                self.contains(tx, x, &mut events.borrow_mut())
            },
        );
        *ev = events.into_inner();
        done
    }

    fn remove<'e>(&'e self, tx: &mut Transaction<'e>, x: u32, ev: &mut Vec<Event>) -> TxResult<()> {
        let present = self.set.remove(tx, x)?;
        ev.push(Event::Has { elem: x, present });
        if present {
            ev.push(Event::Mark {
                elem: x,
                present: false,
            });
        }
        Ok(())
    }
}

impl Set<TListSet<u32>> {
    /// A broken read: the committed presence, which the transaction does
    /// not track.
    pub fn contains_committed(&self, x: u32, ev: &mut Vec<Event>) {
        ev.push(Event::Has {
            elem: x,
            present: self.set.load_contains(&x),
        });
    }
}

impl<S: SetStore> Workload for Set<S> {
    fn transaction(
        &self,
        opts: &TxOptions,
        rng: &mut SmallRng,
        thread: usize,
        seq: usize,
    ) -> Vec<Attempt> {
        let script = ops(rng, |rng| {
            match (rng.random_range(0..100), self.fresh.target(rng)) {
                (0..25, _) | (_, None) => SetOp::Insert(self.fresh.key()),
                (25..55, Some(x)) => SetOp::Remove(x),
                (55..70, Some(x)) => SetOp::Contains(x),
                (70..80, Some(x)) => {
                    let x = if rng.random_ratio(3, 4) {
                        self.fresh.recent(rng).unwrap_or(x)
                    } else {
                        x
                    };
                    SetOp::Branch(x)
                }
                (80..95, _) => SetOp::List,
                _ => SetOp::Count,
            }
        });
        let attempts = record(opts, thread, seq, |tx, ev| {
            for op in &script {
                maybe_yield(rng);
                match *op {
                    SetOp::Insert(x) => self.insert(tx, x, ev)?,
                    SetOp::Remove(x) => self.remove(tx, x, ev)?,
                    SetOp::Contains(x) => self.contains(tx, x, ev)?,
                    SetOp::Branch(x) => self.branch(tx, x, ev)?,
                    SetOp::List => {
                        let found = self.set.to_vec(tx)?;
                        ev.push(Event::Elements { found });
                    }
                    SetOp::Count => {
                        let found = self.set.to_vec(tx)?;
                        ev.push(Event::Elements { found });
                        let n = self.set.len(tx)?;
                        ev.push(Event::Count { n });
                    }
                }
            }
            Ok(())
        });
        self.fresh.note(&attempts);
        attempts
    }

    fn spec(&self, aborted: bool) -> Spec {
        Spec {
            preset: Vec::new(),
            // (Sets have no list registers.)
            name: |k| format!("register {k}"),
            log: None,
            aborted,
        }
    }

    fn final_state(&self) -> Final {
        Final {
            set: self.set.load_vec(),
            ..Final::default()
        }
    }
}

// ---------------------------------------------------------------------
// The queue: unique pushes; every pop of a committed element is appended
// to a pop log in the same transaction, which gives the queue's order.

pub struct Queue {
    pub queue: TQueue<u32>,
    pub log: TBox<Vec<u32>>,
    pub fresh: Fresh,
}

/// The pop log's register key.
pub const LOG: u32 = 0;

#[derive(Clone, Copy, Debug)]
enum QueueOp {
    Push(u32),
    Pop,
    Peek,
    Len,
}

/// What one attempt pushed and has not popped itself.
pub type Pending = VecDeque<u32>;

impl Default for Queue {
    fn default() -> Self {
        Queue {
            queue: TQueue::new(),
            log: TBox::new(Vec::new()),
            fresh: Fresh::default(),
        }
    }
}

impl Queue {
    pub fn push<'e>(
        &'e self,
        tx: &mut Transaction<'e>,
        x: u32,
        pending: &mut Pending,
        ev: &mut Vec<Event>,
    ) -> TxResult<()> {
        self.queue.push(tx, x)?;
        ev.push(Event::Push { elem: x });
        pending.push_back(x);
        Ok(())
    }

    fn read_log<'e>(&'e self, tx: &mut Transaction<'e>, ev: &mut Vec<Event>) -> TxResult<Vec<u32>> {
        let log = self.log.get(tx)?;
        ev.push(Event::Get {
            key: LOG,
            value: Some(log.clone()),
        });
        Ok(log)
    }

    pub fn pop<'e>(
        &'e self,
        tx: &mut Transaction<'e>,
        pending: &mut Pending,
        ev: &mut Vec<Event>,
    ) -> TxResult<()> {
        let mut log = self.read_log(tx, ev)?;
        let got = self.queue.try_pop(tx)?;
        ev.push(Event::Front {
            log_len: log.len(),
            got,
            popped: true,
        });
        match got {
            Some(e) if pending.front() == Some(&e) => {
                pending.pop_front();
            }
            Some(e) => {
                log.push(e);
                self.log.set(tx, log.clone())?;
                ev.push(Event::Put {
                    key: LOG,
                    value: Some(log),
                });
            }
            None => {}
        }
        Ok(())
    }

    pub fn peek<'e>(&'e self, tx: &mut Transaction<'e>, ev: &mut Vec<Event>) -> TxResult<()> {
        let log = self.read_log(tx, ev)?;
        let got = self.queue.peek(tx)?;
        ev.push(Event::Front {
            log_len: log.len(),
            got,
            popped: false,
        });
        Ok(())
    }

    /// A broken peek: the committed front (or the attempt's own first
    /// push), which the transaction does not track.
    pub fn peek_committed<'e>(
        &'e self,
        tx: &mut Transaction<'e>,
        pending: &Pending,
        ev: &mut Vec<Event>,
    ) -> TxResult<()> {
        let log = self.read_log(tx, ev)?;
        let got = self
            .queue
            .load_vec()
            .first()
            .copied()
            .or(pending.front().copied());
        ev.push(Event::Front {
            log_len: log.len(),
            got,
            popped: false,
        });
        Ok(())
    }

    fn len<'e>(&'e self, tx: &mut Transaction<'e>, ev: &mut Vec<Event>) -> TxResult<()> {
        let log = self.read_log(tx, ev)?;
        let n = self.queue.len(tx)?;
        ev.push(Event::QueueLen {
            log_len: log.len(),
            n,
        });
        Ok(())
    }
}

impl Workload for Queue {
    fn transaction(
        &self,
        opts: &TxOptions,
        rng: &mut SmallRng,
        thread: usize,
        seq: usize,
    ) -> Vec<Attempt> {
        let script = ops(rng, |rng| match rng.random_range(0..100) {
            // More pops than pushes: the queue is often empty, where a look
            // reads the push side too.
            0..35 => QueueOp::Push(self.fresh.elem()),
            35..75 => QueueOp::Pop,
            75..90 => QueueOp::Peek,
            _ => QueueOp::Len,
        });
        record(opts, thread, seq, |tx, ev| {
            let mut pending = Pending::new();
            for op in &script {
                maybe_yield(rng);
                match *op {
                    QueueOp::Push(x) => self.push(tx, x, &mut pending, ev)?,
                    QueueOp::Pop => self.pop(tx, &mut pending, ev)?,
                    QueueOp::Peek => self.peek(tx, ev)?,
                    QueueOp::Len => self.len(tx, ev)?,
                }
            }
            Ok(())
        })
    }

    fn spec(&self, aborted: bool) -> Spec {
        Spec {
            preset: vec![LOG],
            name: |_| "the pop log".to_string(),
            log: Some(LOG),
            aborted,
        }
    }

    fn final_state(&self) -> Final {
        Final {
            lists: [(LOG, self.log.load())].into_iter().collect(),
            queue: self.queue.load_vec(),
            ..Final::default()
        }
    }
}
