//! memcached's binary protocol.
//!
//! Every packet is a 24-byte [`Header`] followed by a body of
//! `body_len` bytes: first `extras_len` bytes of command-specific extras,
//! then `key_len` bytes of key, then the value (whatever is left). Requests
//! carry [`REQUEST_MAGIC`], responses [`RESPONSE_MAGIC`] and a [`status`];
//! a response echoes its request's opcode and opaque value, and carries the
//! item's CAS identifier where there is an item.
//!
//! Quiet opcodes (the `…Q` ones) answer only on error, and quiet gets not
//! on a miss either, so a client pipelines them and ends the batch with a
//! no-op, whose reply tells it every earlier one has been answered. Replies
//! leave in request order, all of them once the input holds no further
//! complete request.
//!
//! Bad input: a request is buffered only once its body is known to be small
//! (a value within the item size limit, a key within 250 bytes, the
//! command's fixed extras); anything else is answered with an error and its
//! body skipped unread. A header whose magic is wrong, or whose key and
//! extras do not fit in its body, leaves no way to find the next request:
//! the connection is answered with an error and closed.

use std::iter;

use bytes::{Buf, Bytes, BytesMut};

use super::{Conn, Step};
use crate::report;
use crate::stats::bump;
use crate::store::{Arith, Counted, Deleted, Mode, Refused, Write, Written, MAX_KEY_LEN};
use crate::Shared;

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
        out.push(self.magic);
        out.push(self.opcode);
        out.extend_from_slice(&self.key_len.to_be_bytes());
        out.push(self.extras_len);
        out.push(self.data_type);
        out.extend_from_slice(&self.status.to_be_bytes());
        out.extend_from_slice(&self.body_len.to_be_bytes());
        out.extend_from_slice(&self.opaque.to_be_bytes());
        out.extend_from_slice(&self.cas.to_be_bytes());
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

#[allow(clippy::too_many_arguments)]
fn encode(
    out: &mut Vec<u8>,
    magic: u8,
    opcode: u8,
    status: u16,
    opaque: u32,
    cas: u64,
    extras: &[u8],
    key: &[u8],
    value: &[u8],
) {
    Header {
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
    .encode(out);
    out.extend_from_slice(extras);
    out.extend_from_slice(key);
    out.extend_from_slice(value);
}

/// What a request asks for, its quiet flag aside.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// Get (`touch`: and set the expiration; `with_key`: reply with the
    /// key).
    Get {
        touch: bool,
        with_key: bool,
    },
    Touch,
    Store(Mode),
    Delete,
    Arith {
        incr: bool,
    },
    Quit,
    Flush,
    NoOp,
    Version,
    Stat,
    Verbosity,
}

/// The command an opcode names, and whether it is quiet.
fn command(op: u8) -> Option<(Kind, bool)> {
    use opcode::*;
    let get = |touch, with_key| Kind::Get { touch, with_key };
    Some(match op {
        GET => (get(false, false), false),
        GETQ => (get(false, false), true),
        GETK => (get(false, true), false),
        GETKQ => (get(false, true), true),
        GAT => (get(true, false), false),
        GATQ => (get(true, false), true),
        GATK => (get(true, true), false),
        GATKQ => (get(true, true), true),
        TOUCH => (Kind::Touch, false),
        SET => (Kind::Store(Mode::Set), false),
        SETQ => (Kind::Store(Mode::Set), true),
        ADD => (Kind::Store(Mode::Add), false),
        ADDQ => (Kind::Store(Mode::Add), true),
        REPLACE => (Kind::Store(Mode::Replace), false),
        REPLACEQ => (Kind::Store(Mode::Replace), true),
        APPEND => (Kind::Store(Mode::Append), false),
        APPENDQ => (Kind::Store(Mode::Append), true),
        PREPEND => (Kind::Store(Mode::Prepend), false),
        PREPENDQ => (Kind::Store(Mode::Prepend), true),
        DELETE => (Kind::Delete, false),
        DELETEQ => (Kind::Delete, true),
        INCREMENT => (Kind::Arith { incr: true }, false),
        INCREMENTQ => (Kind::Arith { incr: true }, true),
        DECREMENT => (Kind::Arith { incr: false }, false),
        DECREMENTQ => (Kind::Arith { incr: false }, true),
        QUIT => (Kind::Quit, false),
        QUITQ => (Kind::Quit, true),
        FLUSH => (Kind::Flush, false),
        FLUSHQ => (Kind::Flush, true),
        NOOP => (Kind::NoOp, false),
        VERSION => (Kind::Version, false),
        STAT => (Kind::Stat, false),
        VERBOSITY => (Kind::Verbosity, false),
        _ => return None,
    })
}

/// True if a request of `kind` may have these lengths: the extras its
/// opcode takes, a key where it needs one (none where it takes none), and a
/// value only for storage commands.
fn well_formed(kind: Kind, extras: usize, key: usize, value: usize) -> bool {
    if key > MAX_KEY_LEN {
        return false;
    }
    let keyed = key > 0;
    match kind {
        Kind::Get { touch: false, .. } | Kind::Delete => extras == 0 && keyed && value == 0,
        Kind::Get { touch: true, .. } | Kind::Touch => extras == 4 && keyed && value == 0,
        Kind::Store(Mode::Set | Mode::Add | Mode::Replace) => extras == 8 && keyed,
        Kind::Store(Mode::Append | Mode::Prepend) => extras == 0 && keyed,
        Kind::Arith { .. } => extras == 20 && keyed && value == 0,
        Kind::Quit | Kind::NoOp | Kind::Version => extras == 0 && !keyed && value == 0,
        Kind::Flush => (extras == 0 || extras == 4) && !keyed && value == 0,
        Kind::Verbosity => extras == 4 && !keyed && value == 0,
        Kind::Stat => extras == 0 && value == 0,
    }
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
        _ => b"",
    }
}

