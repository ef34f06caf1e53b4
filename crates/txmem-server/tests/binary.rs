//! memcached's binary protocol against a server on a loopback port: every
//! opcode family, quiet pipelines, large and oversized values, framing
//! errors, concurrent CAS updates, and data shared with the text protocol.

mod common;

use std::thread;

use common::{start, start_default, Client};
use txmem_server::protocol::binary::{opcode::*, request, status::*, Header, HEADER_LEN};
use txmem_server::Settings;

/// A response read off the wire.
#[derive(Debug)]
struct Resp {
    h: Header,
    extras: Vec<u8>,
    key: Vec<u8>,
    value: Vec<u8>,
}

impl Resp {
    fn status(&self) -> u16 {
        self.h.status
    }
}

fn recv(c: &mut Client) -> Resp {
    let head = c.read_exact(HEADER_LEN);
    let h = Header::parse(&head).unwrap();
    assert_eq!(h.magic, 0x81, "{h:?}");
    let mut body = c.read_exact(h.body_len as usize);
    let value = body.split_off(usize::from(h.extras_len) + usize::from(h.key_len));
    let key = body.split_off(usize::from(h.extras_len));
    Resp {
        h,
        extras: body,
        key,
        value,
    }
}

fn call(c: &mut Client, req: &[u8]) -> Resp {
    c.send(req);
    recv(c)
}

fn set_req(op: u8, key: &[u8], value: &[u8], flags: u32, exptime: u32, cas: u64) -> Vec<u8> {
    let mut extras = flags.to_be_bytes().to_vec();
    extras.extend_from_slice(&exptime.to_be_bytes());
    request(op, &extras, key, value, 0x1234, cas)
}

fn incr_req(op: u8, key: &[u8], delta: u64, initial: u64, exp: u32) -> Vec<u8> {
    let mut extras = delta.to_be_bytes().to_vec();
    extras.extend_from_slice(&initial.to_be_bytes());
    extras.extend_from_slice(&exp.to_be_bytes());
    request(op, &extras, key, &[], 0, 0)
}

fn get_req(op: u8, key: &[u8]) -> Vec<u8> {
    request(op, &[], key, &[], 0, 0)
}

fn u64_value(r: &Resp) -> u64 {
    u64::from_be_bytes(r.value[..].try_into().unwrap())
}

