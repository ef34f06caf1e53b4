//! The meta commands, through the same entry point connections use.

use bytes::BytesMut;

use crate::protocol::{process, Conn, Out, Step};
use crate::{Settings, Shared};

/// A server's state and one connection to it.
struct Client {
    shared: Shared,
    conn: Conn,
}

impl Client {
    fn new() -> Client {
        Client {
            shared: Shared::new(Settings::default()),
            conn: Conn::new(),
        }
    }

    /// Sends `request` and returns everything it answered.
    fn send(&mut self, request: &[u8]) -> String {
        let mut input = BytesMut::from(request);
        let mut out = Out::new();
        let step = process(&self.shared, &mut self.conn, &mut input, &mut out);
        assert_eq!(step, Step::NeedMore);
        assert!(input.is_empty(), "left over: {input:?}");
        String::from_utf8_lossy(&out.to_vec()).into_owned()
    }

    /// Sends `request` and checks the answer.
    fn check(&mut self, request: &str, reply: &str) {
        assert_eq!(self.send(request.as_bytes()), reply, "request {request:?}");
    }

    /// The value of reply flag `flag` in a one-line answer to `request`.
    fn flag(&mut self, request: &str, flag: char) -> String {
        let reply = self.send(request.as_bytes());
        reply
            .lines()
            .next()
            .unwrap()
            .split(' ')
            .skip(1)
            .find_map(|t| t.strip_prefix(flag))
            .unwrap_or_else(|| panic!("no {flag} in {reply:?}"))
            .to_string()
    }
}

const BAD: &str = "CLIENT_ERROR bad command line format\r\n";

#[test]
fn no_op_and_unknown() {
    let mut c = Client::new();
    c.check("mn\r\n", "MN\r\n");
    c.check("mn ignored tokens\r\n", "MN\r\n");
    c.check("mz foo\r\n", "ERROR\r\n");
}

#[test]
fn set_then_get_with_return_flags() {
    let mut c = Client::new();
    c.check("ms foo 2 T90 F1\r\nhi\r\n", "HD\r\n");
    c.check("mg foo t f v\r\n", "VA 2 t90 f1\r\nhi\r\n");
    c.check("mg foo\r\n", "HD\r\n");
    c.check("mg foo s v\r\n", "VA 2 s2\r\nhi\r\n");
    c.check("mg foo k Oabc s\r\n", "HD kfoo Oabc s2\r\n");
    // Flags come back in the order they were asked for.
    c.check("mg foo s Oabc k f\r\n", "HD s2 Oabc kfoo f1\r\n");
    c.check("ms forever 1\r\nx\r\n", "HD\r\n");
    c.check("mg forever t\r\n", "HD t-1\r\n");
    // The text protocol sees the same item, flags and CAS included.
    let cas = c.flag("mg foo c\r\n", 'c');
    c.check(
        "gets foo\r\n",
        &format!("VALUE foo 1 2 {cas}\r\nhi\r\nEND\r\n"),
    );
    // A line ending in a bare newline works too.
    c.check("mg foo v\n", "VA 2\r\nhi\r\n");
}

#[test]
fn misses_and_quiet_mode() {
    let mut c = Client::new();
    c.check("mg nope v\r\n", "EN\r\n");
    c.check("mg nope v Oxy k\r\n", "EN Oxy knope\r\n");
    c.check("mg nope v q\r\n", "");
    // Pipelined quiet gets: only the hits answer, then the no-op.
    c.check("ms a 1 q\r\n1\r\n", "");
    c.check(
        "mg a v q k\r\nmg b v q k\r\nmg a q s\r\nmn\r\n",
        "VA 1 ka\r\n1\r\nHD s1\r\nMN\r\n",
    );
    // Quiet hides HD, not the other codes, nor errors.
    c.check("ms a 1 q ME\r\n2\r\nmn\r\n", "NS\r\nMN\r\n");
    c.check("md a q\r\nmd a q\r\nmn\r\n", "NF\r\nMN\r\n");
    c.check("ma n q\r\nmn\r\n", "NF\r\nMN\r\n");
    c.check("ma n q N0\r\nma n q\r\nmn\r\n", "MN\r\n");
    c.check("ma n q v\r\n", "VA 1\r\n2\r\n");
    c.check("mg a q Z\r\nmn\r\n", "CLIENT_ERROR invalid flag\r\nMN\r\n");
}

