//! Reading a meta request: its tokens, its flags, its key (plain or base64),
//! and echoing flags back in the reply.

use super::super::line::{number, valid_key, BAD_FORMAT};
use super::super::Out;
use crate::store::MAX_KEY_LEN;

/// The longest opaque token (`O`) accepted, as in memcached.
pub const MAX_OPAQUE: usize = 32;

const BAD_KEY_ENCODING: &[u8] = b"CLIENT_ERROR error decoding key\r\n";

/// The space-separated tokens of a command line.
pub(super) fn tokens(line: &[u8]) -> impl Iterator<Item = &[u8]> {
    line.split(|&b| b == b' ').filter(|t| !t.is_empty())
}

/// A meta command's flags.
#[derive(Debug, Default)]
pub(super) struct Flags {
    /// The flag letters in request order: replies return flags in it.
    pub(super) order: Vec<u8>,
    /// `b`: the key is base64.
    pub(super) base64: bool,
    /// `q`: hide the uninteresting reply.
    pub(super) quiet: bool,
    /// `v`: return the value.
    pub(super) value: bool,
    /// `u`: leave the item's access marks alone.
    pub(super) no_bump: bool,
    /// `x` (`md`): empty the value, keep the item.
    pub(super) remove_value: bool,
    /// `I`: mark stale instead of deleting (`md`), or accept an older CAS
    /// as a stale write (`ms`).
    pub(super) invalidate: bool,
    /// `O`: echoed back.
    pub(super) opaque: Vec<u8>,
    /// `T`: a new expiry time.
    pub(super) ttl: Option<i64>,
    /// `N`: create on a miss, with this expiry time.
    pub(super) vivify: Option<i64>,
    /// `R`: win the recache if fewer seconds than this are left.
    pub(super) recache: Option<i64>,
    /// `F`: client flags.
    pub(super) client_flags: Option<u32>,
    /// `C`: compare with the item's CAS identifier.
    pub(super) compare: Option<u64>,
    /// `E`: the CAS identifier to give a modified item.
    pub(super) new_cas: Option<u64>,
    /// `M`: the mode letter.
    pub(super) mode: Option<u8>,
    /// `J`: `ma`'s initial value.
    pub(super) initial: Option<u64>,
    /// `D`: `ma`'s delta.
    pub(super) delta: Option<u64>,
}

impl Flags {
    /// Parses flag tokens; the error reply (memcached's wording, which
    /// clients match) for an unknown or repeated flag, or a token that does
    /// not parse. memcached accepts every known flag on every command and
    /// ignores those that do not apply; so does this.
    pub(super) fn parse(tokens: &[&[u8]]) -> Result<Flags, &'static [u8]> {
        let mut f = Flags::default();
        for tok in tokens {
            let Some((&c, arg)) = tok.split_first() else {
                return Err(BAD_FORMAT);
            };
            if f.order.contains(&c) {
                return Err(b"CLIENT_ERROR duplicate flag\r\n");
            }
            f.order.push(c);
            match c {
                b'b' => f.base64 = true,
                b'q' => f.quiet = true,
                b'v' => f.value = true,
                b'u' => f.no_bump = true,
                b'x' => f.remove_value = true,
                b'I' => f.invalidate = true,
                // Flags that only ask for something in the reply, and the
                // proxy's routing hints (ignored by a server).
                b'c' | b'f' | b'h' | b'k' | b'l' | b's' | b't' | b'P' | b'L' => {}
                b'O' if arg.len() <= MAX_OPAQUE => f.opaque = arg.to_vec(),
                b'O' => return Err(b"CLIENT_ERROR opaque token too long\r\n"),
                b'T' => f.ttl = Some(token(arg)?),
                b'N' => f.vivify = Some(token(arg)?),
                b'R' => f.recache = Some(token(arg)?),
                b'F' => f.client_flags = Some(number(arg).ok_or(BAD_FORMAT)?),
                b'C' => f.compare = Some(token(arg)?),
                b'E' => f.new_cas = Some(token(arg)?),
                b'J' => {
                    f.initial = Some(
                        number(arg)
                            .ok_or(&b"CLIENT_ERROR invalid numeric initial value\r\n"[..])?,
                    )
                }
                b'D' => {
                    f.delta = Some(
                        number(arg).ok_or(&b"CLIENT_ERROR invalid numeric delta value\r\n"[..])?,
                    )
                }
                b'M' if arg.len() == 1 => f.mode = Some(arg[0]),
                b'M' => return Err(b"CLIENT_ERROR incorrect length for M token\r\n"),
                _ => return Err(b"CLIENT_ERROR invalid flag\r\n"),
            }
        }
        Ok(f)
    }
}

/// A flag's numeric argument.
pub(super) fn token<T: std::str::FromStr>(arg: &[u8]) -> Result<T, &'static [u8]> {
    number(arg).ok_or(b"CLIENT_ERROR bad token in command line format\r\n")
}

