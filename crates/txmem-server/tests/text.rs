//! memcached's text protocol, command by command, as its protocol
//! documentation describes it, against a server on a loopback port.

mod common;

use std::thread;
use std::time::Duration;

use common::{start, start_default, Client};
use txmem_server::Settings;

#[test]
fn storage_commands_and_their_replies() {
    let h = start_default();
    let mut c = Client::connect(&h);
    c.expect(b"set a 5 0 3\r\nabc\r\n", b"STORED\r\n");
    c.expect(b"get a\r\n", b"VALUE a 5 3\r\nabc\r\nEND\r\n");
    c.expect(b"add a 0 0 1\r\nx\r\n", b"NOT_STORED\r\n");
    c.expect(b"add b 7 0 1\r\nx\r\n", b"STORED\r\n");
    c.expect(b"replace c 0 0 1\r\nx\r\n", b"NOT_STORED\r\n");
    c.expect(b"replace b 8 0 2\r\nyy\r\n", b"STORED\r\n");
    c.expect(b"get b\r\n", b"VALUE b 8 2\r\nyy\r\nEND\r\n");
    // append/prepend keep the flags and ignore the ones given.
    c.expect(b"append a 9 0 2\r\nde\r\n", b"STORED\r\n");
    c.expect(b"prepend a 9 0 2\r\n__\r\n", b"STORED\r\n");
    c.expect(b"get a\r\n", b"VALUE a 5 7\r\n__abcde\r\nEND\r\n");
    c.expect(b"append nope 0 0 1\r\nx\r\n", b"NOT_STORED\r\n");
    c.expect(b"prepend nope 0 0 1\r\nx\r\n", b"NOT_STORED\r\n");
    // The largest flags value.
    c.expect(b"set f 4294967295 0 0\r\n\r\n", b"STORED\r\n");
    c.expect(b"get f\r\n", b"VALUE f 4294967295 0\r\n\r\nEND\r\n");
    c.expect(
        b"set f 4294967296 0 0\r\n",
        b"CLIENT_ERROR bad command line format\r\n",
    );
}

#[test]
fn cas_gets_and_multi_key_retrieval() {
    let h = start_default();
    let mut c = Client::connect(&h);
    c.expect(b"set k 0 0 1\r\n1\r\n", b"STORED\r\n");
    c.expect(b"set j 0 0 1\r\n2\r\n", b"STORED\r\n");
    let line = c.line(b"gets k\r\n");
    let cas: u64 = line.trim_end().rsplit(' ').next().unwrap().parse().unwrap();
    c.read_until(b"END\r\n");
    c.expect(
        format!("cas k 0 0 1 {}\r\nx\r\n", cas + 1).as_bytes(),
        b"EXISTS\r\n",
    );
    c.expect(
        format!("cas k 0 0 1 {cas}\r\nx\r\n").as_bytes(),
        b"STORED\r\n",
    );
    c.expect(
        format!("cas k 0 0 1 {cas}\r\ny\r\n").as_bytes(),
        b"EXISTS\r\n",
    );
    c.expect(b"cas missing 0 0 1 1\r\nx\r\n", b"NOT_FOUND\r\n");
    c.expect(
        b"cas k 0 0 1 abc\r\nx\r\n",
        b"CLIENT_ERROR bad command line format\r\n",
    );
    // The data block of a refused line is read as a command (`x`: ERROR):
    // memcached cannot trust the length on a malformed line either.
    c.expect(b"get x\r\n", b"ERROR\r\nEND\r\n");
    c.expect(
        b"get j nothere k\r\n",
        b"VALUE j 0 1\r\n2\r\nVALUE k 0 1\r\nx\r\nEND\r\n",
    );
    // Identifiers change with every write, and differ between keys.
    let a = c.line(b"gets j\r\n");
    c.read_until(b"END\r\n");
    let b = c.line(b"gets k\r\n");
    c.read_until(b"END\r\n");
    assert_ne!(a.rsplit(' ').next(), b.rsplit(' ').next());
    c.expect(b"get\r\n", b"ERROR\r\n");
}

