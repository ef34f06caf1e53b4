//! `txmem serve`: the memcached-compatible server of `txmem-server`.

use clap::Args;
use txmem_server::{
    parse_size, report, ContentionPolicy, Protocol, Server, Settings, MIN_ITEM_SIZE,
};

use crate::failure::Failure;

/// Serve memcached's protocols (text, meta, binary) from a cache whose every
/// request is a txmem transaction. Flags are named as memcached's.
#[derive(Args, Debug, Clone)]
#[command(
    after_help = "Stops cleanly on SIGINT or SIGTERM. `stats txmem` reports transactions, aborts\n\
                  and serialization (switched to irrevocable, started irrevocable, serialized\n\
                  after aborts), overall and per call site."
)]
pub struct ServeArgs {
    /// TCP port to listen on (0: any free port, printed at start).
    #[arg(short = 'p', long = "port", default_value_t = 11211)]
    pub port: u16,

    /// Interface to listen on.
    #[arg(
        short = 'l',
        long = "listen",
        value_name = "ADDR",
        default_value = "127.0.0.1"
    )]
    pub listen: String,

    /// Worker threads.
    #[arg(short = 't', long = "threads", default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub threads: u16,

    /// Memory limit for items, in megabytes.
    #[arg(short = 'm', long = "memory-limit", value_name = "MEGABYTES", default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..=1 << 20))]
    pub memory_mb: u64,

    /// Most simultaneous connections.
    #[arg(short = 'c', long = "conn-limit", value_name = "MAXCONN", default_value_t = 1024, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_connections: u32,

    /// Largest value, in bytes (k, m suffixes allowed).
    #[arg(short = 'I', long = "max-item-size", value_name = "SIZE", default_value = "1m", value_parser = parse_size)]
    pub max_item_size: usize,

    /// Requests a connection runs before the others on its worker get a
    /// turn (counted in `conn_yields`).
    #[arg(short = 'R', long = "max-reqs-per-event", value_name = "N", default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..))]
    pub reqs_per_event: u32,

    /// Do not report CAS identifiers as enabled (`stats settings`
    /// `cas_enabled no`); a flush then hides everything stored in its
    /// second, as memcached's does without CAS.
    #[arg(short = 'C', long = "disable-cas")]
    pub disable_cas: bool,

    /// Backlog of the listening socket.
    #[arg(short = 'b', long = "listen-backlog", value_name = "N", default_value_t = 1024, value_parser = clap::value_parser!(u32).range(1..))]
    pub backlog: u32,

    /// Protocols a connection may speak: auto (by its first byte), ascii
    /// (text and meta) or binary.
    #[arg(
        short = 'B',
        long = "protocol",
        value_name = "PROTO",
        default_value = "auto"
    )]
    pub protocol: Protocol,

    /// Refuse `flush_all`.
    #[arg(short = 'F', long = "disable-flush-all")]
    pub disable_flush_all: bool,

    /// Accept the `shutdown` command (it stops the server).
    #[arg(short = 'A', long = "enable-shutdown")]
    pub enable_shutdown: bool,

    /// Never evict: refuse a write that does not fit with
    /// `SERVER_ERROR out of memory storing object`.
    #[arg(short = 'M', long = "disable-evictions")]
    pub disable_evictions: bool,

    /// Accept memcached's debug-build `debugtime <seconds>`, which moves
    /// the server's clock forward (for memcached's tests of expiry; anyone
    /// connected could expire every item with it).
    #[arg(long = "debug-time")]
    pub debug_time: bool,

    /// Close connections that send nothing for this many seconds (0:
    /// never), counted in `idle_kicks` (memcached's `-o idle_timeout`).
    #[arg(long = "idle-timeout", value_name = "SECONDS", default_value_t = 0)]
    pub idle_timeout: u64,

    /// How aborted transactions retry: none, backoff, hourglass, or
    /// serialize-after=N (run irrevocably after N consecutive aborts).
    #[arg(long, value_name = "POLICY", default_value = "backoff")]
    pub contention: ContentionPolicy,

    /// Print the transaction and serialization report when the server stops.
    #[arg(long)]
    pub stats_on_exit: bool,
}

/// Runs the server until SIGINT or SIGTERM.
pub fn run(args: ServeArgs) -> Result<u8, Failure> {
    if args.max_item_size < MIN_ITEM_SIZE {
        return Err(Failure::Usage(format!(
            "--max-item-size {} is below the smallest allowed, {MIN_ITEM_SIZE} bytes",
            args.max_item_size
        )));
    }
    if args.max_item_size > (args.memory_mb as usize) << 20 {
        return Err(Failure::Usage(format!(
            "--max-item-size {} is larger than the memory limit ({} MB)",
            args.max_item_size, args.memory_mb
        )));
    }
    let settings = Settings {
        port: args.port,
        listen: args.listen.clone(),
        threads: usize::from(args.threads),
        memory_mb: args.memory_mb as usize,
        max_connections: args.max_connections as usize,
        max_item_size: args.max_item_size,
        contention: args.contention,
        reqs_per_event: args.reqs_per_event as usize,
        cas: !args.disable_cas,
        backlog: args.backlog,
        protocol: args.protocol,
        flush_enabled: !args.disable_flush_all,
        shutdown_enabled: args.enable_shutdown,
        evict: !args.disable_evictions,
        debug_time: args.debug_time,
        idle_timeout: (args.idle_timeout > 0)
            .then(|| std::time::Duration::from_secs(args.idle_timeout)),
    };
    let server = Server::bind(settings).map_err(|e| {
        Failure::Run(format!(
            "cannot listen on {}:{}: {e}",
            args.listen, args.port
        ))
    })?;
    let addr = server
        .local_addr()
        .map_err(|e| Failure::Run(format!("listening socket: {e}")))?;
    // The address line is what scripts wait for (with `-p 0`, the port).
    println!(
        "txmem serve: listening on {addr}, {} threads, {} MB, contention {}",
        args.threads, args.memory_mb, args.contention
    );
    let shared = server.shared().clone();
    server
        .run_until(shutdown_signal())
        .map_err(|e| Failure::Run(format!("server: {e}")))?;
    if args.stats_on_exit {
        print!(
            "{}",
            report::txmem_table(&shared.txmem_stats(), &txmem::stats::site_profile())
        );
    }
    Ok(0)
}

/// Completes on SIGINT or SIGTERM.
async fn shutdown_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let term = signal(SignalKind::terminate());
    let int = signal(SignalKind::interrupt());
    match (term, int) {
        (Ok(mut term), Ok(mut int)) => {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
        }
        _ => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
