//! The binary protocol, request by request, and fuzzed.

use super::opcode::*;
use super::status::*;
use super::*;
use crate::protocol::{process, Out};
use crate::store::RELATIVE_LIMIT;
use crate::Settings;

/// A response, owned.
#[derive(Debug, Clone, PartialEq, Eq)]
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

/// Splits `out` into response packets, asserting it is nothing else.
fn responses(mut out: &[u8]) -> Vec<Resp> {
    let mut all = Vec::new();
    while !out.is_empty() {
        let (p, len) = Packet::parse(out).expect("a whole response packet");
        assert_eq!(p.header.magic, RESPONSE_MAGIC);
        assert_eq!(p.header.data_type, 0);
        all.push(Resp {
            h: p.header,
            extras: p.extras.to_vec(),
            key: p.key.to_vec(),
            value: p.value.to_vec(),
        });
        out = &out[len..];
    }
    all
}

fn settings() -> Settings {
    Settings {
        threads: 1,
        memory_mb: 4,
        max_item_size: 64 << 10,
        ..Default::default()
    }
}

/// One connection to a fresh server state.
struct Client {
    shared: Shared,
    conn: Conn,
    input: BytesMut,
}

impl Client {
    fn new() -> Client {
        Client {
            shared: Shared::new(settings()),
            conn: Conn::new(),
            input: BytesMut::new(),
        }
    }

    /// Feeds `bytes`; returns the replies and the step.
    fn feed(&mut self, bytes: &[u8]) -> (Vec<Resp>, Step) {
        self.input.extend_from_slice(bytes);
        let mut out = Out::new();
        let step = process(&self.shared, &mut self.conn, &mut self.input, &mut out);
        (responses(&out.to_vec()), step)
    }

    /// Sends one request and returns its replies (the connection stays
    /// open).
    fn call(&mut self, req: &[u8]) -> Vec<Resp> {
        let (r, step) = self.feed(req);
        assert_eq!(step, Step::NeedMore);
        r
    }

    /// Sends one request that must get exactly one reply.
    fn one(&mut self, req: &[u8]) -> Resp {
        let mut r = self.call(req);
        assert_eq!(r.len(), 1, "replies: {r:?}");
        r.pop().unwrap()
    }

    fn set(&mut self, key: &[u8], value: &[u8], flags: u32) -> u64 {
        let r = self.one(&store_req(SET, key, value, flags, 0, 0));
        assert_eq!(r.status(), SUCCESS);
        r.h.cas
    }

    fn get(&mut self, key: &[u8]) -> Resp {
        self.one(&request(GET, &[], key, &[], 0, 0))
    }

    fn totals(&self) -> crate::stats::Totals {
        self.shared.stats.totals()
    }
}

fn store_req(op: u8, key: &[u8], value: &[u8], flags: u32, exptime: u32, cas: u64) -> Vec<u8> {
    let mut extras = flags.to_be_bytes().to_vec();
    extras.extend_from_slice(&exptime.to_be_bytes());
    request(op, &extras, key, value, 7, cas)
}

fn arith_req(op: u8, key: &[u8], delta: u64, initial: u64, exp: u32) -> Vec<u8> {
    let mut extras = delta.to_be_bytes().to_vec();
    extras.extend_from_slice(&initial.to_be_bytes());
    extras.extend_from_slice(&exp.to_be_bytes());
    request(op, &extras, key, &[], 9, 0)
}

fn counter(r: &Resp) -> u64 {
    u64::from_be_bytes(r.value[..].try_into().expect("an 8-byte counter"))
}

#[test]
fn headers_round_trip() {
    let req = request(
        SET,
        b"12345678",
        b"key",
        b"value",
        0xdead_beef,
        0x0102_0304_0506_0708,
    );
    let (p, len) = Packet::parse(&req).unwrap();
    assert_eq!(len, req.len());
    assert_eq!(p.header.magic, REQUEST_MAGIC);
    assert_eq!(p.header.body_len, 16);
    assert_eq!(p.header.cas, 0x0102_0304_0506_0708);
    assert_eq!(
        (p.extras, p.key, p.value),
        (&b"12345678"[..], &b"key"[..], &b"value"[..])
    );
    let mut again = Vec::new();
    p.header.encode(&mut again);
    assert_eq!(again, req[..HEADER_LEN]);
    assert!(Packet::parse(&req[..req.len() - 1]).is_none());
}