#[test]
fn noreply_suppresses_replies() {
    let h = start_default();
    let mut c = Client::connect(&h);
    c.send(b"set a 0 0 1 noreply\r\n1\r\n");
    c.send(b"add a 0 0 1 noreply\r\n2\r\n");
    c.send(b"incr a 5 noreply\r\n");
    c.send(b"touch a 100 noreply\r\n");
    c.send(b"delete zz noreply\r\n");
    c.send(b"flush_all 100 noreply\r\n");
    c.send(b"verbosity 1 noreply\r\n");
    c.expect(b"get a\r\n", b"VALUE a 0 1\r\n6\r\nEND\r\n");
    // Errors are silenced too, as memcached's are.
    c.send(b"incr a x noreply\r\n");
    c.expect(b"get a\r\n", b"VALUE a 0 1\r\n6\r\nEND\r\n");
}

#[test]
fn arithmetic() {
    let h = start_default();
    let mut c = Client::connect(&h);
    c.expect(b"incr n 1\r\n", b"NOT_FOUND\r\n");
    c.expect(b"set n 3 0 2\r\n10\r\n", b"STORED\r\n");
    c.expect(b"incr n 5\r\n", b"15\r\n");
    c.expect(b"decr n 100\r\n", b"0\r\n");
    c.expect(b"set n 3 0 20\r\n18446744073709551615\r\n", b"STORED\r\n");
    c.expect(b"incr n 2\r\n", b"1\r\n");
    c.expect(b"get n\r\n", b"VALUE n 3 1\r\n1\r\nEND\r\n");
    c.expect(
        b"incr n -1\r\n",
        b"CLIENT_ERROR invalid numeric delta argument\r\n",
    );
    c.expect(b"set s 0 0 3\r\nabc\r\n", b"STORED\r\n");
    c.expect(
        b"incr s 1\r\n",
        b"CLIENT_ERROR cannot increment or decrement non-numeric value\r\n",
    );
    c.expect(b"incr n\r\n", b"ERROR\r\n");
}

#[test]
fn delete_touch_and_gat() {
    let h = start_default();
    let mut c = Client::connect(&h);
    c.expect(b"set a 0 0 1\r\n1\r\n", b"STORED\r\n");
    c.expect(b"delete a\r\n", b"DELETED\r\n");
    c.expect(b"delete a\r\n", b"NOT_FOUND\r\n");
    c.expect(b"set a 0 0 1\r\n1\r\n", b"STORED\r\n");
    c.expect(b"delete a 0\r\n", b"DELETED\r\n");
    c.expect(
        b"delete a 10\r\n",
        b"CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]\r\n",
    );
    c.expect(b"touch a 10\r\n", b"NOT_FOUND\r\n");
    c.expect(b"set a 0 1 1\r\n1\r\n", b"STORED\r\n");
    c.expect(b"touch a 100\r\n", b"TOUCHED\r\n");
    c.expect(
        b"touch a x\r\n",
        b"CLIENT_ERROR invalid exptime argument\r\n",
    );
    c.expect(b"gat 0 a\r\n", b"VALUE a 0 1\r\n1\r\nEND\r\n");
    let line = c.line(b"gats 100 a\r\n");
    assert!(line.starts_with("VALUE a 0 1 "), "{line}");
    c.read_until(b"END\r\n");
    c.expect(b"gat x a\r\n", b"CLIENT_ERROR invalid exptime argument\r\n");
    // The touch to "never" outlives the original one-second expiry.
    thread::sleep(Duration::from_millis(1100));
    c.expect(b"get a\r\n", b"VALUE a 0 1\r\n1\r\nEND\r\n");
}