#[test]
fn every_opcode_family_over_the_wire() {
    let h = start_default();
    let mut c = Client::connect(&h);
    let r = call(&mut c, &set_req(SET, b"k", b"hello", 42, 0, 0));
    assert_eq!((r.status(), r.h.opcode, r.h.opaque), (SUCCESS, SET, 0x1234));
    let cas = r.h.cas;
    let r = call(&mut c, &get_req(GETK, b"k"));
    assert_eq!(
        (r.status(), r.extras, r.key, r.value, r.h.cas),
        (
            SUCCESS,
            42u32.to_be_bytes().to_vec(),
            b"k".to_vec(),
            b"hello".to_vec(),
            cas
        )
    );
    assert_eq!(
        call(&mut c, &set_req(ADD, b"k", b"x", 0, 0, 0)).status(),
        KEY_EXISTS
    );
    assert_eq!(
        call(&mut c, &set_req(REPLACE, b"k", b"x", 0, 0, cas + 1)).status(),
        KEY_EXISTS
    );
    assert_eq!(
        call(&mut c, &request(APPEND, &[], b"k", b"!", 0, 0)).status(),
        SUCCESS
    );
    assert_eq!(
        call(&mut c, &request(PREPEND, &[], b"k", b">", 0, 0)).status(),
        SUCCESS
    );
    assert_eq!(call(&mut c, &get_req(GET, b"k")).value, b">hello!");
    let r = call(&mut c, &incr_req(INCREMENT, b"n", 1, 100, 0));
    assert_eq!((r.status(), u64_value(&r)), (SUCCESS, 100));
    let r = call(&mut c, &incr_req(DECREMENT, b"n", 30, 0, 0));
    assert_eq!(u64_value(&r), 70);
    assert_eq!(
        call(&mut c, &incr_req(INCREMENT, b"none", 1, 0, 0xffff_ffff)).status(),
        KEY_NOT_FOUND
    );
    assert_eq!(
        call(&mut c, &incr_req(INCREMENT, b"k", 1, 0, 0)).status(),
        NON_NUMERIC
    );
    let exp = 1000u32.to_be_bytes();
    assert_eq!(
        call(&mut c, &request(TOUCH, &exp, b"k", &[], 0, 0)).status(),
        SUCCESS
    );
    let r = call(&mut c, &request(GATK, &exp, b"n", &[], 0, 0));
    assert_eq!((r.key, r.value), (b"n".to_vec(), b"70".to_vec()));
    assert_eq!(call(&mut c, &get_req(DELETE, b"n")).status(), SUCCESS);
    assert_eq!(call(&mut c, &get_req(DELETE, b"n")).status(), KEY_NOT_FOUND);
    let r = call(&mut c, &request(VERSION, &[], &[], &[], 0, 0));
    assert!(r.value.starts_with(b"1.6.18-txmem"));
    assert_eq!(
        call(&mut c, &request(VERBOSITY, &[0; 4], &[], &[], 0, 0)).status(),
        SUCCESS
    );
    assert_eq!(
        call(&mut c, &request(0x42, &[], b"x", b"yz", 0, 0)).status(),
        UNKNOWN_COMMAND
    );
    // Statistics: pairs, then an empty packet.
    c.send(&request(STAT, &[], &[], &[], 0, 0));
    let mut stats = Vec::new();
    loop {
        let r = recv(&mut c);
        if r.key.is_empty() {
            break;
        }
        stats.push((
            String::from_utf8(r.key).unwrap(),
            String::from_utf8(r.value).unwrap(),
        ));
    }
    let stat = |name: &str| stats.iter().find(|(k, _)| k == name).unwrap().1.clone();
    assert_eq!(stat("get_hits"), "3");
    assert_eq!(stat("incr_misses"), "2");
    assert_eq!(
        call(&mut c, &request(FLUSH, &[], &[], &[], 0, 0)).status(),
        SUCCESS
    );
    assert_eq!(call(&mut c, &get_req(GET, b"k")).status(), KEY_NOT_FOUND);
    let r = call(&mut c, &request(QUIT, &[], &[], &[], 7, 0));
    assert_eq!((r.status(), r.h.opaque), (SUCCESS, 7));
    assert!(c.closed());
}

#[test]
fn pipelined_quiet_requests_answer_at_the_noop() {
    let h = start_default();
    let mut c = Client::connect(&h);
    let n = 200u32;
    let mut batch = Vec::new();
    for i in 0..n {
        let key = format!("key{i}");
        batch.extend(set_req(SETQ, key.as_bytes(), key.as_bytes(), i, 0, 0));
    }
    // Every other key exists.
    for i in 0..2 * n {
        let key = format!("key{}", if i % 2 == 0 { i / 2 } else { n + i });
        let mut req = get_req(GETKQ, key.as_bytes());
        req[12..16].copy_from_slice(&i.to_be_bytes());
        batch.extend(req);
    }
    batch.extend(request(NOOP, &[], &[], &[], 0xabcd, 0));
    c.send(&batch);
    let mut hits = 0;
    loop {
        let r = recv(&mut c);
        if r.h.opcode == NOOP {
            assert_eq!(r.h.opaque, 0xabcd);
            break;
        }
        assert_eq!((r.h.opcode, r.status()), (GETKQ, SUCCESS));
        assert_eq!(r.h.opaque, 2 * hits);
        assert_eq!(r.key, r.value);
        assert_eq!(r.extras, hits.to_be_bytes());
        hits += 1;
    }
    assert_eq!(hits, n);
}