#[test]
fn storage_opcodes_and_their_statuses() {
    let mut c = Client::new();
    let cas = c.set(b"a", b"abc", 5);
    assert_ne!(cas, 0);
    let r = c.get(b"a");
    assert_eq!(r.status(), SUCCESS);
    assert_eq!(r.h.opaque, 0);
    assert_eq!(
        (r.extras, r.key, r.value),
        (5u32.to_be_bytes().to_vec(), vec![], b"abc".to_vec())
    );
    assert_eq!(r.h.cas, cas);
    // Add of a present key: exists; of an absent one: stored.
    assert_eq!(
        c.one(&store_req(ADD, b"a", b"x", 0, 0, 0)).status(),
        KEY_EXISTS
    );
    let r = c.one(&store_req(ADD, b"b", b"x", 0, 0, 0));
    assert_eq!((r.status(), r.h.opaque, r.h.opcode), (SUCCESS, 7, ADD));
    assert!(r.h.cas != 0 && r.value.is_empty());
    // Replace of an absent key: not found.
    assert_eq!(
        c.one(&store_req(REPLACE, b"nope", b"x", 0, 0, 0)).status(),
        KEY_NOT_FOUND
    );
    assert_eq!(
        c.one(&store_req(REPLACE, b"b", b"yy", 8, 0, 0)).status(),
        SUCCESS
    );
    assert_eq!(c.get(b"b").value, b"yy");
    // Append and prepend keep the flags; to an absent key: not stored.
    assert_eq!(
        c.one(&request(APPEND, &[], b"a", b"de", 0, 0)).status(),
        SUCCESS
    );
    assert_eq!(
        c.one(&request(PREPEND, &[], b"a", b"__", 0, 0)).status(),
        SUCCESS
    );
    let r = c.get(b"a");
    assert_eq!(
        (r.value, r.extras),
        (b"__abcde".to_vec(), 5u32.to_be_bytes().to_vec())
    );
    assert_eq!(
        c.one(&request(APPEND, &[], b"nope", b"x", 0, 0)).status(),
        ITEM_NOT_STORED
    );
    assert_eq!(
        c.one(&request(PREPEND, &[], b"nope", b"x", 0, 0)).status(),
        ITEM_NOT_STORED
    );
    // An empty value is a value.
    c.set(b"empty", b"", 0);
    assert_eq!(c.get(b"empty").status(), SUCCESS);
    let t = c.totals();
    assert_eq!(t.cmd_set, 10);
}

#[test]
fn retrieval_opcodes() {
    let mut c = Client::new();
    let cas = c.set(b"k", b"v", 3);
    let r = c.one(&request(GETK, &[], b"k", &[], 1, 0));
    assert_eq!(
        (r.status(), r.key, r.value, r.h.cas),
        (SUCCESS, b"k".to_vec(), b"v".to_vec(), cas)
    );
    // Misses: GET says not found with no key; GETK names the key.
    let r = c.get(b"missing");
    assert_eq!(
        (r.status(), r.key.len(), r.extras.len(), r.h.cas),
        (KEY_NOT_FOUND, 0, 0, 0)
    );
    let r = c.one(&request(GETK, &[], b"missing", &[], 1, 0));
    assert_eq!((r.status(), r.key), (KEY_NOT_FOUND, b"missing".to_vec()));
    // Quiet gets: a hit replies, a miss does not.
    assert_eq!(c.one(&request(GETQ, &[], b"k", &[], 1, 0)).value, b"v");
    assert!(c
        .call(&request(GETQ, &[], b"missing", &[], 1, 0))
        .is_empty());
    assert_eq!(c.one(&request(GETKQ, &[], b"k", &[], 1, 0)).key, b"k");
    assert!(c
        .call(&request(GETKQ, &[], b"missing", &[], 1, 0))
        .is_empty());
    let t = c.totals();
    assert_eq!((t.cmd_get, t.get_hits, t.get_misses), (7, 3, 4));
}

