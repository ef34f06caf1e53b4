//! The listener and the connections: one single-threaded tokio runtime per
//! `-t` worker thread, a task per connection, and the maintenance thread.

use std::cell::RefCell;
use std::future::Future;
use std::io;
use std::net::{SocketAddr, TcpListener as StdListener, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use bytes::BytesMut;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::sync::oneshot;

use crate::protocol::{self, Conn, Out, Step};
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
        let listener = listen(&settings)?;
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
                () = shared.shutdown.notified() => Ok(()),
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

/// The listening socket: `-l`, `-p`, with `-b`'s backlog (which the
/// standard library's `bind` does not take; tokio's socket does, and
/// hands the socket back detached from its short-lived runtime).
fn listen(settings: &Settings) -> io::Result<StdListener> {
    let addr = (settings.listen.as_str(), settings.port)
        .to_socket_addrs()?
        .next()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no address to listen on"))?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()?;
    runtime.block_on(async {
        let socket = if addr.is_ipv4() {
            TcpSocket::new_v4()?
        } else {
            TcpSocket::new_v6()?
        };
        socket.set_reuseaddr(true)?;
        socket.bind(addr)?;
        let listener = socket.listen(settings.backlog)?.into_std()?;
        listener.set_nonblocking(true)?;
        Ok(listener)
    })
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

/// A connection's read buffer: the size taken from the pool, and the
/// largest returned to it (one grown for a large value is freed instead).
const READ_BUFFER: usize = 16 * 1024;

/// Buffers kept per worker for the connections that have input or replies
/// in flight; an idle connection holds none.
const POOLED: usize = 64;

thread_local! {
    /// This worker's spare buffers (a worker is one thread, and a
    /// connection stays on its worker).
    static POOL: RefCell<(Vec<BytesMut>, Vec<Vec<u8>>)> = const { RefCell::new((Vec::new(), Vec::new())) };
}

fn take_input() -> BytesMut {
    POOL.with_borrow_mut(|(inputs, _)| inputs.pop())
        .unwrap_or_else(|| BytesMut::with_capacity(READ_BUFFER))
}

fn give_input(mut b: BytesMut) {
    b.clear();
    if b.capacity() >= READ_BUFFER && b.capacity() <= KEEP_BUFFER {
        POOL.with_borrow_mut(|(inputs, _)| {
            if inputs.len() < POOLED {
                inputs.push(b);
            }
        });
    }
}

fn take_output() -> Vec<u8> {
    POOL.with_borrow_mut(|(_, outs)| outs.pop())
        .unwrap_or_else(|| Vec::with_capacity(READ_BUFFER))
}

fn give_output(b: Vec<u8>) {
    if b.capacity() >= READ_BUFFER && b.capacity() <= KEEP_BUFFER {
        POOL.with_borrow_mut(|(_, outs)| {
            if outs.len() < POOLED {
                outs.push(b);
            }
        });
    }
}

/// One connection: wait for input, run the complete requests, write their
/// replies; repeat.
///
/// Memory: an idle connection holds no buffer (they go back to the
/// worker's pool once its input is used up and its replies written). While
/// replies wait past [`OUT_HIGH_WATER`](protocol::OUT_HIGH_WATER) they are
/// written before another request runs, and nothing more is read until the
/// client takes them, so a client that sends without reading is held by
/// its socket buffers, not by the server's memory.
async fn serve(shared: &Shared, sock: TcpStream) -> io::Result<()> {
    sock.set_nodelay(true)?;
    // What a connection holds while it waits is what an idle connection
    // costs, so the wait holds little: the replies are a local of one
    // round (not alive across the wait), the timer and the writer are
    // boxed, and `poll_read_ready` keeps the waker in the socket's
    // registration where `readable()` would keep a waiter in this task.
    let mut input = Input(BytesMut::new());
    let mut conn = Conn::speaking(shared.settings.protocol);
    let mut need_input = true;
    loop {
        if need_input {
            let readable = std::future::poll_fn(|cx| sock.poll_read_ready(cx));
            match shared.settings.idle_timeout {
                None => readable.await?,
                Some(limit) => {
                    if Box::pin(tokio::time::timeout(limit, readable))
                        .await
                        .is_err()
                    {
                        shared
                            .connections
                            .idle_kicks
                            .fetch_add(1, Ordering::Relaxed);
                        return Ok(());
                    }
                }
            }
            let input = &mut input.0;
            if input.capacity() == 0 {
                *input = take_input();
            } else if input.capacity() - input.len() < READ_BUFFER / 4 {
                input.reserve(READ_BUFFER);
            }
            let n = match sock.try_read_buf(input) {
                // Whatever is left in `input` is an incomplete request: it
                // was never run, so nothing is half-stored.
                Ok(0) => return Ok(()),
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => return Err(e),
            };
            bump(&shared.stats.mine().bytes_read, n as u64);
            release_garbage(n);
        }
        let mut out = Out::new();
        out.set_buffer(take_output());
        let budget = shared.settings.reqs_per_event.max(1);
        let step = protocol::process_some(shared, &mut conn, &mut input.0, &mut out, budget);
        if !out.is_empty() {
            Box::pin(write_out(&sock, &out)).await?;
            bump(&shared.stats.mine().bytes_written, out.len() as u64);
        }
        give_output(out.take_buffer());
        match step {
            Step::Close => return Ok(()),
            Step::Yield => {
                // Let the worker's other connections run between pieces
                // of a long pipeline or a large reply.
                tokio::task::yield_now().await;
                need_input = false;
            }
            Step::Done | Step::NeedMore => need_input = true,
        }
        if input.0.is_empty() {
            give_input(std::mem::take(&mut input.0));
        }
    }
}

/// Bytes a worker reads between pushes of its retired values to be freed.
const GARBAGE_PERIOD: usize = 256 << 10;

thread_local! {
    static READ_SINCE_FLUSH: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Values replaced or evicted are freed once no transaction can still be
/// reading them (txmem's epochs); until then a thread keeps them in a
/// local batch, which a stream of large writes fills with megabytes no
/// limit counts. Every [`GARBAGE_PERIOD`] bytes read, the worker hands its
/// batch on and frees what has become safe to free, so that what waits
/// stays near the bytes written since.
fn release_garbage(read: usize) {
    READ_SINCE_FLUSH.with(|r| {
        let total = r.get() + read;
        if total >= GARBAGE_PERIOD {
            r.set(0);
            crate::store::release_garbage();
        } else {
            r.set(total);
        }
    });
}

/// A connection's read buffer, handed back to the pool when the
/// connection ends.
struct Input(BytesMut);

impl Drop for Input {
    fn drop(&mut self) {
        if self.0.capacity() > 0 {
            give_input(std::mem::take(&mut self.0));
        }
    }
}

/// Writes every segment of `out`.
async fn write_out(sock: &TcpStream, out: &Out) -> io::Result<()> {
    for mut seg in out.segments() {
        while !seg.is_empty() {
            sock.writable().await?;
            match sock.try_write(seg) {
                Ok(n) => seg = &seg[n..],
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    /// An idle connection's task must stay small: it is most of what
    /// 10,000 idle connections cost (memcached's are about 1 KB each).
    #[test]
    fn a_waiting_connection_is_small() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let s = tokio::net::TcpStream::connect(l.local_addr().unwrap())
                .await
                .unwrap();
            let shared = crate::Shared::new(crate::Settings::default());
            let task = super::serve(&shared, s);
            assert!(
                std::mem::size_of_val(&task) <= 256,
                "{} bytes",
                std::mem::size_of_val(&task)
            );
        });
    }
}
