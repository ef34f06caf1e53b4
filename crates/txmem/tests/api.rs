//! Unit tests of every public operation of the core runtime.

use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

use txmem::{
    atomically, stats, try_atomically, AbortCause, ContentionPolicy, Opacity, TArray, TBox,
    TCounter, TxError, TxOptions,
};

mod common;

#[test]
fn tbox_get_set_modify_replace() {
    let b = TBox::new(10u32);
    assert_eq!(atomically(|tx| b.get(tx)), 10);
    atomically(|tx| b.set(tx, 11));
    assert_eq!(b.load(), 11);
    atomically(|tx| b.modify(tx, |v| v * 2));
    assert_eq!(b.load(), 22);
    let old = atomically(|tx| b.replace(tx, 5));
    assert_eq!((old, b.load()), (22, 5));
}

#[test]
fn tbox_reads_its_own_writes() {
    let b = TBox::new(1i64);
    let seen = atomically(|tx| {
        b.set(tx, 2)?;
        let first = b.get(tx)?;
        b.set(tx, first + 1)?;
        b.get(tx)
    });
    assert_eq!(seen, 3);
    assert_eq!(b.load(), 3);
}

#[test]
fn tbox_heap_values_by_reference() {
    let b = TBox::new(vec![1u8, 2, 3]);
    let len = atomically(|tx| b.read_with(tx, |v| v.len()));
    assert_eq!(len, 3);
    atomically(|tx| {
        b.modify(tx, |mut v| {
            v.push(4);
            v
        })
    });
    assert_eq!(
        atomically(|tx| b.read_with(tx, |v| v.iter().map(|&x| x as u32).sum::<u32>())),
        10
    );
    let mut b = b;
    b.get_mut().push(5);
    assert_eq!(b.into_inner(), vec![1, 2, 3, 4, 5]);
}

#[test]
fn tbox_inline_padded_struct() {
    // 8 bytes with padding: stored inline, never read as uninitialised integers.
    #[derive(Clone, Copy, Debug, PartialEq)]
    struct Padded {
        a: u8,
        b: u32,
    }
    let b = TBox::new(Padded { a: 1, b: 2 });
    atomically(|tx| {
        b.modify(tx, |p| Padded {
            a: p.a + 1,
            b: p.b * 10,
        })
    });
    assert_eq!(b.load(), Padded { a: 2, b: 20 });
}

#[test]
fn tarray_per_element_ops() {
    let a = TArray::from_fn(5, |i| i as u64 * 10);
    assert_eq!(a.len(), 5);
    assert!(!a.is_empty());
    atomically(|tx| {
        a.modify(tx, 0, |v| v + 1)?;
        let x = a.get(tx, 4)?;
        a.set(tx, 3, x)?;
        assert_eq!(a.read_with(tx, 3, |v| *v)?, 40);
        Ok(())
    });
    assert_eq!(
        (0..5).map(|i| a.load(i)).collect::<Vec<_>>(),
        vec![1, 10, 20, 40, 40]
    );
    let mut a = a;
    *a.get_mut(1) = 99;
    assert_eq!(a.load(1), 99);
    assert_eq!(format!("{a:?}"), "[1, 99, 20, 40, 40]");
}

#[test]
#[should_panic(expected = "out of bounds")]
fn tarray_index_out_of_bounds_panics() {
    let a = TArray::new(2, 0u8);
    atomically(|tx| a.get(tx, 2));
}

#[test]
fn tcounter_add_get_and_own_delta() {
    let c = TCounter::new(5);
    atomically(|tx| {
        c.increment(tx)?;
        c.increment(tx)?;
        c.decrement(tx)
    });
    assert_eq!(c.load(), 6);
    let seen = atomically(|tx| {
        c.add(tx, 10)?;
        c.get(tx)
    });
    assert_eq!(seen, 16);
    assert_eq!(c.load(), 16);
}

#[test]
fn try_atomically_user_error_discards_writes() {
    let b = TBox::new(1u8);
    let r: Result<(), String> = try_atomically(|tx| {
        b.set(tx, 2)?;
        Err(TxError::User("nope".to_string()))
    });
    assert_eq!(r, Err("nope".to_string()));
    assert_eq!(b.load(), 1);
    let ok: Result<u8, String> = try_atomically(|tx| Ok(b.get(tx)?));
    assert_eq!(ok, Ok(1));
}

#[test]
fn explicit_abort_retries_until_commit() {
    let b = TBox::new(0u32);
    let attempts = Cell::new(0);
    let before = site_aborts("api.rs", AbortCause::Explicit);
    let ((), own_aborts) = common::atomically_counting_own_aborts(|tx| {
        attempts.set(attempts.get() + 1);
        b.set(tx, attempts.get())?;
        if attempts.get() < 3 {
            return Err(tx.abort());
        }
        Ok(())
    });
    // (Another test's irrevocable transaction may add a retry of its own.)
    assert_eq!(own_aborts, 2);
    assert!(attempts.get() >= 3);
    assert_eq!(
        b.load(),
        attempts.get(),
        "only the last attempt's write is installed"
    );
    assert!(site_aborts("api.rs", AbortCause::Explicit) >= before + 2);
}

