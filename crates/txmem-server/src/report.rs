//! The `stats` command's replies, and the serialization report printed at
//! exit.

use std::fmt::Write as _;
use std::io::Write as _;

use txmem::stats::{SiteProfile, Stats};
use txmem::AbortCause;

use crate::protocol::Out;
use crate::store::ITEM_OVERHEAD;
use crate::Shared;

/// Writes `STAT name value` lines and `END` for `stats [group]`.
pub fn stats(shared: &Shared, args: &[&[u8]], out: &mut Out) {
    let lines = match args {
        [] => group(shared, b""),
        [b"reset"] => {
            shared.reset_stats();
            out.extend_from_slice(b"RESET\r\n");
            return;
        }
        [name] => group(shared, name),
        // Per-prefix statistics are not kept; switching them is accepted,
        // as memcached's clients do it.
        [b"detail", b"on" | b"off"] => {
            out.extend_from_slice(b"OK\r\n");
            return;
        }
        [b"detail", b"dump"] => {
            out.extend_from_slice(b"END\r\n");
            return;
        }
        _ => None,
    };
    let Some(lines) = lines else {
        out.extend_from_slice(b"ERROR\r\n");
        return;
    };
    for (name, value) in lines {
        let _ = write!(out, "STAT {name} {value}\r\n");
    }
    out.extend_from_slice(b"END\r\n");
}

/// Name/value pairs of a stats group.
pub(crate) type Lines = Vec<(String, String)>;

/// The lines of the stats group `name` (empty: the general group), or
/// `None` if there is no such group. Shared by the text and binary
/// protocols, so both report the same numbers.
pub(crate) fn group(shared: &Shared, name: &[u8]) -> Option<Lines> {
    Some(match name {
        b"" => general(shared),
        b"items" => items(shared),
        b"slabs" => slabs(shared),
        b"settings" => settings(shared),
        b"txmem" => txmem_lines(&shared.txmem_stats(), &txmem::stats::site_profile()),
        _ => return None,
    })
}

fn line(out: &mut Lines, name: impl Into<String>, value: impl ToString) {
    out.push((name.into(), value.to_string()));
}

/// CPU seconds this process has used, user and system, from
/// `/proc/self/stat` (zeros where it is not available).
fn rusage() -> (f64, f64) {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return (0.0, 0.0);
    };
    // Fields after the command name (which may hold spaces, so split after
    // its closing parenthesis): utime and stime are the 12th and 13th.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0) / 100.0;
    (ticks(11), ticks(12))
}

fn general(shared: &Shared) -> Lines {
    let mut l = Lines::new();
    let store = &shared.store;
    let clock = store.clock();
    let (user, system) = rusage();
    line(&mut l, "pid", std::process::id());
    line(&mut l, "uptime", clock.uptime());
    line(&mut l, "time", clock.unix_now());
    line(&mut l, "version", crate::VERSION);
    line(&mut l, "pointer_size", usize::BITS);
    line(&mut l, "rusage_user", format!("{user:.6}"));
    line(&mut l, "rusage_system", format!("{system:.6}"));
    line(&mut l, "max_connections", shared.settings.max_connections);
    let c = &shared.connections;
    line(&mut l, "curr_connections", c.current());
    line(&mut l, "total_connections", c.total());
    line(&mut l, "rejected_connections", c.rejected());
    line(&mut l, "idle_kicks", c.idle_kicks());
    for (name, value) in shared.stats.totals().named() {
        line(&mut l, name, value);
    }
    line(&mut l, "limit_maxbytes", store.config().memory_limit);
    line(&mut l, "threads", shared.settings.threads);
    let s = store.stats();
    line(&mut l, "bytes", s.bytes);
    line(&mut l, "curr_items", s.curr_items);
    line(&mut l, "total_items", s.total_items);
    line(&mut l, "expired_unfetched", s.expired_unfetched);
    line(&mut l, "evicted_unfetched", s.evicted_unfetched);
    line(&mut l, "evictions", s.evictions);
    line(&mut l, "reclaimed", s.reclaimed);
    line(&mut l, "store_no_memory", store.no_memory());
    l
}

/// One item class: the store has no slab classes, so everything is
/// class 1.
fn items(shared: &Shared) -> Lines {
    let s = shared.store.stats();
    let mut l = Lines::new();
    line(&mut l, "items:1:number", s.curr_items);
    line(&mut l, "items:1:evicted", s.evictions);
    line(&mut l, "items:1:evicted_unfetched", s.evicted_unfetched);
    line(&mut l, "items:1:expired_unfetched", s.expired_unfetched);
    line(&mut l, "items:1:reclaimed", s.reclaimed);
    line(&mut l, "items:1:lru_entries", s.lru_entries);
    l
}