/// The key a command names: `raw` itself, or `raw` base64-decoded (`b`),
/// which may then hold any bytes.
pub(super) fn decode_key(raw: &[u8], base64: bool) -> Result<Vec<u8>, &'static [u8]> {
    if raw.len() > MAX_KEY_LEN {
        return Err(BAD_FORMAT);
    }
    if !base64 {
        return if valid_key(raw) {
            Ok(raw.to_vec())
        } else {
            Err(BAD_FORMAT)
        };
    }
    match b64::decode(raw) {
        Some(key) if !key.is_empty() => Ok(key),
        _ => Err(BAD_KEY_ENCODING),
    }
}

/// The key and flags of `<cmd> <key> <flags>*`.
pub(super) fn request(toks: &[&[u8]]) -> Result<(Vec<u8>, Flags), &'static [u8]> {
    let [_, raw, flags @ ..] = toks else {
        return Err(BAD_FORMAT);
    };
    let f = Flags::parse(flags)?;
    Ok((decode_key(raw, f.base64)?, f))
}

/// Appends the reply flag for `c` if it is one every command returns the
/// same way: the opaque token (`O`) or the key (`k`, base64 with a `b`
/// after it if the request's key was). Returns a result only to sit among
/// `write!`s; appending to a vector cannot fail.
pub(super) fn push_echo(out: &mut Out, f: &Flags, key: &[u8], c: u8) -> std::io::Result<()> {
    match c {
        b'O' => {
            out.extend_from_slice(b" O");
            out.extend_from_slice(&f.opaque);
        }
        b'k' => {
            out.extend_from_slice(b" k");
            if f.base64 {
                b64::encode(key, out);
                out.extend_from_slice(b" b");
            } else {
                out.extend_from_slice(key);
            }
        }
        _ => {}
    }
    Ok(())
}

/// Appends `code`, the echoed flags and the line ending.
pub(super) fn push_status(out: &mut Out, code: &[u8], f: &Flags, key: &[u8]) {
    out.extend_from_slice(code);
    for &c in &f.order {
        let _ = push_echo(out, f, key, c);
    }
    out.extend_from_slice(b"\r\n");
}

/// Base64 (RFC 4648's standard alphabet) for binary keys.
pub(super) mod b64 {
    use crate::protocol::Out;

    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

    /// Appends `data` encoded, padded with `=`.
    pub fn encode(data: &[u8], out: &mut Out) {
        for chunk in data.chunks(3) {
            let b = [
                chunk[0],
                chunk.get(1).copied().unwrap_or(0),
                chunk.get(2).copied().unwrap_or(0),
            ];
            let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
            for i in 0..4 {
                if i <= chunk.len() {
                    out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]);
                } else {
                    out.push(b'=');
                }
            }
        }
    }

    fn value(c: u8) -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    }

    /// Decodes `text`; padding is optional, but if present the text must
    /// be whole groups of four. `None` if it is not base64.
    pub fn decode(text: &[u8]) -> Option<Vec<u8>> {
        let pad = text.iter().rev().take_while(|&&c| c == b'=').count();
        if pad > 2 || (pad > 0 && !text.len().is_multiple_of(4)) {
            return None;
        }
        let body = &text[..text.len() - pad];
        if body.len() % 4 == 1 {
            return None;
        }
        let mut out = Vec::with_capacity(body.len() * 3 / 4);
        for group in body.chunks(4) {
            let mut n = 0u32;
            for (i, &c) in group.iter().enumerate() {
                n |= value(c)? << (18 - 6 * i);
            }
            let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
            out.extend_from_slice(&bytes[..group.len() - 1]);
        }
        Some(out)
    }

    #[cfg(test)]
    mod tests {
        use super::*;
        use crate::protocol::Out;

        #[test]
        fn round_trips_and_rejects_garbage() {
            for data in [
                &b""[..],
                b"f",
                b"fo",
                b"foo",
                b"foob",
                b"fooba",
                b"foobar",
                b"\0\xff ",
            ] {
                let mut text = Out::new();
                encode(data, &mut text);
                let text = text.to_vec();
                assert_eq!(decode(&text).as_deref(), Some(data), "{text:?}");
            }
            let mut text = Out::new();
            encode(b"foobar", &mut text);
            assert_eq!(text.to_vec(), b"Zm9vYmFy");
            assert_eq!(decode(b"Zm9vYg").as_deref(), Some(&b"foob"[..]));
            assert_eq!(decode(b"Zm9vYg=="), Some(b"foob".to_vec()));
            assert_eq!(decode(b"Zm9vYg="), None);
            assert_eq!(decode(b"Zm9v!"), None);
            assert_eq!(decode(b"Z"), None);
            assert_eq!(decode(b"Zm=v"), None);
        }
    }
}
