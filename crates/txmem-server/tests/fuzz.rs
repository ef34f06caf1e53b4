//! Bad input: random byte streams and malformed commands, fed to the
//! protocol layer in random pieces, never panic or hang, and every line
//! without a data block gets a reply.

use bytes::BytesMut;
use proptest::prelude::*;
use txmem_server::protocol::{process, Conn, Out, Step};
use txmem_server::{Settings, Shared};

fn shared() -> Shared {
    Shared::new(Settings {
        threads: 1,
        memory_mb: 4,
        max_item_size: 64 << 10,
        ..Settings::default()
    })
}

/// A token: a number (possibly negative or huge), a word, `noreply`, an
/// over-long key, or bytes that do not belong in a key.
fn token() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<u8>().prop_map(|n| n.to_string()),
        any::<i64>().prop_map(|n| n.to_string()),
        Just("18446744073709551616".to_string()),
        "[a-z]{1,8}",
        Just("noreply".to_string()),
        Just("k".repeat(251)),
        Just("a\u{1}b".to_string()),
    ]
}

fn command() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "get",
        "gets",
        "gat",
        "gats",
        "delete",
        "incr",
        "decr",
        "touch",
        "flush_all",
        "verbosity",
        "version",
        "stats",
        "bogus",
        "mn",
        "mg",
        "md",
        "ma",
        "me",
        "cache_memlimit",
    ])
}

/// Feeds `stream` to one connection in pieces of the given sizes; returns
/// the replies, or `None` if the connection closed.
fn feed(shared: &Shared, stream: &[u8], pieces: &[usize]) -> (Vec<u8>, bool) {
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

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn random_bytes_never_panic(stream in prop::collection::vec(any::<u8>(), 0..2048),
                                pieces in prop::collection::vec(1usize..300, 1..8)) {
        let s = shared();
        feed(&s, &stream, &pieces);
    }

    /// Streams of text-like lines with random data blocks, which reach
    /// the storage paths (wrong lengths, missing endings, huge lengths).
    #[test]
    fn random_command_streams_never_panic(
        lines in prop::collection::vec(
            (prop::sample::select(vec!["set", "add", "cas", "append", "get", "incr", "ms", "mg", "ma", "md"]),
             prop::collection::vec(token(), 0..6),
             prop::collection::vec(any::<u8>(), 0..40)),
            1..20),
        pieces in prop::collection::vec(1usize..64, 1..5)) {
        let s = shared();
        let mut stream = Vec::new();
        for (cmd, args, data) in lines {
            stream.extend_from_slice(cmd.as_bytes());
            for a in args {
                stream.push(b' ');
                stream.extend_from_slice(a.as_bytes());
            }
            stream.extend_from_slice(b"\r\n");
            stream.extend_from_slice(&data);
            stream.extend_from_slice(b"\r\n");
        }
        feed(&s, &stream, &pieces);
    }

    /// A line of a command that takes no data block always gets a reply
    /// ending in `\r\n`, unless it asked for none (`noreply` or quiet) and
    /// succeeded.
    #[test]
    fn every_line_gets_a_reply(cmd in command(), args in prop::collection::vec(token(), 0..5)) {
        let s = shared();
        let line = std::iter::once(cmd.to_string()).chain(args.iter().cloned()).collect::<Vec<_>>().join(" ");
        let (out, _) = feed(&s, format!("{line}\r\n").as_bytes(), &[1 << 20]);
        let quiet = args.iter().any(|a| a == "noreply" || a == "q");
        if out.is_empty() {
            prop_assert!(quiet, "no reply to {line:?}");
        } else {
            prop_assert!(out.ends_with(b"\r\n"), "reply to {line:?}: {:?}", String::from_utf8_lossy(&out));
            let text = String::from_utf8_lossy(&out);
            let known = ["ERROR", "CLIENT_ERROR", "SERVER_ERROR", "VALUE", "END", "DELETED", "NOT_FOUND",
                         "TOUCHED", "OK", "VERSION", "STAT", "RESET", "MN", "EN", "HD", "VA", "NF", "NS", "EX", "ME"];
            prop_assert!(known.iter().any(|k| text.starts_with(k)) || text.as_bytes()[0].is_ascii_digit(),
                         "unexpected reply to {line:?}: {text:?}");
        }
    }
}