#[test]
fn expiry_relative_negative_and_absolute() {
    let h = start_default();
    let mut c = Client::connect(&h);
    c.expect(b"set r 0 1 1\r\n1\r\n", b"STORED\r\n");
    c.expect(b"set neg 0 -1 1\r\n1\r\n", b"STORED\r\n");
    c.expect(b"get neg\r\n", b"END\r\n");
    // An absolute time in the past: expired at once; in the future: kept.
    c.expect(b"set past 0 2592001 1\r\n1\r\n", b"STORED\r\n");
    c.expect(b"get past\r\n", b"END\r\n");
    let later = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 3600;
    c.expect(
        format!("set fut 0 {later} 1\r\n1\r\n").as_bytes(),
        b"STORED\r\n",
    );
    c.expect(
        b"get r fut\r\n",
        b"VALUE r 0 1\r\n1\r\nVALUE fut 0 1\r\n1\r\nEND\r\n",
    );
    thread::sleep(Duration::from_millis(1100));
    c.expect(b"get r fut\r\n", b"VALUE fut 0 1\r\n1\r\nEND\r\n");
    // `add` over an expired key succeeds.
    c.expect(b"add r 0 0 1\r\n2\r\n", b"STORED\r\n");
}

#[test]
fn flush_all_now_and_delayed() {
    let h = start_default();
    let mut c = Client::connect(&h);
    c.expect(b"set a 0 0 1\r\n1\r\n", b"STORED\r\n");
    c.expect(b"flush_all\r\n", b"OK\r\n");
    c.expect(b"get a\r\n", b"END\r\n");
    c.expect(b"set a 0 0 1\r\n1\r\n", b"STORED\r\n");
    c.expect(b"get a\r\n", b"VALUE a 0 1\r\n1\r\nEND\r\n");
    c.expect(b"flush_all 1\r\n", b"OK\r\n");
    c.expect(b"get a\r\n", b"VALUE a 0 1\r\n1\r\nEND\r\n");
    thread::sleep(Duration::from_millis(1100));
    c.expect(b"get a\r\n", b"END\r\n");
    c.expect(
        b"flush_all x\r\n",
        b"CLIENT_ERROR invalid exptime argument\r\n",
    );
}

#[test]
fn values_with_line_endings_inside_and_the_largest_item() {
    let h = start(Settings {
        threads: 2,
        max_item_size: 4096,
        ..Settings::default()
    });
    let mut c = Client::connect(&h);
    c.expect(b"set v 0 0 8\r\na\r\nb\r\n\r\n\r\n", b"STORED\r\n");
    c.expect(b"get v\r\n", b"VALUE v 0 8\r\na\r\nb\r\n\r\n\r\nEND\r\n");
    let big = vec![b'x'; 4096];
    let mut req = b"set big 0 0 4096\r\n".to_vec();
    req.extend_from_slice(&big);
    req.extend_from_slice(b"\r\n");
    c.expect(&req, b"STORED\r\n");
    c.send(b"get big\r\n");
    let got = c.read_until(b"END\r\n");
    assert_eq!(got.len(), "VALUE big 0 4096\r\n".len() + 4096 + 2 + 5);
    // Appending past the limit is refused, and the value kept.
    c.expect(
        b"append big 0 0 1\r\nz\r\n",
        b"SERVER_ERROR object too large for cache\r\n",
    );
    c.expect(
        b"get big\r\n",
        &[b"VALUE big 0 4096\r\n".as_slice(), &big, b"\r\nEND\r\n"].concat(),
    );
    // A `set` of one byte more: refused, its data skipped (not run as
    // commands), and the old value removed, as memcached does (a reader
    // must not take the old value for the new one).
    let mut req = b"set big 0 0 4097\r\n".to_vec();
    req.extend_from_slice(b"get v\r\n");
    req.extend_from_slice(&vec![b'y'; 4097 - 7]);
    req.extend_from_slice(b"\r\n");
    c.expect(&req, b"SERVER_ERROR object too large for cache\r\n");
    c.expect(b"get big\r\n", b"END\r\n");
    let mut req = b"set small 0 0 4000\r\n".to_vec();
    req.extend_from_slice(&[b'a'; 4000]);
    req.extend_from_slice(b"\r\n");
    c.expect(&req, b"STORED\r\n");
    let mut req = b"prepend small 0 0 97\r\n".to_vec();
    req.extend_from_slice(&[b'b'; 97]);
    req.extend_from_slice(b"\r\n");
    c.expect(&req, b"SERVER_ERROR object too large for cache\r\n");
    // A bad data chunk; the rest of the line (`\n`) is an empty command.
    c.expect(
        b"set v 0 0 2\r\nabc\r\n",
        b"CLIENT_ERROR bad data chunk\r\nERROR\r\n",
    );
}

