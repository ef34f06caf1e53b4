//! The binary protocol's packets: the header, the opcodes and statuses,
//! and encoding (requests, for clients and tests; replies, for the server).

use crate::protocol::Out;

/// The first byte of every binary request.
pub const REQUEST_MAGIC: u8 = 0x80;

/// The first byte of every binary response.
pub const RESPONSE_MAGIC: u8 = 0x81;

/// The length of a packet's header.
pub const HEADER_LEN: usize = 24;

/// The expiration an increment or decrement carries to say "do not create
/// the counter if it is absent".
pub const NO_VIVIFY: u32 = 0xffff_ffff;

/// The opcodes this server answers (any other is an unknown command).
pub mod opcode {
    /// Read a value.
    pub const GET: u8 = 0x00;
    /// Store a value.
    pub const SET: u8 = 0x01;
    /// Store a value if the key is absent.
    pub const ADD: u8 = 0x02;
    /// Store a value if the key is present.
    pub const REPLACE: u8 = 0x03;
    /// Remove a key.
    pub const DELETE: u8 = 0x04;
    /// Add to a counter.
    pub const INCREMENT: u8 = 0x05;
    /// Subtract from a counter (stopping at 0).
    pub const DECREMENT: u8 = 0x06;
    /// Close the connection after replying.
    pub const QUIT: u8 = 0x07;
    /// Invalidate every item (now or after a delay).
    pub const FLUSH: u8 = 0x08;
    /// [`GET`], silent on a miss.
    pub const GETQ: u8 = 0x09;
    /// Do nothing; its reply marks the end of a pipelined batch.
    pub const NOOP: u8 = 0x0a;
    /// The server's version.
    pub const VERSION: u8 = 0x0b;
    /// [`GET`], the reply carrying the key.
    pub const GETK: u8 = 0x0c;
    /// [`GETK`], silent on a miss.
    pub const GETKQ: u8 = 0x0d;
    /// Add data after a value.
    pub const APPEND: u8 = 0x0e;
    /// Add data before a value.
    pub const PREPEND: u8 = 0x0f;
    /// Statistics: one reply per name/value pair, then an empty one.
    pub const STAT: u8 = 0x10;
    /// [`SET`], silent on success.
    pub const SETQ: u8 = 0x11;
    /// [`ADD`], silent on success.
    pub const ADDQ: u8 = 0x12;
    /// [`REPLACE`], silent on success.
    pub const REPLACEQ: u8 = 0x13;
    /// [`DELETE`], silent on success.
    pub const DELETEQ: u8 = 0x14;
    /// [`INCREMENT`], silent on success.
    pub const INCREMENTQ: u8 = 0x15;
    /// [`DECREMENT`], silent on success.
    pub const DECREMENTQ: u8 = 0x16;
    /// [`QUIT`] without a reply.
    pub const QUITQ: u8 = 0x17;
    /// [`FLUSH`], silent on success.
    pub const FLUSHQ: u8 = 0x18;
    /// [`APPEND`], silent on success.
    pub const APPENDQ: u8 = 0x19;
    /// [`PREPEND`], silent on success.
    pub const PREPENDQ: u8 = 0x1a;
    /// Set the logging level (accepted and ignored).
    pub const VERBOSITY: u8 = 0x1b;
    /// Set a key's expiration.
    pub const TOUCH: u8 = 0x1c;
    /// Get and touch.
    pub const GAT: u8 = 0x1d;
    /// [`GAT`], silent on a miss.
    pub const GATQ: u8 = 0x1e;
    /// [`GAT`], the reply carrying the key.
    pub const GATK: u8 = 0x23;
    /// [`GATK`], silent on a miss.
    pub const GATKQ: u8 = 0x24;
}

