//! TListSet, TList and TWords: model property tests with injected aborts,
//! concurrent stress with invariants.

use std::cell::Cell;
use std::cmp::Ordering as Order;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;

use proptest::prelude::*;
use txmem::{
    atomically, try_atomically, Opacity, TArray, TList, TListSet, TWords, TxError, TxOptions,
    WordAddr,
};

#[derive(Clone, Debug)]
enum Op {
    Insert(u8),
    Remove(u8),
    Contains(u8),
    Get(u8),
    Len,
    ToVec,
    /// `range(lo..=hi)` if the flag is set, else `range(lo..hi)`.
    Range(u8, u8, bool),
    First,
    Last,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0u8..16).prop_map(Op::Insert),
        3 => (0u8..16).prop_map(Op::Remove),
        2 => (0u8..16).prop_map(Op::Contains),
        1 => (0u8..16).prop_map(Op::Get),
        1 => Just(Op::Len),
        1 => Just(Op::ToVec),
        1 => (0u8..17, 0u8..17, any::<bool>()).prop_map(|(a, b, inc)| Op::Range(a.min(b), a.max(b), inc)),
        1 => Just(Op::First),
        1 => Just(Op::Last),
    ]
}

/// The model's elements in order, with repeats.
fn elements(m: &BTreeMap<u8, usize>) -> Vec<u8> {
    m.iter()
        .flat_map(|(k, c)| std::iter::repeat_n(*k, *c))
        .collect()
}

/// A multiset model: element -> count. For sets, counts stay at most 1.
fn model(m: &mut BTreeMap<u8, usize>, op: &Op, dups: bool) -> Vec<u8> {
    match *op {
        Op::Insert(x) => {
            let c = m.entry(x).or_insert(0);
            if dups || *c == 0 {
                *c += 1;
                vec![1]
            } else {
                vec![0]
            }
        }
        Op::Remove(x) => match m.get_mut(&x) {
            Some(c) if *c > 0 => {
                *c -= 1;
                vec![1]
            }
            _ => vec![0],
        },
        Op::Contains(x) => vec![(m.get(&x).copied().unwrap_or(0) > 0) as u8],
        Op::Get(x) => {
            if m.get(&x).copied().unwrap_or(0) > 0 {
                vec![x]
            } else {
                vec![]
            }
        }
        Op::Len => vec![m.values().sum::<usize>() as u8],
        Op::ToVec => elements(m),
        Op::Range(lo, hi, inclusive) => elements(m)
            .into_iter()
            .filter(|&x| x >= lo && (x < hi || inclusive && x == hi))
            .collect(),
        Op::First => elements(m).first().copied().into_iter().collect(),
        Op::Last => elements(m).last().copied().into_iter().collect(),
    }
}

/// One operation on a set or list, as the model encodes its result.
macro_rules! apply {
    ($l:expr, $tx:expr, $o:expr, $insert:expr) => {
        match *$o {
            Op::Insert(x) => vec![$insert($tx, x)?],
            Op::Remove(x) => vec![$l.remove($tx, &x)? as u8],
            Op::Contains(x) => vec![$l.contains($tx, &x)? as u8],
            Op::Get(x) => $l.get($tx, &x)?.into_iter().collect(),
            Op::Len => vec![$l.len($tx)? as u8],
            Op::ToVec => $l.to_vec($tx)?,
            Op::Range(lo, hi, true) => $l.range($tx, lo..=hi)?,
            Op::Range(lo, hi, false) => $l.range($tx, lo..hi)?,
            Op::First => $l.first($tx)?.into_iter().collect(),
            Op::Last => $l.last($tx)?.into_iter().collect(),
        }
    };
}

/// The committed reads of a set or list agree with the model.
macro_rules! check_committed {
    ($l:expr, $m:expr) => {{
        let all = elements(&$m);
        prop_assert_eq!($l.load_vec(), all.clone());
        prop_assert_eq!($l.load_len(), all.len());
        prop_assert_eq!($l.load_first(), all.first().copied());
        prop_assert_eq!($l.load_last(), all.last().copied());
        for x in 0..17u8 {
            let present = $m.get(&x).copied().unwrap_or(0) > 0;
            prop_assert_eq!($l.load_contains(&x), present);
            prop_assert_eq!($l.load(&x), present.then_some(x));
            let from: Vec<u8> = all.iter().copied().filter(|&y| y >= x).collect();
            prop_assert_eq!($l.load_range(x..), from);
        }
    }};
}

