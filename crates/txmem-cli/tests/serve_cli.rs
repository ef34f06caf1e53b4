//! End-to-end tests of `txmem serve`: it prints the address it listens on,
//! serves a client, stops cleanly on SIGTERM with its serialization report,
//! and refuses bad flags with the usage line.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};

use common::{text, txmem};

#[test]
fn serves_a_client_and_stops_cleanly_on_sigterm() {
    let (mut child, addr, mut out) = start(&["-t", "2", "--stats-on-exit"]);

    let mut c = TcpStream::connect(&addr).unwrap();
    c.write_all(b"set k 0 0 2\r\nhi\r\nget k\r\nquit\r\n")
        .unwrap();
    let mut reply = String::new();
    c.read_to_string(&mut reply).unwrap();
    assert_eq!(reply, "STORED\r\nVALUE k 0 2\r\nhi\r\nEND\r\n");

    let kill = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let status = child.wait().unwrap();
    assert!(status.success(), "exit status {status}");
    let mut report = String::new();
    out.read_to_string(&mut report).unwrap();
    assert!(
        report.contains(
            "switched to irrevocable mid-flight 0, started irrevocable 0, serialized after aborts 0"
        ),
        "{report}"
    );
    assert!(report.contains("store/ops.rs"), "per-site rows: {report}");
}

/// Starts `txmem serve -p 0` with `args`; the child, its address, and the
/// rest of its standard output.
fn start(
    args: &[&str],
) -> (
    std::process::Child,
    String,
    BufReader<std::process::ChildStdout>,
) {
    let mut child = txmem()
        .args(["serve", "-p", "0"])
        .args(args)
        .stdout(Stdio::piped())
        .spawn()
        .expect("start txmem serve");
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    out.read_line(&mut first).unwrap();
    let addr = first
        .split_whitespace()
        .find(|w| w.starts_with("127.0.0.1:"))
        .unwrap_or_else(|| panic!("no address in {first:?}"))
        .trim_end_matches(',')
        .to_string();
    (child, addr, out)
}

/// Starts `txmem serve -p 0 -t 1` with `extra` flags; the child and its address.
fn serve(extra: &[&str]) -> (std::process::Child, String) {
    let mut args = vec!["-t", "1"];
    args.extend_from_slice(extra);
    let (child, addr, _) = start(&args);
    (child, addr)
}

/// Sends `req` and reads until the reply ends with `end`.
fn ask(c: &mut TcpStream, req: &str, end: &str) -> String {
    c.write_all(req.as_bytes()).unwrap();
    let mut got = Vec::new();
    let mut b = [0u8; 4096];
    while !got.ends_with(end.as_bytes()) {
        let n = c.read(&mut b).unwrap();
        assert!(n > 0, "closed after {:?}", String::from_utf8_lossy(&got));
        got.extend_from_slice(&b[..n]);
    }
    String::from_utf8(got).unwrap()
}

#[test]
fn memcached_flags_take_effect() {
    let (mut child, addr) = serve(&["-A", "-F", "-M", "-C", "-b", "77", "-B", "ascii", "-R", "3"]);
    let mut c = TcpStream::connect(&addr).unwrap();
    let settings = ask(&mut c, "stats settings\r\n", "END\r\n");
    for line in [
        "STAT cas_enabled no",
        "STAT tcp_backlog 77",
        "STAT binding_protocol ascii",
        "STAT evictions off",
        "STAT flush_enabled no",
        "STAT reqs_per_event 3",
    ] {
        assert!(settings.contains(line), "{line} in {settings}");
    }
    assert_eq!(
        ask(&mut c, "flush_all\r\n", "\r\n"),
        "CLIENT_ERROR flush_all not allowed\r\n"
    );
    assert!(ask(&mut c, "shutdown now\r\n", "\r\n").starts_with("CLIENT_ERROR"));
    c.write_all(b"shutdown\r\n").unwrap();
    let mut rest = Vec::new();
    c.read_to_end(&mut rest).unwrap();
    assert!(rest.is_empty());
    let status = child.wait().unwrap();
    assert!(status.success(), "exit status {status}");

    // Without -A, `shutdown` is refused and the server goes on.
    let (mut child, addr) = serve(&[]);
    let mut c = TcpStream::connect(&addr).unwrap();
    assert_eq!(
        ask(&mut c, "shutdown\r\n", "\r\n"),
        "ERROR: shutdown not enabled\r\n"
    );
    assert!(ask(&mut c, "version\r\n", "\r\n").starts_with("VERSION"));
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn bad_flags_are_usage_errors() {
    for args in [
        &["serve", "--contention", "lock"][..],
        &["serve", "-t", "0"],
        &["serve", "-I", "2g", "-m", "1"],
        &["serve", "-I", "lots"],
        // memcached's smallest item size limit is 1 KB.
        &["serve", "-I", "1000"],
        &["serve", "-B", "http"],
        &["serve", "-c", "0"],
    ] {
        let out = txmem().args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("Usage: txmem serve"), "{args:?}: {stderr}");
    }
}

#[test]
fn a_port_in_use_is_a_clear_error() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let out = txmem().args(["serve", "-p", &port]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains(&format!("cannot listen on 127.0.0.1:{port}")),
        "{}",
        text(&out)
    );
}
