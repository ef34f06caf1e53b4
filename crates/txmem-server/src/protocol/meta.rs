//! memcached's meta commands: `mg` (get), `ms` (set), `md` (delete), `ma`
//! (arithmetic), `mn` (no-op) and `me` (debug).
//!
//! A meta command names one key and adjusts its behaviour with flags: a
//! single letter, some followed by a token (`T30`, `Oabc`). The reply is a
//! two-letter code followed by the flags the client asked to see, in the
//! order it asked for them:
//!
//! | command | replies |
//! |---|---|
//! | `mg <key> <flags>*` | `VA <size> <flags>*` and the value (with `v`), `HD <flags>*`, `EN` on a miss |
//! | `ms <key> <datalen> <flags>*`, then the data | `HD` stored, `NS` not stored, `EX` CAS mismatch, `NF` CAS on an absent key |
//! | `md <key> <flags>*` | `HD`, `NF`, `EX` |
//! | `ma <key> <flags>*` | `HD`, or `VA` and the number (with `v`), `NF`, `NS`, `EX` |
//! | `mn` | `MN` |
//! | `me <key> [b]` | `ME <key> exp=.. la=.. cas=.. fetch=.. cls=1 size=..`, `EN` |
//!
//! Every flag memcached 1.6 documents is implemented, the stale and win
//! marks included: `md … I` and `ms … C<older> I` mark an item stale; `mg`
//! then reports it (`X`) and tells exactly one client that it should
//! recache the item (`W`; the others see `Z`), as `N` (vivify on a miss)
//! and `R` (recache when the TTL runs low) do. The win is decided inside
//! the command's transaction, so two concurrent readers cannot both win.
//!
//! Quiet mode (`q`) follows memcached's document: it hides `EN` for `mg`
//! and `HD` for `ms`, `md` and `ma`; every other reply, errors included,
//! is still sent, so a client pipelines quiet commands and ends them with
//! `mn` to learn that all of them ran. (memcached's code also hides
//! `ma`'s `VA` reply under `q`; its document does not, nor does this.)
//!
//! Smaller differences from memcached 1.6: `C0` on `ma` compares nothing
//! (on `ms` and `md` it never matches, as no item has CAS 0); `md … x` keeps the item's client flags
//! and expiry (memcached resets them); `k` returns a key base64-encoded when
//! the request's key was (memcached remembers that per item); an `mg` that
//! creates its item counts as a miss.
//!
//! Malformed command lines (an unknown or repeated flag, a bad token, a bad
//! key) get `CLIENT_ERROR bad command line format`; an `ms` whose data
//! length could be read has its data block skipped after the error, so the
//! data is never run as commands.

use std::io::Write as _;
use std::sync::Arc;

use bytes::{Buf, Bytes, BytesMut};
use txmem::TxResult;

use super::line::{data_block, line, number, refused, BAD_CHUNK, BAD_FORMAT, TOO_LARGE};
use super::{Conn, Out, Step};
use crate::stats::bump;
use crate::store::{next_cas, Arith, Counted, Item, Mode, StoreTx, Write, Written};
use crate::Shared;
pub use request::MAX_OPAQUE;
use request::{b64, decode_key, push_echo, push_status, request, tokens, Flags};

/// Runs the meta command whose line (`line_len` bytes with its ending) is
/// at the front of `input`.
pub fn step(
    shared: &Shared,
    conn: &mut Conn,
    input: &mut BytesMut,
    line_len: usize,
    out: &mut Out,
) -> Step {
    let end = line(&input[..line_len]).map_or(line_len, |(end, _)| end);
    let is_set = tokens(&input[..end]).next() == Some(b"ms");
    if is_set {
        return set(shared, conn, input, end, line_len, out);
    }
    let request = input.split_to(line_len);
    let toks: Vec<&[u8]> = tokens(&request[..end]).collect();
    match toks.first().copied() {
        Some(b"mn") => out.extend_from_slice(b"MN\r\n"),
        Some(b"mg") => get(shared, &toks, out),
        Some(b"md") => delete(shared, &toks, out),
        Some(b"ma") => arith(shared, &toks, out),
        Some(b"me") => debug(shared, &toks, out),
        _ => out.extend_from_slice(b"ERROR\r\n"),
    }
    Step::Done
}

/// What `mg` found.
struct Found {
    /// The item as it is after the command.
    item: Arc<Item>,
    /// Whether the item had been read before this command (`h`).
    fetched: bool,
    /// When it was last read before this command (`l`).
    last_access: u64,
    /// Created by this command (`N`).
    created: bool,
    /// This command won the right to recache (`W`).
    won: bool,
    /// Another command had won it already (`Z`).
    win_sent: bool,
}

