//! The store's operations in arbitrary order against a plain map model:
//! what a read returns is what the model holds, whatever writes, deletes,
//! arithmetic and evictions came before (eviction may only drop items).
#![no_main]

use std::collections::HashMap;

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use txmem_server::store::{Arith, Counted, Deleted, Mode, Store, StoreConfig, Write, Written};

fuzz_target!(|data: &[u8]| {
    let store = Store::new(StoreConfig {
        memory_limit: 64 << 10,
        max_item_size: 2048,
        shards: 2,
        ..StoreConfig::default()
    });
    // The model: key -> value; an evicted key may be missing from the
    // store, never different.
    let mut model: HashMap<u8, Vec<u8>> = HashMap::new();
    for op in data.chunks(4) {
        let [kind, k, a, b] = *op else { return };
        let key = [b'k', k % 16];
        match kind % 6 {
            0 | 1 => {
                let mode = [Mode::Set, Mode::Add, Mode::Replace, Mode::Append, Mode::Prepend]
                    [usize::from(a) % 5];
                let value = vec![b; usize::from(a) * 8];
                if store.admit(key.len(), value.len()).is_err() {
                    continue;
                }
                let present = store.read(|tx| tx.get(&key)).map(|i| i.data.to_vec());
                let written = store.write(&Write::new(mode, &key, Bytes::from(value.clone())));
                match written {
                    Written::Stored(item) => {
                        let expect = match (mode, present) {
                            (Mode::Append, Some(p)) => [p, value].concat(),
                            (Mode::Prepend, Some(p)) => [value, p].concat(),
                            _ => value,
                        };
                        assert_eq!(&item.data[..], &expect[..]);
                        model.insert(key[1], expect);
                    }
                    Written::NotStored | Written::TooLarge => {}
                    Written::Exists | Written::NotFound => panic!("no CAS was given"),
                }
            }
            2 => {
                let d = store.delete(&key, 0);
                assert_ne!(d, Deleted::Exists);
                model.remove(&key[1]);
            }
            3 => {
                let counted = store.arith(&Arith {
                    key: &key,
                    incr: a % 2 == 0,
                    delta: u64::from(b),
                    cas: 0,
                    vivify: None,
                    touch: None,
                });
                if let Counted::Value { item, .. } = counted {
                    model.insert(key[1], item.data.to_vec());
                }
            }
            _ => {
                let got = store.read(|tx| tx.get(&key)).map(|i| i.data.to_vec());
                if let Some(v) = &got {
                    assert_eq!(Some(v), model.get(&key[1]), "key {key:?}");
                }
            }
        }
        // Arithmetic may lengthen a value by a few digits without asking
        // for room first.
        assert!(store.used() <= (64 << 10) + 1024, "{} bytes used", store.used());
    }
});
