//! memcached's text protocol (its `protocol.txt`): storage, retrieval,
//! deletion, arithmetic, touch, `flush_all`, `stats`, `version`,
//! `verbosity`, `quit`; the meta commands are handed to [`super::meta`].

use std::io::Write as _;

use bytes::{Buf, Bytes, BytesMut};

use super::line::{data_block, line, number, valid_key, BAD_FORMAT, TOO_LARGE};
use super::{meta, Conn, Out, Step, MAX_LINE, MAX_RETRIEVAL_LINE};
use crate::report;
use crate::stats::bump;
use crate::store::{Arith, Counted, Deleted, Mode, Write, Written};
use crate::Shared;

/// The most tokens a command line may have (memcached's limit for
/// non-retrieval commands; retrievals may name any number of keys).
const MAX_TOKENS: usize = 24;

/// Runs the request at the front of `input`.
pub fn step(shared: &Shared, conn: &mut Conn, input: &mut BytesMut, out: &mut Out) -> Step {
    let from = conn.scanned.min(input.len());
    let Some((end, len)) = line(&input[from..]).map(|(e, l)| (from + e, from + l)) else {
        conn.scanned = input.len().saturating_sub(1); // a `\r` may end it
        let retrieval = input.starts_with(b"get") || input.starts_with(b"gat");
        if input.len()
            > if retrieval {
                MAX_RETRIEVAL_LINE
            } else {
                MAX_LINE
            }
        {
            out.extend_from_slice(b"CLIENT_ERROR line too long\r\n");
            return Step::Close;
        }
        return Step::NeedMore;
    };
    conn.scanned = 0;
    let text = &input[..end];
    let mut tokens = text.split(|&b| b == b' ').filter(|t| !t.is_empty());
    let Some(cmd) = tokens.next() else {
        input.advance(len);
        out.extend_from_slice(b"ERROR\r\n");
        return Step::Done;
    };
    let cmd: Vec<u8> = cmd.to_vec();
    match &cmd[..] {
        b"get" | b"gets" | b"gat" | b"gats" => {
            let mut line = input.split_to(len);
            line.truncate(end);
            retrieve(shared, conn, &cmd, line.freeze(), out)
        }
        b"set" | b"add" | b"replace" | b"append" | b"prepend" | b"cas" => {
            storage(shared, conn, &cmd, input, end, len, out)
        }
        b"mg" | b"ms" | b"md" | b"ma" | b"mn" | b"me" => meta::step(shared, conn, input, len, out),
        _ => {
            let line = input.split_to(len);
            let args: Vec<&[u8]> = line[..end]
                .split(|&b| b == b' ')
                .filter(|t| !t.is_empty())
                .skip(1)
                .collect();
            if args.len() >= MAX_TOKENS {
                out.extend_from_slice(b"ERROR\r\n");
                return Step::Done;
            }
            other(shared, &cmd, &args, out)
        }
    }
}

/// Strips a trailing `noreply`: the arguments before it, and whether it was
/// there.
fn noreply<'a, 'b>(args: &'b [&'a [u8]]) -> (&'b [&'a [u8]], bool) {
    match args.split_last() {
        Some((last, rest)) if *last == b"noreply" => (rest, true),
        _ => (args, false),
    }
}

/// The most keys of a multi-get served in one transaction; a longer
/// multi-get is served in batches of this many, each a transaction of its
/// own (memcached's multi-gets are not atomic at all), so that its reply
/// can be written, and the client made to read it, between batches.
pub const GET_BATCH: usize = 64;

/// A retrieval being served: its line, where its next key starts, and
/// what it asks for.
#[derive(Debug)]
pub struct PendingGet {
    line: Bytes,
    at: usize,
    with_cas: bool,
    touch: Option<i64>,
}

/// The token of `line` at or after `from`: its start and end.
fn token_at(line: &[u8], from: usize) -> Option<(usize, usize)> {
    let start = from + line.get(from..)?.iter().position(|&b| b != b' ')?;
    let end = line[start..]
        .iter()
        .position(|&b| b == b' ')
        .map_or(line.len(), |n| start + n);
    Some((start, end))
}

