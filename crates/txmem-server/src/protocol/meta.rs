//! memcached's meta commands (`mg`, `ms`, `md`, `ma`, `mn`, `me`).

use bytes::{Buf, BytesMut};

use super::{Conn, Step};
use crate::Shared;

/// Runs the meta command whose line (`line_len` bytes with its ending) is
/// at the front of `input`.
pub fn step(
    _shared: &Shared,
    _conn: &mut Conn,
    input: &mut BytesMut,
    line_len: usize,
    out: &mut Vec<u8>,
) -> Step {
    input.advance(line_len);
    out.extend_from_slice(b"CLIENT_ERROR meta commands are not implemented yet\r\n");
    Step::Done
}