#[test]
fn touch_and_gat() {
    let mut c = Client::new();
    let cas = c.set(b"k", b"v", 4);
    let exp = 100u32.to_be_bytes();
    let r = c.one(&request(TOUCH, &exp, b"k", &[], 1, 0));
    assert_eq!(
        (r.status(), r.extras, r.value.len(), r.h.cas),
        (SUCCESS, 4u32.to_be_bytes().to_vec(), 0, cas)
    );
    assert_eq!(
        c.one(&request(TOUCH, &exp, b"nope", &[], 1, 0)).status(),
        KEY_NOT_FOUND
    );
    let r = c.one(&request(GAT, &exp, b"k", &[], 1, 0));
    assert_eq!(
        (r.status(), r.key.len(), r.value),
        (SUCCESS, 0, b"v".to_vec())
    );
    let r = c.one(&request(GATK, &exp, b"k", &[], 1, 0));
    assert_eq!((r.key, r.value), (b"k".to_vec(), b"v".to_vec()));
    assert_eq!(c.one(&request(GATQ, &exp, b"k", &[], 1, 0)).value, b"v");
    assert_eq!(c.one(&request(GATKQ, &exp, b"k", &[], 1, 0)).key, b"k");
    assert!(c.call(&request(GATQ, &exp, b"nope", &[], 1, 0)).is_empty());
    assert!(c.call(&request(GATKQ, &exp, b"nope", &[], 1, 0)).is_empty());
    assert_eq!(
        c.one(&request(GAT, &exp, b"nope", &[], 1, 0)).status(),
        KEY_NOT_FOUND
    );
    // A past absolute time expires the item at once.
    assert_eq!(
        c.one(&request(
            TOUCH,
            &(RELATIVE_LIMIT as u32 + 1).to_be_bytes(),
            b"k",
            &[],
            1,
            0
        ))
        .status(),
        SUCCESS
    );
    assert_eq!(c.get(b"k").status(), KEY_NOT_FOUND);
    let t = c.totals();
    assert_eq!((t.cmd_touch, t.touch_hits, t.touch_misses), (10, 6, 4));
}

#[test]
fn delete_and_its_cas() {
    let mut c = Client::new();
    let cas = c.set(b"k", b"v", 0);
    assert_eq!(
        c.one(&request(DELETE, &[], b"k", &[], 1, cas + 1)).status(),
        KEY_EXISTS
    );
    let r = c.one(&request(DELETE, &[], b"k", &[], 1, cas));
    assert_eq!((r.status(), r.h.cas), (SUCCESS, 0));
    assert_eq!(
        c.one(&request(DELETE, &[], b"k", &[], 1, 0)).status(),
        KEY_NOT_FOUND
    );
    c.set(b"k", b"v", 0);
    assert!(c.call(&request(DELETEQ, &[], b"k", &[], 1, 0)).is_empty());
    assert_eq!(
        c.one(&request(DELETEQ, &[], b"k", &[], 1, 0)).status(),
        KEY_NOT_FOUND
    );
    let t = c.totals();
    assert_eq!((t.delete_hits, t.delete_misses), (2, 2));
}

#[test]
fn cas_mismatch_and_cas_on_an_absent_key() {
    let mut c = Client::new();
    let cas = c.set(b"k", b"1", 0);
    for op in [SET, REPLACE] {
        assert_eq!(
            c.one(&store_req(op, b"k", b"x", 0, 0, cas + 1)).status(),
            KEY_EXISTS
        );
    }
    for op in [APPEND, PREPEND] {
        assert_eq!(
            c.one(&request(op, &[], b"k", b"x", 0, cas + 1)).status(),
            KEY_EXISTS
        );
    }
    let r = c.one(&store_req(SET, b"k", b"2", 0, 0, cas));
    assert_eq!(r.status(), SUCCESS);
    assert_ne!(r.h.cas, cas);
    // The old identifier is stale now.
    assert_eq!(
        c.one(&store_req(SET, b"k", b"3", 0, 0, cas)).status(),
        KEY_EXISTS
    );
    assert_eq!(
        c.one(&store_req(SET, b"absent", b"3", 0, 0, cas)).status(),
        KEY_NOT_FOUND
    );
    // Quiet: an error still replies.
    assert_eq!(
        c.one(&store_req(SETQ, b"k", b"3", 0, 0, cas)).status(),
        KEY_EXISTS
    );
    let t = c.totals();
    assert_eq!((t.cas_hits, t.cas_badval, t.cas_misses), (1, 6, 1));
    assert_eq!(c.get(b"k").value, b"2");
}