#[test]
fn a_multi_get_of_ten_thousand_keys_on_one_line() {
    let h = start_default();
    let mut c = Client::connect(&h);
    c.expect(b"set key-77 0 0 1\r\nx\r\n", b"STORED\r\n");
    let keys: Vec<String> = (0..10_000).map(|i| format!("key-{i}")).collect();
    let line = format!("get {}\r\n", keys.join(" "));
    assert!(line.len() > 64 * 1024);
    c.expect(line.as_bytes(), b"VALUE key-77 0 1\r\nx\r\nEND\r\n");
}

#[test]
fn pipelined_requests_answer_in_order() {
    let h = start_default();
    let mut c = Client::connect(&h);
    let mut req = Vec::new();
    let mut expect = Vec::new();
    for i in 0..200 {
        req.extend_from_slice(
            format!("set k{i} {i} 0 {}\r\n{i}\r\n", i.to_string().len()).as_bytes(),
        );
        expect.extend_from_slice(b"STORED\r\n");
        req.extend_from_slice(format!("get k{i}\r\n").as_bytes());
        expect.extend_from_slice(
            format!("VALUE k{i} {i} {}\r\n{i}\r\nEND\r\n", i.to_string().len()).as_bytes(),
        );
        req.extend_from_slice(format!("incr k{i} 1\r\n").as_bytes());
        expect.extend_from_slice(format!("{}\r\n", i + 1).as_bytes());
    }
    c.expect(&req, &expect);
    // The same stream cut into one-byte writes.
    let mut c = Client::connect(&h);
    let req = b"set p 0 0 2\r\nhi\r\nget p\r\n";
    for b in req {
        c.send(&[*b]);
    }
    c.expect(b"", b"STORED\r\nVALUE p 0 2\r\nhi\r\nEND\r\n");
}

#[test]
fn malformed_lines_get_memcached_errors() {
    let h = start_default();
    let mut c = Client::connect(&h);
    c.expect(b"bogus\r\n", b"ERROR\r\n");
    c.expect(b"\r\n", b"ERROR\r\n");
    c.expect(b"set a 0 0\r\n", b"ERROR\r\n");
    c.expect(
        b"set a 0 0 -1\r\n",
        b"CLIENT_ERROR bad command line format\r\n",
    );
    let long = "k".repeat(251);
    c.expect(
        format!("set {long} 0 0 1\r\n").as_bytes(),
        b"CLIENT_ERROR bad command line format\r\n",
    );
    c.expect(
        format!("get {long}\r\n").as_bytes(),
        b"CLIENT_ERROR bad command line format\r\n",
    );
    c.expect(b"incr\r\n", b"ERROR\r\n");
    c.expect(b"touch a\r\n", b"ERROR\r\n");
    c.expect(b"verbosity\r\n", b"ERROR\r\n");
    c.expect(b"shutdown\r\n", b"ERROR: shutdown not enabled\r\n");
    c.expect(b"stats noreply\r\n", b"ERROR\r\n");
    c.expect(b"stats nonsense\r\n", b"ERROR\r\n");
    // Bare `\n` line endings work too.
    c.expect(
        b"set n 0 0 1\nx\r\nget n\n",
        b"STORED\r\nVALUE n 0 1\r\nx\r\nEND\r\n",
    );
    // A line that never ends is refused and the connection closed.
    c.send(&vec![b'a'; 70 * 1024]);
    c.read_until(b"CLIENT_ERROR line too long\r\n");
    assert!(c.closed());
}

#[test]
fn a_client_that_disconnects_mid_value_stores_nothing() {
    let h = start_default();
    let mut c = Client::connect(&h);
    c.send(b"set half 0 0 10\r\nabc");
    drop(c);
    thread::sleep(Duration::from_millis(100));
    let mut c = Client::connect(&h);
    c.expect(b"get half\r\n", b"END\r\n");
}

