//! Runs the C programs of `tests/c/` (compiled with the system's gcc) plain and under
//! `libtxmem_elide_preload.so` in each of its modes, and checks that they print the same
//! thing, exit 0 and do not hang; then checks the lock profile of `profile.c` against the
//! lock traffic it is known to make.
//!
//! The modes: the pass-through (`TXMEM_ELIDE_HTM=off`), the default (elision wherever RTM
//! is usable, the pass-through elsewhere), and each of those with `TXMEM_ELIDE_STATS=1`.
//!
//! The library is this crate's cdylib, which `cargo test` builds into `target/<profile>/deps/`
//! beside the test binary. If gcc is missing, every test says so and passes without running.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

const PROGRAMS: [&str; 6] = ["counter", "kinds", "condvar", "rwlock", "robust", "profile"];
/// Longer than any program needs by far: a program still running then has hung.
const HANG: Duration = Duration::from_secs(30);

fn library() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let lib = exe
        .parent()
        .expect("deps dir")
        .join("libtxmem_elide_preload.so");
    assert!(lib.exists(), "{} is missing", lib.display());
    lib
}

fn work_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("txmem-elide-preload-c");
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// Compiles every program once; `None` (after saying why) when gcc cannot.
fn binaries() -> Option<&'static Vec<PathBuf>> {
    static BINS: OnceLock<Option<Vec<PathBuf>>> = OnceLock::new();
    BINS.get_or_init(|| {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c");
        let mut out = Vec::new();
        for p in PROGRAMS {
            let bin = work_dir().join(p);
            let r = Command::new("gcc")
                .args(["-O2", "-g", "-pthread", "-o"])
                .arg(&bin)
                .arg(src.join(format!("{p}.c")))
                .output();
            match r {
                Ok(o) if o.status.success() => out.push(bin),
                Ok(o) => panic!(
                    "gcc failed on {p}.c: {}",
                    String::from_utf8_lossy(&o.stderr)
                ),
                Err(e) => {
                    eprintln!("skipped: gcc is not runnable ({e})");
                    return None;
                }
            }
        }
        Some(out)
    })
    .as_ref()
}

/// Runs `bin` with `env`, killing it (and failing) if it outlives [`HANG`].
fn run(bin: &Path, env: &[(&str, &str)], preload: bool) -> Output {
    let mut cmd = Command::new(bin);
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    cmd.env_remove("TXMEM_ELIDE_STATS")
        .env_remove("TXMEM_ELIDE_HTM");
    if preload {
        cmd.env("LD_PRELOAD", library());
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("spawn");
    let start = Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if start.elapsed() > HANG {
            let _ = child.kill();
            panic!("{} {env:?} hung", bin.display());
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    child.wait_with_output().expect("output")
}

const MODES: [&[(&str, &str)]; 4] = [
    &[("TXMEM_ELIDE_HTM", "off")],
    &[],
    &[("TXMEM_ELIDE_HTM", "off"), ("TXMEM_ELIDE_STATS", "1")],
    &[("TXMEM_ELIDE_STATS", "1")],
];

#[test]
fn programs_behave_alike_plain_and_preloaded() {
    let Some(bins) = binaries() else { return };
    for bin in bins {
        let plain = run(bin, &[], false);
        assert!(plain.status.success(), "{} plain: {plain:?}", bin.display());
        for env in MODES {
            let pre = run(bin, env, true);
            assert!(
                pre.status.success(),
                "{} under {env:?}: {}",
                bin.display(),
                String::from_utf8_lossy(&pre.stderr)
            );
            assert_eq!(pre.stdout, plain.stdout, "{} under {env:?}", bin.display());
            let profiled = env.iter().any(|(k, _)| *k == "TXMEM_ELIDE_STATS");
            let reports = String::from_utf8_lossy(&pre.stderr)
                .matches("lock profile")
                .count();
            assert_eq!(reports > 0, profiled, "{} under {env:?}", bin.display());
        }
    }
}

/// The rows of `report` whose site names `function`: (acquired, contended, failed, hold max
/// µs, hold p90 µs).
fn rows(report: &str, function: &str) -> Vec<(u64, u64, u64, f64, f64)> {
    report
        .lines()
        .filter(|l| l.contains(&format!("  {function} (")))
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let hold: Vec<f64> = f[4].split('/').map(|x| x.parse().unwrap()).collect();
            (
                f[0].parse().unwrap(),
                f[1].parse().unwrap(),
                f[2].parse().unwrap(),
                hold[3],
                hold[1],
            )
        })
        .collect()
}

#[test]
fn the_profile_counts_each_site_and_reports_once_per_exec() {
    let Some(bins) = binaries() else { return };
    let bin = bins.iter().find(|b| b.ends_with("profile")).unwrap();
    for htm in ["off", "on"] {
        let out = run(
            bin,
            &[("TXMEM_ELIDE_STATS", "1"), ("TXMEM_ELIDE_HTM", htm)],
            true,
        );
        assert!(out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        // The exec'd image and the original report; the forked child that exits does not.
        let reports: Vec<&str> = err.split("txmem-elide lock profile").skip(1).collect();
        assert_eq!(reports.len(), 2, "{err}");
        let (child, parent) = (reports[0], reports[1]);
        assert_eq!(
            rows(child, "cold_site").iter().map(|r| r.0).sum::<u64>(),
            1,
            "{err}"
        );
        let hot = rows(parent, "hot_site");
        let cold = rows(parent, "cold_site");
        assert_eq!(hot.len(), 1, "{err}");
        assert_eq!(hot[0].0, 3000, "{err}");
        assert_eq!(cold.iter().map(|r| r.0).sum::<u64>(), 1000, "{err}");
        // Ten hot sections sleep 200 us while holding the lock.
        assert!(hot[0].3 >= 150.0, "hold max {} us: {err}", hot[0].3);
        // A preemption may stretch a few cold sections on a loaded host, not a tenth of them.
        assert!(cold.iter().all(|r| r.4 < 150.0), "{err}");
        assert!(parent.contains("1 locks, 2 sites"), "{err}");
    }
}

#[test]
fn without_the_environment_variable_nothing_is_printed() {
    let Some(bins) = binaries() else { return };
    for bin in bins {
        let out = run(bin, &[], true);
        assert!(
            out.stderr.is_empty(),
            "{}: {}",
            bin.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
