//! Feeding a byte stream to one connection, as a socket would, and the
//! checks every target makes on what came back.

use bytes::BytesMut;
use txmem_server::protocol::{process_some, Conn, Out, Step, OUT_HIGH_WATER};
use txmem_server::{Protocol, Settings, Shared};

/// A small server state: a tight memory limit and item size, so that
/// eviction and refusals are reached within short inputs.
pub fn shared(protocol: Protocol) -> Shared {
    Shared::new(Settings {
        threads: 1,
        memory_mb: 1,
        max_item_size: 4096,
        protocol,
        ..Settings::default()
    })
}

/// Feeds `data` to a fresh connection in pieces whose sizes come from its
/// first byte, writing the replies out at every yield as the server does.
/// Checks that no call leaves more than a bounded amount of replies
/// waiting, and that a closed connection takes no more input. Returns the
/// replies.
pub fn feed(shared: &Shared, protocol: Protocol, data: &[u8]) -> Vec<u8> {
    let Some((&split, stream)) = data.split_first() else {
        return Vec::new();
    };
    let piece = usize::from(split % 64) + 1;
    let mut conn = Conn::speaking(protocol);
    let mut input = BytesMut::new();
    let mut out = Out::new();
    let mut replies = Vec::new();
    for chunk in stream.chunks(piece) {
        input.extend_from_slice(chunk);
        loop {
            let step = process_some(shared, &mut conn, &mut input, &mut out, 20);
            // One request's reply passes the mark by at most one value
            // (4 KB here) and its line.
            assert!(out.len() <= OUT_HIGH_WATER + 64 * 1024, "{} bytes waiting", out.len());
            replies.extend_from_slice(&out.to_vec());
            out.clear();
            match step {
                Step::Yield => continue,
                Step::Close => return replies,
                _ => break,
            }
        }
    }
    replies
}