#[test]
fn version_verbosity_quit_and_the_stats_groups() {
    let h = start_default();
    let mut c = Client::connect(&h);
    let v = c.line(b"version\r\n");
    assert!(v.starts_with("VERSION 1.6.18"), "{v}");
    c.expect(b"verbosity 1\r\n", b"OK\r\n");
    // memcached answers nothing to a bare `verbosity noreply`; `stats`
    // takes no `noreply`.
    c.send(b"verbosity noreply\r\n");
    assert!(c.line(b"version\r\n").starts_with("VERSION "));
    c.expect(b"stats noreply\r\n", b"ERROR\r\n");
    c.expect(b"set a 0 0 1\r\n1\r\n", b"STORED\r\n");
    c.expect(b"get a b\r\n", b"VALUE a 0 1\r\n1\r\nEND\r\n");
    assert_eq!(c.stat("", "cmd_get"), 2);
    assert_eq!(c.stat("", "get_hits"), 1);
    assert_eq!(c.stat("", "get_misses"), 1);
    assert_eq!(c.stat("", "curr_items"), 1);
    assert_eq!(c.stat("", "cmd_set"), 1);
    assert_eq!(c.stat("items", "items:1:number"), 1);
    assert!(c.stat("slabs", "total_malloced") > 0);
    assert_eq!(c.stat("settings", "maxbytes"), 64 << 20);
    assert!(c.stat("txmem", "commits") >= 2);
    c.expect(b"stats reset\r\n", b"RESET\r\n");
    assert_eq!(c.stat("", "cmd_get"), 0);
    c.send(b"quit\r\n");
    assert!(c.closed());
}

#[test]
fn connections_over_the_limit_are_refused() {
    let h = start(Settings {
        threads: 2,
        max_connections: 2,
        ..Settings::default()
    });
    let mut a = Client::connect(&h);
    let mut b = Client::connect(&h);
    a.expect(
        b"version\r\n",
        format!("VERSION {}\r\n", txmem_server::VERSION).as_bytes(),
    );
    b.expect(b"get x\r\n", b"END\r\n");
    let mut c = Client::connect(&h);
    c.read_until(b"ERROR Too many open connections\r\n");
    assert!(c.closed());
    drop(a);
    thread::sleep(Duration::from_millis(100));
    let mut d = Client::connect(&h);
    d.expect(
        b"version\r\n",
        format!("VERSION {}\r\n", txmem_server::VERSION).as_bytes(),
    );
    assert_eq!(d.stat("", "rejected_connections"), 1);
}

/// Many clients incrementing one counter and updating another with
/// `gets`/`cas`: every update lands, and no request ran serially.
#[test]
fn concurrent_incr_and_cas_lose_no_update() {
    let h = start(Settings {
        threads: 4,
        ..Settings::default()
    });
    let mut c = Client::connect(&h);
    c.expect(b"set n 0 0 1\r\n0\r\n", b"STORED\r\n");
    c.expect(b"set c 0 0 1\r\n0\r\n", b"STORED\r\n");
    let (clients, rounds) = (8, 150);
    thread::scope(|s| {
        for _ in 0..clients {
            s.spawn(|| {
                let mut c = Client::connect(&h);
                for _ in 0..rounds {
                    c.send(b"incr n 1\r\n");
                    c.read_until(b"\r\n");
                    loop {
                        c.send(b"gets c\r\n");
                        let reply = String::from_utf8(c.read_until(b"END\r\n")).unwrap();
                        let mut lines = reply.lines();
                        let head: Vec<&str> = lines.next().unwrap().split(' ').collect();
                        let value: u64 = lines.next().unwrap().parse().unwrap();
                        let next = (value + 1).to_string();
                        let req = format!("cas c 0 0 {} {}\r\n{next}\r\n", next.len(), head[4]);
                        match c.line(req.as_bytes()).as_str() {
                            "STORED\r\n" => break,
                            "EXISTS\r\n" => continue,
                            other => panic!("{other}"),
                        }
                    }
                }
            });
        }
    });
    let total = clients * rounds;
    c.expect(
        b"get n\r\n",
        format!(
            "VALUE n 0 {}\r\n{total}\r\nEND\r\n",
            total.to_string().len()
        )
        .as_bytes(),
    );
    c.expect(
        b"get c\r\n",
        format!(
            "VALUE c 0 {}\r\n{total}\r\nEND\r\n",
            total.to_string().len()
        )
        .as_bytes(),
    );
    // The request path never serializes.
    assert_eq!(c.stat("txmem", "switched_irrevocable"), 0);
    assert_eq!(c.stat("txmem", "started_irrevocable"), 0);
    assert_eq!(c.stat("txmem", "serialized_after_aborts"), 0);
}