fn txs() -> impl Strategy<Value = Vec<(Vec<Op>, bool)>> {
    prop::collection::vec((prop::collection::vec(op(), 1..10), any::<bool>()), 1..24)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn list_set_matches_model(txs in txs()) {
        let s = TListSet::new();
        let mut m = BTreeMap::new();
        for (ops, inject) in txs {
            let attempts = Cell::new(0);
            let got: Vec<Vec<u8>> = atomically(|tx| {
                attempts.set(attempts.get() + 1);
                let mut out = vec![];
                for o in &ops {
                    out.push(apply!(s, tx, o, |tx, x| s.insert(tx, x).map(u8::from)));
                }
                if inject && attempts.get() == 1 { return Err(tx.abort()); }
                Ok(out)
            });
            let want: Vec<Vec<u8>> = ops.iter().map(|o| model(&mut m, o, false)).collect();
            prop_assert_eq!(got, want);
            check_committed!(s, m);
        }
    }

    #[test]
    fn list_matches_multiset_model(txs in txs()) {
        let l = TList::new();
        let mut m = BTreeMap::new();
        for (ops, inject) in txs {
            let attempts = Cell::new(0);
            let got: Vec<Vec<u8>> = atomically(|tx| {
                attempts.set(attempts.get() + 1);
                let mut out = vec![];
                for o in &ops {
                    out.push(apply!(l, tx, o, |tx, x| l.insert(tx, x).map(|()| 1)));
                }
                if inject && attempts.get() == 1 { return Err(tx.abort()); }
                Ok(out)
            });
            let want: Vec<Vec<u8>> = ops.iter().map(|o| model(&mut m, o, true)).collect();
            prop_assert_eq!(got, want);
            check_committed!(l, m);
        }
    }

    #[test]
    fn words_match_model(txs in prop::collection::vec((prop::collection::vec((0usize..32, prop::option::of(any::<u64>())), 1..12), any::<bool>()), 1..20)) {
        // Few stripes, so that many words share a stripe.
        let mem = TWords::with_stripes(32, 4);
        let base = mem.alloc(32);
        let mut m = [0u64; 32];
        for (ops, inject) in txs {
            let attempts = Cell::new(0);
            let got: Vec<u64> = atomically(|tx| {
                attempts.set(attempts.get() + 1);
                let mut out = vec![];
                for &(i, w) in &ops {
                    match w {
                        Some(v) => mem.write(tx, base.offset(i), v)?,
                        None => out.push(mem.read(tx, base.offset(i))?),
                    }
                }
                if inject && attempts.get() == 1 { return Err(tx.abort()); }
                Ok(out)
            });
            let mut want = vec![];
            for &(i, w) in &ops {
                match w { Some(v) => m[i] = v, None => want.push(m[i]) }
            }
            prop_assert_eq!(got, want);
            for (i, v) in m.iter().enumerate() {
                prop_assert_eq!(mem.load(WordAddr(base.0 + i)), *v);
            }
        }
    }
}

#[test]
fn list_set_concurrent_inserts_and_removes_lose_nothing() {
    let s = TListSet::new();
    thread::scope(|sc| {
        for t in 0..2u32 {
            let s = &s;
            sc.spawn(move || {
                for i in 0..300u32 {
                    let x = i * 2 + t;
                    atomically(|tx| s.insert(tx, x).map(|_| ()));
                    if i % 3 == 0 {
                        assert!(atomically(|tx| s.remove(tx, &x)));
                    }
                }
            });
        }
    });
    let v = s.load_vec();
    assert!(v.windows(2).all(|w| w[0] < w[1]));
    let want: Vec<u32> = (0..600).filter(|x| (x / 2) % 3 != 0).collect();
    assert_eq!(v, want);
    assert_eq!(atomically(|tx| s.len(tx)), want.len());
}

