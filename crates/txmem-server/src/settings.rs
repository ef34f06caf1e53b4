//! The server's settings, named as memcached's flags.

use std::fmt;
use std::str::FromStr;

use txmem::{Backoff, TxOptions};

/// How transactions that abort are retried (`--contention`): the server's
/// choice among `txmem`'s [`txmem::ContentionPolicy`] values, with
/// serialization after `N` aborts as one more (the idea `txmem-itm`'s
/// `TXMEM_ITM_CM` names `ContentionPolicy` too).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ContentionPolicy {
    /// Retry at once.
    None,
    /// Exponential backoff (the default).
    #[default]
    Backoff,
    /// Backoff; after 128 consecutive aborts a transaction blocks new ones
    /// from starting until it commits.
    Hourglass,
    /// Backoff; after `N` consecutive aborts the transaction runs
    /// irrevocably (serialized), as GCC's libitm does after 100.
    SerializeAfter(u32),
}

impl ContentionPolicy {
    /// The transaction options this policy stands for. No policy
    /// serializes unless asked to.
    pub fn options(self) -> TxOptions {
        let o = TxOptions::new().serialize_after(None);
        match self {
            ContentionPolicy::None => o.contention(txmem::ContentionPolicy::Immediate),
            ContentionPolicy::Backoff => {
                o.contention(txmem::ContentionPolicy::Backoff(Backoff::DEFAULT))
            }
            ContentionPolicy::Hourglass => {
                o.contention(txmem::ContentionPolicy::Hourglass { threshold: 128 })
            }
            ContentionPolicy::SerializeAfter(n) => o
                .contention(txmem::ContentionPolicy::Backoff(Backoff::DEFAULT))
                .serialize_after(Some(n)),
        }
    }
}

impl fmt::Display for ContentionPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ContentionPolicy::None => f.write_str("none"),
            ContentionPolicy::Backoff => f.write_str("backoff"),
            ContentionPolicy::Hourglass => f.write_str("hourglass"),
            ContentionPolicy::SerializeAfter(n) => write!(f, "serialize-after={n}"),
        }
    }
}

impl FromStr for ContentionPolicy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "none" => Ok(ContentionPolicy::None),
            "backoff" => Ok(ContentionPolicy::Backoff),
            "hourglass" => Ok(ContentionPolicy::Hourglass),
            _ => match s.strip_prefix("serialize-after=").map(str::parse::<u32>) {
                Some(Ok(n)) if n > 0 => Ok(ContentionPolicy::SerializeAfter(n)),
                _ => Err(format!(
                    "unknown contention policy `{s}` (expected none, backoff, hourglass or serialize-after=N with N > 0)"
                )),
            },
        }
    }
}

/// Which protocols a connection may speak (`-B`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Protocol {
    /// Chosen by the connection's first byte (the default).
    #[default]
    Auto,
    /// The text protocol and the meta commands only.
    Ascii,
    /// The binary protocol only.
    Binary,
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Protocol::Auto => "auto-negotiate",
            Protocol::Ascii => "ascii",
            Protocol::Binary => "binary",
        })
    }
}

impl FromStr for Protocol {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(Protocol::Auto),
            "ascii" => Ok(Protocol::Ascii),
            "binary" => Ok(Protocol::Binary),
            _ => Err(format!(
                "unknown protocol `{s}` (expected auto, ascii or binary)"
            )),
        }
    }
}

/// The smallest `-I` accepted, as in memcached.
pub const MIN_ITEM_SIZE: usize = 1024;

/// Everything `txmem serve` is configured with.
#[derive(Clone, Debug)]
pub struct Settings {
    /// TCP port (`-p`); 0 picks a free one.
    pub port: u16,
    /// Address to listen on (`-l`).
    pub listen: String,
    /// Worker threads (`-t`).
    pub threads: usize,
    /// Memory limit in megabytes (`-m`).
    pub memory_mb: usize,
    /// Most simultaneous connections (`-c`).
    pub max_connections: usize,
    /// Largest value in bytes (`-I`).
    pub max_item_size: usize,
    /// ContentionPolicy policy.
    pub contention: ContentionPolicy,
    /// Requests one connection runs before letting the others on its
    /// worker run (`-R`).
    pub reqs_per_event: usize,
    /// Report CAS identifiers (`-C` turns this off: `gets` shows 0, and a
    /// flush hides what was stored in its second, as memcached's does).
    pub cas: bool,
    /// The listening socket's backlog (`-b`).
    pub backlog: u32,
    /// The protocols connections may speak (`-B`).
    pub protocol: Protocol,
    /// Accept `flush_all` (`-F` turns this off).
    pub flush_enabled: bool,
    /// Accept `shutdown` (`-A`).
    pub shutdown_enabled: bool,
    /// Evict to make room (`-M` turns this off: a write that does not fit
    /// is refused with an out-of-memory error).
    pub evict: bool,
    /// Accept memcached's debug-build command `debugtime <seconds>`, which
    /// moves the server's clock forward (for memcached's own tests of
    /// expiry; off by default, as anyone could expire every item with it).
    pub debug_time: bool,
    /// Close a connection that sends nothing for this long (memcached's
    /// `-o idle_timeout`; `None`: never).
    pub idle_timeout: Option<std::time::Duration>,
}

impl Default for Settings {
    /// memcached's defaults: port 11211 on localhost, 4 threads, 64 MB,
    /// 1024 connections, 1 MB items.
    fn default() -> Self {
        Settings {
            port: 11211,
            listen: "127.0.0.1".into(),
            threads: 4,
            memory_mb: 64,
            max_connections: 1024,
            max_item_size: 1 << 20,
            contention: ContentionPolicy::Backoff,
            reqs_per_event: 20,
            cas: true,
            backlog: 1024,
            protocol: Protocol::Auto,
            flush_enabled: true,
            shutdown_enabled: false,
            evict: true,
            debug_time: false,
            idle_timeout: None,
        }
    }
}

/// Parses a size with an optional `k`/`m`/`g` suffix (memcached's `-I`).
pub fn parse_size(s: &str) -> Result<usize, String> {
    let lower = s.to_ascii_lowercase();
    let (digits, unit) = match lower.as_bytes().last() {
        Some(b'k') => (&lower[..lower.len() - 1], 1 << 10),
        Some(b'm') => (&lower[..lower.len() - 1], 1 << 20),
        Some(b'g') => (&lower[..lower.len() - 1], 1 << 30),
        _ => (&lower[..], 1),
    };
    digits
        .parse::<usize>()
        .ok()
        .and_then(|n| n.checked_mul(unit))
        .filter(|&n| n > 0)
        .ok_or_else(|| format!("invalid size `{s}` (expected a number of bytes, with k, m or g)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policies_and_sizes_parse() {
        for p in ["none", "backoff", "hourglass", "serialize-after=100"] {
            assert_eq!(p.parse::<ContentionPolicy>().unwrap().to_string(), p);
        }
        assert!("serialize-after=0".parse::<ContentionPolicy>().is_err());
        assert!("lock".parse::<ContentionPolicy>().is_err());
        assert_eq!(parse_size("1m"), Ok(1 << 20));
        assert_eq!(parse_size("512k"), Ok(512 << 10));
        assert_eq!(parse_size("2000"), Ok(2000));
        assert!(parse_size("x").is_err());
        assert!(parse_size("0").is_err());
    }
}
