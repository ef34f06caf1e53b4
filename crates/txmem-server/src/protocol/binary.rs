//! memcached's binary protocol.

use bytes::BytesMut;

use super::{Conn, Step};
use crate::Shared;

/// The first byte of every binary request.
pub const REQUEST_MAGIC: u8 = 0x80;

/// Runs the binary request at the front of `input`.
pub fn step(_shared: &Shared, _conn: &mut Conn, input: &mut BytesMut, out: &mut Vec<u8>) -> Step {
    let _ = input;
    out.clear();
    Step::Close
}