#[test]
fn words_bank_transfers_conserve_money() {
    let mem = TWords::with_stripes(64, 6);
    let acct = mem.alloc(16);
    atomically(|tx| {
        for i in 0..16 {
            mem.write(tx, acct.offset(i), 100)?;
        }
        Ok(())
    });
    thread::scope(|sc| {
        for t in 0..2u64 {
            let mem = &mem;
            sc.spawn(move || {
                let mut x = 99 + t;
                for _ in 0..2000 {
                    x = x
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    let (a, b) = ((x >> 33) as usize % 16, (x >> 50) as usize % 16);
                    atomically(|tx| {
                        let va = mem.read(tx, acct.offset(a))?;
                        if va > 0 && a != b {
                            let vb = mem.read(tx, acct.offset(b))?;
                            mem.write(tx, acct.offset(a), va - 1)?;
                            mem.write(tx, acct.offset(b), vb + 1)?;
                        }
                        Ok(())
                    });
                    let total: u64 =
                        atomically(|tx| (0..16).map(|i| mem.read(tx, acct.offset(i))).sum());
                    assert_eq!(total, 1600);
                }
            });
        }
    });
}

/// An element ordered by its key only, with a tag that tells which of two
/// equal elements a list stores.
#[derive(Clone, Debug)]
struct Entry {
    key: u32,
    tag: u32,
}

fn entry(key: u32, tag: u32) -> Entry {
    Entry { key, tag }
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Order> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    fn cmp(&self, other: &Self) -> Order {
        self.key.cmp(&other.key)
    }
}

fn tags(v: Vec<Entry>) -> Vec<(u32, u32)> {
    v.into_iter().map(|e| (e.key, e.tag)).collect()
}

#[test]
fn get_returns_the_stored_element() {
    let s = TListSet::new();
    atomically(|tx| {
        s.insert(tx, entry(1, 10))?;
        s.insert(tx, entry(2, 20))
    });
    // An insert of an element equal to a present one keeps the stored one.
    assert!(!atomically(|tx| s.insert(tx, entry(1, 11))));
    assert_eq!(
        atomically(|tx| s.get(tx, &entry(1, 0))).map(|e| e.tag),
        Some(10)
    );
    assert_eq!(s.load(&entry(2, 0)).map(|e| e.tag), Some(20));
    assert_eq!(atomically(|tx| s.get(tx, &entry(3, 0))), None);
    assert_eq!(s.load(&entry(3, 0)), None);

    // In a list, equal elements keep the order of insertion reversed: the
    // one inserted last comes first, and `get` returns it.
    let l = TList::new();
    atomically(|tx| l.insert(tx, entry(1, 10)));
    atomically(|tx| l.insert(tx, entry(1, 12)));
    assert_eq!(
        atomically(|tx| l.get(tx, &entry(1, 0))).map(|e| e.tag),
        Some(12)
    );
    assert_eq!(tags(l.load_vec()), [(1, 12), (1, 10)]);
}

#[test]
fn reinserting_a_removed_element_stores_the_new_one() {
    let s = TListSet::new();
    atomically(|tx| s.insert(tx, entry(1, 10)));
    // A committed element, removed and inserted again.
    let (inserted, seen) = atomically(|tx| {
        assert!(s.remove(tx, &entry(1, 0))?);
        assert!(!s.contains(tx, &entry(1, 0))?);
        let inserted = s.insert(tx, entry(1, 11))?;
        Ok((inserted, s.get(tx, &entry(1, 0))?.map(|e| e.tag)))
    });
    assert!(inserted);
    assert_eq!(seen, Some(11));
    assert_eq!(tags(s.load_vec()), [(1, 11)]);
    // The transaction's own insert, removed and inserted again.
    let seen = atomically(|tx| {
        assert!(s.insert(tx, entry(5, 50))?);
        assert!(s.remove(tx, &entry(5, 0))?);
        assert!(s.insert(tx, entry(5, 51))?);
        assert!(!s.insert(tx, entry(5, 52))?);
        Ok(tags(s.to_vec(tx)?))
    });
    assert_eq!(seen, [(1, 11), (5, 51)]);
    assert_eq!(tags(s.load_vec()), [(1, 11), (5, 51)]);
    assert_eq!(s.load_len(), 2);
    assert_eq!(atomically(|tx| s.len(tx)), 2);

    // A list: the removal takes the first equal element, the insert puts
    // the new one first.
    let l = TList::new();
    atomically(|tx| {
        l.insert(tx, entry(1, 10))?;
        l.insert(tx, entry(1, 12))
    });
    let seen = atomically(|tx| {
        assert!(l.remove(tx, &entry(1, 0))?);
        l.insert(tx, entry(1, 13))?;
        Ok((l.get(tx, &entry(1, 0))?.map(|e| e.tag), tags(l.to_vec(tx)?)))
    });
    assert_eq!(seen, (Some(13), vec![(1, 13), (1, 10)]));
    assert_eq!(tags(l.load_vec()), [(1, 13), (1, 10)]);
    assert_eq!(l.load_len(), 2);
}

