//! memcached's three protocols over one connection's byte stream: the text
//! protocol with its meta commands, and the binary protocol (chosen by the
//! connection's first byte, as memcached does).
//!
//! A protocol step reads one request from the front of the input buffer,
//! runs it against the store and appends the reply to the output buffer;
//! the connection writes the output once the input holds no further
//! complete request, so pipelined requests cost one write.

pub mod binary;
pub mod line;
pub mod meta;
mod out;
pub mod text;

use bytes::{Buf, BytesMut};

pub use out::{Out, REFERENCE_MIN};

use crate::stats::bump;
use crate::Shared;

/// Replies a connection holds unsent before it stops serving requests and
/// writes them: past this mark it reads no more requests until the client
/// has taken the replies, as memcached does. One request's reply may pass
/// it by at most one value (a multi-get's reply is made in steps, see
/// [`text`]).
pub const OUT_HIGH_WATER: usize = 256 << 10;

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
    /// Replies are waiting past [`OUT_HIGH_WATER`], or the request budget
    /// is spent: write them, then call again before reading more.
    Yield,
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
    /// A multi-get whose reply is being made in steps.
    pending: Option<Box<text::PendingGet>>,
}

impl Conn {
    /// A new connection, its protocol chosen by its first byte.
    pub fn new() -> Conn {
        Conn::default()
    }

    /// A new connection speaking what `protocol` allows.
    pub fn speaking(protocol: crate::Protocol) -> Conn {
        Conn {
            dialect: match protocol {
                crate::Protocol::Auto => None,
                crate::Protocol::Ascii => Some(Dialect::Text),
                crate::Protocol::Binary => Some(Dialect::Binary),
            },
            ..Conn::default()
        }
    }

    /// Skips the next `n` bytes of input (the value of a refused write).
    pub fn swallow(&mut self, n: usize) {
        self.swallow = n;
    }
}

/// Runs every complete request in `input`, appending replies to `out`
/// however large they grow (tests, fuzzing). Returns [`Step::Close`] when
/// the connection must close, else [`Step::NeedMore`].
pub fn process(shared: &Shared, conn: &mut Conn, input: &mut BytesMut, out: &mut Out) -> Step {
    loop {
        match process_some(shared, conn, input, out, usize::MAX) {
            Step::Yield => continue,
            step => return step,
        }
    }
}

/// Runs complete requests from `input`, appending replies to `out`, until
/// the input holds no complete request ([`Step::NeedMore`]), the
/// connection must close ([`Step::Close`]), or [`Step::Yield`]: the
/// replies passed [`OUT_HIGH_WATER`], or `budget` requests ran with more
/// waiting (memcached's `-R`, counted in `conn_yields`).
pub fn process_some(
    shared: &Shared,
    conn: &mut Conn,
    input: &mut BytesMut,
    out: &mut Out,
    budget: usize,
) -> Step {
    let mut served = 0;
    loop {
        if let Some(pending) = conn.pending.take() {
            if text::resume(shared, conn, *pending, out) == Step::Yield {
                return Step::Yield;
            }
        }
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
            Step::Done => {
                served += 1;
                if out.len() >= OUT_HIGH_WATER || conn.pending.is_some() {
                    return Step::Yield;
                }
                if served >= budget && !input.is_empty() {
                    bump(&shared.stats.mine().conn_yields, 1);
                    return Step::Yield;
                }
            }
            other => return other,
        }
    }
}
