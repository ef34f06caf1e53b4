//! Property tests: random programs of datatype operations, run as
//! transactions (some of which abort explicitly or fail with a user error),
//! must leave exactly the state a sequential model predicts.

use proptest::prelude::*;
use txmem::{try_atomically, TArray, TBox, TCounter, TxError};

#[derive(Clone, Debug)]
enum Op {
    BoxSet(i64),
    BoxAdd(i64),
    ArraySet(usize, i64),
    ArrayAdd(usize, i64),
    CounterAdd(i64),
    ReadAll,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        any::<i32>().prop_map(|v| Op::BoxSet(v as i64)),
        (-100i64..100).prop_map(Op::BoxAdd),
        (0usize..8, any::<i32>()).prop_map(|(i, v)| Op::ArraySet(i, v as i64)),
        (0usize..8, -100i64..100).prop_map(|(i, v)| Op::ArrayAdd(i, v)),
        (-100i64..100).prop_map(Op::CounterAdd),
        Just(Op::ReadAll),
    ]
}

#[derive(Clone, Debug)]
struct Txn {
    ops: Vec<Op>,
    /// 0 = commit, 1 = explicit abort on the first attempt, 2 = user error.
    fate: u8,
}

fn txn() -> impl Strategy<Value = Txn> {
    (prop::collection::vec(op(), 0..12), 0u8..3).prop_map(|(ops, fate)| Txn { ops, fate })
}

#[derive(Clone, Debug, PartialEq)]
struct Model {
    b: i64,
    a: [i64; 8],
    c: i64,
}

fn apply(m: &mut Model, op: &Op) {
    match *op {
        Op::BoxSet(v) => m.b = v,
        Op::BoxAdd(d) => m.b = m.b.wrapping_add(d),
        Op::ArraySet(i, v) => m.a[i] = v,
        Op::ArrayAdd(i, d) => m.a[i] = m.a[i].wrapping_add(d),
        Op::CounterAdd(d) => m.c = m.c.wrapping_add(d),
        Op::ReadAll => {}
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(if cfg!(debug_assertions) { 64 } else { 256 }))]
    #[test]
    fn transactions_match_the_sequential_model(txns in prop::collection::vec(txn(), 1..20)) {
        let b = TBox::new(0i64);
        let a = TArray::new(8, 0i64);
        let c = TCounter::new(0);
        let mut model = Model { b: 0, a: [0; 8], c: 0 };
        for t in &txns {
            let mut attempt = 0;
            // Reads inside the transaction must match the model as updated
            // by this transaction's own earlier operations (read-my-writes).
            let result: Result<(), ()> = try_atomically(|tx| {
                attempt += 1;
                let mut local = model.clone();
                for op in &t.ops {
                    match *op {
                        Op::BoxSet(v) => b.set(tx, v)?,
                        Op::BoxAdd(d) => b.modify(tx, |x| x.wrapping_add(d))?,
                        Op::ArraySet(i, v) => a.set(tx, i, v)?,
                        Op::ArrayAdd(i, d) => a.modify(tx, i, |x| x.wrapping_add(d))?,
                        Op::CounterAdd(d) => c.add(tx, d)?,
                        Op::ReadAll => {
                            assert_eq!(b.get(tx)?, local.b);
                            for i in 0..8 {
                                assert_eq!(a.get(tx, i)?, local.a[i]);
                            }
                            assert_eq!(c.get(tx)?, local.c);
                        }
                    }
                    apply(&mut local, op);
                }
                match t.fate {
                    1 if attempt == 1 => Err(TxError::Abort(tx.abort())),
                    2 => Err(TxError::User(())),
                    _ => Ok(()),
                }
            });
            if result.is_ok() {
                for op in &t.ops {
                    apply(&mut model, op);
                }
            }
            let actual = Model { b: b.load(), a: std::array::from_fn(|i| a.load(i)), c: c.load() };
            prop_assert_eq!(&actual, &model);
        }
    }
}