/// Response status codes.
pub mod status {
    /// Success.
    pub const SUCCESS: u16 = 0x0000;
    /// The key is absent (or a CAS check found no item).
    pub const KEY_NOT_FOUND: u16 = 0x0001;
    /// The key is present (`add`) or its CAS identifier differs.
    pub const KEY_EXISTS: u16 = 0x0002;
    /// The value is larger than the item size limit.
    pub const VALUE_TOO_LARGE: u16 = 0x0003;
    /// The request's lengths or fields are not what its opcode takes.
    pub const INVALID_ARGUMENTS: u16 = 0x0004;
    /// Append or prepend to an absent key.
    pub const ITEM_NOT_STORED: u16 = 0x0005;
    /// Increment or decrement of a value that is not a number.
    pub const NON_NUMERIC: u16 = 0x0006;
    /// An opcode this server does not know.
    pub const UNKNOWN_COMMAND: u16 = 0x0081;
    /// Not allowed (memcached's answer to a flush when `-F` disabled it).
    pub const AUTH_ERROR: u16 = 0x0020;
    /// No room could be made for the item.
    pub const OUT_OF_MEMORY: u16 = 0x0082;
}

/// The 24-byte header of a request or response (integers big-endian on
/// the wire).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Header {
    /// [`REQUEST_MAGIC`] or [`RESPONSE_MAGIC`].
    pub magic: u8,
    /// The command.
    pub opcode: u8,
    /// Bytes of key in the body.
    pub key_len: u16,
    /// Bytes of extras in the body.
    pub extras_len: u8,
    /// Always 0 (raw bytes).
    pub data_type: u8,
    /// A response's status; a request's vbucket id (ignored).
    pub status: u16,
    /// Bytes of body: extras, key and value.
    pub body_len: u32,
    /// A value the client chose, echoed in the response.
    pub opaque: u32,
    /// A CAS identifier (0: none).
    pub cas: u64,
}

impl Header {
    /// The header at the front of `b`, if `b` holds one.
    pub fn parse(b: &[u8]) -> Option<Header> {
        let b: &[u8; HEADER_LEN] = b.get(..HEADER_LEN)?.try_into().ok()?;
        let u16_at = |i: usize| u16::from_be_bytes([b[i], b[i + 1]]);
        let u32_at = |i: usize| u32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        Some(Header {
            magic: b[0],
            opcode: b[1],
            key_len: u16_at(2),
            extras_len: b[4],
            data_type: b[5],
            status: u16_at(6),
            body_len: u32_at(8),
            opaque: u32_at(12),
            cas: u64::from(u32_at(16)) << 32 | u64::from(u32_at(20)),
        })
    }

    /// Appends the header's wire form to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_bytes());
    }

    /// The header's wire form.
    pub fn to_bytes(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[0] = self.magic;
        b[1] = self.opcode;
        b[2..4].copy_from_slice(&self.key_len.to_be_bytes());
        b[4] = self.extras_len;
        b[5] = self.data_type;
        b[6..8].copy_from_slice(&self.status.to_be_bytes());
        b[8..12].copy_from_slice(&self.body_len.to_be_bytes());
        b[12..16].copy_from_slice(&self.opaque.to_be_bytes());
        b[16..24].copy_from_slice(&self.cas.to_be_bytes());
        b
    }
}

/// A whole packet, its body split into extras, key and value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Packet<'a> {
    /// The header.
    pub header: Header,
    /// The extras.
    pub extras: &'a [u8],
    /// The key.
    pub key: &'a [u8],
    /// The value.
    pub value: &'a [u8],
}

impl<'a> Packet<'a> {
    /// The packet at the front of `buf` and its length in bytes; `None` if
    /// `buf` does not hold all of it, or its key and extras do not fit in
    /// its body.
    pub fn parse(buf: &'a [u8]) -> Option<(Packet<'a>, usize)> {
        let header = Header::parse(buf)?;
        let extras = usize::from(header.extras_len);
        let key = usize::from(header.key_len);
        let len = HEADER_LEN.checked_add(header.body_len as usize)?;
        if extras + key > header.body_len as usize || buf.len() < len {
            return None;
        }
        let body = &buf[HEADER_LEN..len];
        let (extras, rest) = body.split_at(extras);
        let (key, value) = rest.split_at(key);
        Some((
            Packet {
                header,
                extras,
                key,
                value,
            },
            len,
        ))
    }
}