/// `get`/`gets <key>*`, `gat`/`gats <exptime> <key>*` (`line` without its
/// line ending): the keys in batches of [`GET_BATCH`], each one
/// transaction. Returns [`Step::Yield`] with the rest of the keys left in
/// `conn` when the reply passes [`OUT_HIGH_WATER`](super::OUT_HIGH_WATER).
fn retrieve(shared: &Shared, conn: &mut Conn, cmd: &[u8], line: Bytes, out: &mut Out) -> Step {
    let with_cas = cmd.ends_with(b"s");
    let (_, mut at) = token_at(&line, 0).expect("the command is a token");
    let touch = if cmd.starts_with(b"gat") {
        match token_at(&line, at) {
            Some((s, e)) => match number::<i64>(&line[s..e]) {
                Some(t) => {
                    at = e;
                    Some(t)
                }
                None => {
                    out.extend_from_slice(b"CLIENT_ERROR invalid exptime argument\r\n");
                    return Step::Done;
                }
            },
            None => {
                out.extend_from_slice(b"ERROR\r\n");
                return Step::Done;
            }
        }
    } else {
        None
    };
    let mut keys = line[at..]
        .split(|&b| b == b' ')
        .filter(|t| !t.is_empty())
        .peekable();
    if keys.peek().is_none() {
        out.extend_from_slice(b"ERROR\r\n");
        return Step::Done;
    }
    if !keys.all(valid_key) {
        out.extend_from_slice(BAD_FORMAT);
        return Step::Done;
    }
    serve_keys(
        shared,
        conn,
        PendingGet {
            line,
            at,
            with_cas,
            touch,
        },
        out,
    )
}

/// Goes on with a retrieval `retrieve` left unfinished.
pub fn resume(shared: &Shared, conn: &mut Conn, get: PendingGet, out: &mut Out) -> Step {
    serve_keys(shared, conn, get, out)
}

fn serve_keys(shared: &Shared, conn: &mut Conn, mut get: PendingGet, out: &mut Out) -> Step {
    let counters = shared.stats.mine();
    loop {
        let mut batch = Vec::with_capacity(GET_BATCH.min(8));
        let mut at = get.at;
        while batch.len() < GET_BATCH {
            let Some((s, e)) = token_at(&get.line, at) else {
                break;
            };
            batch.push(&get.line[s..e]);
            at = e;
        }
        let with_cas = get.with_cas;
        let hits =
            shared
                .store
                .get_many(batch.iter().copied(), get.touch, out, |out, key, item| {
                    out.extend_from_slice(b"VALUE ");
                    out.extend_from_slice(key);
                    let _ = write!(out, " {} {}", item.flags, item.data.len());
                    if with_cas {
                        let _ = write!(out, " {}", item.cas);
                    }
                    out.extend_from_slice(b"\r\n");
                    // Referenced, not copied, when large: the reply to a
                    // multi-get naming a large key many times costs a pointer
                    // per key.
                    out.value(&item.data);
                    out.extend_from_slice(b"\r\n");
                });
        let n = batch.len() as u64;
        bump(&counters.cmd_get, n);
        bump(&counters.get_hits, hits);
        bump(&counters.get_misses, n - hits);
        if get.touch.is_some() {
            bump(&counters.cmd_touch, n);
            bump(&counters.touch_hits, hits);
            bump(&counters.touch_misses, n - hits);
        }
        get.at = at;
        if token_at(&get.line, at).is_none() {
            out.extend_from_slice(b"END\r\n");
            return Step::Done;
        }
        if out.len() >= super::OUT_HIGH_WATER {
            conn.pending = Some(Box::new(get));
            return Step::Yield;
        }
    }
}

/// A storage command's line: key, flags, expiry time, value length, CAS
/// identifier (`cas` only) and `noreply`; or the error reply.
type StorageLine = (Vec<u8>, u32, i64, usize, Option<u64>, bool);

fn parse_storage(line: &[u8], is_cas: bool) -> Result<StorageLine, &'static [u8]> {
    let args: Vec<&[u8]> = line
        .split(|&b| b == b' ')
        .filter(|t| !t.is_empty())
        .skip(1)
        .collect();
    let (args, quiet) = noreply(&args);
    if args.len() != if is_cas { 5 } else { 4 } {
        return Err(b"ERROR\r\n");
    }
    let cas = if is_cas {
        number::<u64>(args[4]).map(Some)
    } else {
        Some(None)
    };
    match (
        number::<u32>(args[1]),
        number::<i64>(args[2]),
        number::<i64>(args[3]),
        cas,
    ) {
        (Some(flags), Some(exptime), Some(bytes), Some(cas))
            // memcached adds the `\r\n` to the length in an int.
            if valid_key(args[0]) && (0..=i64::from(i32::MAX) - 2).contains(&bytes) =>
        {
            Ok((args[0].to_vec(), flags, exptime, bytes as usize, cas, quiet))
        }
        _ => Err(BAD_FORMAT),
    }
}

