//! Clients that send without reading must not make the server hold their
//! replies: the process's resident memory stays near where it started.
//! (The server runs in this test process, so its RSS is this process's.)

mod common;

use std::io::Write;
use std::sync::Mutex;
use std::thread;
use std::time::{Duration, Instant};

use common::{start, Client};
use txmem_server::{ServerHandle, Settings};

/// RSS is the whole process's: the measuring tests take turns.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// This process's resident set, in bytes.
fn rss() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let kb: usize = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap();
    kb * 1024
}

fn server() -> ServerHandle {
    start(Settings {
        threads: 2,
        memory_mb: 16,
        ..Settings::default()
    })
}

/// Stores a value of `len` bytes under `k`.
fn store_big(c: &mut Client, len: usize) {
    let mut req = format!("set k 0 0 {len}\r\n").into_bytes();
    req.extend(std::iter::repeat_n(b'v', len));
    req.extend_from_slice(b"\r\n");
    c.expect(&req, b"STORED\r\n");
}

/// The most RSS grew above `base` over `period`, sampled.
fn growth_over(base: usize, period: Duration) -> usize {
    let end = Instant::now() + period;
    let mut most = 0;
    while Instant::now() < end {
        most = most.max(rss().saturating_sub(base));
        thread::sleep(Duration::from_millis(50));
    }
    most
}

#[test]
fn an_unread_multi_get_of_one_large_key_is_not_buffered() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let h = server();
    let mut c = Client::connect(&h);
    let len = 256 << 10;
    store_big(&mut c, len);
    // 1,000 keys of a quarter megabyte: 256 MB of reply, unread.
    let mut line = b"get".to_vec();
    for _ in 0..1000 {
        line.extend_from_slice(b" k");
    }
    line.extend_from_slice(b"\r\n");
    let base = rss();
    c.sock.write_all(&line).unwrap();
    let grew = growth_over(base, Duration::from_secs(2));
    assert!(grew < 32 << 20, "RSS grew by {} MB", grew >> 20);
    // The reply is whole once read.
    let head = format!("VALUE k 0 {len}\r\n");
    for _ in 0..1000 {
        assert_eq!(c.read_exact(head.len()), head.as_bytes());
        let value = c.read_exact(len + 2);
        assert!(value.starts_with(b"vvvv") && value.ends_with(b"v\r\n"));
    }
    assert_eq!(c.read_exact(5), b"END\r\n");
}

#[test]
fn unread_pipelined_gets_stop_being_read() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let h = server();
    let mut c = Client::connect(&h);
    let len = 256 << 10;
    store_big(&mut c, len);
    let base = rss();
    // 256 MB worth of `get`s in one write, no reply read: the server
    // stops serving them once its replies back up.
    c.sock.write_all(&b"get k\r\n".repeat(1000)).unwrap();
    let grew = growth_over(base, Duration::from_secs(2));
    assert!(grew < 32 << 20, "RSS grew by {} MB", grew >> 20);
}

#[test]
fn a_connection_yields_after_its_request_budget() {
    // memcached's `-R`: with a budget of one request, every pipelined
    // request after the first is a yield.
    let h = start(Settings {
        threads: 1,
        reqs_per_event: 1,
        ..Settings::default()
    });
    let mut c = Client::connect(&h);
    c.send(&b"set k 0 0 1\r\nx\r\n".repeat(6));
    for _ in 0..6 {
        assert_eq!(c.read_until(b"\r\n"), b"STORED\r\n");
    }
    assert!(c.stat("", "conn_yields") >= 5);
}