/// Encodes a request (for clients and tests).
///
/// # Panics
///
/// If a length does not fit its header field: a key over 65,535 bytes,
/// extras over 255, or a body over 4 GiB.
pub fn request(
    opcode: u8,
    extras: &[u8],
    key: &[u8],
    value: &[u8],
    opaque: u32,
    cas: u64,
) -> Vec<u8> {
    packet(REQUEST_MAGIC, opcode, 0, opaque, cas, extras, key, value)
}

/// Encodes a packet. Panics if a length overflows its field (see
/// [`request`]; [`reply`] checks before it encodes).
#[allow(clippy::too_many_arguments)]
fn packet(
    magic: u8,
    opcode: u8,
    status: u16,
    opaque: u32,
    cas: u64,
    extras: &[u8],
    key: &[u8],
    value: &[u8],
) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_LEN + extras.len() + key.len() + value.len());
    encode(
        &mut out, magic, opcode, status, opaque, cas, extras, key, value,
    );
    out
}

/// Where a packet is encoded: a request's buffer or a connection's
/// replies.
trait Sink {
    fn put(&mut self, bytes: &[u8]);
}

impl Sink for Vec<u8> {
    fn put(&mut self, bytes: &[u8]) {
        self.extend_from_slice(bytes);
    }
}

impl Sink for Out {
    fn put(&mut self, bytes: &[u8]) {
        self.extend_from_slice(bytes);
    }
}

#[allow(clippy::too_many_arguments)]
fn encode(
    out: &mut impl Sink,
    magic: u8,
    opcode: u8,
    status: u16,
    opaque: u32,
    cas: u64,
    extras: &[u8],
    key: &[u8],
    value: &[u8],
) {
    let header = Header {
        magic,
        opcode,
        key_len: u16::try_from(key.len()).expect("key length fits 16 bits"),
        extras_len: u8::try_from(extras.len()).expect("extras length fits 8 bits"),
        data_type: 0,
        status,
        body_len: u32::try_from(extras.len() + key.len() + value.len())
            .expect("body length fits 32 bits"),
        opaque,
        cas,
    }
    .to_bytes();
    out.put(&header);
    out.put(extras);
    out.put(key);
    out.put(value);
}

/// The text an error response carries.
fn message(status: u16) -> &'static [u8] {
    match status {
        status::KEY_NOT_FOUND => b"Not found",
        status::KEY_EXISTS => b"Key exists",
        status::VALUE_TOO_LARGE => b"Too large",
        status::INVALID_ARGUMENTS => b"Invalid arguments",
        status::ITEM_NOT_STORED => b"Not stored",
        status::NON_NUMERIC => b"Non-numeric value",
        status::UNKNOWN_COMMAND => b"Unknown command",
        status::OUT_OF_MEMORY => b"Out of memory",
        status::AUTH_ERROR => b"Auth failure",
        _ => b"",
    }
}

/// Appends the reply to the request with header `h`.
pub(super) fn reply(
    out: &mut Out,
    h: &Header,
    status: u16,
    cas: u64,
    extras: &[u8],
    key: &[u8],
    value: &[u8],
) {
    // Appends may grow a value past what a packet can frame; such an item
    // cannot be sent at all.
    if extras.len() + key.len() + value.len() > u32::MAX as usize {
        return error(out, h, status::VALUE_TOO_LARGE);
    }
    encode(
        out,
        RESPONSE_MAGIC,
        h.opcode,
        status,
        h.opaque,
        cas,
        extras,
        key,
        value,
    );
}

/// Appends an error reply (no CAS, the status's message as the value).
pub(super) fn error(out: &mut Out, h: &Header, status: u16) {
    reply(out, h, status, 0, &[], &[], message(status));
}

/// The big-endian `u32` at `at`.
pub(super) fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

/// The big-endian `u64` at `at`.
pub(super) fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_be_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}
