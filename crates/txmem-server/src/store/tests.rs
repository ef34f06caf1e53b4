//! The store against a sequential model, under a memory limit, and under
//! concurrent updates.

use std::collections::HashMap;
use std::time::Duration;

use proptest::prelude::*;

use super::*;

fn big() -> Store {
    Store::new(StoreConfig {
        memory_limit: 1 << 30,
        ..StoreConfig::default()
    })
}

fn get(s: &Store, key: &[u8]) -> Option<Arc<Item>> {
    let item = s.read(|tx| tx.get(key));
    if let Some(i) = &item {
        i.mark_fetched(s.clock().now());
    }
    item
}

#[derive(Clone, Debug)]
enum Op {
    Write(Mode, u8, u8, bool),
    Incr(u8, bool, u8),
    Delete(u8),
    Get(u8),
}

fn op() -> impl Strategy<Value = Op> {
    let mode = prop_oneof![
        Just(Mode::Set),
        Just(Mode::Add),
        Just(Mode::Replace),
        Just(Mode::Append),
        Just(Mode::Prepend)
    ];
    prop_oneof![
        (mode, 0u8..6, any::<u8>(), any::<bool>()).prop_map(|(m, k, v, c)| Op::Write(m, k, v, c)),
        (0u8..6, any::<bool>(), any::<u8>()).prop_map(|(k, i, d)| Op::Incr(k, i, d)),
        (0u8..6).prop_map(Op::Delete),
        (0u8..6).prop_map(Op::Get),
    ]
}

proptest! {
    /// Every command agrees with a plain map (no expiry, no eviction).
    #[test]
    fn commands_match_a_sequential_model(ops in proptest::collection::vec(op(), 1..60)) {
        let s = big();
        let mut model: HashMap<Vec<u8>, (Vec<u8>, u64)> = HashMap::new();
        for op in ops {
            match op {
                Op::Write(mode, k, v, with_cas) => {
                    let key = [b'k', k];
                    let data = if v % 3 == 0 { v.to_string().into_bytes() } else { vec![v; (v % 5) as usize] };
                    let present = model.get(&key[..]).map(|(_, c)| *c);
                    let cas = if with_cas { present.unwrap_or(7) ^ u64::from(v % 2) } else { 0 };
                    let mut w = Write::new(mode, &key, Bytes::from(data.clone()));
                    w.cas = (cas != 0).then_some(cas);
                    let out = s.write(&w);
                    let expect_ok = match (present, mode) {
                        (Some(c), _) if cas != 0 && c != cas => false,
                        (None, _) if cas != 0 => false,
                        (Some(_), Mode::Add) | (None, Mode::Replace | Mode::Append | Mode::Prepend) => false,
                        _ => true,
                    };
                    match out {
                        Written::Stored(item) => {
                            prop_assert!(expect_ok, "{mode:?} stored against the model");
                            let old = model.get(&key[..]).map(|(d, _)| d.clone()).unwrap_or_default();
                            let new = match mode {
                                Mode::Append => [old, data].concat(),
                                Mode::Prepend => [data, old].concat(),
                                _ => data,
                            };
                            prop_assert_eq!(&item.data[..], &new[..]);
                            model.insert(key.to_vec(), (new, item.cas));
                        }
                        Written::Exists => prop_assert!(!expect_ok && present.is_some() && cas != 0),
                        Written::NotFound => prop_assert!(!expect_ok && present.is_none() && cas != 0),
                        Written::NotStored => prop_assert!(!expect_ok),
                        Written::TooLarge => prop_assert!(false, "no value here nears the limit"),
                    }
                }
                Op::Incr(k, incr, d) => {
                    let key = [b'k', k];
                    let out = s.arith(&Arith { key: &key, incr, delta: u64::from(d), cas: 0, vivify: None, touch: None });
                    match (model.get(&key[..]).cloned(), out) {
                        (None, Counted::NotFound) => {}
                        (Some((data, _)), Counted::NonNumeric) => prop_assert!(parse_counter(&data).is_none()),
                        (Some((data, _)), Counted::Value { value, item, .. }) => {
                            let v = parse_counter(&data).expect("numeric");
                            let expect = if incr { v.wrapping_add(u64::from(d)) } else { v.saturating_sub(u64::from(d)) };
                            prop_assert_eq!(value, expect);
                            model.insert(key.to_vec(), (value.to_string().into_bytes(), item.cas));
                        }
                        (m, o) => prop_assert!(false, "model {m:?}, store {o:?}"),
                    }
                }
                Op::Delete(k) => {
                    let key = [b'k', k];
                    let expect = if model.remove(&key[..]).is_some() { Deleted::Deleted } else { Deleted::NotFound };
                    prop_assert_eq!(s.delete(&key, 0), expect);
                }
                Op::Get(k) => {
                    let key = [b'k', k];
                    let got = get(&s, &key).map(|i| (i.data.to_vec(), i.cas));
                    prop_assert_eq!(got, model.get(&key[..]).cloned());
                }
            }
        }
        let stats = s.stats();
        prop_assert_eq!(stats.curr_items as usize, model.len());
        let expect_bytes: usize = model.iter().map(|(k, (d, _))| k.len() + d.len() + ITEM_OVERHEAD).sum::<usize>();
        // Entries: one per key inserted while absent, minus none (nothing popped).
        prop_assert!(stats.bytes as usize >= expect_bytes);
        prop_assert_eq!(stats.bytes as usize - expect_bytes, stats.lru_entries as usize * (2 + ENTRY_OVERHEAD));
    }
}

