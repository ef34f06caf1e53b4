//! bayes through the registry: it is listed and built, every variant
//! verifies on the dev input, and the word variant's transactions track
//! more items than the typed variant's. One test, since txmem's statistics
//! are process-wide.

use txmem_stamp::{build, measure, Input, Variant};

#[test]
fn bayes_is_registered_and_words_track_more_items() {
    assert!(txmem_stamp::names().contains(&"bayes"));
    let app = build("bayes", Input::Dev).expect("bayes is registered");
    assert_eq!(app.name(), "bayes");
    assert!(app
        .describe()
        .starts_with("-v12 -r512 -n4 -p40 -i2 -e4 -s1"));
    for variant in [Variant::Seq, Variant::Typed, Variant::Words] {
        for threads in [1, 2] {
            let m = measure(&*app, variant, threads)
                .unwrap_or_else(|e| panic!("{variant} x{threads}: {e}"));
            eprintln!(
                "bayes dev {variant} x{threads}: {:?}, {} commits, {} aborts, {:.1} items/commit",
                m.elapsed,
                m.stats.commits,
                m.stats.aborts.iter().sum::<u64>(),
                m.items_per_commit()
            );
        }
    }
    // One thread: no aborts, and the same tasks in the same order.
    let typed = measure(&*app, Variant::Typed, 1).unwrap();
    let words = measure(&*app, Variant::Words, 1).unwrap();
    assert_eq!(typed.stats.commits, words.stats.commits);
    assert!(words.items_per_commit() > typed.items_per_commit());
}