#[test]
fn hit_before_last_access_and_no_bump() {
    let mut c = Client::new();
    c.check("ms k 1\r\nv\r\n", "HD\r\n");
    c.check("mg k h l u\r\n", "HD h0 l0\r\n");
    // `u` left the item unread.
    c.check("mg k h\r\n", "HD h0\r\n");
    c.check("mg k h\r\n", "HD h1\r\n");
    let line = me_line(&mut c, "k", "yes");
    c.check("me k\r\n", &line);
}

fn me_line(c: &mut Client, key: &str, fetched: &str) -> String {
    let cas = c.flag(&format!("mg {key} c u\r\n"), 'c');
    let size = key.len() + 1 + crate::store::ITEM_OVERHEAD;
    format!("ME {key} exp=-1 la=0 cas={cas} fetch={fetched} cls=1 size={size}\r\n")
}

#[test]
fn debug_command() {
    let mut c = Client::new();
    c.check("me k\r\n", "EN\r\n");
    c.check("ms k 1\r\nv\r\n", "HD\r\n");
    let line = me_line(&mut c, "k", "no");
    c.check("me k\r\n", &line);
    // A base64 key is shown encoded.
    c.check("me aw== b\r\n", &line.replacen("ME k", "ME aw==", 1));
    c.check("me\r\n", BAD);
    c.check("ms t 1 T100\r\nv\r\n", "HD\r\n");
    assert!(c.send(b"me t\r\n").starts_with("ME t exp=100 "));
}

#[test]
fn get_compares_cas_before_sending_the_value() {
    let mut c = Client::new();
    c.check("ms k 3\r\nabc\r\n", "HD\r\n");
    let cas = c.flag("mg k c\r\n", 'c');
    c.check(&format!("mg k v C{cas}\r\n"), "HD\r\n");
    c.check(
        &format!("mg k v s C{}\r\n", cas.parse::<u64>().unwrap() + 1),
        "VA 3 s3\r\nabc\r\n",
    );
}

#[test]
fn get_touches() {
    let mut c = Client::new();
    c.check("ms k 1\r\nv\r\n", "HD\r\n");
    let cas = c.flag("mg k c\r\n", 'c');
    c.check("mg k T30 t\r\n", "HD t30\r\n");
    c.check("mg k t\r\n", "HD t30\r\n");
    // A touch keeps the CAS identifier.
    assert_eq!(c.flag("mg k c\r\n", 'c'), cas);
    c.check("mg gone T30 t\r\n", "EN\r\n");
    let t = c.shared.stats.totals();
    assert_eq!((t.cmd_touch, t.touch_hits, t.touch_misses), (2, 1, 1));
}

#[test]
fn vivify_hands_out_one_win() {
    let mut c = Client::new();
    c.check("mg new s N30 t v\r\n", "VA 0 s0 t30 W\r\n\r\n");
    c.check("mg new s N30 t v\r\n", "VA 0 s0 t30 Z\r\n\r\n");
    c.check("mg new s\r\n", "HD s0 Z\r\n");
    // Quiet does not hide the win (it is not a miss).
    c.check("mg new2 s N30 t q\r\n", "HD s0 t30 W\r\n");
    // The winner fills it; a set clears the win.
    c.check("ms new 2 T60\r\nok\r\n", "HD\r\n");
    c.check("mg new v N30\r\n", "VA 2\r\nok\r\n");
    // An explicit CAS for the placeholder.
    c.check("mg other N30 E77 c\r\n", "HD c77 W\r\n");
    let t = c.shared.stats.totals();
    assert_eq!(t.cmd_get, 6);
    assert_eq!(t.get_misses, 3);
}

#[test]
fn recache_wins_when_the_ttl_runs_low() {
    let mut c = Client::new();
    c.check("ms k 1 T10\r\nv\r\n", "HD\r\n");
    c.check("mg k R5\r\n", "HD\r\n");
    c.check("mg k R30\r\n", "HD W\r\n");
    c.check("mg k R30\r\n", "HD Z\r\n");
    c.check("ms k 1\r\nv\r\n", "HD\r\n");
    // No expiry: never low.
    c.check("mg k R30\r\n", "HD\r\n");
}

