//! Records the versions of the peer crates this build links, read from the
//! workspace's `Cargo.lock`, so that reports name the versions actually
//! measured instead of numbers typed by hand that drift from the lock file.
//!
//! Writes `$OUT_DIR/peer_versions.rs`: a `PEER_VERSIONS` table of
//! `(crate, version)` pairs, included by `src/harness/versions.rs`.
//!
//! Also records the commit the binary is built from (`TXMEM_BUILD_COMMIT`,
//! empty outside a git checkout), so that a report names the code that
//! ran, not whatever checkout the command happens to run in.

use std::path::{Path, PathBuf};

/// The peers whose versions the reports name.
const PEERS: [&str; 5] = [
    "crossbeam-skiplist",
    "dashmap",
    "fast-stm",
    "parking_lot",
    "stm",
];

/// One `[[package]]` entry of a lock file.
struct Package {
    name: String,
    version: String,
    /// `name` or `name version [(source)]` when the lock holds several
    /// versions of that crate.
    dependencies: Vec<String>,
}

fn main() {
    let manifest_dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("set by cargo"));
    let me = std::env::var("CARGO_PKG_NAME").expect("set by cargo");
    println!("cargo:rerun-if-changed=build.rs");

    let versions: Vec<(&str, String)> = match find_lock(&manifest_dir) {
        Some(lock) => {
            println!("cargo:rerun-if-changed={}", lock.display());
            let text = std::fs::read_to_string(&lock).unwrap_or_default();
            let packages = parse(&text);
            PEERS
                .iter()
                .map(|&peer| {
                    let v = resolve(&packages, &me, peer).unwrap_or_else(|| {
                        println!("cargo:warning={peer} not found in {}", lock.display());
                        "unknown".to_string()
                    });
                    (peer, v)
                })
                .collect()
        }
        None => {
            println!(
                "cargo:warning=no Cargo.lock above {}",
                manifest_dir.display()
            );
            PEERS.iter().map(|&p| (p, "unknown".to_string())).collect()
        }
    };

    let mut code = String::from(
        "/// `(crate, version)` of each peer crate, from `Cargo.lock` at build time.\n\
         pub const PEER_VERSIONS: &[(&str, &str)] = &[\n",
    );
    for (name, version) in &versions {
        code.push_str(&format!("    ({name:?}, {version:?}),\n"));
    }
    code.push_str("];\n");
    std::fs::write(out.join("peer_versions.rs"), code).expect("cannot write peer_versions.rs");

    record_commit(&manifest_dir);
}

/// Sets `TXMEM_BUILD_COMMIT` to the short hash of the checkout's HEAD, and
/// asks cargo to run this script again when HEAD or the branch it names
/// moves.
fn record_commit(dir: &Path) {
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .current_dir(dir)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let commit = git(&["rev-parse", "--short", "HEAD"]).unwrap_or_default();
    println!("cargo:rustc-env=TXMEM_BUILD_COMMIT={commit}");
    if commit.is_empty() {
        return;
    }
    let mut watched = vec!["HEAD".to_string(), "packed-refs".to_string()];
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watched.push(branch);
    }
    for name in watched {
        // (A path that does not exist would rerun the script at every
        // build: a packed branch has no file of its own.)
        let path = git(&["rev-parse", "--path-format=absolute", "--git-path", &name]);
        if let Some(path) = path.filter(|p| Path::new(p).exists()) {
            println!("cargo:rerun-if-changed={path}");
        }
    }
}

/// The nearest `Cargo.lock` in `dir` or a directory above it (the
/// workspace's lock sits at its root).
fn find_lock(dir: &Path) -> Option<PathBuf> {
    dir.ancestors()
        .map(|d| d.join("Cargo.lock"))
        .find(|p| p.is_file())
}

/// The `[[package]]` entries of a lock file (only the fields used here).
fn parse(text: &str) -> Vec<Package> {
    let mut packages = Vec::new();
    for block in text.split("[[package]]").skip(1) {
        let field = |key: &str| {
            block.lines().find_map(|l| {
                let v = l.strip_prefix(key)?.trim_start().strip_prefix('=')?;
                Some(v.trim().trim_matches('"').to_string())
            })
        };
        let dependencies = match block.find("dependencies = [") {
            Some(at) => block[at..]
                .lines()
                .skip(1)
                .take_while(|l| !l.starts_with(']'))
                .map(|l| l.trim().trim_end_matches(',').trim_matches('"').to_string())
                .collect(),
            None => Vec::new(),
        };
        if let (Some(name), Some(version)) = (field("name"), field("version")) {
            packages.push(Package {
                name,
                version,
                dependencies,
            });
        }
    }
    packages
}

/// The version of `peer` that package `me` depends on: the one its
/// dependency entry names, or the only one in the lock.
fn resolve(packages: &[Package], me: &str, peer: &str) -> Option<String> {
    let named = packages
        .iter()
        .find(|p| p.name == me)
        .and_then(|p| {
            p.dependencies
                .iter()
                .find(|d| d.split(' ').next() == Some(peer))
        })
        .and_then(|d| d.split(' ').nth(1).map(str::to_string));
    named.or_else(|| {
        let mut all = packages.iter().filter(|p| p.name == peer);
        match (all.next(), all.next()) {
            (Some(only), None) => Some(only.version.clone()),
            _ => None,
        }
    })
}
