//! The listener and the connections: one single-threaded tokio runtime per
//! `-t` worker thread, a task per connection, and the maintenance thread.

use std::future::Future;
use std::io;
use std::net::{SocketAddr, TcpListener as StdListener};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use bytes::BytesMut;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;

use crate::protocol::{self, Conn, Step};
use crate::stats::bump;
use crate::{Settings, Shared};

/// How often the maintenance thread runs when no write wakes it.
const MAINTENANCE_PERIOD: Duration = Duration::from_secs(1);

/// LRU entries the maintenance thread looks at per shard and round.
const CRAWL_BUDGET: usize = 10_000;

/// Input buffers larger than this are released once drained (a large value
/// must not pin its buffer for the connection's lifetime).
const KEEP_BUFFER: usize = 64 * 1024;

/// A bound, not yet running, server.
pub struct Server {
    shared: Arc<Shared>,
    listener: StdListener,
}

impl Server {
    /// Binds the listening socket of `settings`.
    pub fn bind(settings: Settings) -> io::Result<Server> {
        let listener = StdListener::bind((settings.listen.as_str(), settings.port))?;
        listener.set_nonblocking(true)?;
        Ok(Server {
            shared: Arc::new(Shared::new(settings)),
            listener,
        })
    }

    /// The address the server listens on.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// The state shared by the connections.
    pub fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// Serves until `shutdown` completes, then closes the listener, stops
    /// maintenance and returns (open connections are dropped).
    ///
    /// As memcached: one event loop per worker thread, each a
    /// single-threaded tokio runtime, and an acceptor (the calling thread)
    /// that deals connections out in turn. A connection stays on its
    /// worker, so its requests never migrate between threads or wake
    /// another thread (a work-stealing runtime cost about a sixth more CPU
    /// per request in profiles).
    pub fn run_until(self, shutdown: impl Future<Output = ()>) -> io::Result<()> {
        let shared = self.shared;
        let stop = Arc::new(AtomicBool::new(false));
        let maintainer = {
            let (shared, stop) = (shared.clone(), stop.clone());
            thread::Builder::new()
                .name("txmem-maintain".into())
                .spawn(move || {
                    shared
                        .store
                        .run_maintainer(&stop, MAINTENANCE_PERIOD, CRAWL_BUDGET)
                })?
        };
        let workers = (0..shared.settings.threads.max(1))
            .map(Worker::start)
            .collect::<io::Result<Vec<_>>>()?;
        let acceptor = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let result = acceptor.block_on(async {
            let listener = TcpListener::from_std(self.listener)?;
            tokio::select! {
                r = accept_loop(&shared, listener, &workers) => r,
                () = shutdown => Ok(()),
            }
        });
        for w in workers {
            w.stop();
        }
        stop.store(true, Ordering::Release);
        maintainer.thread().unpark();
        let _ = maintainer.join();
        result
    }

    /// Runs the server on a thread of its own; the handle stops it.
    pub fn spawn(self) -> io::Result<ServerHandle> {
        let addr = self.local_addr()?;
        let shared = self.shared.clone();
        let (tx, rx) = oneshot::channel::<()>();
        let thread = thread::Builder::new()
            .name("txmem-server".into())
            .spawn(move || {
                self.run_until(async {
                    let _ = rx.await;
                })
            })?;
        Ok(ServerHandle {
            addr,
            shared,
            stop: Some(tx),
            thread: Some(thread),
        })
    }
}

/// A server running on its own thread (see [`Server::spawn`]); dropping
/// the handle stops it.
pub struct ServerHandle {
    /// The address it listens on.
    pub addr: SocketAddr,
    /// Its shared state.
    pub shared: Arc<Shared>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<thread::JoinHandle<io::Result<()>>>,
}

impl ServerHandle {
    /// Stops the server and waits for it.
    pub fn stop(mut self) -> io::Result<()> {
        self.shutdown()
    }

