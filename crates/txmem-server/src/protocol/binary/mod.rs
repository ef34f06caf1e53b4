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

mod packet;

use std::iter;

use bytes::{Buf, Bytes, BytesMut};

use super::{Conn, Out, Step};
use crate::report;
use crate::stats::bump;
use crate::store::{Arith, Counted, Deleted, Mode, Refused, Write, Written, MAX_KEY_LEN};
use crate::Shared;
use packet::{error, reply, u32_at, u64_at};
pub use packet::{
    opcode, request, status, Header, Packet, HEADER_LEN, NO_VIVIFY, REQUEST_MAGIC, RESPONSE_MAGIC,
};

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

/// Runs the binary request at the front of `input`.
pub fn step(shared: &Shared, conn: &mut Conn, input: &mut BytesMut, out: &mut Out) -> Step {
    let Some(h) = Header::parse(input) else {
        return Step::NeedMore;
    };
    let body = h.body_len as usize;
    let (extras_len, key_len) = (usize::from(h.extras_len), usize::from(h.key_len));
    if h.magic != REQUEST_MAGIC {
        // Not a request at all: hang up without a reply, as memcached does.
        return Step::Close;
    }
    if extras_len + key_len > body {
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
        if kind == Kind::Store(Mode::Set) {
            // A refused SET removes the old value, as memcached's does, so
            // that no reader takes it for the new one. The key is needed
            // for that, and it is short.
            let keyed = HEADER_LEN + extras_len + key_len;
            if input.len() < keyed {
                return Step::NeedMore;
            }
            shared.store.delete(&input[keyed - key_len..keyed], 0);
        }
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
fn refuse(conn: &mut Conn, input: &mut BytesMut, out: &mut Out, h: &Header, status: u16) -> Step {
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

fn run(shared: &Shared, kind: Kind, r: &Request<'_>, out: &mut Out) -> Step {
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
        Kind::Flush if !shared.settings.flush_enabled => error(out, h, status::AUTH_ERROR),
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
            } else if r.key == b"detail on" || r.key == b"detail off" {
                // Per-prefix statistics are not kept; switching them is
                // accepted, as memcached's clients do it.
            } else if r.key == b"detail dump" {
                // memcached's dump of no prefixes.
                reply(out, h, status::SUCCESS, 0, &[], b"detailed", b"END\r\n");
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
fn store(shared: &Shared, mode: Mode, r: &Request<'_>, out: &mut Out) {
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
        cas: (h.cas != 0).then_some(h.cas),
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
fn arith(shared: &Shared, incr: bool, r: &Request<'_>, out: &mut Out) {
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
mod tests;