/// A flood of sets into a 1 MB server: the accounted memory stays under
/// the limit (plus what the writers in flight may each add) and the
/// process's resident size stays bounded.
#[test]
fn the_memory_limit_holds_under_a_flood_of_sets() {
    let h = start(Settings {
        threads: 2,
        memory_mb: 1,
        ..Settings::default()
    });
    let value = vec![b'v'; 2000];
    let rss_before = resident_kb();
    thread::scope(|s| {
        for t in 0..4 {
            let (h, value) = (&h, &value);
            s.spawn(move || {
                let mut c = Client::connect(h);
                for batch in 0..20 {
                    let mut req = Vec::new();
                    for i in 0..100 {
                        req.extend_from_slice(
                            format!("set t{t}-{batch}-{i} 0 0 {} noreply\r\n", value.len())
                                .as_bytes(),
                        );
                        req.extend_from_slice(value);
                        req.extend_from_slice(b"\r\n");
                    }
                    c.send(&req);
                    c.expect(b"get x\r\n", b"END\r\n");
                }
            });
        }
    });
    let mut c = Client::connect(&h);
    let bytes = c.stat("", "bytes");
    let limit = 1 << 20;
    assert!(
        bytes <= limit + 4 * 2400,
        "{bytes} bytes accounted, limit {limit}"
    );
    assert!(c.stat("", "evictions") > 7000);
    assert!(c.stat("", "curr_items") < 600);
    // 16 MB of values went through; the resident size grew by far less.
    if let (Some(before), Some(after)) = (rss_before, resident_kb()) {
        assert!(
            after < before + 12 * 1024,
            "resident {before} kB -> {after} kB"
        );
    }
}

/// The resident set size of this process, in kB (Linux).
fn resident_kb() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[test]
fn a_cas_of_zero_is_compared_not_ignored() {
    // No item has CAS identifier 0: `cas` with 0 never stores (memcached's
    // getset test).
    let h = start_default();
    let mut c = Client::connect(&h);
    c.expect(b"cas k 0 0 6 0\r\nfooval\r\n", b"NOT_FOUND\r\n");
    c.expect(b"set k 0 0 3\r\nold\r\n", b"STORED\r\n");
    c.expect(b"cas k 0 0 6 0\r\nfooval\r\n", b"EXISTS\r\n");
    c.expect(b"get k\r\n", b"VALUE k 0 3\r\nold\r\nEND\r\n");
}

#[test]
fn noreply_silences_errors_too() {
    // A client that asked for no reply reads the next command's reply
    // next; an error reply in between would be taken for it (memcached's
    // issue_3 test).
    let h = start_default();
    let mut c = Client::connect(&h);
    c.expect(b"add k 0 0 1\r\nx\r\n", b"STORED\r\n");
    c.send(b"delete k 10 noreply\r\n");
    c.expect(b"add k 0 0 1\r\nx\r\n", b"NOT_STORED\r\n");
    c.send(b"incr k 1 noreply\r\n");
    c.send(b"incr k x noreply\r\n");
    c.send(b"touch k x noreply\r\n");
    c.send(b"flush_all x noreply\r\n");
    c.send(b"verbosity x noreply\r\n");
    c.send(b"set bad 0 0 x noreply\r\n");
    let big = Settings::default().max_item_size + 1;
    c.send(format!("set k 0 0 {big} noreply\r\n").as_bytes());
    c.send(&vec![b'x'; big]);
    c.send(b"\r\n");
    c.expect(b"get k\r\n", b"END\r\n");
    // Without noreply, the same errors are answered.
    c.expect(
        b"delete k 10\r\n",
        b"CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]\r\n",
    );
}