#[test]
fn delete_invalidate_marks_stale_and_hands_out_one_win() {
    let mut c = Client::new();
    c.check("ms k 3 T100\r\nold\r\n", "HD\r\n");
    let cas = c.flag("mg k c\r\n", 'c');
    c.check("md k I T30\r\n", "HD\r\n");
    let new_cas = c.flag("mg k c v t\r\n", 'c');
    assert_ne!(new_cas, cas);
    // The first reader after invalidation wins; the stale value is served.
    c.check("mg k v\r\n", "VA 3 Z X\r\nold\r\n");
    c.check("md k I\r\n", "HD\r\n");
    c.check("mg k s t\r\n", "HD s3 t30 X W\r\n");
    c.check("mg k s\r\n", "HD s3 Z X\r\n");
    // The old CAS can no longer write; a set clears the mark.
    c.check(&format!("ms k 3 C{cas}\r\nnew\r\n"), "EX\r\n");
    c.check("ms k 3\r\nnew\r\n", "HD\r\n");
    c.check("mg k v\r\n", "VA 3\r\nnew\r\n");
}

#[test]
fn first_read_after_invalidation_wins() {
    let mut c = Client::new();
    c.check("ms k 1\r\nv\r\n", "HD\r\n");
    c.check("md k I E500\r\n", "HD\r\n");
    c.check("mg k c\r\n", "HD c500 X W\r\n");
    c.check("mg k c\r\n", "HD c500 Z X\r\n");
    // Text gets see it as an ordinary item.
    c.check("get k\r\n", "VALUE k 0 1\r\nv\r\nEND\r\n");
}

#[test]
fn set_invalidate_accepts_an_older_cas_as_stale() {
    let mut c = Client::new();
    c.check("ms k 2 T100\r\nv1\r\n", "HD\r\n");
    let old = c.flag("mg k c\r\n", 'c');
    c.check("ms k 2 T50\r\nv2\r\n", "HD\r\n");
    // Without I an older CAS is refused; with it the value is stored,
    // stale, keeping the present expiry.
    c.check(&format!("ms k 2 C{old}\r\nv3\r\n"), "EX\r\n");
    c.check(&format!("ms k 2 C{old} I T999\r\nv3\r\n"), "HD\r\n");
    c.check("mg k v t\r\n", "VA 2 t50 X W\r\nv3\r\n");
    // A newer (unknown) CAS is still a mismatch.
    c.check("ms k 2 C18446744073709551615 I\r\nv4\r\n", "EX\r\n");
}

#[test]
fn set_modes() {
    let mut c = Client::new();
    c.check("ms k 1 ME\r\na\r\n", "HD\r\n");
    c.check("ms k 1 ME\r\nb\r\n", "NS\r\n");
    c.check("ms k 1 MA\r\nc\r\n", "HD\r\n");
    c.check("ms k 1 MP s\r\nd\r\n", "HD s3\r\n");
    c.check("mg k v\r\n", "VA 3\r\ndac\r\n");
    c.check("ms k 1 MR F5\r\ne\r\n", "HD\r\n");
    c.check("mg k v f\r\n", "VA 1 f5\r\ne\r\n");
    c.check("ms k 1 MS\r\nf\r\n", "HD\r\n");
    c.check("ms none 1 MR\r\nx\r\n", "NS\r\n");
    c.check("ms none 1 MA\r\nx\r\n", "NS\r\n");
    c.check("ms none 1 MP\r\nx\r\n", "NS\r\n");
    // Append with N creates the item on a miss, with N's TTL.
    c.check("ms viv 2 MA N30 T0 F3\r\nab\r\n", "HD\r\n");
    c.check("mg viv v t f\r\n", "VA 2 t30 f3\r\nab\r\n");
    c.check("ms k 1 MX\r\nx\r\nmn\r\n", &format!("{BAD}MN\r\n"));
    c.check(
        "ms k 1 MSS\r\nx\r\nmn\r\n",
        "CLIENT_ERROR incorrect length for M token\r\nMN\r\n",
    );
}