#[test]
fn incr_and_decr_with_initial_values() {
    let mut c = Client::new();
    // Absent: created with the initial value (the delta is not applied).
    let r = c.one(&arith_req(INCREMENT, b"n", 5, 10, 0));
    assert_eq!((r.status(), counter(&r), r.h.opaque), (SUCCESS, 10, 9));
    assert_ne!(r.h.cas, 0);
    assert_eq!(counter(&c.one(&arith_req(INCREMENT, b"n", 5, 10, 0))), 15);
    assert_eq!(c.get(b"n").value, b"15");
    assert_eq!(counter(&c.one(&arith_req(DECREMENT, b"n", 20, 0, 0))), 0);
    // Wraps at 2^64 going up.
    c.set(b"big", b"18446744073709551615", 0);
    assert_eq!(counter(&c.one(&arith_req(INCREMENT, b"big", 2, 0, 0))), 1);
    // Do-not-create expiration: absent is not found.
    assert_eq!(
        c.one(&arith_req(INCREMENT, b"absent", 1, 0, NO_VIVIFY))
            .status(),
        KEY_NOT_FOUND
    );
    assert_eq!(
        c.one(&arith_req(DECREMENTQ, b"absent", 1, 0, NO_VIVIFY))
            .status(),
        KEY_NOT_FOUND
    );
    c.set(b"text", b"abc", 0);
    assert_eq!(
        c.one(&arith_req(INCREMENT, b"text", 1, 0, 0)).status(),
        NON_NUMERIC
    );
    // Quiet success is silent.
    assert!(c.call(&arith_req(INCREMENTQ, b"q", 1, 7, 0)).is_empty());
    assert!(c.call(&arith_req(DECREMENTQ, b"q", 2, 0, 0)).is_empty());
    assert_eq!(c.get(b"q").value, b"5");
    // With a CAS identifier in the header.
    let cas = c.get(b"q").h.cas;
    let mut req = arith_req(INCREMENT, b"q", 1, 0, 0);
    req[16..24].copy_from_slice(&(cas + 1).to_be_bytes());
    assert_eq!(c.one(&req).status(), KEY_EXISTS);
    req[16..24].copy_from_slice(&cas.to_be_bytes());
    assert_eq!(counter(&c.one(&req)), 6);
    let t = c.totals();
    assert_eq!(
        (t.incr_hits, t.incr_misses, t.decr_hits, t.decr_misses),
        (3, 3, 2, 1)
    );
}

#[test]
fn quiet_storage_replies_only_on_error() {
    let mut c = Client::new();
    assert!(c.call(&store_req(SETQ, b"a", b"1", 0, 0, 0)).is_empty());
    assert!(c.call(&store_req(ADDQ, b"b", b"1", 0, 0, 0)).is_empty());
    assert_eq!(
        c.one(&store_req(ADDQ, b"b", b"1", 0, 0, 0)).status(),
        KEY_EXISTS
    );
    assert!(c.call(&store_req(REPLACEQ, b"b", b"2", 0, 0, 0)).is_empty());
    assert_eq!(
        c.one(&store_req(REPLACEQ, b"c", b"2", 0, 0, 0)).status(),
        KEY_NOT_FOUND
    );
    assert!(c.call(&request(APPENDQ, &[], b"b", b"3", 0, 0)).is_empty());
    assert!(c.call(&request(PREPENDQ, &[], b"b", b"1", 0, 0)).is_empty());
    let r = c.one(&request(APPENDQ, &[], b"c", b"3", 0, 0));
    assert_eq!((r.status(), r.h.opcode), (ITEM_NOT_STORED, APPENDQ));
    assert_eq!(c.get(b"b").value, b"123");
    assert!(c.call(&request(FLUSHQ, &[], &[], &[], 0, 0)).is_empty());
    assert_eq!(c.get(b"b").status(), KEY_NOT_FOUND);
}

#[test]
fn pipelined_quiet_gets_end_with_a_noop() {
    let mut c = Client::new();
    c.set(b"a", b"1", 0);
    c.set(b"c", b"3", 0);
    let mut batch = Vec::new();
    for (i, k) in [b"a", b"b", b"c", b"d"].iter().enumerate() {
        batch.extend(request(GETKQ, &[], &k[..], &[], i as u32, 0));
    }
    batch.extend(request(NOOP, &[], &[], &[], 99, 0));
    // In pieces, as a network would deliver them.
    let (mut got, mut step) = (Vec::new(), Step::NeedMore);
    for piece in batch.chunks(7) {
        let (r, s) = c.feed(piece);
        got.extend(r);
        step = s;
    }
    assert_eq!(step, Step::NeedMore);
    let seen: Vec<(u8, Vec<u8>, u32)> = got
        .iter()
        .map(|r| (r.h.opcode, r.key.clone(), r.h.opaque))
        .collect();
    assert_eq!(
        seen,
        vec![
            (GETKQ, b"a".to_vec(), 0),
            (GETKQ, b"c".to_vec(), 2),
            (NOOP, vec![], 99)
        ]
    );
    assert_eq!(got[1].value, b"3");
}