/// `mg`'s transaction: looks `key` up, creates it (`N`), sets its expiry
/// (`T`) and decides the recache win, storing the item again if any of
/// these changed it.
fn get_tx(s: &mut StoreTx<'_, '_>, key: &[u8], f: &Flags) -> TxResult<Option<Found>> {
    let clock = s.store().clock();
    let Some(old) = s.get(key)? else {
        let Some(ttl) = f.vivify else {
            return Ok(None);
        };
        // An empty placeholder: its creator is told to fill it (`W`), later
        // readers that another client is doing so (`Z`).
        let mut item = Item::new(
            Bytes::new(),
            0,
            clock.deadline(ttl),
            f.new_cas.unwrap_or_else(next_cas),
            s.now(),
        );
        item.win_sent = true;
        let item = s.put(key, item)?;
        return Ok(Some(Found {
            fetched: false,
            last_access: item.last_access(),
            created: true,
            won: true,
            win_sent: false,
            item,
        }));
    };
    let expires = f.ttl.map_or(old.expires, |t| clock.deadline(t));
    let low = f
        .recache
        .is_some_and(|r| expires != 0 && expires < clock.deadline(r));
    let won = !old.win_sent && (low || old.stale);
    let item = if won || f.ttl.is_some() {
        let mut item = old.revised(old.data.clone(), old.flags, expires, old.cas, old.stored);
        item.win_sent |= won;
        s.put(key, item)?
    } else {
        old.clone()
    };
    Ok(Some(Found {
        item,
        fetched: old.was_fetched(),
        last_access: old.last_access(),
        created: false,
        won,
        win_sent: old.win_sent,
    }))
}