/// A thread that calls several sites in turn (more than its cache of recent
/// sites holds) counts each commit at its own site's row.
// (Not under Miri: it gives a call site's `Location` a new address at each
// call, which statistics key their rows by.)
#[test]
#[cfg_attr(miri, ignore)]
fn sites_called_in_turn_each_count_their_own_commits() {
    type Site = fn(&TBox<u64>) -> u32;
    let sites: [Site; 6] = [
        |b| atomically(|tx| b.modify(tx, |v| v + 1).map(|()| line!())),
        |b| atomically(|tx| b.modify(tx, |v| v + 1).map(|()| line!())),
        |b| atomically(|tx| b.modify(tx, |v| v + 1).map(|()| line!())),
        |b| atomically(|tx| b.modify(tx, |v| v + 1).map(|()| line!())),
        |b| atomically(|tx| b.modify(tx, |v| v + 1).map(|()| line!())),
        |b| atomically(|tx| b.modify(tx, |v| v + 1).map(|()| line!())),
    ];
    let b = TBox::new(0u64);
    let mut lines = Vec::new();
    for round in 0..100 {
        for site in &sites {
            let line = site(&b);
            if round == 0 {
                lines.push(line);
            }
        }
    }
    assert_eq!(b.load(), 600);
    let profile = stats::site_profile();
    for line in lines {
        let tag = format!("api.rs:{line}:");
        let commits: u64 = profile
            .sites
            .iter()
            .filter(|s| s.location.contains(&tag))
            .map(|s| s.commits)
            .sum();
        assert_eq!(commits, 100, "commits counted at line {line}");
    }
}

fn site_aborts(file: &str, cause: AbortCause) -> u64 {
    stats::site_profile()
        .sites
        .iter()
        .filter(|s| s.location.contains(file))
        .map(|s| s.aborts_by(cause))
        .sum()
}

