//! intruder: every variant verifies on the dev input, verification catches
//! wrong results, the generator is deterministic, and the word variant's
//! transactions track many more items than the typed variant's.

use std::sync::Mutex;

use txmem_stamp::intruder::{verify, Intruder, Params, Stream};
use txmem_stamp::{measure, App, Input, Measured, Variant};

/// txmem's statistics are process-wide: tests that run transactions take
/// this lock so that the item counts of one are not mixed with another's.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

#[test]
fn the_registry_builds_intruder() {
    assert!(txmem_stamp::names().contains(&"intruder"));
    let app = txmem_stamp::build("intruder", Input::Dev).expect("registered");
    assert_eq!(app.name(), "intruder");
    assert!(app.describe().starts_with("-a10 -l256 -n1024 -s1"));
}

#[test]
fn verification_catches_wrong_results() {
    let _g = serial();
    let app = Intruder::new(Params::of(Input::Dev));
    let (good, _) = app.decode(Variant::Seq, 1).expect("seq runs");
    verify(app.stream(), &good).expect("the sequential outcome is right");
    assert!(!app.stream().attacks.is_empty());

    let mut missed = good.clone();
    let f = app.stream().attacks[0];
    missed.detected.retain(|&d| d != f);
    assert!(verify(app.stream(), &missed).is_err(), "a missed attack");

    let mut false_alarm = good.clone();
    let clean = (0..app.stream().flows() as u32)
        .find(|f| app.stream().attacks.binary_search(f).is_err())
        .expect("a clean flow");
    false_alarm.detected.push(clean);
    assert!(verify(app.stream(), &false_alarm).is_err(), "a false alarm");

    let mut corrupted = good.clone();
    corrupted.reassembled[5].1 ^= 1;
    assert!(verify(app.stream(), &corrupted).is_err(), "wrong bytes");

    let mut twice = good.clone();
    let again = twice.reassembled[0];
    twice.reassembled.push(again);
    assert!(verify(app.stream(), &twice).is_err(), "reassembled twice");

    let mut lost = good.clone();
    lost.reassembled.pop();
    assert!(
        verify(app.stream(), &lost).is_err(),
        "a flow never completed"
    );

    let mut left = good;
    left.leftover = 1;
    assert!(
        verify(app.stream(), &left).is_err(),
        "a flow left in the map"
    );
}

#[test]
fn the_generator_is_deterministic() {
    let gen = |seed| Stream::generate(200, 128, 10, seed);
    let a = gen(1);
    assert_eq!(a, gen(1));
    assert_ne!(a.packets, gen(2).packets);
    assert!(a.packets.len() > 200, "flows are fragmented");
    // Each flow's fragments are all there, once each.
    let mut seen = vec![Vec::new(); a.flows()];
    for p in &a.packets {
        seen[p.flow as usize].push(p.index);
    }
    for (f, idx) in seen.iter_mut().enumerate() {
        idx.sort_unstable();
        let n = a.packets.iter().find(|p| p.flow as usize == f).unwrap();
        assert_eq!(*idx, (0..n.fragments).collect::<Vec<_>>());
    }
}

fn items(app: &Intruder, variant: Variant, threads: usize) -> Measured {
    measure(app, variant, threads).unwrap_or_else(|e| panic!("{variant}: {e}"))
}

/// The STO thesis' point: a word STM tracks every word of a list walk, a
/// typed transaction a few abstract items. The dev input shows a ratio
/// well above the bound asserted here.
#[test]
fn words_track_many_more_items_than_typed() {
    let _g = serial();
    let app = Intruder::new(Params::of(Input::Dev));
    let typed = items(&app, Variant::Typed, 1);
    let words = items(&app, Variant::Words, 1);
    let ratio = words.items_per_commit() / typed.items_per_commit();
    assert!(
        ratio > 3.0,
        "words {:.1} vs typed {:.1} items per commit",
        words.items_per_commit(),
        typed.items_per_commit()
    );
}

/// Prints times and item counts per variant on the dev input (the paper
/// input with `INTRUDER_PAPER=1`):
/// `cargo test -p txmem-stamp --release --test intruder -- --ignored --nocapture`.
#[test]
#[ignore]
fn report() {
    let _g = serial();
    // One input per process: the maximum item count is process-wide.
    let input = if std::env::var_os("INTRUDER_PAPER").is_some() {
        Input::Paper
    } else {
        Input::Dev
    };
    {
        let app = Intruder::new(Params::of(input));
        println!("{} {}", input.name(), app.describe());
        for variant in [Variant::Seq, Variant::Typed, Variant::Words] {
            for threads in [1, 2] {
                let before_max = txmem::stats::snapshot().max_items;
                let m = items(&app, variant, threads);
                println!(
                    "  {variant:6} x{threads}: {:9.3} ms  commits {:8}  aborts {:6}  items/commit {:7.2}  max items {}",
                    m.elapsed.as_secs_f64() * 1e3,
                    m.stats.commits,
                    m.stats.total_aborts(),
                    m.items_per_commit(),
                    if m.stats.max_items > before_max {
                        m.stats.max_items.to_string()
                    } else {
                        format!("<= {before_max}")
                    }
                );
            }
        }
    }
}
