//! GCC's libitm as a peer: the C harness `libitm_harness.c` (embedded in
//! the binary) is compiled at run time with `gcc -O2 -fgnu-tm -pthread`
//! into a cache directory, then run as a child process per repeat. Doing it
//! at run time rather than in `build.rs` keeps the build independent of
//! gcc: where gcc or libitm is missing, the rows are skipped with the
//! compiler's reason. On a machine without gcc, `TXMEM_LIBITM_HARNESS`
//! names a harness built elsewhere (e.g. `gcc -O2 -fgnu-tm -pthread
//! -static`), which is then run as is.
//!
//! The same harness binary also runs on txmem's libitm replacement (the
//! `txmem-itm` rows): `libtxmem_itm.so` preloaded in GCC's libitm's place.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::harness::spec::{ExternalParams, ExternalRun};

const SOURCE: &str = include_str!("libitm_harness.c");

/// A compiled harness.
pub struct Libitm {
    exe: PathBuf,
    gcc: String,
    method: String,
}

impl Libitm {
    /// Compiles the harness (or reuses a cached build of the same source by
    /// the same compiler). `Err` says in one line why libitm cannot run.
    pub fn prepare() -> Result<Libitm, String> {
        if let Some(exe) = std::env::var_os(PREBUILT) {
            let exe = PathBuf::from(exe);
            if !exe.is_file() {
                return Err(format!("{PREBUILT}={} is not a file", exe.display()));
            }
            return Ok(Libitm {
                exe,
                gcc: format!("prebuilt harness (${PREBUILT})"),
                method: method(),
            });
        }
        let gcc = std::env::var("CC_LIBITM").unwrap_or_else(|_| "gcc".into());
        let version = Command::new(&gcc).arg("--version").output().map_err(|e| {
            format!("no C compiler `{gcc}` ({e}); set CC_LIBITM to a gcc with libitm")
        })?;
        let version = String::from_utf8_lossy(&version.stdout)
            .lines()
            .next()
            .unwrap_or("gcc")
            .to_string();
        let mut h = DefaultHasher::new();
        SOURCE.hash(&mut h);
        version.hash(&mut h);
        let dir = std::env::temp_dir().join(format!("txmem-cli-libitm-{:016x}", h.finish()));
        let exe = dir.join("harness");
        if !exe.exists() {
            std::fs::create_dir_all(&dir)
                .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
            // Build under a private name and rename, so concurrent runs
            // never execute a half-written file.
            let src = dir.join(format!("harness-{}.c", std::process::id()));
            let tmp = dir.join(format!("harness-{}.tmp", std::process::id()));
            std::fs::write(&src, SOURCE)
                .map_err(|e| format!("cannot write {}: {e}", src.display()))?;
            let out = Command::new(&gcc)
                .args(["-O2", "-fgnu-tm", "-pthread", "-o"])
                .arg(&tmp)
                .arg(&src)
                .output()
                .map_err(|e| format!("cannot run {gcc}: {e}"))?;
            std::fs::remove_file(&src).ok();
            if !out.status.success() {
                let err = String::from_utf8_lossy(&out.stderr);
                let first = err
                    .lines()
                    .find(|l| l.contains("error"))
                    .unwrap_or("compilation failed");
                return Err(format!("`{gcc} -fgnu-tm` failed: {}", first.trim()));
            }
            std::fs::rename(&tmp, &exe).map_err(|e| format!("cannot install harness: {e}"))?;
        }
        Ok(Libitm {
            exe,
            gcc: version,
            method: method(),
        })
    }

    /// The compiler's version line.
    pub fn compiler(&self) -> &str {
        &self.gcc
    }

    /// The TM method GCC's libitm runs (`ITM_DEFAULT_METHOD`, or `ml_wt`).
    pub fn method(&self) -> &str {
        &self.method
    }

