//! TListSet, TList and TWords: model property tests with injected aborts,
//! concurrent stress with invariants.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::thread;

use proptest::prelude::*;
use txmem::{atomically, TList, TListSet, TWords, WordAddr};

#[derive(Clone, Debug)]
enum Op {
    Insert(u8),
    Remove(u8),
    Contains(u8),
    Len,
    ToVec,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0u8..16).prop_map(Op::Insert),
        3 => (0u8..16).prop_map(Op::Remove),
        2 => (0u8..16).prop_map(Op::Contains),
        1 => Just(Op::Len),
        1 => Just(Op::ToVec),
    ]
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
        Op::Len => vec![m.values().sum::<usize>() as u8],
        Op::ToVec => m
            .iter()
            .flat_map(|(k, c)| std::iter::repeat_n(*k, *c))
            .collect(),
    }
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
                    out.push(match *o {
                        Op::Insert(x) => vec![s.insert(tx, x)? as u8],
                        Op::Remove(x) => vec![s.remove(tx, &x)? as u8],
                        Op::Contains(x) => vec![s.contains(tx, &x)? as u8],
                        Op::Len => vec![s.len(tx)? as u8],
                        Op::ToVec => s.to_vec(tx)?,
                    });
                }
                if inject && attempts.get() == 1 { return Err(tx.abort()); }
                Ok(out)
            });
            let want: Vec<Vec<u8>> = ops.iter().map(|o| model(&mut m, o, false)).collect();
            prop_assert_eq!(got, want);
            prop_assert_eq!(s.snapshot(), model(&mut m.clone(), &Op::ToVec, false));
            prop_assert_eq!(s.load_len(), m.values().sum::<usize>());
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
                    out.push(match *o {
                        Op::Insert(x) => { l.insert(tx, x)?; vec![1] }
                        Op::Remove(x) => vec![l.remove(tx, &x)? as u8],
                        Op::Contains(x) => vec![l.contains(tx, &x)? as u8],
                        Op::Len => vec![l.len(tx)? as u8],
                        Op::ToVec => l.to_vec(tx)?,
                    });
                }
                if inject && attempts.get() == 1 { return Err(tx.abort()); }
                Ok(out)
            });
            let want: Vec<Vec<u8>> = ops.iter().map(|o| model(&mut m, o, true)).collect();
            prop_assert_eq!(got, want);
            prop_assert_eq!(l.snapshot(), model(&mut m.clone(), &Op::ToVec, true));
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
    let v = s.snapshot();
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