/// `<set|add|replace|append|prepend> <key> <flags> <exptime> <bytes>
/// [noreply]` and `cas <key> <flags> <exptime> <bytes> <cas> [noreply]`,
/// then the data block.
fn storage(
    shared: &Shared,
    conn: &mut Conn,
    cmd: &[u8],
    input: &mut BytesMut,
    end: usize,
    len: usize,
    out: &mut Out,
) -> Step {
    let is_cas = cmd == b"cas";
    let (key, flags, exptime, bytes, cas, quiet) = match parse_storage(&input[..end], is_cas) {
        Ok(parsed) => parsed,
        Err(reply) => {
            // memcached reads `noreply` before it checks the numbers, so
            // only a wrong number of tokens is answered despite it.
            let quiet = input[..end].ends_with(b" noreply");
            input.advance(len);
            if !quiet || reply == b"ERROR\r\n" {
                out.extend_from_slice(reply);
            }
            return Step::Done;
        }
    };
    let mark = out.len();
    let data = match data_block(shared, conn, input, len, &key, bytes, cmd == b"set", out) {
        Ok(data) => data,
        Err(step) => {
            if quiet {
                out.truncate(mark);
            }
            return step;
        }
    };
    let mode = match cmd {
        b"add" => Mode::Add,
        b"replace" => Mode::Replace,
        b"append" => Mode::Append,
        b"prepend" => Mode::Prepend,
        _ => Mode::Set,
    };
    let written = shared.store.write(&Write {
        flags,
        exptime,
        cas,
        ..Write::new(mode, &key, data)
    });
    let counters = shared.stats.mine();
    bump(&counters.cmd_set, 1);
    if is_cas {
        bump(
            match written {
                Written::Stored(_) => &counters.cas_hits,
                Written::Exists => &counters.cas_badval,
                _ => &counters.cas_misses,
            },
            1,
        );
    }
    if !quiet {
        out.extend_from_slice(match written {
            Written::Stored(_) => b"STORED\r\n",
            Written::NotStored => b"NOT_STORED\r\n",
            Written::Exists => b"EXISTS\r\n",
            Written::NotFound => b"NOT_FOUND\r\n",
            Written::TooLarge => TOO_LARGE,
        });
    }
    Step::Done
}

/// Every command without a data block except retrievals.
fn other(shared: &Shared, cmd: &[u8], all_args: &[&[u8]], out: &mut Out) -> Step {
    let (_, quiet) = noreply(all_args);
    let mark = out.len();
    let step = command(shared, cmd, all_args, out);
    // `noreply` silences every reply of a command that takes it, errors
    // included (as memcached's), but for a wrong number of arguments,
    // which memcached answers before it looks for `noreply`.
    if quiet
        && matches!(
            cmd,
            b"delete" | b"incr" | b"decr" | b"touch" | b"flush_all" | b"verbosity"
        )
        && !(out.len() - mark == 7 && out.ends_with(b"ERROR\r\n"))
    {
        out.truncate(mark);
    }
    step
}