#[test]
fn large_values_and_oversized_ones() {
    let h = start(Settings {
        threads: 2,
        max_item_size: 256 << 10,
        ..Settings::default()
    });
    let mut c = Client::connect(&h);
    let big: Vec<u8> = (0..256 << 10).map(|i| (i % 251) as u8).collect();
    assert_eq!(
        call(&mut c, &set_req(SET, b"big", &big, 0, 0, 0)).status(),
        SUCCESS
    );
    assert_eq!(call(&mut c, &get_req(GET, b"big")).value, big);
    // One byte over: refused, its value skipped, the connection usable.
    let mut over = big.clone();
    over.push(0);
    let r = call(&mut c, &set_req(SET, b"big2", &over, 0, 0, 0));
    assert_eq!(r.status(), VALUE_TOO_LARGE);
    let r = call(&mut c, &get_req(GETK, b"big2"));
    assert_eq!((r.status(), r.key), (KEY_NOT_FOUND, b"big2".to_vec()));
    assert_eq!(call(&mut c, &get_req(GET, b"big")).value.len(), big.len());
}

#[test]
fn broken_framing_closes_the_connection() {
    let h = start_default();
    let mut c = Client::connect(&h);
    assert_eq!(
        call(&mut c, &request(NOOP, &[], &[], &[], 0, 0)).status(),
        SUCCESS
    );
    // A response magic where a request belongs: hung up on, no reply.
    let mut req = get_req(GET, b"k");
    req[0] = 0x81;
    c.send(&req);
    assert!(c.closed());
    // Key longer than the body.
    let mut c = Client::connect(&h);
    let mut req = get_req(GET, b"key");
    req[8..12].copy_from_slice(&1u32.to_be_bytes());
    assert_eq!(call(&mut c, &req).status(), INVALID_ARGUMENTS);
    assert!(c.closed());
    // QUITQ closes without a word.
    let mut c = Client::connect(&h);
    c.send(&request(QUITQ, &[], &[], &[], 0, 0));
    assert!(c.closed());
}

#[test]
fn concurrent_cas_updates_lose_nothing() {
    let h = start(Settings {
        threads: 4,
        ..Settings::default()
    });
    let mut c = Client::connect(&h);
    call(&mut c, &set_req(SET, b"c", b"0", 0, 0, 0));
    let (clients, rounds) = (6u64, 100u64);
    thread::scope(|s| {
        for _ in 0..clients {
            s.spawn(|| {
                let mut c = Client::connect(&h);
                for _ in 0..rounds {
                    // Quiet increments answer nothing: the no-op's reply
                    // comes first.
                    c.send(&incr_req(INCREMENTQ, b"n", 1, 1, 0));
                    let r = call(&mut c, &request(NOOP, &[], &[], &[], 0, 0));
                    assert_eq!(r.h.opcode, NOOP);
                }
                for _ in 0..rounds {
                    loop {
                        let r = call(&mut c, &get_req(GET, b"c"));
                        let v: u64 = std::str::from_utf8(&r.value).unwrap().parse().unwrap();
                        let next = (v + 1).to_string();
                        let w = call(&mut c, &set_req(SET, b"c", next.as_bytes(), 0, 0, r.h.cas));
                        match w.status() {
                            SUCCESS => break,
                            KEY_EXISTS => continue,
                            other => panic!("status {other:#x}"),
                        }
                    }
                }
            });
        }
    });
    let total = (clients * rounds).to_string();
    assert_eq!(call(&mut c, &get_req(GET, b"c")).value, total.as_bytes());
    assert_eq!(call(&mut c, &get_req(GET, b"n")).value, total.as_bytes());
}

#[test]
fn text_and_binary_clients_share_the_cache() {
    let h = start_default();
    let mut b = Client::connect(&h);
    call(&mut b, &set_req(SET, b"shared", b"value", 9, 0, 0));
    let mut t = Client::connect(&h);
    t.expect(b"get shared\r\n", b"VALUE shared 9 5\r\nvalue\r\nEND\r\n");
    t.expect(b"set other 3 0 2\r\nhi\r\n", b"STORED\r\n");
    let r = call(&mut b, &get_req(GET, b"other"));
    assert_eq!(
        (r.extras, r.value),
        (3u32.to_be_bytes().to_vec(), b"hi".to_vec())
    );
}
