//! genome's tracking-set sizes: the words variant's transactions track
//! more items than the typed variant's. Alone in its test binary, because
//! txmem's statistics are process-wide.

use txmem_stamp::{build, measure, Input, Variant};

#[test]
fn words_transactions_track_more_items_than_typed_ones() {
    let app = build("genome", Input::Dev).expect("genome is registered");
    // One thread: no aborts, so the counts are the algorithm's alone.
    let typed = measure(&*app, Variant::Typed, 1).unwrap();
    let words = measure(&*app, Variant::Words, 1).unwrap();
    let (t, w) = (typed.items_per_commit(), words.items_per_commit());
    eprintln!(
        "genome dev x1: items/commit typed {t:.2}, words {w:.2} ({:.2}x); max items typed {}, both {}",
        w / t,
        typed.stats.max_items,
        words.stats.max_items
    );
    assert_eq!(typed.stats.commits, words.stats.commits);
    assert!(w >= 1.5 * t, "words {w:.2} items/commit, typed {t:.2}");
}