/// [`other`]'s commands, every reply written.
fn command(shared: &Shared, cmd: &[u8], all_args: &[&[u8]], out: &mut Out) -> Step {
    let counters = shared.stats.mine();
    let (args, _) = noreply(all_args);
    let mut reply = |r: &[u8]| out.extend_from_slice(r);
    match cmd {
        b"delete" => {
            // `delete <key> 0` is accepted for old clients; any other time
            // is an error, as in memcached.
            let ok = match args {
                [_] => true,
                [_, t] => *t == b"0",
                _ => false,
            };
            if !ok || !valid_key(args[0]) {
                out.extend_from_slice(
                    b"CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]\r\n",
                );
                return Step::Done;
            }
            let d = shared.store.delete(args[0], 0);
            bump(
                if d == Deleted::Deleted {
                    &counters.delete_hits
                } else {
                    &counters.delete_misses
                },
                1,
            );
            reply(if d == Deleted::Deleted {
                b"DELETED\r\n"
            } else {
                b"NOT_FOUND\r\n"
            });
        }
        b"incr" | b"decr" => {
            let [key, delta] = args else {
                out.extend_from_slice(b"ERROR\r\n");
                return Step::Done;
            };
            if !valid_key(key) {
                out.extend_from_slice(BAD_FORMAT);
                return Step::Done;
            }
            let Some(delta) = number::<u64>(delta) else {
                out.extend_from_slice(b"CLIENT_ERROR invalid numeric delta argument\r\n");
                return Step::Done;
            };
            let incr = cmd == b"incr";
            let counted = shared.store.arith(&Arith {
                key,
                incr,
                delta,
                cas: 0,
                vivify: None,
                touch: None,
            });
            let (hits, misses) = counters.arith(incr);
            match counted {
                Counted::Value { value, .. } => {
                    bump(hits, 1);
                    let _ = write!(out, "{value}\r\n");
                }
                Counted::NotFound | Counted::Exists => {
                    bump(misses, 1);
                    reply(b"NOT_FOUND\r\n");
                }
                Counted::NonNumeric => out.extend_from_slice(
                    b"CLIENT_ERROR cannot increment or decrement non-numeric value\r\n",
                ),
            }
        }
        b"touch" => {
            let [key, exptime] = args else {
                out.extend_from_slice(b"ERROR\r\n");
                return Step::Done;
            };
            let Some(exptime) = number::<i64>(exptime) else {
                out.extend_from_slice(b"CLIENT_ERROR invalid exptime argument\r\n");
                return Step::Done;
            };
            if !valid_key(key) {
                out.extend_from_slice(BAD_FORMAT);
                return Step::Done;
            }
            bump(&counters.cmd_touch, 1);
            if shared.store.touch(key, exptime).is_some() {
                bump(&counters.touch_hits, 1);
                reply(b"TOUCHED\r\n");
            } else {
                bump(&counters.touch_misses, 1);
                reply(b"NOT_FOUND\r\n");
            }
        }
        b"flush_all" => {
            let delay = match args {
                [] => Some(0),
                [d] => number::<i64>(d),
                _ => None,
            };
            let Some(delay) = delay else {
                out.extend_from_slice(b"CLIENT_ERROR invalid exptime argument\r\n");
                return Step::Done;
            };
            if !shared.settings.flush_enabled {
                reply(b"CLIENT_ERROR flush_all not allowed\r\n");
                return Step::Done;
            }
            bump(&counters.cmd_flush, 1);
            shared.store.flush_all(delay);
            reply(b"OK\r\n");
        }
        // As memcached: `version` ignores its arguments; `stats` takes no
        // `noreply` (an unknown group).
        b"version" => {
            let _ = write!(out, "VERSION {}\r\n", crate::VERSION);
        }
        // Logging levels do not apply here, but the level is checked as
        // memcached checks it.
        b"verbosity" => match all_args {
            [] => out.extend_from_slice(b"ERROR\r\n"),
            [v] | [v, _] if number::<u32>(v).is_some() => reply(b"OK\r\n"),
            [_] | [_, _] => reply(BAD_FORMAT),
            _ => out.extend_from_slice(b"ERROR\r\n"),
        },
        b"stats" => report::stats(shared, all_args, out),
        // There are no slab classes to move pages between; the setting is
        // checked as memcached checks it, and has no effect.
        b"slabs" => match all_args {
            [b"automove", n] => match number::<u32>(n) {
                Some(0..=2) => reply(b"OK\r\n"),
                _ => reply(BAD_FORMAT),
            },
            _ => out.extend_from_slice(b"ERROR\r\n"),
        },
        // memcached's debug build: move the clock forward by whole seconds
        // (`p` and `r`, pause and resume, change nothing here).
        b"debugtime" if shared.settings.debug_time => match all_args {
            [b"p"] | [b"r"] => out.extend_from_slice(b"OK\r\n"),
            [n] => match number::<i64>(n) {
                Some(n) => {
                    shared
                        .store
                        .clock()
                        .advance(std::time::Duration::from_secs(n.max(0) as u64));
                    out.extend_from_slice(b"OK\r\n");
                }
                None => out.extend_from_slice(b"ERROR\r\n"),
            },
            _ => out.extend_from_slice(b"ERROR\r\n"),
        },
        b"quit" => return Step::Close,
        b"shutdown" if !shared.settings.shutdown_enabled => {
            out.extend_from_slice(b"ERROR: shutdown not enabled\r\n")
        }
        // memcached's graceful mode waits for nothing more here: the
        // server stops at once either way.
        b"shutdown" => match all_args {
            [] | [b"graceful"] => {
                shared.request_shutdown();
                return Step::Close;
            }
            _ => out.extend_from_slice(b"CLIENT_ERROR invalid shutdown mode\r\n"),
        },
        // An HTTP request line (a browser, or a cross-protocol attack whose
        // body holds commands): hang up before reading on, as memcached
        // does.
        _ if all_args.last().is_some_and(|t| t.starts_with(b"HTTP/")) => return Step::Close,
        _ => out.extend_from_slice(b"ERROR\r\n"),
    }
    Step::Done
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_end_at_crlf_or_lf() {
        assert_eq!(line(b"get a\r\nrest"), Some((5, 7)));
        assert_eq!(line(b"get a\nrest"), Some((5, 6)));
        assert_eq!(line(b"get a"), None);
    }

    #[test]
    fn keys_are_checked_as_memcached_does() {
        assert!(valid_key(b"a"));
        assert!(valid_key(&[b'k'; 250]));
        assert!(!valid_key(&[b'k'; 251]));
        assert!(!valid_key(b""));
        assert!(valid_key(b"\x10\x10key"));
        assert!(!valid_key(b"a b"));
        assert!(!valid_key(b"a\0b"));
    }
}