    fn shutdown(&mut self) -> io::Result<()> {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        match self.thread.take() {
            Some(t) => t
                .join()
                .unwrap_or_else(|_| Err(io::Error::other("server thread panicked"))),
            None => Ok(()),
        }
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        let _ = self.shutdown();
    }
}

/// A worker thread running a single-threaded runtime until told to stop.
struct Worker {
    handle: tokio::runtime::Handle,
    stop: oneshot::Sender<()>,
    thread: thread::JoinHandle<()>,
}

impl Worker {
    fn start(i: usize) -> io::Result<Worker> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let handle = runtime.handle().clone();
        let (stop, stopped) = oneshot::channel::<()>();
        let thread = thread::Builder::new()
            .name(format!("txmem-worker-{i}"))
            .spawn(move || {
                runtime.block_on(async {
                    let _ = stopped.await;
                });
                // Dropping the runtime drops its connections.
            })?;
        Ok(Worker {
            handle,
            stop,
            thread,
        })
    }

    fn stop(self) {
        let _ = self.stop.send(());
        let _ = self.thread.join();
    }
}

async fn accept_loop(
    shared: &Arc<Shared>,
    listener: TcpListener,
    workers: &[Worker],
) -> io::Result<()> {
    let mut next = 0;
    loop {
        let (sock, _) = match listener.accept().await {
            Ok(c) => c,
            // Out of descriptors or a connection reset before accept:
            // memcached backs off and goes on; so does this.
            Err(e) if is_transient(&e) => {
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
            Err(e) => return Err(e),
        };
        let c = &shared.connections;
        c.total.fetch_add(1, Ordering::Relaxed);
        if c.current.fetch_add(1, Ordering::AcqRel) as usize >= shared.settings.max_connections {
            c.current.fetch_sub(1, Ordering::AcqRel);
            c.rejected.fetch_add(1, Ordering::Relaxed);
            tokio::spawn(async move {
                let mut sock = sock;
                let _ = sock.write_all(b"ERROR Too many open connections\r\n").await;
            });
            continue;
        }
        // Hand the socket to the next worker's reactor.
        let sock = sock.into_std()?;
        let shared = shared.clone();
        workers[next % workers.len()].handle.spawn(async move {
            if let Ok(sock) = TcpStream::from_std(sock) {
                let _ = serve(&shared, sock).await;
            }
            shared.connections.current.fetch_sub(1, Ordering::AcqRel);
        });
        next += 1;
    }
}

fn is_transient(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::Interrupted
            | io::ErrorKind::WouldBlock
    ) || e.raw_os_error() == Some(24) // EMFILE
        || e.raw_os_error() == Some(23) // ENFILE
}

/// One connection: read what arrived, run every complete request, write
/// the replies in one go.
async fn serve(shared: &Shared, mut sock: TcpStream) -> io::Result<()> {
    sock.set_nodelay(true)?;
    let mut input = BytesMut::with_capacity(16 * 1024);
    let mut out = Vec::with_capacity(16 * 1024);
    let mut conn = Conn::new();
    loop {
        let n = sock.read_buf(&mut input).await?;
        if n == 0 {
            // Whatever is left in `input` is an incomplete request: it was
            // never run, so nothing is half-stored.
            return Ok(());
        }
        let counters = shared.stats.mine();
        bump(&counters.bytes_read, n as u64);
        let step = protocol::process(shared, &mut conn, &mut input, &mut out);
        if !out.is_empty() {
            sock.write_all(&out).await?;
            bump(&shared.stats.mine().bytes_written, out.len() as u64);
            out.clear();
            if out.capacity() > KEEP_BUFFER {
                out.shrink_to(16 * 1024);
            }
        }
        if step == Step::Close {
            return Ok(());
        }
        if input.is_empty() && input.capacity() > KEEP_BUFFER {
            input = BytesMut::with_capacity(16 * 1024);
        }
    }
}
