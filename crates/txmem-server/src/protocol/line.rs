//! What memcached's two line-oriented protocols (text and meta) share:
//! finding a command line, checking keys, reading numbers and data blocks,
//! and the error replies clients parse.

use bytes::{Buf, Bytes, BytesMut};

use super::{Conn, Out, Step};
use crate::store::{Refused, MAX_KEY_LEN};
use crate::Shared;

/// The reply to a malformed command line.
pub const BAD_FORMAT: &[u8] = b"CLIENT_ERROR bad command line format\r\n";

/// The reply to a value over the item size limit.
pub const TOO_LARGE: &[u8] = b"SERVER_ERROR object too large for cache\r\n";

/// The reply to a data block that does not end in `\r\n`.
pub const BAD_CHUNK: &[u8] = b"CLIENT_ERROR bad data chunk\r\n";

/// The line at the front of `input`: its length without the line ending,
/// and the length with it. `None` if no full line has arrived.
pub fn line(input: &[u8]) -> Option<(usize, usize)> {
    let nl = input.iter().position(|&b| b == b'\n')?;
    let end = if nl > 0 && input[nl - 1] == b'\r' {
        nl - 1
    } else {
        nl
    };
    Some((end, nl + 1))
}

/// True if `key` is a valid key: 1 to 250 bytes, none of them a space, a
/// line ending or NUL. The protocol asks clients to avoid all control
/// characters, but memcached itself accepts them, and clients rely on it
/// (memaslap's keys start with `0x10` bytes).
pub fn valid_key(key: &[u8]) -> bool {
    !key.is_empty()
        && key.len() <= MAX_KEY_LEN
        && !key.iter().any(|&b| matches!(b, b' ' | b'\r' | b'\n' | 0))
}

/// Parses a decimal number of type `T`.
pub fn number<T: std::str::FromStr>(token: &[u8]) -> Option<T> {
    std::str::from_utf8(token).ok()?.parse().ok()
}

/// The data block after a storage line of `len` bytes (text `set` and its
/// kin, meta `ms`): `bytes` of value and `\r\n`. Returns the value (copied
/// out of the read buffer) once it has all arrived and room is made for
/// it, having consumed the line and the block; or the step to return,
/// with the error reply written. A value over the item size limit is
/// refused before it is buffered (a client announcing a huge value must
/// not make the server hold it) and skipped as it arrives; if the request
/// `replaces` a value, that value is removed too, as memcached does, so
/// that a reader does not take the old value for the new one.
#[allow(clippy::too_many_arguments)]
pub fn data_block(
    shared: &Shared,
    conn: &mut Conn,
    input: &mut BytesMut,
    len: usize,
    key: &[u8],
    bytes: usize,
    replaces: bool,
    out: &mut Out,
) -> Result<Bytes, Step> {
    if bytes > shared.store.config().max_item_size {
        input.advance(len);
        conn.swallow(bytes + 2);
        if replaces {
            shared.store.delete(key, 0);
        }
        out.extend_from_slice(TOO_LARGE);
        return Err(Step::Done);
    }
    if input.len() < len + bytes + 2 {
        input.reserve(len + bytes + 2 - input.len());
        return Err(Step::NeedMore);
    }
    let block = &input[len..len + bytes + 2];
    if &block[bytes..] != b"\r\n" {
        input.advance(len + bytes + 2);
        out.extend_from_slice(BAD_CHUNK);
        return Err(Step::Done);
    }
    // A copy, not a slice of the read buffer: a stored slice would keep
    // the whole buffer alive, outside the memory accounting.
    let data = Bytes::copy_from_slice(&block[..bytes]);
    input.advance(len + bytes + 2);
    match shared.store.admit(key.len(), bytes) {
        Ok(()) => Ok(data),
        Err(why) => {
            out.extend_from_slice(refused(why));
            Err(Step::Done)
        }
    }
}

/// The reply to a write the store refused before running it.
pub fn refused(why: Refused) -> &'static [u8] {
    match why {
        Refused::TooLarge => TOO_LARGE,
        Refused::OutOfMemory => b"SERVER_ERROR out of memory storing object\r\n",
    }
}
