//! Every application in the registry, every variant it has, on its `dev`
//! input at 1, 2 and 4 threads: each run verifies its own result. Asking
//! for a variant an application lacks is an error, not a run.

use txmem_stamp::{build, measure, names, Input, Variant};

#[test]
fn every_application_verifies_every_variant() {
    for &name in names() {
        let app = build(name, Input::Dev).expect("a listed name builds");
        assert_eq!(app.name(), name);
        for variant in Variant::ALL {
            if !app.variants().contains(&variant) {
                assert!(
                    measure(app.as_ref(), variant, 1).is_err(),
                    "{name} ran {variant}, which it does not list"
                );
                continue;
            }
            // `seq` ignores the thread count; once is enough.
            let counts: &[usize] = if variant == Variant::Seq {
                &[1]
            } else {
                &[1, 2, 4]
            };
            for &threads in counts {
                measure(app.as_ref(), variant, threads)
                    .unwrap_or_else(|e| panic!("{name} {variant} x{threads}: {e}"));
            }
        }
    }
}