/// Appends the reply to the request with header `h`.
fn reply(
    out: &mut Vec<u8>,
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
fn error(out: &mut Vec<u8>, h: &Header, status: u16) {
    reply(out, h, status, 0, &[], &[], message(status));
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_be_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// Runs the binary request at the front of `input`.
pub fn step(shared: &Shared, conn: &mut Conn, input: &mut BytesMut, out: &mut Vec<u8>) -> Step {
    let Some(h) = Header::parse(input) else {
        return Step::NeedMore;
    };
    let body = h.body_len as usize;
    let (extras_len, key_len) = (usize::from(h.extras_len), usize::from(h.key_len));
    if h.magic != REQUEST_MAGIC || extras_len + key_len > body {
        // The framing cannot be trusted: nothing says where the next
        // request starts.
        error(out, &h, status::INVALID_ARGUMENTS);
        return Step::Close;
    }
    let value_len = body - extras_len - key_len;
    let Some((kind, quiet)) = command(h.opcode) else {
        return refuse(conn, input, out, &h, status::UNKNOWN_COMMAND);
    };
    if !well_formed(kind, extras_len, key_len, value_len) {
        return refuse(conn, input, out, &h, status::INVALID_ARGUMENTS);
    }
    if matches!(kind, Kind::Store(_)) && value_len > shared.store.config().max_item_size {
        return refuse(conn, input, out, &h, status::VALUE_TOO_LARGE);
    }
    let total = HEADER_LEN + body;
    if input.len() < total {
        // Bounded: a value within the item size limit, a key within 250
        // bytes, at most 20 bytes of extras.
        input.reserve(total - input.len());
        return Step::NeedMore;
    }
    let packet = &input[HEADER_LEN..total];
    let (extras, rest) = packet.split_at(extras_len);
    let (key, value) = rest.split_at(key_len);
    let request = Request {
        h: &h,
        quiet,
        extras,
        key,
        value,
    };
    let step = run(shared, kind, &request, out);
    input.advance(total);
    step
}

/// Answers the request with header `h` with an error before its body is
/// buffered, and skips the body as it arrives: an announced length never
/// makes the server hold that many bytes.
fn refuse(
    conn: &mut Conn,
    input: &mut BytesMut,
    out: &mut Vec<u8>,
    h: &Header,
    status: u16,
) -> Step {
    input.advance(HEADER_LEN);
    conn.swallow(h.body_len as usize);
    error(out, h, status);
    Step::Done
}

/// A request whose whole body has arrived.
struct Request<'a> {
    h: &'a Header,
    quiet: bool,
    extras: &'a [u8],
    key: &'a [u8],
    value: &'a [u8],
}

fn run(shared: &Shared, kind: Kind, r: &Request<'_>, out: &mut Vec<u8>) -> Step {
    let h = r.h;
    let counters = shared.stats.mine();
    match kind {
        Kind::Get { touch, with_key } => {
            let exptime = touch.then(|| i64::from(u32_at(r.extras, 0)));
            let hit =
                0 < shared
                    .store
                    .get_many(iter::once(r.key), exptime, out, |out, key, item| {
                        let key = if with_key { key } else { &[] };
                        reply(
                            out,
                            h,
                            status::SUCCESS,
                            item.cas,
                            &item.flags.to_be_bytes(),
                            key,
                            &item.data,
                        );
                    });
            bump(&counters.cmd_get, 1);
            bump(
                if hit {
                    &counters.get_hits
                } else {
                    &counters.get_misses
                },
                1,
            );
            if touch {
                bump(&counters.cmd_touch, 1);
                bump(
                    if hit {
                        &counters.touch_hits
                    } else {
                        &counters.touch_misses
                    },
                    1,
                );
            }
            if !hit && !r.quiet {
                if with_key {
                    // A keyed miss names its key, so that a client that
                    // pipelined several can tell which one missed.
                    reply(out, h, status::KEY_NOT_FOUND, 0, &[], r.key, &[]);
                } else {
                    error(out, h, status::KEY_NOT_FOUND);
                }
            }
        }
        Kind::Touch => {
            bump(&counters.cmd_touch, 1);
            match shared.store.touch(r.key, i64::from(u32_at(r.extras, 0))) {
                Some(item) => {
                    bump(&counters.touch_hits, 1);
                    reply(
                        out,
                        h,
                        status::SUCCESS,
                        item.cas,
                        &item.flags.to_be_bytes(),
                        &[],
                        &[],
                    );
                }
                None => {
                    bump(&counters.touch_misses, 1);
                    error(out, h, status::KEY_NOT_FOUND);
                }
            }
        }
        Kind::Store(mode) => store(shared, mode, r, out),
        Kind::Delete => match shared.store.delete(r.key, h.cas) {
            Deleted::Deleted => {
                bump(&counters.delete_hits, 1);
                if !r.quiet {
                    reply(out, h, status::SUCCESS, 0, &[], &[], &[]);
                }
            }
            Deleted::NotFound => {
                bump(&counters.delete_misses, 1);
                error(out, h, status::KEY_NOT_FOUND);
            }
            Deleted::Exists => error(out, h, status::KEY_EXISTS),
        },
        Kind::Arith { incr } => arith(shared, incr, r, out),
        Kind::Quit => {
            if !r.quiet {
                reply(out, h, status::SUCCESS, 0, &[], &[], &[]);
            }
            return Step::Close;
        }
        Kind::Flush => {
            let delay = if r.extras.is_empty() {
                0
            } else {
                u32_at(r.extras, 0)
            };
            bump(&counters.cmd_flush, 1);
            shared.store.flush_all(i64::from(delay));
            if !r.quiet {
                reply(out, h, status::SUCCESS, 0, &[], &[], &[]);
            }
        }
        Kind::NoOp | Kind::Verbosity => reply(out, h, status::SUCCESS, 0, &[], &[], &[]),
        Kind::Version => reply(
            out,
            h,
            status::SUCCESS,
            0,
            &[],
            &[],
            crate::VERSION.as_bytes(),
        ),
        Kind::Stat => {
            if r.key == b"reset" {
                shared.reset_stats();
            } else {
                let Some(lines) = report::group(shared, r.key) else {
                    error(out, h, status::KEY_NOT_FOUND);
                    return Step::Done;
                };
                for (name, value) in lines {
                    reply(
                        out,
                        h,
                        status::SUCCESS,
                        0,
                        &[],
                        name.as_bytes(),
                        value.as_bytes(),
                    );
                }
            }
            // An empty reply ends the list.
            reply(out, h, status::SUCCESS, 0, &[], &[], &[]);
        }
    }
    Step::Done
}

/// Set, add, replace, append and prepend.
fn store(shared: &Shared, mode: Mode, r: &Request<'_>, out: &mut Vec<u8>) {
    let h = r.h;
    let (flags, exptime) = if r.extras.len() == 8 {
        (u32_at(r.extras, 0), i64::from(u32_at(r.extras, 4)))
    } else {
        (0, 0)
    };
    if let Err(why) = shared.store.admit(r.key.len(), r.value.len()) {
        error(
            out,
            h,
            match why {
                Refused::TooLarge => status::VALUE_TOO_LARGE,
                Refused::OutOfMemory => status::OUT_OF_MEMORY,
            },
        );
        return;
    }
    // A copy, not a slice of the read buffer: a stored slice would keep
    // the whole buffer alive, outside the memory accounting.
    let data = Bytes::copy_from_slice(r.value);
    let written = shared.store.write(&Write {
        flags,
        exptime,
        cas: h.cas,
        ..Write::new(mode, r.key, data)
    });
    let counters = shared.stats.mine();
    bump(&counters.cmd_set, 1);
    if h.cas != 0 {
        bump(
            match written {
                Written::Stored(_) => &counters.cas_hits,
                Written::Exists => &counters.cas_badval,
                _ => &counters.cas_misses,
            },
            1,
        );
    }
    match written {
        Written::Stored(item) => {
            if !r.quiet {
                reply(out, h, status::SUCCESS, item.cas, &[], &[], &[]);
            }
        }
        // The binary protocol names why the mode's condition failed.
        Written::NotStored => error(
            out,
            h,
            match mode {
                Mode::Add => status::KEY_EXISTS,
                Mode::Replace => status::KEY_NOT_FOUND,
                _ => status::ITEM_NOT_STORED,
            },
        ),
        Written::Exists => error(out, h, status::KEY_EXISTS),
        Written::NotFound => error(out, h, status::KEY_NOT_FOUND),
        Written::TooLarge => error(out, h, status::VALUE_TOO_LARGE),
    }
}

/// Increment and decrement: extras are the delta, the initial value and the
/// expiration of a counter created for an absent key ([`NO_VIVIFY`]: do not
/// create one).
fn arith(shared: &Shared, incr: bool, r: &Request<'_>, out: &mut Vec<u8>) {
    let h = r.h;
    let delta = u64_at(r.extras, 0);
    let initial = u64_at(r.extras, 8);
    let expiration = u32_at(r.extras, 16);
    let vivify = (expiration != NO_VIVIFY).then_some((initial, i64::from(expiration)));
    if vivify.is_some() {
        // Room for a counter of at most 20 digits, should one be created.
        if let Err(why) = shared.store.admit(r.key.len(), 20) {
            error(
                out,
                h,
                match why {
                    Refused::TooLarge => status::VALUE_TOO_LARGE,
                    Refused::OutOfMemory => status::OUT_OF_MEMORY,
                },
            );
            return;
        }
    }
    let counted = shared.store.arith(&Arith {
        key: r.key,
        incr,
        delta,
        cas: h.cas,
        vivify,
        touch: None,
    });
    let counters = shared.stats.mine();
    let (hits, misses) = counters.arith(incr);
    match counted {
        Counted::Value {
            value,
            item,
            created,
        } => {
            // A created counter was a miss: the key was absent.
            bump(if created { misses } else { hits }, 1);
            if !r.quiet {
                reply(
                    out,
                    h,
                    status::SUCCESS,
                    item.cas,
                    &[],
                    &[],
                    &value.to_be_bytes(),
                );
            }
        }
        Counted::NotFound => {
            bump(misses, 1);
            error(out, h, status::KEY_NOT_FOUND);
        }
        Counted::NonNumeric => error(out, h, status::NON_NUMERIC),
        Counted::Exists => error(out, h, status::KEY_EXISTS),
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::opcode::*;
    use super::status::*;
    use super::*;
    use crate::protocol::process;
    use crate::store::RELATIVE_LIMIT;
    use crate::Settings;

    /// A response, owned.
    #[derive(Debug, Clone, PartialEq, Eq)]
    struct Resp {
        h: Header,
        extras: Vec<u8>,
        key: Vec<u8>,
        value: Vec<u8>,
    }

    impl Resp {
        fn status(&self) -> u16 {
            self.h.status
        }
    }

    /// Splits `out` into response packets, asserting it is nothing else.
    fn responses(mut out: &[u8]) -> Vec<Resp> {
        let mut all = Vec::new();
        while !out.is_empty() {
            let (p, len) = Packet::parse(out).expect("a whole response packet");
            assert_eq!(p.header.magic, RESPONSE_MAGIC);
            assert_eq!(p.header.data_type, 0);
            all.push(Resp {
                h: p.header,
                extras: p.extras.to_vec(),
                key: p.key.to_vec(),
                value: p.value.to_vec(),
            });
            out = &out[len..];
        }
        all
    }

    fn settings() -> Settings {
        Settings {
            threads: 1,
            memory_mb: 4,
            max_item_size: 64 << 10,
            ..Default::default()
        }
    }

    /// One connection to a fresh server state.
    struct Client {
        shared: Shared,
        conn: Conn,
        input: BytesMut,
    }

    impl Client {
        fn new() -> Client {
            Client {
                shared: Shared::new(settings()),
                conn: Conn::new(),
                input: BytesMut::new(),
            }
        }

        /// Feeds `bytes`; returns the replies and the step.
        fn feed(&mut self, bytes: &[u8]) -> (Vec<Resp>, Step) {
            self.input.extend_from_slice(bytes);
            let mut out = Vec::new();
            let step = process(&self.shared, &mut self.conn, &mut self.input, &mut out);
            (responses(&out), step)
        }

        /// Sends one request and returns its replies (the connection stays
        /// open).
        fn call(&mut self, req: &[u8]) -> Vec<Resp> {
            let (r, step) = self.feed(req);
            assert_eq!(step, Step::NeedMore);
            r
        }

        /// Sends one request that must get exactly one reply.
        fn one(&mut self, req: &[u8]) -> Resp {
            let mut r = self.call(req);
            assert_eq!(r.len(), 1, "replies: {r:?}");
            r.pop().unwrap()
        }

        fn set(&mut self, key: &[u8], value: &[u8], flags: u32) -> u64 {
            let r = self.one(&store_req(SET, key, value, flags, 0, 0));
            assert_eq!(r.status(), SUCCESS);
            r.h.cas
        }

        fn get(&mut self, key: &[u8]) -> Resp {
            self.one(&request(GET, &[], key, &[], 0, 0))
        }

        fn totals(&self) -> crate::stats::Totals {
            self.shared.stats.totals()
        }
    }

    fn store_req(op: u8, key: &[u8], value: &[u8], flags: u32, exptime: u32, cas: u64) -> Vec<u8> {
        let mut extras = flags.to_be_bytes().to_vec();
        extras.extend_from_slice(&exptime.to_be_bytes());
        request(op, &extras, key, value, 7, cas)
    }

    fn arith_req(op: u8, key: &[u8], delta: u64, initial: u64, exp: u32) -> Vec<u8> {
        let mut extras = delta.to_be_bytes().to_vec();
        extras.extend_from_slice(&initial.to_be_bytes());
        extras.extend_from_slice(&exp.to_be_bytes());
        request(op, &extras, key, &[], 9, 0)
    }

    fn counter(r: &Resp) -> u64 {
        u64::from_be_bytes(r.value[..].try_into().expect("an 8-byte counter"))
    }

    #[test]
    fn headers_round_trip() {
        let req = request(
            SET,
            b"12345678",
            b"key",
            b"value",
            0xdead_beef,
            0x0102_0304_0506_0708,
        );
        let (p, len) = Packet::parse(&req).unwrap();
        assert_eq!(len, req.len());
        assert_eq!(p.header.magic, REQUEST_MAGIC);
        assert_eq!(p.header.body_len, 16);
        assert_eq!(p.header.cas, 0x0102_0304_0506_0708);
        assert_eq!(
            (p.extras, p.key, p.value),
            (&b"12345678"[..], &b"key"[..], &b"value"[..])
        );
        let mut again = Vec::new();
        p.header.encode(&mut again);
        assert_eq!(again, req[..HEADER_LEN]);
        assert!(Packet::parse(&req[..req.len() - 1]).is_none());
    }

    #[test]
    fn storage_opcodes_and_their_statuses() {
        let mut c = Client::new();
        let cas = c.set(b"a", b"abc", 5);
        assert_ne!(cas, 0);
        let r = c.get(b"a");
        assert_eq!(r.status(), SUCCESS);
        assert_eq!(r.h.opaque, 0);
        assert_eq!(
            (r.extras, r.key, r.value),
            (5u32.to_be_bytes().to_vec(), vec![], b"abc".to_vec())
        );
        assert_eq!(r.h.cas, cas);
        // Add of a present key: exists; of an absent one: stored.
        assert_eq!(
            c.one(&store_req(ADD, b"a", b"x", 0, 0, 0)).status(),
            KEY_EXISTS
        );
        let r = c.one(&store_req(ADD, b"b", b"x", 0, 0, 0));
        assert_eq!((r.status(), r.h.opaque, r.h.opcode), (SUCCESS, 7, ADD));
        assert!(r.h.cas != 0 && r.value.is_empty());
        // Replace of an absent key: not found.
        assert_eq!(
            c.one(&store_req(REPLACE, b"nope", b"x", 0, 0, 0)).status(),
            KEY_NOT_FOUND
        );
        assert_eq!(
            c.one(&store_req(REPLACE, b"b", b"yy", 8, 0, 0)).status(),
            SUCCESS
        );
        assert_eq!(c.get(b"b").value, b"yy");
        // Append and prepend keep the flags; to an absent key: not stored.
        assert_eq!(
            c.one(&request(APPEND, &[], b"a", b"de", 0, 0)).status(),
            SUCCESS
        );
        assert_eq!(
            c.one(&request(PREPEND, &[], b"a", b"__", 0, 0)).status(),
            SUCCESS
        );
        let r = c.get(b"a");
        assert_eq!(
            (r.value, r.extras),
            (b"__abcde".to_vec(), 5u32.to_be_bytes().to_vec())
        );
        assert_eq!(
            c.one(&request(APPEND, &[], b"nope", b"x", 0, 0)).status(),
            ITEM_NOT_STORED
        );
        assert_eq!(
            c.one(&request(PREPEND, &[], b"nope", b"x", 0, 0)).status(),
            ITEM_NOT_STORED
        );
        // An empty value is a value.
        c.set(b"empty", b"", 0);
        assert_eq!(c.get(b"empty").status(), SUCCESS);
        let t = c.totals();
        assert_eq!(t.cmd_set, 10);
    }

    #[test]
    fn retrieval_opcodes() {
        let mut c = Client::new();
        let cas = c.set(b"k", b"v", 3);
        let r = c.one(&request(GETK, &[], b"k", &[], 1, 0));
        assert_eq!(
            (r.status(), r.key, r.value, r.h.cas),
            (SUCCESS, b"k".to_vec(), b"v".to_vec(), cas)
        );
        // Misses: GET says not found with no key; GETK names the key.
        let r = c.get(b"missing");
        assert_eq!(
            (r.status(), r.key.len(), r.extras.len(), r.h.cas),
            (KEY_NOT_FOUND, 0, 0, 0)
        );
        let r = c.one(&request(GETK, &[], b"missing", &[], 1, 0));
        assert_eq!((r.status(), r.key), (KEY_NOT_FOUND, b"missing".to_vec()));
        // Quiet gets: a hit replies, a miss does not.
        assert_eq!(c.one(&request(GETQ, &[], b"k", &[], 1, 0)).value, b"v");
        assert!(c
            .call(&request(GETQ, &[], b"missing", &[], 1, 0))
            .is_empty());
        assert_eq!(c.one(&request(GETKQ, &[], b"k", &[], 1, 0)).key, b"k");
        assert!(c
            .call(&request(GETKQ, &[], b"missing", &[], 1, 0))
            .is_empty());
        let t = c.totals();
        assert_eq!((t.cmd_get, t.get_hits, t.get_misses), (7, 3, 4));
    }

    #[test]
    fn touch_and_gat() {
        let mut c = Client::new();
        let cas = c.set(b"k", b"v", 4);
        let exp = 100u32.to_be_bytes();
        let r = c.one(&request(TOUCH, &exp, b"k", &[], 1, 0));
        assert_eq!(
            (r.status(), r.extras, r.value.len(), r.h.cas),
            (SUCCESS, 4u32.to_be_bytes().to_vec(), 0, cas)
        );
        assert_eq!(
            c.one(&request(TOUCH, &exp, b"nope", &[], 1, 0)).status(),
            KEY_NOT_FOUND
        );
        let r = c.one(&request(GAT, &exp, b"k", &[], 1, 0));
        assert_eq!(
            (r.status(), r.key.len(), r.value),
            (SUCCESS, 0, b"v".to_vec())
        );
        let r = c.one(&request(GATK, &exp, b"k", &[], 1, 0));
        assert_eq!((r.key, r.value), (b"k".to_vec(), b"v".to_vec()));
        assert_eq!(c.one(&request(GATQ, &exp, b"k", &[], 1, 0)).value, b"v");
        assert_eq!(c.one(&request(GATKQ, &exp, b"k", &[], 1, 0)).key, b"k");
        assert!(c.call(&request(GATQ, &exp, b"nope", &[], 1, 0)).is_empty());
        assert!(c.call(&request(GATKQ, &exp, b"nope", &[], 1, 0)).is_empty());
        assert_eq!(
            c.one(&request(GAT, &exp, b"nope", &[], 1, 0)).status(),
            KEY_NOT_FOUND
        );
        // A past absolute time expires the item at once.
        assert_eq!(
            c.one(&request(
                TOUCH,
                &(RELATIVE_LIMIT as u32 + 1).to_be_bytes(),
                b"k",
                &[],
                1,
                0
            ))
            .status(),
            SUCCESS
        );
        assert_eq!(c.get(b"k").status(), KEY_NOT_FOUND);
        let t = c.totals();
        assert_eq!((t.cmd_touch, t.touch_hits, t.touch_misses), (10, 6, 4));
    }

    #[test]
    fn delete_and_its_cas() {
        let mut c = Client::new();
        let cas = c.set(b"k", b"v", 0);
        assert_eq!(
            c.one(&request(DELETE, &[], b"k", &[], 1, cas + 1)).status(),
            KEY_EXISTS
        );
        let r = c.one(&request(DELETE, &[], b"k", &[], 1, cas));
        assert_eq!((r.status(), r.h.cas), (SUCCESS, 0));
        assert_eq!(
            c.one(&request(DELETE, &[], b"k", &[], 1, 0)).status(),
            KEY_NOT_FOUND
        );
        c.set(b"k", b"v", 0);
        assert!(c.call(&request(DELETEQ, &[], b"k", &[], 1, 0)).is_empty());
        assert_eq!(
            c.one(&request(DELETEQ, &[], b"k", &[], 1, 0)).status(),
            KEY_NOT_FOUND
        );
        let t = c.totals();
        assert_eq!((t.delete_hits, t.delete_misses), (2, 2));
    }

    #[test]
    fn cas_mismatch_and_cas_on_an_absent_key() {
        let mut c = Client::new();
        let cas = c.set(b"k", b"1", 0);
        for op in [SET, REPLACE] {
            assert_eq!(
                c.one(&store_req(op, b"k", b"x", 0, 0, cas + 1)).status(),
                KEY_EXISTS
            );
        }
        for op in [APPEND, PREPEND] {
            assert_eq!(
                c.one(&request(op, &[], b"k", b"x", 0, cas + 1)).status(),
                KEY_EXISTS
            );
        }
        let r = c.one(&store_req(SET, b"k", b"2", 0, 0, cas));
        assert_eq!(r.status(), SUCCESS);
        assert_ne!(r.h.cas, cas);
        // The old identifier is stale now.
        assert_eq!(
            c.one(&store_req(SET, b"k", b"3", 0, 0, cas)).status(),
            KEY_EXISTS
        );
        assert_eq!(
            c.one(&store_req(SET, b"absent", b"3", 0, 0, cas)).status(),
            KEY_NOT_FOUND
        );
        // Quiet: an error still replies.
        assert_eq!(
            c.one(&store_req(SETQ, b"k", b"3", 0, 0, cas)).status(),
            KEY_EXISTS
        );
        let t = c.totals();
        assert_eq!((t.cas_hits, t.cas_badval, t.cas_misses), (1, 6, 1));
        assert_eq!(c.get(b"k").value, b"2");
    }

    #[test]
    fn incr_and_decr_with_initial_values() {
        let mut c = Client::new();
        // Absent: created with the initial value (the delta is not applied).
        let r = c.one(&arith_req(INCREMENT, b"n", 5, 10, 0));
        assert_eq!((r.status(), counter(&r), r.h.opaque), (SUCCESS, 10, 9));
        assert_ne!(r.h.cas, 0);
        assert_eq!(counter(&c.one(&arith_req(INCREMENT, b"n", 5, 10, 0))), 15);
        assert_eq!(c.get(b"n").value, b"15");
        assert_eq!(counter(&c.one(&arith_req(DECREMENT, b"n", 20, 0, 0))), 0);
        // Wraps at 2^64 going up.
        c.set(b"big", b"18446744073709551615", 0);
        assert_eq!(counter(&c.one(&arith_req(INCREMENT, b"big", 2, 0, 0))), 1);
        // Do-not-create expiration: absent is not found.
        assert_eq!(
            c.one(&arith_req(INCREMENT, b"absent", 1, 0, NO_VIVIFY))
                .status(),
            KEY_NOT_FOUND
        );
        assert_eq!(
            c.one(&arith_req(DECREMENTQ, b"absent", 1, 0, NO_VIVIFY))
                .status(),
            KEY_NOT_FOUND
        );
        c.set(b"text", b"abc", 0);
        assert_eq!(
            c.one(&arith_req(INCREMENT, b"text", 1, 0, 0)).status(),
            NON_NUMERIC
        );
        // Quiet success is silent.
        assert!(c.call(&arith_req(INCREMENTQ, b"q", 1, 7, 0)).is_empty());
        assert!(c.call(&arith_req(DECREMENTQ, b"q", 2, 0, 0)).is_empty());
        assert_eq!(c.get(b"q").value, b"5");
        // With a CAS identifier in the header.
        let cas = c.get(b"q").h.cas;
        let mut req = arith_req(INCREMENT, b"q", 1, 0, 0);
        req[16..24].copy_from_slice(&(cas + 1).to_be_bytes());
        assert_eq!(c.one(&req).status(), KEY_EXISTS);
        req[16..24].copy_from_slice(&cas.to_be_bytes());
        assert_eq!(counter(&c.one(&req)), 6);
        let t = c.totals();
        assert_eq!(
            (t.incr_hits, t.incr_misses, t.decr_hits, t.decr_misses),
            (3, 3, 2, 1)
        );
    }

    #[test]
    fn quiet_storage_replies_only_on_error() {
        let mut c = Client::new();
        assert!(c.call(&store_req(SETQ, b"a", b"1", 0, 0, 0)).is_empty());
        assert!(c.call(&store_req(ADDQ, b"b", b"1", 0, 0, 0)).is_empty());
        assert_eq!(
            c.one(&store_req(ADDQ, b"b", b"1", 0, 0, 0)).status(),
            KEY_EXISTS
        );
        assert!(c.call(&store_req(REPLACEQ, b"b", b"2", 0, 0, 0)).is_empty());
        assert_eq!(
            c.one(&store_req(REPLACEQ, b"c", b"2", 0, 0, 0)).status(),
            KEY_NOT_FOUND
        );
        assert!(c.call(&request(APPENDQ, &[], b"b", b"3", 0, 0)).is_empty());
        assert!(c.call(&request(PREPENDQ, &[], b"b", b"1", 0, 0)).is_empty());
        let r = c.one(&request(APPENDQ, &[], b"c", b"3", 0, 0));
        assert_eq!((r.status(), r.h.opcode), (ITEM_NOT_STORED, APPENDQ));
        assert_eq!(c.get(b"b").value, b"123");
        assert!(c.call(&request(FLUSHQ, &[], &[], &[], 0, 0)).is_empty());
        assert_eq!(c.get(b"b").status(), KEY_NOT_FOUND);
    }

    #[test]
    fn pipelined_quiet_gets_end_with_a_noop() {
        let mut c = Client::new();
        c.set(b"a", b"1", 0);
        c.set(b"c", b"3", 0);
        let mut batch = Vec::new();
        for (i, k) in [b"a", b"b", b"c", b"d"].iter().enumerate() {
            batch.extend(request(GETKQ, &[], &k[..], &[], i as u32, 0));
        }
        batch.extend(request(NOOP, &[], &[], &[], 99, 0));
        // In pieces, as a network would deliver them.
        let (mut got, mut step) = (Vec::new(), Step::NeedMore);
        for piece in batch.chunks(7) {
            let (r, s) = c.feed(piece);
            got.extend(r);
            step = s;
        }
        assert_eq!(step, Step::NeedMore);
        let seen: Vec<(u8, Vec<u8>, u32)> = got
            .iter()
            .map(|r| (r.h.opcode, r.key.clone(), r.h.opaque))
            .collect();
        assert_eq!(
            seen,
            vec![
                (GETKQ, b"a".to_vec(), 0),
                (GETKQ, b"c".to_vec(), 2),
                (NOOP, vec![], 99)
            ]
        );
        assert_eq!(got[1].value, b"3");
    }

    #[test]
    fn quit_flush_noop_version_verbosity() {
        let mut c = Client::new();
        let r = c.one(&request(NOOP, &[], &[], &[], 5, 0));
        assert_eq!(
            (r.status(), r.h.opaque, r.h.cas, r.h.body_len),
            (SUCCESS, 5, 0, 0)
        );
        let r = c.one(&request(VERSION, &[], &[], &[], 0, 0));
        assert_eq!(r.value, crate::VERSION.as_bytes());
        let r = c.one(&request(VERBOSITY, &1u32.to_be_bytes(), &[], &[], 0, 0));
        assert_eq!(r.status(), SUCCESS);
        c.set(b"k", b"v", 0);
        let r = c.one(&request(FLUSH, &[], &[], &[], 0, 0));
        assert_eq!((r.status(), r.h.cas), (SUCCESS, 0));
        assert_eq!(c.get(b"k").status(), KEY_NOT_FOUND);
        // A delayed flush leaves items until then.
        c.set(b"k", b"v", 0);
        assert_eq!(
            c.one(&request(FLUSH, &1000u32.to_be_bytes(), &[], &[], 0, 0))
                .status(),
            SUCCESS
        );
        assert_eq!(c.get(b"k").status(), SUCCESS);
        assert_eq!(c.totals().cmd_flush, 2);
        let (r, step) = c.feed(&request(QUIT, &[], &[], &[], 3, 0));
        assert_eq!((r.len(), r[0].status(), step), (1, SUCCESS, Step::Close));
        let mut c = Client::new();
        let (r, step) = c.feed(&request(QUITQ, &[], &[], &[], 3, 0));
        assert_eq!((r.len(), step), (0, Step::Close));
    }

    #[test]
    fn stat_groups() {
        let mut c = Client::new();
        c.set(b"k", b"v", 0);
        c.get(b"k");
        let general = c.call(&request(STAT, &[], &[], &[], 4, 0));
        let last = general.last().unwrap();
        assert!(last.key.is_empty() && last.value.is_empty());
        assert!(general
            .iter()
            .all(|r| r.status() == SUCCESS && r.h.opaque == 4 && r.h.cas == 0));
        let find =
            |rs: &[Resp], name: &[u8]| rs.iter().find(|r| r.key == name).map(|r| r.value.clone());
        assert_eq!(find(&general, b"cmd_get"), Some(b"1".to_vec()));
        assert_eq!(find(&general, b"curr_items"), Some(b"1".to_vec()));
        for group in [&b"items"[..], b"slabs", b"settings", b"txmem"] {
            let rs = c.call(&request(STAT, &[], group, &[], 0, 0));
            assert!(rs.len() > 1, "{group:?}");
        }
        let rs = c.call(&request(STAT, &[], b"settings", &[], 0, 0));
        assert_eq!(find(&rs, b"item_size_max"), Some(b"65536".to_vec()));
        let rs = c.call(&request(STAT, &[], b"reset", &[], 0, 0));
        assert_eq!(rs.len(), 1);
        assert_eq!(c.totals().cmd_get, 0);
        assert_eq!(
            c.one(&request(STAT, &[], b"bogus", &[], 0, 0)).status(),
            KEY_NOT_FOUND
        );
    }

    #[test]
    fn unknown_and_misshapen_requests_get_errors_and_the_connection_goes_on() {
        let mut c = Client::new();
        // Unknown opcodes (SASL among them), body skipped.
        for op in [0x20u8, 0x21, 0x30, 0xff] {
            let r = c.one(&request(op, &[1, 2], b"key", b"value", 1, 0));
            assert_eq!((r.status(), r.h.opcode, r.h.cas), (UNKNOWN_COMMAND, op, 0));
        }
        let bad: Vec<Vec<u8>> = vec![
            request(GET, &[0; 4], b"k", &[], 0, 0),     // extras on a get
            request(GET, &[], &[], &[], 0, 0),          // no key
            request(GET, &[], b"k", b"v", 0, 0),        // a value on a get
            request(SET, &[0; 4], b"k", b"v", 0, 0),    // short extras
            request(APPEND, &[0; 8], b"k", b"v", 0, 0), // extras on append
            request(INCREMENT, &[0; 8], b"k", &[], 0, 0),
            request(TOUCH, &[], b"k", &[], 0, 0),
            request(NOOP, &[], b"k", &[], 0, 0),
            request(FLUSH, &[0; 2], &[], &[], 0, 0),
            request(VERBOSITY, &[], &[], &[], 0, 0),
            request(STAT, &[], b"k", b"v", 0, 0),
            request(GET, &[], &[b'k'; 251], &[], 0, 0), // key too long
        ];
        for req in &bad {
            let r = c.one(req);
            assert_eq!(
                (r.status(), r.h.cas, r.extras.len()),
                (INVALID_ARGUMENTS, 0, 0),
                "{req:?}"
            );
        }
        // Still in step.
        c.set(b"k", b"v", 0);
        assert_eq!(c.get(b"k").value, b"v");
        assert_eq!(c.get(&[b'k'; 250]).status(), KEY_NOT_FOUND);
    }

    #[test]
    fn broken_framing_closes_the_connection() {
        let mut c = Client::new();
        c.set(b"k", b"v", 0);
        let mut req = request(GET, &[], b"k", &[], 0, 0);
        req[0] = 0x81;
        let (r, step) = c.feed(&req);
        assert_eq!(
            (r.len(), r[0].status(), step),
            (1, INVALID_ARGUMENTS, Step::Close)
        );
        // Key and extras longer than the body.
        let mut c = Client::new();
        let mut req = request(GET, &[], b"key", &[], 0, 0);
        req[8..12].copy_from_slice(&2u32.to_be_bytes());
        let (r, step) = c.feed(&req);
        assert_eq!((r[0].status(), step), (INVALID_ARGUMENTS, Step::Close));
    }

    #[test]
    fn incomplete_requests_wait() {
        let mut c = Client::new();
        let req = store_req(SET, b"k", b"value", 0, 0, 0);
        for i in 0..req.len() - 1 {
            let (r, step) = c.feed(&req[i..i + 1]);
            assert!(r.is_empty() && step == Step::NeedMore);
        }
        let (r, _) = c.feed(&req[req.len() - 1..]);
        assert_eq!(r[0].status(), SUCCESS);
    }

    #[test]
    fn an_oversized_value_is_refused_unread() {
        let mut c = Client::new();
        c.set(b"k", b"v", 0);
        // Announce a 3 GB value: refused on the header alone, nothing
        // buffered, then the value is skipped as it streams in.
        let mut req = store_req(SET, b"k", &[], 0, 0, 0);
        let body = 3u32 << 30;
        req[8..12].copy_from_slice(&body.to_be_bytes());
        let r = c.one(&req);
        assert_eq!(r.status(), VALUE_TOO_LARGE);
        assert!(c.input.capacity() < 1 << 20);
        let chunk = vec![0x80u8; 1 << 20];
        let mut left = body as usize - 9;
        while left > 0 {
            let n = left.min(chunk.len());
            assert!(c.call(&chunk[..n]).is_empty());
            left -= n;
            assert!(c.input.capacity() < 4 << 20);
        }
        assert_eq!(c.get(b"k").value, b"v");
        // One byte over the limit, and exactly the limit.
        let limit = c.shared.store.config().max_item_size;
        let r = c.one(&store_req(SETQ, b"k", &vec![b'x'; limit + 1], 0, 0, 0));
        assert_eq!((r.status(), r.h.opcode), (VALUE_TOO_LARGE, SETQ));
        c.set(b"k", &vec![b'x'; limit], 0);
        assert_eq!(c.get(b"k").value.len(), limit);
    }

    fn feed_all(shared: &Shared, stream: &[u8], pieces: &[usize]) -> (Vec<u8>, bool) {
        let mut conn = Conn::new();
        let mut input = BytesMut::new();
        let mut out = Vec::new();
        let mut at = 0;
        let mut sizes = pieces.iter().cycle();
        while at < stream.len() {
            let n = (*sizes.next().unwrap()).clamp(1, stream.len() - at);
            input.extend_from_slice(&stream[at..at + n]);
            at += n;
            if process(shared, &mut conn, &mut input, &mut out) == Step::Close {
                return (out, true);
            }
        }
        (out, false)
    }

    /// A request with random fields: a known or unknown opcode, random
    /// lengths (sometimes disagreeing with the body), random CAS.
    fn packet_strategy() -> impl Strategy<Value = Vec<u8>> {
        let ops = prop_oneof![
            prop::sample::select(vec![
                GET, SET, ADD, REPLACE, DELETE, INCREMENT, DECREMENT, FLUSH, GETQ, NOOP, VERSION,
                GETK, GETKQ, APPEND, PREPEND, STAT, SETQ, ADDQ, REPLACEQ, DELETEQ, INCREMENTQ,
                DECREMENTQ, FLUSHQ, APPENDQ, PREPENDQ, VERBOSITY, TOUCH, GAT, GATQ, GATK, GATKQ,
            ]),
            any::<u8>(),
        ];
        (
            ops,
            prop::sample::select(vec![0usize, 4, 8, 20, 3]),
            prop::collection::vec(prop::sample::select(vec![b'a', b'b', b'1']), 0..4),
            prop::collection::vec(prop::sample::select(vec![b'0', b'1', b'x']), 0..12),
            prop::sample::select(vec![0u64, 1, u64::MAX]),
            prop_oneof![8 => Just(None), 1 => any::<u32>().prop_map(Some)],
        )
            .prop_map(|(op, extras, key, value, cas, body)| {
                let extras: Vec<u8> = (0..extras)
                    .map(|i| if i % 4 == 3 { 1 } else { 0 })
                    .collect();
                let mut p = request(op, &extras, &key, &value, 0, cas);
                if let Some(body) = body {
                    p[8..12].copy_from_slice(&(body % 200_000).to_be_bytes());
                }
                p
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        /// Random bytes after a binary first byte: every call returns, and
        /// what comes out is whole response packets.
        #[test]
        fn random_bytes_never_panic(stream in prop::collection::vec(any::<u8>(), 0..2048),
                                    pieces in prop::collection::vec(1usize..300, 1..8)) {
            let s = Shared::new(settings());
            let mut all = vec![REQUEST_MAGIC];
            all.extend(stream);
            let (out, _) = feed_all(&s, &all, &pieces);
            responses(&out);
        }

        /// Streams of random requests, valid and not, in random pieces:
        /// replies are whole packets, and unless the connection closed, a
        /// final no-op is answered last.
        #[test]
        fn random_request_streams_stay_in_step(
            packets in prop::collection::vec(packet_strategy(), 1..24),
            pieces in prop::collection::vec(1usize..64, 1..5)) {
            let s = Shared::new(settings());
            let mut stream: Vec<u8> = packets.concat();
            stream.extend(request(NOOP, &[], &[], &[], 0xfeed, 0));
            let (out, closed) = feed_all(&s, &stream, &pieces);
            let rs = responses(&out);
            if !closed {
                // A mangled body length may still be swallowing the no-op.
                let last = rs.last();
                let framed = packets.iter().all(|p| Packet::parse(p).map(|(_, n)| n) == Some(p.len()));
                if framed {
                    prop_assert_eq!(last.map(|r| (r.h.opcode, r.h.opaque)), Some((NOOP, 0xfeed)));
                }
            }
        }
    }
}
