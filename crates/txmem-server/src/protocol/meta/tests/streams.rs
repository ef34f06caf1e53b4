//! Malformed meta lines, and the same streams of requests cut at any point:
//! the replies must not depend on how the bytes arrived.

use proptest::prelude::*;

use super::*;

#[test]
fn malformed_lines() {
    let mut c = Client::new();
    // memcached's wording, which clients match.
    let token = "CLIENT_ERROR bad token in command line format\r\n";
    for (line, reply) in [
        ("mg\r\n", BAD),
        ("md\r\n", BAD),
        ("ma\r\n", BAD),
        ("mg k Z\r\n", "CLIENT_ERROR invalid flag\r\n"),
        ("mg k v v\r\n", "CLIENT_ERROR duplicate flag\r\n"),
        ("mg k Tx\r\n", token),
        ("mg k T\r\n", token),
        ("mg k N\r\n", token),
        ("mg k R1.5\r\n", token),
        ("mg k C-1\r\n", token),
        ("mg k E\r\n", token),
        ("mg k F-1\r\n", BAD),
        (
            "mg k M\r\n",
            "CLIENT_ERROR incorrect length for M token\r\n",
        ),
        ("md k C\r\n", token),
        (
            "mg k O123456789012345678901234567890123\r\n",
            "CLIENT_ERROR opaque token too long\r\n",
        ),
        // memcached's metaget test: an unknown flag is named as such
        // before the repeats after it.
        (
            "mg foo m o o o o o o o o o\r\n",
            "CLIENT_ERROR invalid flag\r\n",
        ),
    ] {
        c.check(line, reply);
    }
    // Control characters in keys are accepted, as memcached accepts them.
    c.check("mg a\x01b v\r\n", "EN\r\n");
    let long = "k".repeat(251);
    c.check(&format!("mg {long} v\r\n"), BAD);
    c.check(&format!("mg {} v\r\n", &long[1..]), "EN\r\n");
    // A 32-byte opaque is fine.
    c.check(
        "mg k O12345678901234567890123456789012\r\n",
        "EN O12345678901234567890123456789012\r\n",
    );
    // Flags irrelevant to a command are accepted and ignored.
    c.check("mg k D5 J1 MS x I F1\r\n", "EN\r\n");
    // Proxy hints are ignored.
    c.check("mg k P/a L/b k\r\n", "EN kk\r\n");
}

#[test]
fn get_counts_like_get() {
    let mut c = Client::new();
    c.check("ms k 1\r\nv\r\n", "HD\r\n");
    c.send(b"mg k v\r\nmg k\r\nmg x\r\nmg x q\r\n");
    let t = c.shared.stats.totals();
    assert_eq!((t.cmd_get, t.get_hits, t.get_misses), (4, 2, 2));
    assert_eq!(t.cmd_set, 1);
}

/// A meta command line, mostly well formed: a command, a key from a small
/// set (so commands meet), flags with tokens, sometimes a data block.
fn meta_request(deterministic: bool) -> impl Strategy<Value = Vec<u8>> {
    // Deterministic streams leave out what differs between runs (CAS
    // identifiers, times, debug lines, CAS compares against them) and
    // spaces inside keys and flags, which could turn a flag into a data
    // length and swallow the closing `mn`.
    let cmds: &'static [&'static str] = if deterministic {
        &["mg", "ms", "md", "ma", "mn", "get"]
    } else {
        &["mg", "ms", "md", "ma", "mn", "me", "get"]
    };
    let cmd = proptest::sample::select(cmds);
    let key = prop_oneof![
        Just("a".to_string()),
        Just("b".to_string()),
        Just("YQ==".to_string()),
        "[a-c]{1,3}",
        if deterministic {
            "[!-~]{1,4}"
        } else {
            "[ -~]{0,4}"
        },
    ];
    let letters: &'static [u8] = if deterministic {
        b"bfhkqsvuxIOTNFEMJDZ"
    } else {
        b"bcfhklqstvuxIOTNRFCEMJDPLZ "
    };
    let token = if deterministic {
        "[!-~]{0,3}"
    } else {
        "[ -~]{0,3}"
    };
    let flag = (
        proptest::sample::select(letters),
        prop_oneof![Just(String::new()), "-?[0-9]{1,3}", "[EAPRSID+\\-]", token,],
    )
        .prop_map(|(c, tok)| format!("{}{tok}", c as char));
    let data = proptest::option::of("[a-z0-9]{0,6}");
    (
        cmd,
        key,
        proptest::collection::vec(flag, 0..5),
        data,
        any::<bool>(),
    )
        .prop_map(|(cmd, key, flags, data, crlf)| {
            let mut line = format!("{cmd} {key}");
            let data = data.filter(|_| cmd == "ms");
            if let Some(d) = &data {
                line.push_str(&format!(" {}", d.len()));
            }
            for f in flags {
                line.push(' ');
                line.push_str(&f);
            }
            line.push_str(if crlf { "\r\n" } else { "\n" });
            if let Some(d) = data {
                line.push_str(&d);
                line.push_str("\r\n");
            }
            line.into_bytes()
        })
}

/// Feeds `stream` to a fresh connection in pieces of the given sizes
/// (cycled); returns the output, or `None` if the connection closed.
fn feed(shared: &Shared, stream: &[u8], pieces: &[usize]) -> Vec<u8> {
    let mut conn = Conn::new();
    let mut input = BytesMut::new();
    let mut out = Out::new();
    let mut at = 0;
    for &n in pieces.iter().cycle() {
        if at >= stream.len() {
            break;
        }
        let next = (at + n.max(1)).min(stream.len());
        input.extend_from_slice(&stream[at..next]);
        at = next;
        if process(shared, &mut conn, &mut input, &mut out) == Step::Close {
            break;
        }
    }
    out.to_vec()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Random meta commands and random bytes, in random pieces: every call
    /// returns, nothing panics.
    #[test]
    fn random_input_never_panics(
        requests in proptest::collection::vec(
            prop_oneof![
                3 => meta_request(false),
                1 => proptest::collection::vec(any::<u8>(), 0..24),
            ],
            1..12,
        ),
        pieces in proptest::collection::vec(1usize..16, 1..6),
    ) {
        let shared = Shared::new(Settings::default());
        let stream: Vec<u8> = requests.concat();
        feed(&shared, &stream, &pieces);
        feed(&shared, &stream, &[stream.len()]);
    }

    /// The same commands give the same replies whether they arrive at once
    /// or a few bytes at a time.
    #[test]
    fn replies_do_not_depend_on_how_input_is_split(
        requests in proptest::collection::vec(meta_request(true), 1..12),
        pieces in proptest::collection::vec(1usize..16, 1..6),
    ) {
        let mut stream: Vec<u8> = requests.concat();
        stream.extend_from_slice(b"mn\r\n");
        let whole = feed(&Shared::new(Settings::default()), &stream, &[stream.len()]);
        let split = feed(&Shared::new(Settings::default()), &stream, &pieces);
        prop_assert_eq!(String::from_utf8_lossy(&whole), String::from_utf8_lossy(&split));
        prop_assert!(whole.ends_with(b"MN\r\n"));
    }
}