#[test]
fn memcached_error_wording_where_clients_parse_it() {
    let h = start_default();
    let mut c = Client::connect(&h);
    // A length whose data block with its `\r\n` overflows memcached's int.
    c.expect(
        b"set k 0 0 2147483647\r\n",
        b"CLIENT_ERROR bad command line format\r\n",
    );
    c.expect(
        b"set k 0 0 2147483646\r\n",
        b"CLIENT_ERROR bad command line format\r\n",
    );
    c.expect(
        b"verbosity invalid\r\n",
        b"CLIENT_ERROR bad command line format\r\n",
    );
    c.expect(b"verbosity 1\r\n", b"OK\r\n");
    c.expect(b"verbosity\r\n", b"ERROR\r\n");
}

#[test]
fn http_requests_are_hung_up_on() {
    let h = start_default();
    for req in [
        &b"GET / HTTP/1.0\r\n"[..],
        b"PUT /asdf/asd/fasdfasdf/sadf HTTP/1.1\r\n",
        b"DELETE HTTP/1.1\r\n",
        b"POST /x HTTP/1.1\r\nContent-Length: 20\r\n\r\nset p 0 0 1\r\nx\r\n",
    ] {
        let mut c = Client::connect(&h);
        c.send(req);
        assert!(c.closed(), "{:?}", String::from_utf8_lossy(req));
    }
    // The POST body's `set` was never run.
    let mut c = Client::connect(&h);
    c.expect(b"get p\r\n", b"END\r\n");
}

#[test]
fn without_eviction_a_full_store_refuses_writes() {
    // memcached's `-M`: out-of-memory errors instead of evictions, and
    // everything stored stays readable.
    let h = start(Settings {
        threads: 1,
        memory_mb: 2,
        evict: false,
        ..Settings::default()
    });
    let mut c = Client::connect(&h);
    let value = "B".repeat(8192);
    let mut stored = 0;
    loop {
        let reply = c.line(format!("set k{stored} 0 0 8192\r\n{value}\r\n").as_bytes());
        if reply != "STORED\r\n" {
            assert_eq!(reply, "SERVER_ERROR out of memory storing object\r\n");
            break;
        }
        stored += 1;
        assert!(stored < 1000, "a 2 MB store took {stored} items of 8 KB");
    }
    assert!(stored > 100);
    assert_eq!(c.stat("", "store_no_memory"), 1);
    assert_eq!(c.stat("", "evictions"), 0);
    for i in 0..stored {
        c.send(format!("get k{i}\r\n").as_bytes());
        assert_eq!(
            c.read_until(b"END\r\n").len(),
            8192 + 23 + format!("{i}").len()
        );
    }
}

#[test]
fn a_connection_speaks_only_the_protocol_allowed() {
    use txmem_server::Protocol;
    let h = start(Settings {
        threads: 1,
        protocol: Protocol::Binary,
        ..Settings::default()
    });
    // Text on a binary-only server is garbage: hung up on once a header's
    // worth has arrived.
    let mut c = Client::connect(&h);
    c.send(b"get a_key_long_enough_for_a_header\r\n");
    assert!(c.closed());
    let h = start(Settings {
        threads: 1,
        protocol: Protocol::Ascii,
        ..Settings::default()
    });
    let mut c = Client::connect(&h);
    c.expect(
        b"version\r\n",
        format!("VERSION {}\r\n", txmem_server::VERSION).as_bytes(),
    );
}

