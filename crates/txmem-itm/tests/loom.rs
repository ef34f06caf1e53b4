//! Model checking of NOrec's sequence lock (`txmem_itm::seqlock`, the code the library runs)
//! with loom.
//!
//! Run with `RUSTFLAGS="--cfg txmem_loom" cargo test -p txmem-itm --release --test loom` (the
//! README's test command does). The transactions below follow `method/norec.rs` step by step
//! over two words of loom memory: read each word, accept it only if the lock is unchanged,
//! else revalidate every value read so far; commit by locking at the snapshot (revalidating
//! when someone committed since), writing back and unlocking.

#![cfg(txmem_loom)]

use loom::sync::atomic::{AtomicU64, Ordering};
use loom::sync::Arc;
use loom::thread;
use txmem_itm::seqlock;

/// The shared state: the lock and two words the writers keep equal.
struct Shared {
    seq: AtomicU64,
    words: [AtomicU64; 2],
}

/// One NOrec attempt's log.
struct Tx<'a> {
    s: &'a Shared,
    snap: u64,
    values: Vec<(usize, u64)>,
}

impl Shared {
    fn new() -> Shared {
        Shared {
            seq: AtomicU64::new(0),
            words: [AtomicU64::new(0), AtomicU64::new(0)],
        }
    }
}

impl<'a> Tx<'a> {
    fn begin(s: &'a Shared) -> Tx<'a> {
        Tx {
            s,
            snap: seqlock::snapshot(&s.seq),
            values: Vec::new(),
        }
    }

    fn valid(&self) -> bool {
        self.values
            .iter()
            .all(|&(i, v)| self.s.words[i].load(Ordering::Relaxed) == v)
    }

    /// `NOrec::load_consistent`: None means the attempt aborts.
    fn read(&mut self, i: usize) -> Option<u64> {
        loop {
            let v = self.s.words[i].load(Ordering::Relaxed);
            if seqlock::unchanged(&self.s.seq, self.snap) {
                self.values.push((i, v));
                return Some(v);
            }
            self.snap = seqlock::revalidate(&self.s.seq, || self.valid())?;
        }
    }

    /// `NOrec::commit` of writes to both words; false means the attempt aborts.
    fn commit(mut self, writes: [u64; 2]) -> bool {
        while !seqlock::try_lock(&self.s.seq, self.snap) {
            match seqlock::revalidate(&self.s.seq, || self.valid()) {
                Some(s) => self.snap = s,
                None => return false,
            }
        }
        for (i, v) in writes.into_iter().enumerate() {
            self.s.words[i].store(v, Ordering::Relaxed);
        }
        seqlock::unlock(&self.s.seq, self.snap);
        true
    }
}

/// Increments both words in one transaction, retrying until it commits.
fn increment(s: &Shared) {
    loop {
        let mut tx = Tx::begin(s);
        let (Some(a), Some(b)) = (tx.read(0), tx.read(1)) else {
            continue;
        };
        assert_eq!(a, b, "a writer saw the words differ");
        if tx.commit([a + 1, b + 1]) {
            return;
        }
    }
}

fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(3);
    builder.check(f);
}

/// A reader never sees the words differ (opacity: each read agrees with the earlier ones),
/// whatever a concurrent commit does.
#[test]
fn readers_never_see_a_half_written_commit() {
    model(|| {
        let s = Arc::new(Shared::new());
        let w = {
            let s = s.clone();
            thread::spawn(move || increment(&s))
        };
        let mut tx = Tx::begin(&s);
        if let (Some(a), Some(b)) = (tx.read(0), tx.read(1)) {
            assert_eq!(a, b, "a reader saw the words differ");
        }
        w.join().unwrap();
        assert_eq!(s.words[0].load(Ordering::Relaxed), 1);
    });
}

/// Two concurrent writers: both increments land (no lost update), in some order.
#[test]
fn concurrent_commits_are_serialized() {
    model(|| {
        let s = Arc::new(Shared::new());
        let w = {
            let s = s.clone();
            thread::spawn(move || increment(&s))
        };
        increment(&s);
        w.join().unwrap();
        assert_eq!(s.words[0].load(Ordering::Relaxed), 2);
        assert_eq!(s.words[1].load(Ordering::Relaxed), 2);
        assert_eq!(s.seq.load(Ordering::Relaxed), 4);
    });
}