#[test]
fn set_compares_cas_and_returns_it() {
    let mut c = Client::new();
    c.check("ms k 1 C1\r\nx\r\n", "NF\r\n");
    let cas = c.flag("ms k 1 c\r\nx\r\n", 'c');
    c.check("ms k 1 C1 c\r\ny\r\n", "EX c0\r\n");
    let next = c.flag(&format!("ms k 1 C{cas} c\r\ny\r\n"), 'c');
    assert_ne!(next, cas);
    c.check(&format!("ms k 1 MA C{next} s\r\nz\r\n"), "HD s2\r\n");
    c.check("ms k 1 MA C1 s\r\nz\r\n", "EX s1\r\n");
    // Add ignores the CAS, as memcached's does.
    c.check("ms fresh 1 ME C1\r\nz\r\n", "HD\r\n");
    let t = c.shared.stats.totals();
    assert_eq!((t.cas_misses, t.cas_hits, t.cas_badval), (1, 1, 1));
    assert_eq!(t.cmd_set, 7);
}

#[test]
fn a_cas_of_zero_is_compared_not_ignored() {
    // No item has CAS identifier 0, so `C0` never matches (memcached's
    // metaget test: a set with `C0` answers `EX`).
    let mut c = Client::new();
    c.check("ms k 1 T90 C0\r\nf\r\n", "NF\r\n");
    c.check("ms k 1\r\nx\r\n", "HD\r\n");
    c.check("ms k 1 T90 C0\r\nf\r\n", "EX\r\n");
    c.check("ms k 1 MR C0\r\nf\r\n", "EX\r\n");
    c.check("mg k v\r\n", "VA 1\r\nx\r\n");
}

#[test]
fn explicit_cas_values() {
    let mut c = Client::new();
    c.check("ms k 1 E999 c\r\nx\r\n", "HD c999\r\n");
    c.check("mg k c\r\n", "HD c999\r\n");
    c.check("ms k 1 C999 E1000\r\ny\r\n", "HD\r\n");
    c.check("mg k c v\r\n", "VA 1 c1000\r\ny\r\n");
    c.check("ma n N0 E42 c\r\n", "HD c42\r\n");
    c.check("ma n E43 c v\r\n", "VA 1 c43\r\n1\r\n");
    c.check("md n C43 x E7\r\n", "HD\r\n");
    c.check("mg n c s\r\n", "HD c7 s0\r\n");
}

#[test]
fn oversized_and_malformed_values_are_swallowed() {
    let mut c = Client::new();
    let big = 2 << 20;
    let mut req = format!("ms big {big} T0\r\n").into_bytes();
    req.extend(std::iter::repeat_n(b'x', big));
    req.extend_from_slice(b"\r\nmn\r\n");
    assert_eq!(
        c.send(&req),
        "SERVER_ERROR object too large for cache\r\nMN\r\n"
    );
    // A block without its line ending: what follows the announced length
    // is read as commands again, as text.rs (and memcached) do.
    c.check(
        "ms k 2\r\nabc\r\nmn\r\n",
        "CLIENT_ERROR bad data chunk\r\nERROR\r\nMN\r\n",
    );
    // A bad flag: the data is skipped, not run as a command.
    c.check(
        "ms k 2 Z\r\nmn\r\nmn\r\n",
        "CLIENT_ERROR invalid flag\r\nMN\r\n",
    );
    c.check(
        "ms k 5 T\r\nmn\r\nm\r\nmn\r\n",
        "CLIENT_ERROR bad token in command line format\r\nMN\r\n",
    );
    // Without a readable length there is nothing to skip.
    c.check("ms k\r\nmn\r\n", &format!("{BAD}MN\r\n"));
    c.check("ms k x\r\nmn\r\n", "CLIENT_ERROR bad data chunk\r\nMN\r\n");
    c.check("ms k -1\r\nmn\r\n", "CLIENT_ERROR bad data chunk\r\nMN\r\n");
    c.check("mg k\r\n", "EN\r\n");
}

#[test]
fn set_waits_for_its_data() {
    let c = Client::new();
    let mut conn = Conn::new();
    let mut input = BytesMut::new();
    let mut out = Out::new();
    let request = b"ms k 10 T0 k\r\n0123456789\r\n";
    for (i, &b) in request.iter().enumerate() {
        input.extend_from_slice(&[b]);
        let step = process(&c.shared, &mut conn, &mut input, &mut out);
        assert_eq!(step, Step::NeedMore);
        if i + 1 < request.len() {
            assert!(out.is_empty(), "answered early at byte {i}");
        }
    }
    assert_eq!(out.to_vec(), b"HD kk\r\n");
    assert!(input.is_empty());
}

