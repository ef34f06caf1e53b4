//! The transactional variants: the shared vertex arena, `typed` (a
//! `THashMap` of triangles and a `TQueue`) and `words` (triangle records
//! and a linked FIFO in `TWords`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::thread;

use txmem::{atomically, THashMap, TQueue, TWords, Transaction, TxResult, WordAddr};

use super::mesh::{refine, Mesh, Outcome, Pt, Quality, Tri, NONE};

const CHUNK_BITS: usize = 14;
const CHUNKS: usize = 1 << 12;

/// Append-only vertex coordinates shared by all threads, in lazily
/// allocated chunks so that it never moves. A vertex is written once,
/// before the transaction that first refers to it commits, and never
/// changes, so it is read with plain (acquire) loads, not tracked.
pub struct Arena {
    chunks: Box<[OnceLock<Box<[AtomicU64]>>]>,
    len: AtomicUsize,
}

impl Arena {
    /// An arena holding `pts`.
    pub fn new(pts: &[Pt]) -> Arena {
        let a = Arena {
            chunks: (0..CHUNKS).map(|_| OnceLock::new()).collect(),
            len: AtomicUsize::new(0),
        };
        for &p in pts {
            a.push(p);
        }
        a
    }

    fn chunk(&self, v: usize) -> &[AtomicU64] {
        self.chunks[v >> CHUNK_BITS]
            .get_or_init(|| (0..2 << CHUNK_BITS).map(|_| AtomicU64::new(0)).collect())
    }

    /// Appends `p`; returns its id.
    pub fn push(&self, p: Pt) -> u32 {
        let v = self.len.fetch_add(1, Ordering::Relaxed);
        assert!(v < CHUNKS << CHUNK_BITS, "yada: vertex arena full");
        let c = self.chunk(v);
        let i = 2 * (v & ((1 << CHUNK_BITS) - 1));
        c[i].store(p.0.to_bits(), Ordering::Release);
        c[i + 1].store(p.1.to_bits(), Ordering::Release);
        v as u32
    }

    /// The vertex of `cache` if it is at `p`, else a new one at `p` (then
    /// cached). A retry of a refinement usually inserts the same
    /// circumcentre, so it reuses the vertex of the aborted attempt; not
    /// always, as a `words` record may have been freed and reused by
    /// another triangle meanwhile.
    pub fn reuse_or_push(&self, cache: &mut Option<(Pt, u32)>, p: Pt) -> u32 {
        match *cache {
            Some((q, v)) if q == p => v,
            _ => {
                let v = self.push(p);
                *cache = Some((p, v));
                v
            }
        }
    }

    /// The coordinates of vertex `v`.
    pub fn get(&self, v: u32) -> Pt {
        let v = v as usize;
        let c = self.chunk(v);
        let i = 2 * (v & ((1 << CHUNK_BITS) - 1));
        (
            f64::from_bits(c[i].load(Ordering::Acquire)),
            f64::from_bits(c[i + 1].load(Ordering::Acquire)),
        )
    }

    /// Every vertex, by id.
    pub fn to_vec(&self) -> Vec<Pt> {
        (0..self.len.load(Ordering::Acquire) as u32)
            .map(|v| self.get(v))
            .collect()
    }
}

/// What one thread did: triangles it created, and those it left bad
/// because their cavity was degenerate.
#[derive(Default)]
pub struct Work {
    /// Ids of every triangle this thread's committed refinements created.
    pub created: Vec<u64>,
    /// Triangles left bad by a degenerate cavity.
    pub degenerate: Vec<u64>,
}