#[test]
fn expiry_and_flush_hide_items() {
    let s = big();
    let mut w = Write::new(Mode::Set, b"short", Bytes::from_static(b"x"));
    w.exptime = 2;
    s.write(&w);
    s.write(&Write::new(Mode::Set, b"forever", Bytes::from_static(b"y")));
    assert!(get(&s, b"short").is_some());
    s.clock().advance(Duration::from_secs(3));
    assert!(get(&s, b"short").is_none());
    assert!(get(&s, b"forever").is_some());
    // `add` succeeds over an expired item.
    assert!(matches!(
        s.write(&Write::new(Mode::Add, b"short", Bytes::from_static(b"z"))),
        Written::Stored(_)
    ));
    // The crawler reclaims what expired.
    let mut w = Write::new(Mode::Set, b"gone", Bytes::from_static(b"x"));
    w.exptime = 1;
    s.write(&w);
    s.clock().advance(Duration::from_secs(2));
    assert_eq!(s.maintain(100), 1);
    // That one, and the expired item the `add` replaced.
    assert_eq!(s.stats().reclaimed, 2);
    assert_eq!(s.stats().curr_items, 2);
    // A delayed flush hides items stored before its time, once it comes.
    s.flush_all(5);
    assert!(get(&s, b"forever").is_some());
    s.clock().advance(Duration::from_secs(6));
    assert!(get(&s, b"forever").is_none());
    s.write(&Write::new(Mode::Set, b"after", Bytes::from_static(b"y")));
    assert!(get(&s, b"after").is_some());
    // An immediate flush, and a write in the same instant after it.
    s.flush_all(0);
    assert!(get(&s, b"after").is_none());
    s.write(&Write::new(Mode::Set, b"after", Bytes::from_static(b"y")));
    assert!(get(&s, b"after").is_some());
}

#[test]
fn a_flood_of_writes_stays_under_the_memory_limit() {
    let limit = 256 << 10;
    let s = Store::new(StoreConfig {
        memory_limit: limit,
        shards: 2,
        ..StoreConfig::default()
    });
    let value = Bytes::from(vec![7u8; 1000]);
    std::thread::scope(|sc| {
        for t in 0..2 {
            let (s, value) = (&s, value.clone());
            sc.spawn(move || {
                for i in 0..5000 {
                    let key = format!("t{t}-{i}");
                    s.admit(key.len(), value.len()).expect("room is made");
                    s.write(&Write::new(Mode::Set, key.as_bytes(), value.clone()));
                    // Half the keys are read once: they get a second chance.
                    if i % 2 == 0 {
                        get(s, key.as_bytes());
                    }
                    // Two writers may each admit the last free room.
                    assert!(
                        s.used() <= limit + 2 * (value.len() + 200),
                        "{} over {limit}",
                        s.used()
                    );
                }
            });
        }
    });
    let st = s.stats();
    assert!(st.evictions > 8000, "{st:?}");
    assert_eq!(st.curr_items + st.evictions, 10_000, "{st:?}");
    assert!(s.used() <= limit + 2 * (value.len() + 200));
    // Bytes are exactly the items and entries left.
    let mut live = 0;
    for t in 0..2 {
        for i in 0..5000 {
            let key = format!("t{t}-{i}");
            if let Some(item) = get(&s, key.as_bytes()) {
                live += item.cost(key.len());
            }
        }
    }
    assert!(
        st.bytes as usize >= live
            && (st.bytes as usize - live) < (st.lru_entries as usize) * 64 + 1,
        "{st:?} live {live}"
    );
}

#[test]
fn oversized_items_are_refused() {
    let s = Store::new(StoreConfig {
        memory_limit: 1 << 20,
        max_item_size: 1000,
        ..StoreConfig::default()
    });
    assert_eq!(s.admit(3, 1001), Err(Refused::TooLarge));
    assert_eq!(s.admit(3, 1000), Ok(()));
    let small = Store::new(StoreConfig {
        memory_limit: 500,
        max_item_size: 1000,
        ..StoreConfig::default()
    });
    assert_eq!(small.admit(3, 1000), Err(Refused::OutOfMemory));
}

#[test]
fn concurrent_increments_and_cas_lose_no_update() {
    let s = big();
    s.write(&Write::new(Mode::Set, b"n", Bytes::from_static(b"0")));
    s.write(&Write::new(Mode::Set, b"c", Bytes::from_static(b"0")));
    std::thread::scope(|sc| {
        for _ in 0..4 {
            sc.spawn(|| {
                for _ in 0..500 {
                    let a = Arith {
                        key: b"n",
                        incr: true,
                        delta: 1,
                        cas: 0,
                        vivify: None,
                        touch: None,
                    };
                    assert!(matches!(s.arith(&a), Counted::Value { .. }));
                    // A client's read-modify-write with cas, retried on EXISTS.
                    loop {
                        let item = get(&s, b"c").expect("present");
                        let v = parse_counter(&item.data).unwrap();
                        let mut w =
                            Write::new(Mode::Set, b"c", v.wrapping_add(1).to_string().into());
                        w.cas = Some(item.cas);
                        match s.write(&w) {
                            Written::Stored(_) => break,
                            Written::Exists => continue,
                            other => panic!("{other:?}"),
                        }
                    }
                }
            });
        }
    });
    assert_eq!(&get(&s, b"n").unwrap().data[..], b"2000");
    assert_eq!(&get(&s, b"c").unwrap().data[..], b"2000");
}
