//! Input files through the crate's entry points: a generated input saved
//! with `save_input` loads with `load` and runs; the applications STAMP
//! does not feed from files refuse one.

use std::path::PathBuf;

use txmem_stamp::{load, measure, names, save_input, Input, Variant, FILE_APPS};

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("txmem-stamp-files-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

#[test]
fn saved_dev_inputs_load_and_run() {
    for name in FILE_APPS {
        let path = tmp(name);
        let written = save_input(name, Input::Dev, &path).unwrap();
        assert!(written.iter().all(|f| f.exists()), "{written:?}");
        let app = load(name, &path).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(app.name(), name);
        assert!(
            app.describe().contains(&*path.to_string_lossy()),
            "{}",
            app.describe()
        );
        // kmeans finds the paper input's 160 clusters in a file: too slow
        // for a debug build here (its round trip is a unit test).
        if name == "kmeans" {
            continue;
        }
        for variant in [Variant::Seq, Variant::Typed, Variant::Words] {
            measure(app.as_ref(), variant, 2).unwrap_or_else(|e| panic!("{name} {variant}: {e}"));
        }
    }
}

#[test]
fn other_applications_take_no_file() {
    for &name in names() {
        if FILE_APPS.contains(&name) {
            continue;
        }
        let err = load(name, &tmp("any.txt")).err().expect("refused");
        assert!(
            err.starts_with(&format!("{name} has no input file")),
            "{err}"
        );
        assert!(err.contains("dev and paper"), "{err}");
        assert!(save_input(name, Input::Dev, &tmp("any.txt")).is_err());
    }
    let err = load("nope", &tmp("any.txt")).err().expect("refused");
    assert!(err.contains("unknown application `nope`"), "{err}");
}