#[test]
fn delete() {
    let mut c = Client::new();
    c.check("md k\r\n", "NF\r\n");
    c.check("md k Oo k\r\n", "NF Oo kk\r\n");
    c.check("ms k 1\r\nv\r\n", "HD\r\n");
    c.check("md k C1\r\n", "EX\r\n");
    let cas = c.flag("mg k c\r\n", 'c');
    c.check(&format!("md k C{cas} k O1\r\n"), "HD kk O1\r\n");
    c.check("mg k\r\n", "EN\r\n");
    // x leaves an empty item with the same flags, expiry and CAS.
    c.check("ms k 1 F9 T100\r\nv\r\n", "HD\r\n");
    let cas = c.flag("mg k c\r\n", 'c');
    c.check("md k x\r\n", "HD\r\n");
    c.check("mg k v f t c\r\n", &format!("VA 0 f9 t100 c{cas}\r\n\r\n"));
    c.check("md k q\r\nmn\r\n", "MN\r\n");
    c.check("mg k\r\n", "EN\r\n");
    let t = c.shared.stats.totals();
    assert_eq!((t.delete_hits, t.delete_misses), (3, 3));
}

#[test]
fn arithmetic() {
    let mut c = Client::new();
    c.check("ma n\r\n", "NF\r\n");
    c.check("ma n v N0 J10\r\n", "VA 2\r\n10\r\n");
    c.check("ma n v\r\n", "VA 2\r\n11\r\n");
    c.check("ma n v D9\r\n", "VA 2\r\n20\r\n");
    c.check("ma n v MD D5\r\n", "VA 2\r\n15\r\n");
    c.check("ma n v M- D100\r\n", "VA 1\r\n0\r\n");
    c.check("ma n v M+\r\n", "VA 1\r\n1\r\n");
    c.check("ma n MI\r\n", "HD\r\n");
    c.check("ma n v MX\r\n", BAD);
    c.check(
        "ma n v DX\r\n",
        "CLIENT_ERROR invalid numeric delta value\r\n",
    );
    c.check(
        "ma n v J-1\r\n",
        "CLIENT_ERROR invalid numeric initial value\r\n",
    );
    c.check("ma n C1\r\n", "EX\r\n");
    let cas = c.flag("mg n c\r\n", 'c');
    let new = c.flag(&format!("ma n C{cas} c\r\n"), 'c');
    assert_ne!(new, cas);
    c.check("ma n T30 t k O9 v\r\n", "VA 1 t30 kn O9\r\n4\r\n");
    c.check("ma m N30 t\r\n", "HD t30\r\n");
    c.check("ms s 1\r\nx\r\n", "HD\r\n");
    c.check(
        "ma s\r\n",
        "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n",
    );
    c.check("ms w 20\r\n18446744073709551615\r\n", "HD\r\n");
    c.check("ma w v\r\n", "VA 1\r\n0\r\n");
    let t = c.shared.stats.totals();
    assert_eq!((t.incr_hits, t.decr_hits, t.decr_misses), (7, 2, 0));
}

#[test]
fn base64_keys() {
    let mut c = Client::new();
    // "foo" in base64 is the same key as foo in plain text.
    c.check("ms Zm9v 2 b\r\nhi\r\n", "HD\r\n");
    c.check("get foo\r\n", "VALUE foo 0 2\r\nhi\r\nEND\r\n");
    c.check("mg Zm9v b k v\r\n", "VA 2 kZm9v b\r\nhi\r\n");
    c.check("mg foo k v\r\n", "VA 2 kfoo\r\nhi\r\n");
    // A binary key: spaces, newlines and zero bytes are fine.
    c.check("ms YSBiDQoA 1 b k\r\nx\r\n", "HD kYSBiDQoA b\r\n");
    c.check("mg YSBiDQoA b s\r\n", "HD s1\r\n");
    c.check(
        "ma YSBiDQoA b\r\n",
        "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n",
    );
    c.check("md YSBiDQoA b k q\r\nmn\r\n", "MN\r\n");
    c.check("mg YSBiDQoA b k\r\n", "EN kYSBiDQoA b\r\n");
    c.check("mg !!!! b\r\n", "CLIENT_ERROR error decoding key\r\n");
    c.check("mg = b\r\n", "CLIENT_ERROR error decoding key\r\n");
    c.check(
        "ms !!!! 1 b\r\nx\r\nmn\r\n",
        "CLIENT_ERROR error decoding key\r\nMN\r\n",
    );
}

mod streams;