/// `mg <key> <flags>*`.
fn get(shared: &Shared, toks: &[&[u8]], out: &mut Out) {
    let (key, f) = match request(toks) {
        Ok(r) => r,
        Err(reply) => return out.extend_from_slice(reply),
    };
    let store = &shared.store;
    // A miss may create an item: make room first, as for any write.
    if f.vivify.is_some() {
        if let Err(why) = store.admit(key.len(), 0) {
            return out.extend_from_slice(refused(why));
        }
    }
    // Only a stale item makes a plain read write (to record the win); a
    // write in a read-only transaction is correct, just slower.
    let found = if f.ttl.is_some() || f.vivify.is_some() || f.recache.is_some() {
        store.transact(|s| get_tx(s, &key, &f))
    } else {
        store.read(|s| get_tx(s, &key, &f))
    };
    let clock = store.clock();
    let counters = shared.stats.mine();
    let hit = found.as_ref().is_some_and(|x| !x.created);
    bump(&counters.cmd_get, 1);
    bump(
        if hit {
            &counters.get_hits
        } else {
            &counters.get_misses
        },
        1,
    );
    if f.ttl.is_some() {
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
    let Some(found) = found else {
        if !f.quiet {
            push_status(out, b"EN", &f, &key);
        }
        return;
    };
    let item = &found.item;
    if !f.no_bump {
        item.mark_fetched(clock.now());
    }
    // With `C`, the client holds this version already: no value.
    let send_value = f.value && f.compare != Some(item.cas);
    if send_value {
        let _ = write!(out, "VA {}", item.data.len());
    } else {
        out.extend_from_slice(b"HD");
    }
    for &c in &f.order {
        let _ = match c {
            b's' => write!(out, " s{}", item.data.len()),
            b't' => write!(out, " t{}", clock.ttl(item.expires)),
            b'c' => write!(out, " c{}", item.cas),
            b'f' => write!(out, " f{}", item.flags),
            b'l' => write!(out, " l{}", clock.seconds_since(found.last_access)),
            b'h' => write!(out, " h{}", u8::from(found.fetched)),
            _ => push_echo(out, &f, &key, c),
        };
    }
    if found.win_sent {
        out.extend_from_slice(b" Z");
    }
    if item.stale {
        out.extend_from_slice(b" X");
    }
    if found.won {
        out.extend_from_slice(b" W");
    }
    out.extend_from_slice(b"\r\n");
    if send_value {
        out.extend_from_slice(&item.data);
        out.extend_from_slice(b"\r\n");
    }
}

/// A parsed `ms` line: key, flags, data length, mode.
type SetLine = (Vec<u8>, Flags, usize, Mode);

/// Parses `ms <key> <datalen> <flags>*`. An error carries the data length
/// when it could be read, so the data block can be skipped.
fn parse_set(line: &[u8]) -> Result<SetLine, (Option<usize>, &'static [u8])> {
    let toks: Vec<&[u8]> = tokens(line).collect();
    let [_, raw, len, flags @ ..] = &toks[..] else {
        return Err((None, BAD_FORMAT));
    };
    let bytes = number::<i64>(len)
        .filter(|n| (0..=i64::from(i32::MAX) - 2).contains(n))
        .ok_or((None, BAD_CHUNK))? as usize;
    let bad = |reply| (Some(bytes), reply);
    let f = Flags::parse(flags).map_err(bad)?;
    let key = decode_key(raw, f.base64).map_err(bad)?;
    let mode = match f.mode {
        None | Some(b'S' | b's') => Mode::Set,
        Some(b'E' | b'e') => Mode::Add,
        Some(b'R' | b'r') => Mode::Replace,
        Some(b'A' | b'a') => Mode::Append,
        Some(b'P' | b'p') => Mode::Prepend,
        Some(_) => return Err(bad(BAD_FORMAT)),
    };
    Ok((key, f, bytes, mode))
}

/// `ms <key> <datalen> <flags>*`, then the data block.
fn set(
    shared: &Shared,
    conn: &mut Conn,
    input: &mut BytesMut,
    end: usize,
    len: usize,
    out: &mut Out,
) -> Step {
    let (key, f, bytes, mode) = match parse_set(&input[..end]) {
        Ok(parsed) => parsed,
        Err((data_len, reply)) => {
            input.advance(len);
            if let Some(n) = data_len {
                conn.swallow(n + 2);
            }
            out.extend_from_slice(reply);
            return Step::Done;
        }
    };
    let data = match data_block(
        shared,
        conn,
        input,
        len,
        &key,
        bytes,
        mode == Mode::Set,
        out,
    ) {
        Ok(data) => data,
        Err(step) => return step,
    };
    // memcached's add ignores a CAS: it stores only when the key is absent,
    // when there is nothing to compare with.
    let cas = match mode {
        Mode::Add => None,
        _ => f.compare,
    };
    let written = shared.store.write(&Write {
        flags: f.client_flags.unwrap_or(0),
        exptime: f.ttl.unwrap_or(0),
        cas,
        vivify: f.vivify,
        new_cas: f.new_cas,
        invalidate: f.invalidate,
        ..Write::new(mode, &key, data)
    });
    let counters = shared.stats.mine();
    bump(&counters.cmd_set, 1);
    if cas.is_some() && matches!(mode, Mode::Set | Mode::Replace) {
        bump(
            match written {
                Written::Stored(_) => &counters.cas_hits,
                Written::Exists => &counters.cas_badval,
                _ => &counters.cas_misses,
            },
            1,
        );
    }
    let (code, stored): (&[u8], _) = match &written {
        Written::Stored(item) => (b"HD", Some(item)),
        Written::NotStored => (b"NS", None),
        Written::Exists => (b"EX", None),
        Written::NotFound => (b"NF", None),
        Written::TooLarge => {
            out.extend_from_slice(TOO_LARGE);
            return Step::Done;
        }
    };
    if stored.is_some() && f.quiet {
        return Step::Done;
    }
    out.extend_from_slice(code);
    for &c in &f.order {
        let _ = match c {
            b'c' => write!(out, " c{}", stored.map_or(0, |i| i.cas)),
            b's' => write!(out, " s{}", stored.map_or(bytes, |i| i.data.len())),
            _ => push_echo(out, &f, &key, c),
        };
    }
    out.extend_from_slice(b"\r\n");
    Step::Done
}

/// What `md` did.
enum Deleted {
    NotFound,
    Exists,
    /// Removed, or emptied (`x`): a delete hit.
    Removed,
    /// Marked stale (`I`).
    Invalidated,
}

/// `md`'s transaction.
fn delete_tx(s: &mut StoreTx<'_, '_>, key: &[u8], f: &Flags) -> TxResult<Deleted> {
    let Some(old) = s.get(key)? else {
        return Ok(Deleted::NotFound);
    };
    if f.compare.is_some_and(|c| c != old.cas) {
        return Ok(Deleted::Exists);
    }
    if !f.invalidate && !f.remove_value {
        s.remove(key)?;
        return Ok(Deleted::Removed);
    }
    let clock = s.store().clock();
    let expires = f.ttl.map_or(old.expires, |t| clock.deadline(t));
    let mut item = if f.remove_value {
        // A fresh, empty value under the same key: a tombstone that keeps
        // the item's flags, expiry and (unless `E`) CAS identifier.
        Item::new(
            Bytes::new(),
            old.flags,
            expires,
            f.new_cas.unwrap_or(old.cas),
            s.now(),
        )
    } else {
        old.revised(old.data.clone(), old.flags, expires, old.cas, old.stored)
    };
    if f.invalidate {
        // A new version, so CAS holders of the old one cannot overwrite
        // it, and no win given out yet, so the next reader recaches.
        item.stale = true;
        item.win_sent = false;
        item.cas = f.new_cas.unwrap_or_else(next_cas);
    }
    s.put(key, item)?;
    Ok(if f.invalidate {
        Deleted::Invalidated
    } else {
        Deleted::Removed
    })
}

/// `md <key> <flags>*`.
fn delete(shared: &Shared, toks: &[&[u8]], out: &mut Out) {
    let (key, f) = match request(toks) {
        Ok(r) => r,
        Err(reply) => return out.extend_from_slice(reply),
    };
    let done = shared.store.transact(|s| delete_tx(s, &key, &f));
    let counters = shared.stats.mine();
    let code: &[u8] = match done {
        Deleted::NotFound | Deleted::Exists => {
            bump(&counters.delete_misses, 1);
            if matches!(done, Deleted::NotFound) {
                b"NF"
            } else {
                b"EX"
            }
        }
        Deleted::Removed | Deleted::Invalidated => {
            if matches!(done, Deleted::Removed) {
                bump(&counters.delete_hits, 1);
            }
            if f.quiet {
                return;
            }
            b"HD"
        }
    };
    push_status(out, code, &f, &key);
}

/// `ma <key> <flags>*`.
fn arith(shared: &Shared, toks: &[&[u8]], out: &mut Out) {
    let (key, f) = match request(toks) {
        Ok(r) => r,
        Err(reply) => return out.extend_from_slice(reply),
    };
    let incr = match f.mode {
        None | Some(b'I' | b'i' | b'+') => true,
        Some(b'D' | b'd' | b'-') => false,
        Some(_) => return out.extend_from_slice(BAD_FORMAT),
    };
    if f.vivify.is_some() {
        // Room for the created counter's digits.
        if let Err(why) = shared.store.admit(key.len(), 20) {
            return out.extend_from_slice(refused(why));
        }
    }
    let counted = shared.store.arith_with(
        &Arith {
            key: &key,
            incr,
            delta: f.delta.unwrap_or(1),
            cas: f.compare.unwrap_or(0),
            vivify: f.vivify.map(|ttl| (f.initial.unwrap_or(0), ttl)),
            touch: f.ttl,
        },
        f.new_cas,
    );
    let counters = shared.stats.mine();
    let (hits, misses) = counters.arith(incr);
    let (value, item) = match counted {
        Counted::Value {
            value,
            item,
            created,
        } => {
            bump(if created { misses } else { hits }, 1);
            (value, item)
        }
        Counted::NotFound => {
            bump(misses, 1);
            return push_status(out, b"NF", &f, &key);
        }
        Counted::Exists => {
            bump(misses, 1);
            return push_status(out, b"EX", &f, &key);
        }
        Counted::NonNumeric => {
            return out.extend_from_slice(
                b"CLIENT_ERROR cannot increment or decrement non-numeric value\r\n",
            )
        }
    };
    let digits = value.to_string();
    if f.value {
        let _ = write!(out, "VA {}", digits.len());
    } else if f.quiet {
        return;
    } else {
        out.extend_from_slice(b"HD");
    }
    let clock = shared.store.clock();
    for &c in &f.order {
        let _ = match c {
            b'c' => write!(out, " c{}", item.cas),
            b't' => write!(out, " t{}", clock.ttl(item.expires)),
            _ => push_echo(out, &f, &key, c),
        };
    }
    out.extend_from_slice(b"\r\n");
    if f.value {
        out.extend_from_slice(digits.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
}

/// `me <key> [b]`: the item's metadata, for people.
fn debug(shared: &Shared, toks: &[&[u8]], out: &mut Out) {
    let [_, raw, rest @ ..] = toks else {
        return out.extend_from_slice(BAD_FORMAT);
    };
    let base64 = rest.first() == Some(&&b"b"[..]);
    let key = match decode_key(raw, base64) {
        Ok(k) => k,
        Err(reply) => return out.extend_from_slice(reply),
    };
    let Some(item) = shared.store.read(|s| s.get(&key)) else {
        return out.extend_from_slice(b"EN\r\n");
    };
    let clock = shared.store.clock();
    out.extend_from_slice(b"ME ");
    if base64 {
        b64::encode(&key, out);
    } else {
        out.extend_from_slice(&key);
    }
    // One size class: the store has no slabs.
    let _ = write!(
        out,
        " exp={} la={} cas={} fetch={} cls=1 size={}\r\n",
        clock.ttl(item.expires),
        clock.seconds_since(item.last_access()),
        item.cas,
        if item.was_fetched() { "yes" } else { "no" },
        item.cost(key.len()),
    );
}

mod request;
#[cfg(test)]
mod tests;