    /// Runs one repeat on `runtime`: `args` name the workload (see the
    /// harness usage).
    pub fn run(
        &self,
        runtime: &Runtime,
        args: &[String],
        p: &ExternalParams,
    ) -> Result<ExternalRun, String> {
        // The harness's last argument breaks its check (the test hook).
        let sabotage = p.sabotage;
        let ms = |d: Duration| d.as_millis().max(1).to_string();
        let mut cmd = Command::new(&self.exe);
        // (txmem-itm ignores it: it reads TXMEM_ITM_METHOD.)
        cmd.env("ITM_DEFAULT_METHOD", &self.method);
        if let Runtime::TxmemItm(lib) = runtime {
            cmd.env("LD_PRELOAD", lib);
        }
        let out = cmd
            .args(args)
            .arg(p.threads.to_string())
            .arg(ms(p.duration))
            .arg(if p.warmup.is_zero() {
                "0".into()
            } else {
                ms(p.warmup)
            })
            .arg(p.seed.to_string())
            .arg(if sabotage { "1" } else { "0" })
            .output()
            .map_err(|e| format!("cannot run libitm harness: {e}"))?;
        let stderr = String::from_utf8_lossy(&out.stderr);
        // ld.so only warns when it cannot preload, and the program would
        // then measure GCC's libitm under txmem-itm's name.
        if let Some(line) = stderr.lines().find(|l| l.contains("cannot be preloaded")) {
            return Err(format!("txmem-itm not loaded: {}", line.trim()));
        }
        let stdout = String::from_utf8_lossy(&out.stdout);
        let line = stdout.lines().next().unwrap_or("").trim();
        if let Some(msg) = line.strip_prefix("fail ") {
            return Err(msg.to_string());
        }
        let field = |name: &str| -> Option<u64> {
            line.split_whitespace()
                .find_map(|kv| kv.strip_prefix(name)?.strip_prefix('='))
                .and_then(|v| v.parse().ok())
        };
        match (line.starts_with("ok "), field("ops"), field("elapsed_ns")) {
            (true, Some(ops), Some(ns)) => Ok(ExternalRun {
                ops,
                attempts: field("attempts"),
                elapsed: Duration::from_nanos(ns),
            }),
            _ => Err(format!(
                "libitm harness failed ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            )),
        }
    }
}

/// Which TM runtime the harness's calls reach.
#[derive(Clone, Debug)]
pub enum Runtime {
    /// GCC's libitm, which the harness is linked against.
    Gcc,
    /// txmem's replacement, preloaded from this path.
    TxmemItm(PathBuf),
}

/// The environment variable naming `libtxmem_itm.so`.
const ITM_LIB: &str = "TXMEM_ITM_LIB";

/// Finds `libtxmem_itm.so`: `TXMEM_ITM_LIB`, else beside the running binary
/// (cargo builds it into `target/<profile>/deps/` with the command, and
/// into `target/<profile>/` with `cargo build -p txmem-itm`). `Err` says
/// where it looked.
pub fn txmem_itm_library() -> Result<PathBuf, String> {
    if let Some(lib) = std::env::var_os(ITM_LIB) {
        let lib = PathBuf::from(lib);
        return if lib.is_file() {
            Ok(lib)
        } else {
            Err(format!("{ITM_LIB}={} is not a file", lib.display()))
        };
    }
    let exe = std::env::current_exe().map_err(|e| format!("cannot find the txmem binary: {e}"))?;
    let dir = exe.parent().unwrap_or(Path::new("."));
    let candidates = [
        dir.join("libtxmem_itm.so"),
        dir.join("deps/libtxmem_itm.so"),
    ];
    candidates
        .iter()
        .find(|p| p.is_file())
        .cloned()
        .ok_or_else(|| {
            format!(
                "libtxmem_itm.so not found in {} (build it with `cargo build --release -p txmem-itm`, or set {ITM_LIB})",
                dir.display()
            )
        })
}

/// The method txmem-itm will use (`TXMEM_ITM_METHOD`, passed on to it).
pub fn txmem_itm_method() -> String {
    std::env::var("TXMEM_ITM_METHOD").unwrap_or_else(|_| "norec (default)".into())
}

/// The environment variable naming a prebuilt harness.
const PREBUILT: &str = "TXMEM_LIBITM_HARNESS";

/// The method GCC's libitm runs when the user names none.
///
/// Left to itself, libitm runs a program with one registered thread
/// serial-irrevocable, without instrumentation, and picks `ml_wt` (or its
/// HTM method where RTM works) once a second thread exists: a one-thread row
/// would measure no STM at all. `ml_wt` is its default STM, so every thread
/// count runs that.
const DEFAULT_METHOD: &str = "ml_wt";

/// The TM method GCC's libitm runs: `ITM_DEFAULT_METHOD` if the user set
/// it, else [`DEFAULT_METHOD`]; the harness is always run with it set.
fn method() -> String {
    std::env::var("ITM_DEFAULT_METHOD").unwrap_or_else(|_| DEFAULT_METHOD.into())
}