/// Runs `threads` workers: each pops a triangle (`pop`) and refines it
/// (`step`) until the queue is empty.
pub fn drive<S: Sync>(
    shared: &S,
    threads: usize,
    pop: impl Fn(&S) -> Option<u64> + Sync,
    step: impl Fn(&S, usize, u64, &mut Work) + Sync,
) -> Vec<Work> {
    thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|i| {
                let (pop, step) = (&pop, &step);
                s.spawn(move || {
                    let mut w = Work::default();
                    while let Some(id) = pop(shared) {
                        step(shared, i, id, &mut w);
                    }
                    w
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a yada thread panicked"))
            .collect()
    })
}

/// Typed: triangles in a `THashMap` keyed by id (point lookups only, and
/// inserts of distinct keys never conflict, so no ordered map is needed),
/// bad triangles in a `TQueue`. Thread `i` numbers its triangles from
/// `(i + 1) << 40`, so ids need no shared counter.
pub struct Typed {
    /// The mesh.
    pub tris: THashMap<u64, Tri>,
    /// Triangles to refine.
    pub queue: TQueue<u64>,
    /// Vertex coordinates.
    pub pts: Arena,
}

struct TypedTx<'a, 'env> {
    s: &'env Typed,
    tx: &'a mut Transaction<'env>,
    next: &'a mut u64,
    new: &'a mut Vec<u64>,
    vertex: &'a mut Option<(Pt, u32)>,
}

impl Mesh for TypedTx<'_, '_> {
    fn point(&self, v: u32) -> Pt {
        self.s.pts.get(v)
    }
    fn add_point(&mut self, p: Pt) -> u32 {
        self.s.pts.reuse_or_push(self.vertex, p)
    }
    fn tri(&mut self, id: u64) -> TxResult<Option<Tri>> {
        self.s.tris.get(self.tx, &id)
    }
    fn link(&mut self, id: u64, slot: usize, nb: u64) -> TxResult<()> {
        let mut t = self.s.tris.get(self.tx, &id)?.expect("linked triangle");
        t.n[slot] = nb;
        self.s.tris.set(self.tx, id, t)
    }
    fn remove(&mut self, id: u64) -> TxResult<()> {
        self.s.tris.remove(self.tx, &id).map(drop)
    }
    fn fresh_id(&mut self) -> TxResult<u64> {
        *self.next += 1;
        self.new.push(*self.next - 1);
        Ok(*self.next - 1)
    }
    fn put(&mut self, id: u64, t: Tri) -> TxResult<()> {
        self.s.tris.set(self.tx, id, t)
    }
    fn push_bad(&mut self, id: u64) -> TxResult<()> {
        self.s.queue.push(self.tx, id)
    }
}

impl Typed {
    /// Refines the queue's triangles on `threads` threads.
    pub fn run(&self, threads: usize, q: &Quality) -> Vec<Work> {
        // Per-thread id counters (each touched by its own thread only).
        let next: Vec<AtomicU64> = (0..threads)
            .map(|i| AtomicU64::new((i as u64 + 1) << 40))
            .collect();
        drive(
            self,
            threads,
            |s| atomically(|tx| s.queue.try_pop(tx)),
            |s, i, id, w| {
                let mut n = next[i].load(Ordering::Relaxed);
                let mut vertex = None;
                let mut new = Vec::new();
                let out = atomically(|tx| {
                    new.clear();
                    let mut m = TypedTx {
                        s,
                        tx,
                        next: &mut n,
                        new: &mut new,
                        vertex: &mut vertex,
                    };
                    refine(&mut m, id, q)
                });
                next[i].store(n, Ordering::Relaxed);
                match out {
                    Outcome::Refined(_) => w.created.append(&mut new),
                    Outcome::Degenerate => w.degenerate.push(id),
                    Outcome::Gone | Outcome::Skipped => {}
                }
            },
        )
    }

    /// The committed mesh: every triangle of `ids` still present.
    pub fn collect(&self, ids: impl Iterator<Item = u64>) -> HashMap<u64, Tri> {
        ids.filter_map(|id| self.tris.load(&id).map(|t| (id, t)))
            .collect()
    }
}

/// Words of a triangle record: alive flag, three vertices, three
/// neighbours. A triangle's id is its record's address.
const REC: usize = 7;
/// Queue node: value, next (0: none).
const NODE: usize = 2;
/// Control words: word 0 is reserved so that address 0 means "none";
/// then the queue's head (a sentinel node) and tail.
const HEAD: WordAddr = WordAddr(1);
const TAIL: WordAddr = WordAddr(2);

/// Words: triangle records of seven words (alive flag, vertices, neighbours) and a linked FIFO of bad
/// triangles in one `TWords`; every access to them goes through
/// `TWords::read` / `write`. Records of removed triangles and popped
/// queue nodes are freed after the commit that unlinked them and reused;
/// a queued id whose record was reused names some other live triangle,
/// which the refinement checks afresh (it refines it only if it is bad).
pub struct Words {
    /// The arena.
    pub mem: TWords,
    /// Vertex coordinates.
    pub pts: Arena,
}

struct WordsTx<'a, 'env> {
    s: &'env Words,
    tx: &'a mut Transaction<'env>,
    /// Blocks allocated by this attempt (freed if it aborts).
    allocs: &'a mut Vec<(WordAddr, usize)>,
    new: &'a mut Vec<u64>,
    vertex: &'a mut Option<(Pt, u32)>,
}

impl WordsTx<'_, '_> {
    fn alloc(&mut self, n: usize) -> WordAddr {
        let a = self.s.mem.alloc(n);
        self.allocs.push((a, n));
        a
    }
}

impl Mesh for WordsTx<'_, '_> {
    fn point(&self, v: u32) -> Pt {
        self.s.pts.get(v)
    }
    fn add_point(&mut self, p: Pt) -> u32 {
        self.s.pts.reuse_or_push(self.vertex, p)
    }
    fn tri(&mut self, id: u64) -> TxResult<Option<Tri>> {
        let (mem, a) = (&self.s.mem, WordAddr(id as usize));
        if mem.read(self.tx, a)? == 0 {
            return Ok(None);
        }
        let mut w = [0u64; REC - 1];
        for (k, x) in w.iter_mut().enumerate() {
            *x = mem.read(self.tx, a.offset(k + 1))?;
        }
        Ok(Some(Tri {
            v: [w[0] as u32, w[1] as u32, w[2] as u32],
            n: [w[3], w[4], w[5]],
        }))
    }
    fn link(&mut self, id: u64, slot: usize, nb: u64) -> TxResult<()> {
        self.s
            .mem
            .write(self.tx, WordAddr(id as usize).offset(4 + slot), nb)
    }
    fn remove(&mut self, id: u64) -> TxResult<()> {
        self.s.mem.write(self.tx, WordAddr(id as usize), 0)
    }
    fn fresh_id(&mut self) -> TxResult<u64> {
        let a = self.alloc(REC).0 as u64;
        self.new.push(a);
        Ok(a)
    }
    fn put(&mut self, id: u64, t: Tri) -> TxResult<()> {
        let words = [
            1,
            u64::from(t.v[0]),
            u64::from(t.v[1]),
            u64::from(t.v[2]),
            t.n[0],
            t.n[1],
            t.n[2],
        ];
        let a = WordAddr(id as usize);
        for (k, &x) in words.iter().enumerate() {
            self.s.mem.write(self.tx, a.offset(k), x)?;
        }
        Ok(())
    }
    fn push_bad(&mut self, id: u64) -> TxResult<()> {
        let n = self.alloc(NODE);
        let mem = &self.s.mem;
        mem.write(self.tx, n, id)?;
        mem.write(self.tx, n.offset(1), 0)?;
        let tail = WordAddr(mem.read(self.tx, TAIL)? as usize);
        mem.write(self.tx, tail.offset(1), n.0 as u64)?;
        mem.write(self.tx, TAIL, n.0 as u64)
    }
}

impl Words {
    /// An arena of `capacity` words holding the triangles `init` (ids
    /// `0..len`) and the queue `bad`; returns it with each initial
    /// triangle's record address.
    pub fn new(capacity: usize, pts: &[Pt], init: &[Tri], bad: &[u64]) -> (Words, Vec<u64>) {
        let mem = TWords::new(capacity);
        let ctl = mem.alloc(3);
        assert_eq!(ctl, WordAddr(0));
        let sentinel = mem.alloc(NODE);
        let addr: Vec<u64> = init.iter().map(|_| mem.alloc(REC).0 as u64).collect();
        let w = Words {
            mem,
            pts: Arena::new(pts),
        };
        atomically(|tx| {
            w.mem.write(tx, HEAD, sentinel.0 as u64)?;
            w.mem.write(tx, TAIL, sentinel.0 as u64)
        });
        for part in (0..init.len()).collect::<Vec<_>>().chunks(256) {
            let (mut allocs, mut new, mut vertex) = (Vec::new(), Vec::new(), None);
            atomically(|tx| {
                let mut m = WordsTx {
                    s: &w,
                    tx,
                    allocs: &mut allocs,
                    new: &mut new,
                    vertex: &mut vertex,
                };
                for &i in part {
                    let t = init[i];
                    let n = t.n.map(|x| if x == NONE { NONE } else { addr[x as usize] });
                    m.put(addr[i], Tri { v: t.v, n })?;
                }
                Ok(())
            });
        }
        for part in bad.chunks(256) {
            let (mut allocs, mut new, mut vertex) = (Vec::new(), Vec::new(), None);
            atomically(|tx| {
                for (a, n) in allocs.drain(..) {
                    w.mem.free(a, n);
                }
                let mut m = WordsTx {
                    s: &w,
                    tx,
                    allocs: &mut allocs,
                    new: &mut new,
                    vertex: &mut vertex,
                };
                part.iter().try_for_each(|&i| m.push_bad(addr[i as usize]))
            });
        }
        (w, addr)
    }

    /// True if the committed queue is empty.
    pub fn queue_is_empty(&self) -> bool {
        let h = WordAddr(self.mem.load(HEAD) as usize);
        self.mem.load(h.offset(1)) == 0
    }

    /// Pops the queue's head in a transaction of its own.
    fn pop(&self) -> Option<u64> {
        let (id, old) = atomically(|tx| {
            let h = WordAddr(self.mem.read(tx, HEAD)? as usize);
            let next = self.mem.read(tx, h.offset(1))?;
            if next == 0 {
                return Ok((None, h));
            }
            let id = self.mem.read(tx, WordAddr(next as usize))?;
            self.mem.write(tx, HEAD, next)?;
            Ok((Some(id), h))
        });
        let id = id?;
        // The old sentinel is unreachable now (the queue was not empty, so
        // the tail is not it).
        self.mem.free(old, NODE);
        Some(id)
    }

    /// Refines the queue's triangles on `threads` threads.
    pub fn run(&self, threads: usize, q: &Quality) -> Vec<Work> {
        drive(self, threads, Words::pop, |s, _, id, w| {
            let (mut allocs, mut new, mut vertex) = (Vec::new(), Vec::new(), None);
            let out = atomically(|tx| {
                // A previous attempt aborted: nothing committed refers
                // to its blocks.
                for (a, n) in allocs.drain(..) {
                    s.mem.free(a, n);
                }
                new.clear();
                let mut m = WordsTx {
                    s,
                    tx,
                    allocs: &mut allocs,
                    new: &mut new,
                    vertex: &mut vertex,
                };
                refine(&mut m, id, q)
            });
            match out {
                Outcome::Refined(removed) => {
                    w.created.append(&mut new);
                    for r in removed {
                        s.mem.free(WordAddr(r as usize), REC);
                    }
                }
                Outcome::Degenerate => w.degenerate.push(id),
                Outcome::Gone | Outcome::Skipped => {}
            }
        })
    }

    /// The committed mesh: every live record among `ids`.
    pub fn collect(&self, ids: impl Iterator<Item = u64>) -> HashMap<u64, Tri> {
        ids.filter_map(|id| {
            let a = WordAddr(id as usize);
            (self.mem.load(a) == 1).then(|| {
                let w: Vec<u64> = (1..REC).map(|k| self.mem.load(a.offset(k))).collect();
                (
                    id,
                    Tri {
                        v: [w[0] as u32, w[1] as u32, w[2] as u32],
                        n: [w[3], w[4], w[5]],
                    },
                )
            })
        })
        .collect()
    }
}