#[test]
fn quit_flush_noop_version_verbosity() {
    let mut c = Client::new();
    let r = c.one(&request(NOOP, &[], &[], &[], 5, 0));
    assert_eq!(
        (r.status(), r.h.opaque, r.h.cas, r.h.body_len),
        (SUCCESS, 5, 0, 0)
    );
    let r = c.one(&request(VERSION, &[], &[], &[], 0, 0));
    assert_eq!(r.value, crate::VERSION.as_bytes());
    let r = c.one(&request(VERBOSITY, &1u32.to_be_bytes(), &[], &[], 0, 0));
    assert_eq!(r.status(), SUCCESS);
    c.set(b"k", b"v", 0);
    let r = c.one(&request(FLUSH, &[], &[], &[], 0, 0));
    assert_eq!((r.status(), r.h.cas), (SUCCESS, 0));
    assert_eq!(c.get(b"k").status(), KEY_NOT_FOUND);
    // A delayed flush leaves items until then.
    c.set(b"k", b"v", 0);
    assert_eq!(
        c.one(&request(FLUSH, &1000u32.to_be_bytes(), &[], &[], 0, 0))
            .status(),
        SUCCESS
    );
    assert_eq!(c.get(b"k").status(), SUCCESS);
    assert_eq!(c.totals().cmd_flush, 2);
    let (r, step) = c.feed(&request(QUIT, &[], &[], &[], 3, 0));
    assert_eq!((r.len(), r[0].status(), step), (1, SUCCESS, Step::Close));
    let mut c = Client::new();
    let (r, step) = c.feed(&request(QUITQ, &[], &[], &[], 3, 0));
    assert_eq!((r.len(), step), (0, Step::Close));
}

#[test]
fn stat_groups() {
    let mut c = Client::new();
    c.set(b"k", b"v", 0);
    c.get(b"k");
    let general = c.call(&request(STAT, &[], &[], &[], 4, 0));
    let last = general.last().unwrap();
    assert!(last.key.is_empty() && last.value.is_empty());
    assert!(general
        .iter()
        .all(|r| r.status() == SUCCESS && r.h.opaque == 4 && r.h.cas == 0));
    let find =
        |rs: &[Resp], name: &[u8]| rs.iter().find(|r| r.key == name).map(|r| r.value.clone());
    assert_eq!(find(&general, b"cmd_get"), Some(b"1".to_vec()));
    assert_eq!(find(&general, b"curr_items"), Some(b"1".to_vec()));
    for group in [&b"items"[..], b"slabs", b"settings", b"txmem"] {
        let rs = c.call(&request(STAT, &[], group, &[], 0, 0));
        assert!(rs.len() > 1, "{group:?}");
    }
    let rs = c.call(&request(STAT, &[], b"settings", &[], 0, 0));
    assert_eq!(find(&rs, b"item_size_max"), Some(b"65536".to_vec()));
    let rs = c.call(&request(STAT, &[], b"reset", &[], 0, 0));
    assert_eq!(rs.len(), 1);
    assert_eq!(c.totals().cmd_get, 0);
    assert_eq!(
        c.one(&request(STAT, &[], b"bogus", &[], 0, 0)).status(),
        KEY_NOT_FOUND
    );
    // memcached's binary test switches per-prefix statistics on first.
    let r = c.one(&request(STAT, &[], b"detail on", &[], 0, 0));
    assert_eq!((r.status(), r.key.len()), (SUCCESS, 0));
    let rs = c.call(&request(STAT, &[], b"detail dump", &[], 0, 0));
    assert_eq!(rs.len(), 2);
    assert_eq!(
        (&rs[0].key[..], &rs[0].value[..]),
        (&b"detailed"[..], &b"END\r\n"[..])
    );
}

mod framing;
