//! Requests the binary protocol must not take at face value: unknown or
//! misshapen, oversized, incomplete, broken framing, and streams cut anywhere.

use proptest::prelude::*;

use super::*;

#[test]
fn unknown_and_misshapen_requests_get_errors_and_the_connection_goes_on() {
    let mut c = Client::new();
    // Unknown opcodes (SASL among them), body skipped.
    for op in [0x20u8, 0x21, 0x30, 0xff] {
        let r = c.one(&request(op, &[1, 2], b"key", b"value", 1, 0));
        assert_eq!((r.status(), r.h.opcode, r.h.cas), (UNKNOWN_COMMAND, op, 0));
    }
    let bad: Vec<Vec<u8>> = vec![
        request(GET, &[0; 4], b"k", &[], 0, 0),     // extras on a get
        request(GET, &[], &[], &[], 0, 0),          // no key
        request(GET, &[], b"k", b"v", 0, 0),        // a value on a get
        request(SET, &[0; 4], b"k", b"v", 0, 0),    // short extras
        request(APPEND, &[0; 8], b"k", b"v", 0, 0), // extras on append
        request(INCREMENT, &[0; 8], b"k", &[], 0, 0),
        request(TOUCH, &[], b"k", &[], 0, 0),
        request(NOOP, &[], b"k", &[], 0, 0),
        request(FLUSH, &[0; 2], &[], &[], 0, 0),
        request(VERBOSITY, &[], &[], &[], 0, 0),
        request(STAT, &[], b"k", b"v", 0, 0),
        request(GET, &[], &[b'k'; 251], &[], 0, 0), // key too long
    ];
    for req in &bad {
        let r = c.one(req);
        assert_eq!(
            (r.status(), r.h.cas, r.extras.len()),
            (INVALID_ARGUMENTS, 0, 0),
            "{req:?}"
        );
    }
    // Still in step.
    c.set(b"k", b"v", 0);
    assert_eq!(c.get(b"k").value, b"v");
    assert_eq!(c.get(&[b'k'; 250]).status(), KEY_NOT_FOUND);
}

#[test]
fn an_oversized_add_or_replace_keeps_the_old_value() {
    // memcached removes the old value for SET alone.
    let mut c = Client::new();
    c.set(b"k", b"v", 0);
    let limit = c.shared.store.config().max_item_size;
    for op in [ADD, REPLACE, APPEND] {
        let extras = if op == APPEND { 0 } else { 8 };
        let mut req = store_req(op, b"k", &vec![b'x'; limit + 1], 0, 0, 0);
        if extras == 0 {
            req = request(op, &[], b"k", &vec![b'x'; limit + 1], 0, 0);
        }
        assert_eq!(c.one(&req).status(), VALUE_TOO_LARGE);
        assert_eq!(c.get(b"k").value, b"v");
    }
}

#[test]
fn broken_framing_closes_the_connection() {
    let mut c = Client::new();
    c.set(b"k", b"v", 0);
    let mut req = request(GET, &[], b"k", &[], 0, 0);
    req[0] = 0x81;
    // A wrong magic byte is garbage, not a request: memcached hangs up
    // without a reply.
    let (r, step) = c.feed(&req);
    assert_eq!((r.len(), step), (0, Step::Close));
    // Key and extras longer than the body.
    let mut c = Client::new();
    let mut req = request(GET, &[], b"key", &[], 0, 0);
    req[8..12].copy_from_slice(&2u32.to_be_bytes());
    let (r, step) = c.feed(&req);
    assert_eq!((r[0].status(), step), (INVALID_ARGUMENTS, Step::Close));
}

#[test]
fn incomplete_requests_wait() {
    let mut c = Client::new();
    let req = store_req(SET, b"k", b"value", 0, 0, 0);
    for i in 0..req.len() - 1 {
        let (r, step) = c.feed(&req[i..i + 1]);
        assert!(r.is_empty() && step == Step::NeedMore);
    }
    let (r, _) = c.feed(&req[req.len() - 1..]);
    assert_eq!(r[0].status(), SUCCESS);
}