/// The memory the store accounts for, as one slab class would show it.
fn slabs(shared: &Shared) -> Lines {
    let s = shared.store.stats();
    let mut l = Lines::new();
    line(&mut l, "1:chunk_size", ITEM_OVERHEAD);
    line(&mut l, "1:used_chunks", s.curr_items);
    line(&mut l, "1:mem_requested", s.bytes);
    line(&mut l, "active_slabs", u64::from(s.curr_items > 0));
    line(&mut l, "total_malloced", s.bytes);
    l
}

fn settings(shared: &Shared) -> Lines {
    let st = &shared.settings;
    let mut l = Lines::new();
    line(&mut l, "maxbytes", shared.store.config().memory_limit);
    line(&mut l, "maxconns", st.max_connections);
    line(&mut l, "tcpport", st.port);
    line(&mut l, "interface", &st.listen);
    line(&mut l, "num_threads", st.threads);
    line(&mut l, "item_size_max", shared.store.config().max_item_size);
    line(&mut l, "evictions", if st.evict { "on" } else { "off" });
    line(&mut l, "cas_enabled", if st.cas { "yes" } else { "no" });
    line(&mut l, "tcp_backlog", st.backlog);
    // No unix socket, no SASL.
    line(&mut l, "domain_socket", "NULL");
    line(&mut l, "auth_enabled_sasl", "no");
    line(&mut l, "binding_protocol", st.protocol);
    line(
        &mut l,
        "flush_enabled",
        if st.flush_enabled { "yes" } else { "no" },
    );
    line(
        &mut l,
        "shutdown_command",
        if st.shutdown_enabled { "yes" } else { "no" },
    );
    line(&mut l, "reqs_per_event", st.reqs_per_event);
    line(&mut l, "txmem_contention", st.contention);
    l
}

/// `stats txmem`: transactions, aborts by cause and the three kinds of
/// serialization, overall and per call site (`site:<file:line:col>:...`).
pub fn txmem_lines(s: &Stats, profile: &SiteProfile) -> Lines {
    let mut l = Lines::new();
    line(&mut l, "commits", s.commits);
    line(&mut l, "read_only_commits", s.read_only_commits);
    line(&mut l, "aborts", s.total_aborts());
    for c in AbortCause::ALL {
        line(&mut l, format!("aborts_{}", c.name()), s.aborts_by(c));
    }
    line(&mut l, "switched_irrevocable", s.switched_irrevocable);
    line(&mut l, "started_irrevocable", s.started_irrevocable);
    line(&mut l, "serialized_after_aborts", s.serialized);
    line(&mut l, "max_consecutive_aborts", s.max_consecutive_aborts);
    for site in &profile.sites {
        let p = format!("site:{}", site.location);
        line(&mut l, format!("{p}:commits"), site.commits);
        line(&mut l, format!("{p}:aborts"), site.total_aborts());
        line(
            &mut l,
            format!("{p}:switched_irrevocable"),
            site.switched_irrevocable,
        );
        line(
            &mut l,
            format!("{p}:started_irrevocable"),
            site.started_irrevocable,
        );
        line(
            &mut l,
            format!("{p}:serialized_after_aborts"),
            site.serialized,
        );
    }
    l
}

/// The serialization report as a table (`txmem serve --stats-on-exit`).
pub fn txmem_table(s: &Stats, profile: &SiteProfile) -> String {
    let mut t = String::new();
    let _ = writeln!(
        t,
        "transactions: {} commits ({} read-only), {} aborts ({:.4} per commit)",
        s.commits,
        s.read_only_commits,
        s.total_aborts(),
        s.aborts_per_commit()
    );
    let causes: Vec<String> = AbortCause::ALL
        .iter()
        .map(|c| format!("{}={}", c.name(), s.aborts_by(*c)))
        .collect();
    let _ = writeln!(t, "aborts by cause: {}", causes.join(" "));
    let _ = writeln!(
        t,
        "serialization: switched to irrevocable mid-flight {}, started irrevocable {}, serialized after aborts {}",
        s.switched_irrevocable, s.started_irrevocable, s.serialized
    );
    // txmem's own per-site table: commits, aborts by cause and the three
    // serialization columns.
    let _ = write!(t, "{profile}");
    t
}