#[test]
fn first_last_and_ranges_of_an_empty_and_a_changing_list() {
    let s: TListSet<u32> = TListSet::new();
    assert_eq!(atomically(|tx| s.first(tx)), None);
    assert_eq!(atomically(|tx| s.last(tx)), None);
    assert_eq!(atomically(|tx| s.range(tx, ..)), Vec::<u32>::new());
    assert_eq!(s.load_first(), None);
    assert_eq!(s.load_last(), None);
    let got = atomically(|tx| {
        for x in [5, 3, 9, 7] {
            s.insert(tx, x)?;
        }
        s.remove(tx, &9)?;
        Ok((
            s.first(tx)?,
            s.last(tx)?,
            s.range(tx, 4..=7)?,
            s.range(
                tx,
                (std::ops::Bound::Excluded(3), std::ops::Bound::Excluded(7)),
            )?,
        ))
    });
    assert_eq!(got, (Some(3), Some(7), vec![5, 7], vec![5]));
    assert_eq!(s.load_range(..6), vec![3, 5]);
    assert_eq!(s.load_last(), Some(7));
    // The last element's removal by this transaction moves `last` back.
    assert_eq!(
        atomically(|tx| {
            s.remove(tx, &7)?;
            s.last(tx)
        }),
        Some(5)
    );
}

/// Sets its flag when dropped: a checker that panics still stops the
/// threads it checks (or the scope would wait for them forever).
struct StopOnDrop<'a>(&'a AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

const MODES: [Opacity; 3] = [Opacity::Tl2, Opacity::Revalidate, Opacity::None];

