//! memcached's three protocols over one connection's byte stream: the text
//! protocol with its meta commands, and the binary protocol (chosen by the
//! connection's first byte, as memcached does).
//!
//! A protocol step reads one request from the front of the input buffer,
//! runs it against the store and appends the reply to the output buffer;
//! the connection writes the output once the input holds no further
//! complete request, so pipelined requests cost one write.

pub mod binary;
pub mod meta;
pub mod text;

use bytes::{Buf, BytesMut};

use crate::Shared;

/// The largest request line accepted, but for retrievals.
pub const MAX_LINE: usize = 64 * 1024;

/// The largest retrieval line accepted (`get`, `gets`, `gat`, `gats`):
/// clients send multi-gets of thousands of keys on one line, which
/// memcached takes; this bounds what one connection can make the server
/// hold.
pub const MAX_RETRIEVAL_LINE: usize = 8 << 20;

/// What a step did.
#[derive(Debug, PartialEq, Eq)]
pub enum Step {
    /// A request was consumed (and answered, unless quiet).
    Done,
    /// The input holds no complete request yet.
    NeedMore,
    /// The connection must close (after the output is written).
    Close,
}

/// Which protocol a connection speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Dialect {
    Text,
    Binary,
}

/// One connection's protocol state.
#[derive(Debug, Default)]
pub struct Conn {
    dialect: Option<Dialect>,
    /// Bytes of a refused value still to be skipped.
    swallow: usize,
    /// Bytes at the front of the input known to hold no line ending (so a
    /// long line arriving in pieces is scanned once).
    scanned: usize,
}

impl Conn {
    /// A new connection.
    pub fn new() -> Conn {
        Conn::default()
    }

    /// Skips the next `n` bytes of input (the value of a refused write).
    pub fn swallow(&mut self, n: usize) {
        self.swallow = n;
    }
}

/// Runs every complete request in `input`, appending replies to `out`.
/// Returns [`Step::Close`] when the connection must close, else
/// [`Step::NeedMore`].
pub fn process(shared: &Shared, conn: &mut Conn, input: &mut BytesMut, out: &mut Vec<u8>) -> Step {
    loop {
        if conn.swallow > 0 {
            let n = conn.swallow.min(input.len());
            input.advance(n);
            conn.swallow -= n;
            if conn.swallow > 0 {
                return Step::NeedMore;
            }
        }
        let Some(&first) = input.first() else {
            return Step::NeedMore;
        };
        let dialect = *conn
            .dialect
            .get_or_insert(if first == binary::REQUEST_MAGIC {
                Dialect::Binary
            } else {
                Dialect::Text
            });
        let step = match dialect {
            Dialect::Text => text::step(shared, conn, input, out),
            Dialect::Binary => binary::step(shared, conn, input, out),
        };
        match step {
            Step::Done => continue,
            other => return other,
        }
    }
}