#[test]
fn an_oversized_value_is_refused_unread() {
    let mut c = Client::new();
    c.set(b"k", b"v", 0);
    // Announce a 3 GB value: refused on the header alone, nothing
    // buffered, then the value is skipped as it streams in.
    let mut req = store_req(SET, b"k", &[], 0, 0, 0);
    let body = 3u32 << 30;
    req[8..12].copy_from_slice(&body.to_be_bytes());
    let r = c.one(&req);
    assert_eq!(r.status(), VALUE_TOO_LARGE);
    assert!(c.input.capacity() < 1 << 20);
    let chunk = vec![0x80u8; 1 << 20];
    let mut left = body as usize - 9;
    while left > 0 {
        let n = left.min(chunk.len());
        assert!(c.call(&chunk[..n]).is_empty());
        left -= n;
        assert!(c.input.capacity() < 4 << 20);
    }
    // As memcached: a refused SET removes the old value, so that no reader
    // takes it for the new one.
    assert_eq!(c.get(b"k").status(), KEY_NOT_FOUND);
    c.set(b"k", b"v", 0);
    // One byte over the limit, and exactly the limit.
    let limit = c.shared.store.config().max_item_size;
    let r = c.one(&store_req(SETQ, b"k", &vec![b'x'; limit + 1], 0, 0, 0));
    assert_eq!((r.status(), r.h.opcode), (VALUE_TOO_LARGE, SETQ));
    assert_eq!(c.get(b"k").status(), KEY_NOT_FOUND);
    c.set(b"k", &vec![b'x'; limit], 0);
    assert_eq!(c.get(b"k").value.len(), limit);
}

fn feed_all(shared: &Shared, stream: &[u8], pieces: &[usize]) -> (Vec<u8>, bool) {
    let mut conn = Conn::new();
    let mut input = BytesMut::new();
    let mut out = Out::new();
    let mut at = 0;
    let mut sizes = pieces.iter().cycle();
    while at < stream.len() {
        let n = (*sizes.next().unwrap()).clamp(1, stream.len() - at);
        input.extend_from_slice(&stream[at..at + n]);
        at += n;
        if process(shared, &mut conn, &mut input, &mut out) == Step::Close {
            return (out.to_vec(), true);
        }
    }
    (out.to_vec(), false)
}

/// A request with random fields: a known or unknown opcode, random
/// lengths (sometimes disagreeing with the body), random CAS.
fn packet_strategy() -> impl Strategy<Value = Vec<u8>> {
    let ops = prop_oneof![
        prop::sample::select(vec![
            GET, SET, ADD, REPLACE, DELETE, INCREMENT, DECREMENT, FLUSH, GETQ, NOOP, VERSION, GETK,
            GETKQ, APPEND, PREPEND, STAT, SETQ, ADDQ, REPLACEQ, DELETEQ, INCREMENTQ, DECREMENTQ,
            FLUSHQ, APPENDQ, PREPENDQ, VERBOSITY, TOUCH, GAT, GATQ, GATK, GATKQ,
        ]),
        any::<u8>(),
    ];
    (
        ops,
        prop::sample::select(vec![0usize, 4, 8, 20, 3]),
        prop::collection::vec(prop::sample::select(vec![b'a', b'b', b'1']), 0..4),
        prop::collection::vec(prop::sample::select(vec![b'0', b'1', b'x']), 0..12),
        prop::sample::select(vec![0u64, 1, u64::MAX]),
        prop_oneof![8 => Just(None), 1 => any::<u32>().prop_map(Some)],
    )
        .prop_map(|(op, extras, key, value, cas, body)| {
            let extras: Vec<u8> = (0..extras)
                .map(|i| if i % 4 == 3 { 1 } else { 0 })
                .collect();
            let mut p = request(op, &extras, &key, &value, 0, cas);
            if let Some(body) = body {
                p[8..12].copy_from_slice(&(body % 200_000).to_be_bytes());
            }
            p
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Random bytes after a binary first byte: every call returns, and
    /// what comes out is whole response packets.
    #[test]
    fn random_bytes_never_panic(stream in prop::collection::vec(any::<u8>(), 0..2048),
                                pieces in prop::collection::vec(1usize..300, 1..8)) {
        let s = Shared::new(settings());
        let mut all = vec![REQUEST_MAGIC];
        all.extend(stream);
        let (out, _) = feed_all(&s, &all, &pieces);
        responses(&out);
    }

    /// Streams of random requests, valid and not, in random pieces:
    /// replies are whole packets, and unless the connection closed, a
    /// final no-op is answered last.
    #[test]
    fn random_request_streams_stay_in_step(
        packets in prop::collection::vec(packet_strategy(), 1..24),
        pieces in prop::collection::vec(1usize..64, 1..5)) {
        let s = Shared::new(settings());
        let mut stream: Vec<u8> = packets.concat();
        stream.extend(request(NOOP, &[], &[], &[], 0xfeed, 0));
        let (out, closed) = feed_all(&s, &stream, &pieces);
        let rs = responses(&out);
        if !closed {
            // A mangled body length may still be swallowing the no-op.
            let last = rs.last();
            let framed = packets.iter().all(|p| Packet::parse(p).map(|(_, n)| n) == Some(p.len()));
            if framed {
                prop_assert_eq!(last.map(|r| (r.h.opcode, r.h.opaque)), Some((NOOP, 0xfeed)));
            }
        }
    }
}