#[test]
fn without_cas_a_flush_hides_its_whole_second() {
    // memcached's `-C`: writes are told apart by the second only, so one
    // stored in the flush's second, after it, is gone too.
    let h = start(Settings {
        threads: 1,
        cas: false,
        ..Settings::default()
    });
    let mut c = Client::connect(&h);
    let settings = c.stats("settings");
    assert!(settings.contains(&("cas_enabled".into(), "no".into())));
    // The second may turn between the flush and the write; not five times.
    let mut hidden = 0;
    for _ in 0..5 {
        c.expect(b"flush_all 0\r\n", b"OK\r\n");
        c.expect(b"set foo 0 0 3\r\nnew\r\n", b"STORED\r\n");
        c.send(b"get foo\r\n");
        if c.read_until(b"END\r\n") == b"END\r\n" {
            hidden += 1;
        }
    }
    assert!(hidden >= 4, "{hidden} of 5 writes hidden");
    // With CAS, the write after the flush stands.
    let h = start_default();
    let mut c = Client::connect(&h);
    c.expect(b"flush_all 0\r\n", b"OK\r\n");
    c.expect(b"set foo 0 0 3\r\nnew\r\n", b"STORED\r\n");
    c.expect(b"get foo\r\n", b"VALUE foo 0 3\r\nnew\r\nEND\r\n");
}

#[test]
fn without_cas_every_identifier_is_zero() {
    // memcached's `-C`: items carry no CAS identifier, so `gets` shows 0
    // and a `cas` matches no item, not even with 0 (as memcached 1.6.18
    // answers).
    let h = start(Settings {
        threads: 1,
        cas: false,
        ..Settings::default()
    });
    let mut c = Client::connect(&h);
    c.expect(b"set foo 0 0 3\r\nbar\r\n", b"STORED\r\n");
    c.expect(b"gets foo\r\n", b"VALUE foo 0 3 0\r\nbar\r\nEND\r\n");
    c.expect(b"cas foo 0 0 3 7\r\nqux\r\n", b"EXISTS\r\n");
    c.expect(b"cas foo 0 0 3 0\r\nbaz\r\n", b"EXISTS\r\n");
    c.expect(b"cas nope 0 0 3 0\r\nbaz\r\n", b"NOT_FOUND\r\n");
    c.expect(b"gets foo\r\n", b"VALUE foo 0 3 0\r\nbar\r\nEND\r\n");
    c.expect(b"mg foo c v\r\n", b"VA 3 c0\r\nbar\r\n");
}

#[test]
fn debugtime_moves_the_clock_only_when_allowed() {
    let h = start_default();
    let mut c = Client::connect(&h);
    c.expect(b"debugtime 5\r\n", b"ERROR\r\n");
    let h = start(Settings {
        threads: 1,
        debug_time: true,
        ..Settings::default()
    });
    let mut c = Client::connect(&h);
    c.expect(b"set k 0 2 1\r\nx\r\n", b"STORED\r\n");
    c.expect(b"get k\r\n", b"VALUE k 0 1\r\nx\r\nEND\r\n");
    c.expect(b"debugtime 3\r\n", b"OK\r\n");
    c.expect(b"get k\r\n", b"END\r\n");
    c.expect(b"debugtime x\r\n", b"ERROR\r\n");
    c.expect(b"stats detail on\r\n", b"OK\r\n");
    c.expect(b"stats detail off\r\n", b"OK\r\n");
}

#[test]
fn idle_connections_are_closed_after_the_timeout() {
    let h = start(Settings {
        threads: 1,
        idle_timeout: Some(Duration::from_millis(300)),
        ..Settings::default()
    });
    let mut c = Client::connect(&h);
    c.expect(b"set k 0 0 1\r\nx\r\n", b"STORED\r\n");
    thread::sleep(Duration::from_millis(800));
    assert!(c.closed());
    let mut d = Client::connect(&h);
    assert_eq!(d.stat("", "idle_kicks"), 1);
    // A replaced flushed item counts as reclaimed, as in memcached.
    d.expect(b"flush_all\r\n", b"OK\r\n");
    d.expect(b"set k 0 0 1\r\ny\r\n", b"STORED\r\n");
    assert_eq!(d.stat("", "reclaimed"), 1);
    d.expect(b"slabs automove 1\r\n", b"OK\r\n");
    d.expect(
        b"slabs automove invalid\r\n",
        b"CLIENT_ERROR bad command line format\r\n",
    );
}