/// A small xorshift generator (deterministic per seed).
fn next(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

/// Two threads move elements of a set (remove one, insert another: the
/// size never changes) while a third reads it whole, in ranges, and at its
/// ends. Every committed read, and in the opaque modes every attempt, sees
/// a sorted set of the right size whose parts agree.
#[test]
fn set_moves_keep_every_read_consistent() {
    const N: usize = 12;
    const SPACE: u64 = 40;
    let rounds = if cfg!(debug_assertions) { 600 } else { 4000 };
    for mode in MODES {
        let opts = TxOptions::new().opacity(mode);
        let s: TListSet<u64> = TListSet::new();
        opts.run(|tx| {
            for x in 0..N as u64 {
                s.insert(tx, x * 3)?;
            }
            Ok(())
        });
        let stop = AtomicBool::new(false);
        let bad_attempts = AtomicU64::new(0);
        thread::scope(|sc| {
            for t in 0..2u64 {
                let (s, stop) = (&s, &stop);
                sc.spawn(move || {
                    let mut r = 0x2545_F491_4F6C_DD1D + t;
                    while !stop.load(Ordering::Relaxed) {
                        let (a, b) = (next(&mut r) % SPACE, next(&mut r) % SPACE);
                        opts.run(|tx| {
                            if s.contains(tx, &a)? && !s.contains(tx, &b)? {
                                let removed = s.remove(tx, &a)?;
                                let inserted = s.insert(tx, b)?;
                                // Without opacity an attempt may see the set
                                // change between these reads; it then fails
                                // validation and never commits.
                                if mode != Opacity::None {
                                    assert!(removed && inserted);
                                }
                            }
                            Ok(())
                        });
                    }
                });
            }
            let _stop = StopOnDrop(&stop);
            let mut r = 7u64;
            for _ in 0..rounds {
                let (lo, hi) = (next(&mut r) % SPACE, next(&mut r) % SPACE);
                let (lo, hi) = (lo.min(hi), lo.max(hi));
                let seen = opts.run(|tx| {
                    let all = s.to_vec(tx)?;
                    let part = s.range(tx, lo..hi)?;
                    let ends = (s.first(tx)?, s.last(tx)?);
                    let len = s.len(tx)?;
                    let view = (all, part, ends, len);
                    if mode != Opacity::None && !consistent(&view, N, lo, hi) {
                        bad_attempts.fetch_add(1, Ordering::Relaxed);
                    }
                    Ok(view)
                });
                assert!(
                    consistent(&seen, N, lo, hi),
                    "{mode:?}: a committed read saw {seen:?}"
                );
            }
        });
        assert_eq!(
            bad_attempts.load(Ordering::Relaxed),
            0,
            "{mode:?}: an attempt saw an inconsistent set"
        );
        let end = s.load_vec();
        assert_eq!(end.len(), N);
        assert!(end.windows(2).all(|w| w[0] < w[1]));
    }
}

type SetView = (Vec<u64>, Vec<u64>, (Option<u64>, Option<u64>), usize);

fn consistent((all, part, (first, last), len): &SetView, n: usize, lo: u64, hi: u64) -> bool {
    all.len() == n
        && *len == n
        && all.windows(2).all(|w| w[0] < w[1])
        && *part
            == all
                .iter()
                .copied()
                .filter(|x| (lo..hi).contains(x))
                .collect::<Vec<_>>()
        && *first == all.first().copied()
        && *last == all.last().copied()
}

/// Threads insert and remove equal elements of a list (a few values, many
/// copies each), counting each value's copies in an array in the same
/// transactions; readers check that the list and the counts agree, and
/// some inserts are abandoned (their placeholders unlinked again).
#[test]
fn list_of_equal_elements_agrees_with_its_counts() {
    const VALUES: usize = 5;
    let rounds = if cfg!(debug_assertions) { 1500 } else { 10_000 };
    for mode in MODES {
        let opts = TxOptions::new().opacity(mode);
        let l: TList<u64> = TList::new();
        let counts: TArray<u64> = TArray::new(VALUES, 3);
        opts.run(|tx| {
            for x in 0..VALUES as u64 {
                for _ in 0..3 {
                    l.insert(tx, x)?;
                }
            }
            Ok(())
        });
        thread::scope(|sc| {
            for t in 0..2u64 {
                let (l, counts) = (&l, &counts);
                sc.spawn(move || {
                    let mut r = 0x9E37_79B9_7F4A_7C15 ^ t;
                    for _ in 0..rounds {
                        let x = next(&mut r) % VALUES as u64;
                        let i = x as usize;
                        // More removals than inserts keep the list short
                        // (a scan's read set grows with it).
                        match next(&mut r) % 8 {
                            0..=2 => opts.run(|tx| {
                                l.insert(tx, x)?;
                                let c = counts.get(tx, i)?;
                                counts.set(tx, i, c + 1)
                            }),
                            3..=6 => opts.run(|tx| {
                                if l.remove(tx, &x)? {
                                    let c = counts.get(tx, i)?;
                                    counts.set(tx, i, c - 1)?;
                                }
                                Ok(())
                            }),
                            _ => {
                                let r: Result<(), ()> = opts.try_run(|tx| {
                                    l.insert(tx, x)?;
                                    Err(TxError::User(()))
                                });
                                assert!(r.is_err());
                            }
                        }
                    }
                });
            }
            let mut r = 11u64;
            for _ in 0..rounds / 4 {
                let x = next(&mut r) % VALUES as u64;
                let (all, copies, len, want) = opts.run(|tx| {
                    let want: Vec<u64> = (0..VALUES)
                        .map(|i| counts.get(tx, i))
                        .collect::<Result<_, _>>()?;
                    Ok((l.to_vec(tx)?, l.range(tx, x..=x)?.len(), l.len(tx)?, want))
                });
                let mut hist = vec![0u64; VALUES];
                for &v in &all {
                    hist[v as usize] += 1;
                }
                assert_eq!(hist, want, "{mode:?}: the list and its counts disagree");
                assert_eq!(
                    copies as u64, want[x as usize],
                    "{mode:?}: a range of equal elements"
                );
                assert_eq!(len, all.len(), "{mode:?}: len and iteration disagree");
                assert!(all.windows(2).all(|w| w[0] <= w[1]));
            }
        });
        let total: u64 = (0..VALUES).map(|i| counts.load(i)).sum();
        assert_eq!(l.load_len() as u64, total);
        assert_eq!(l.load_vec().len() as u64, total);
    }
}

/// One thread switches a list between {10} and {20, 30} (never a net-zero
/// commit); another reads it whole in read-only transactions. A committed
/// read sees one of the two, never a mixture (the reproduction).
#[test]
fn alternating_commits_are_seen_whole() {
    let rounds = if cfg!(debug_assertions) { 3000 } else { 20_000 };
    for mode in MODES {
        let opts = TxOptions::new().opacity(mode);
        let set: TListSet<u64> = TListSet::new();
        let list: TList<u64> = TList::new();
        opts.run(|tx| {
            set.insert(tx, 10)?;
            list.insert(tx, 10)
        });
        let stop = AtomicBool::new(false);
        thread::scope(|sc| {
            sc.spawn(|| {
                let mut small = true;
                while !stop.load(Ordering::Relaxed) {
                    opts.run(|tx| {
                        if small {
                            set.remove(tx, &10)?;
                            list.remove(tx, &10)?;
                            set.insert(tx, 20)?;
                            list.insert(tx, 20)?;
                            set.insert(tx, 30)?;
                            list.insert(tx, 30)
                        } else {
                            set.insert(tx, 10)?;
                            list.insert(tx, 10)?;
                            set.remove(tx, &20)?;
                            list.remove(tx, &20)?;
                            set.remove(tx, &30)?;
                            list.remove(tx, &30).map(drop)
                        }
                    });
                    small = !small;
                }
            });
            let _stop = StopOnDrop(&stop);
            for _ in 0..rounds {
                let (a, b) = opts.run(|tx| Ok((set.to_vec(tx)?, list.to_vec(tx)?)));
                assert!(
                    a == [10] || a == [20, 30],
                    "{mode:?}: the set read as {a:?}"
                );
                assert_eq!(a, b, "{mode:?}: the set and the list disagree");
            }
        });
    }
}

/// Inserts abandoned by aborting transactions, own inserts removed again,
/// and committed inserts and removals of equal elements, from two threads:
/// afterwards the list holds exactly what the committed transactions left.
#[test]
fn placeholders_and_removals_leave_the_list_exact() {
    const ROUNDS: u64 = if cfg!(miri) { 40 } else { 300 };
    let s: TListSet<u64> = TListSet::new();
    let l: TList<u64> = TList::new();
    thread::scope(|sc| {
        for t in 0..2u64 {
            let (s, l) = (&s, &l);
            sc.spawn(move || {
                for i in 0..ROUNDS {
                    let x = i % 17;
                    let r: Result<(), ()> = try_atomically(|tx| {
                        s.insert(tx, 100 + x)?;
                        l.insert(tx, 100 + x)?;
                        Err(TxError::User(()))
                    });
                    assert!(r.is_err());
                    atomically(|tx| {
                        l.insert(tx, x)?;
                        l.insert(tx, 50 + t)?;
                        assert!(l.remove(tx, &(50 + t))?);
                        s.insert(tx, x * 2 + t).map(drop)
                    });
                    if i % 2 == 1 {
                        atomically(|tx| {
                            assert!(l.remove(tx, &x)?);
                            s.remove(tx, &(x * 2 + t)).map(drop)
                        });
                    }
                }
            });
        }
    });
    // Each thread inserted every x in 0..17 into the list ROUNDS/17 times
    // (rounded) and removed half of them; the set holds what was inserted
    // last and not removed.
    let mut want_list = vec![];
    let mut want_set = vec![];
    for t in 0..2u64 {
        for x in 0..17u64 {
            let ins = (0..ROUNDS).filter(|i| i % 17 == x).count();
            let rem = (0..ROUNDS).filter(|i| i % 17 == x && i % 2 == 1).count();
            want_list.extend(std::iter::repeat_n(x, ins - rem));
            let last = (0..ROUNDS).rev().find(|i| i % 17 == x).unwrap();
            if last % 2 == 0 {
                want_set.push(x * 2 + t);
            }
        }
    }
    want_list.sort();
    want_set.sort();
    assert_eq!(l.load_vec(), want_list);
    assert_eq!(l.load_len(), want_list.len());
    assert_eq!(s.load_vec(), want_set);
    assert_eq!(s.load_len(), want_set.len());
}