#[test]
fn or_else_takes_second_branch_and_undoes_first() {
    let a = TBox::new(0u32);
    let b = TBox::new(1u32);
    let log = TBox::new(Vec::<&'static str>::new());
    let got = atomically(|tx| {
        tx.or_else(
            |tx| {
                log.modify(tx, |mut l| {
                    l.push("first");
                    l
                })?;
                let n = a.get(tx)?;
                tx.check(n > 0)?;
                Ok("a")
            },
            |tx| {
                log.modify(tx, |mut l| {
                    l.push("second");
                    l
                })?;
                let n = b.get(tx)?;
                b.set(tx, n - 1)?;
                Ok("b")
            },
        )
    });
    assert_eq!(got, "b");
    assert_eq!(
        log.load(),
        vec!["second"],
        "the first branch's write was rolled back"
    );
    assert_eq!(b.load(), 0);
}

#[test]
fn or_else_first_branch_success_keeps_effects() {
    let a = TBox::new(3u32);
    let got = atomically(|tx| {
        tx.or_else(
            |tx| {
                a.modify(tx, |n| n - 1)?;
                Ok(1)
            },
            |_| Ok(2),
        )
    });
    assert_eq!((got, a.load()), (1, 2));
}

#[test]
fn nested_or_else_restores_counter_deltas() {
    let c = TCounter::new(0);
    let zero = TBox::new(0u8);
    atomically(|tx| {
        c.add(tx, 1)?;
        tx.or_else(
            |tx| {
                c.add(tx, 100)?;
                let z = zero.get(tx)?;
                tx.check(z > 0)?;
                Ok(())
            },
            |tx| c.add(tx, 10),
        )
    });
    assert_eq!(c.load(), 11);
}

#[test]
fn commit_handlers_run_once_after_commit() {
    let b = TBox::new(0u32);
    let commits = AtomicUsize::new(0);
    let aborts = AtomicUsize::new(0);
    let attempts = Cell::new(0);
    atomically(|tx| {
        attempts.set(attempts.get() + 1);
        tx.on_commit(|| {
            commits.fetch_add(1, Ordering::SeqCst);
        });
        tx.on_abort(|| {
            aborts.fetch_add(1, Ordering::SeqCst);
        });
        b.set(tx, 1)?;
        if attempts.get() == 1 {
            return Err(tx.abort());
        }
        Ok(())
    });
    assert_eq!(commits.load(Ordering::SeqCst), 1);
    assert_eq!(aborts.load(Ordering::SeqCst), 1);
}

#[test]
fn handlers_may_run_transactions() {
    let b = TBox::new(0u32);
    let c = TBox::new(0u32);
    atomically(|tx| {
        b.set(tx, 1)?;
        tx.on_commit(|| atomically(|tx| c.set(tx, b.load() + 1)));
        Ok(())
    });
    assert_eq!(c.load(), 2);
}

#[test]
#[should_panic(expected = "do not nest")]
fn nested_atomically_panics_clearly() {
    let b = TBox::new(0u32);
    atomically(|tx| {
        b.set(tx, 1)?;
        atomically(|tx2| b.get(tx2));
        Ok(())
    });
}

#[test]
fn irrevocable_options_and_upgrade() {
    let b = TBox::new(0u32);
    let irrevocable = TxOptions::new().irrevocable(true).run(|tx| {
        b.set(tx, 1)?;
        Ok(tx.is_irrevocable())
    });
    assert!(irrevocable);
    let upgraded = atomically(|tx| {
        let v = b.get(tx)?;
        tx.become_irrevocable()?;
        b.set(tx, v + 1)?;
        Ok(tx.is_irrevocable())
    });
    assert!(upgraded);
    assert_eq!(b.load(), 2);
    let s = stats::snapshot();
    assert!(s.irrevocable_commits >= 2);
}

#[test]
fn every_opacity_mode_and_policy_runs() {
    let a = TArray::new(8, 1u64);
    for mode in [Opacity::Tl2, Opacity::Revalidate, Opacity::None] {
        for policy in ContentionPolicy::all() {
            let opts = TxOptions::new().opacity(mode).contention(policy);
            assert_eq!(opts.opacity_mode(), mode);
            assert_eq!(opts.contention_policy(), &policy);
            let sum = opts.run(|tx| {
                a.modify(tx, 0, |v| v + 1)?;
                (0..8).map(|i| a.get(tx, i)).sum::<Result<u64, _>>()
            });
            assert!(sum >= 9);
            assert_eq!(opts.run(|tx| Ok(tx.opacity())), mode);
        }
    }
}

#[test]
fn opacity_parses_and_rejects_unknown() {
    assert_eq!("none".parse::<Opacity>(), Ok(Opacity::None));
    assert_eq!("tl2".parse::<Opacity>(), Ok(Opacity::Tl2));
    assert_eq!("revalidate".parse::<Opacity>(), Ok(Opacity::Revalidate));
    let err = "eventual".parse::<Opacity>().unwrap_err();
    assert!(err.contains("eventual") && err.contains("tl2"));
}

#[test]
fn a_small_transaction_keeps_one_item_per_subobject() {
    // Below the index cutoff an item is found by a filter and a scan.
    // Keys 0 and 65 (and 1 and 64) share a filter bit, so a filter that
    // answers "absent" for either would create a second item for it.
    let a = TArray::new(200, 0u32);
    let b = TBox::new(0u32);
    let keys = [0usize, 65, 1, 64, 130, 7];
    let seen = atomically(|tx| {
        for round in 1..=3 {
            for &k in &keys {
                a.modify(tx, k, |v| v + round)?;
            }
            b.modify(tx, |v| v + round)?;
        }
        assert_eq!(tx.len(), keys.len() + 1, "one item per element written");
        keys.iter()
            .map(|&k| a.get(tx, k))
            .collect::<Result<Vec<_>, _>>()
    });
    assert_eq!(seen, vec![6; keys.len()], "each read sees its own writes");
    assert_eq!(b.load(), 6);
    for k in 0..200 {
        let want = if keys.contains(&k) { 6 } else { 0 };
        assert_eq!(a.load(k), want, "element {k}");
    }
}

#[test]
fn large_transactions_use_the_item_index() {
    // Past the cutoff the item lookup switches to a hash index; results must
    // not change, including repeated access to early items.
    let a = TArray::new(1000, 0u32);
    atomically(|tx| {
        for round in 0..3 {
            for i in (0..1000).step_by(7) {
                a.modify(tx, i, |v| v + round + 1)?;
            }
        }
        assert_eq!(tx.len(), (0..1000).step_by(7).count());
        Ok(())
    });
    for i in 0..1000 {
        assert_eq!(a.load(i), if i % 7 == 0 { 6 } else { 0 });
    }
}

#[test]
fn stats_count_commits_and_sizes() {
    let b = TArray::new(4, 0u8);
    let before = stats::snapshot();
    for _ in 0..10 {
        atomically(|tx| {
            let v = b.get(tx, 0)?;
            b.set(tx, 1, v)
        });
    }
    let d = stats::snapshot() - before;
    assert!(d.commits >= 10);
    assert!(d.read_items >= 10 && d.write_items >= 10);
    let text = format!("{d}");
    assert!(text.contains("aborts by cause"));
    let profile = stats::site_profile();
    let row = profile
        .sites
        .iter()
        .find(|s| s.location.contains("api.rs"))
        .expect("a row for this file");
    assert!(row.commits > 0);
    assert!(format!("{profile}").contains("validation"));
}

#[test]
#[should_panic(expected = "read nothing")]
fn retry_without_reads_panics_instead_of_hanging() {
    atomically(|tx| -> txmem::TxResult<()> { Err(tx.retry()) });
}

#[test]
fn default_options_can_be_changed() {
    // Runs in its own process state: restore the defaults afterwards.
    let b = TBox::new(0u8);
    let previous = TxOptions::current_defaults();
    txmem::set_default_options(TxOptions::new().opacity(Opacity::None));
    let mode = atomically(|tx| {
        b.set(tx, 1)?;
        Ok(tx.opacity())
    });
    txmem::set_default_options(previous);
    assert_eq!(mode, Opacity::None);
}
