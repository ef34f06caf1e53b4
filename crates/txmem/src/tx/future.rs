//! Async transactions: `atomically_async` and its forms, whose `retry`
//! suspends the task instead of blocking its thread.
//!
//! Each poll runs attempts synchronously, as `atomically` does, on the
//! polling thread. An attempt that commits completes the future. An
//! attempt that calls [`retry`](crate::Transaction::retry) registers the
//! task's [`Waker`] on the objects it read (the registry blocking `retry`
//! uses, with the same no-lost-wake-up argument), re-checks its reads, and
//! returns `Pending`; the first commit that writes one of those objects wakes
//! the task, and the next poll starts the transaction afresh.

use std::future::Future;
use std::marker::PhantomData;
use std::panic::Location;
use std::pin::Pin;
use std::task::{Context, Poll};

use super::run::run_until_retry;
use super::transaction::Transaction;
use crate::error::TxResult;
use crate::options::TxOptions;
use crate::wait;

/// The future of an async transaction ([`atomically_async`],
/// [`read_only_async`], [`TxOptions::run_async`]): resolves to the value
/// of the attempt that commits.
///
/// The closure stays synchronous: it runs inside `poll`, to completion or
/// abort, and cannot `.await` (a transaction never spans a suspension).
/// Side effects that must happen once belong in commit handlers
/// ([`Transaction::on_commit`]).
///
/// **Cancel safety**: dropping the future loses nothing. Between polls no
/// attempt is in flight (each poll's attempts have committed or been rolled
/// back before it returns), so a dropped future has either committed
/// (and returned `Ready`) or left no trace; a future dropped while it waits
/// for a change leaves the registry at once.
#[must_use = "a transaction future does nothing unless polled"]
pub struct TxFuture<'env, F, R> {
    f: F,
    options: Option<TxOptions>,
    read_only: bool,
    site: &'static Location<'static>,
    /// Set while the task waits for a change to what its last attempt read.
    waiting: Option<wait::Registration>,
    _env: PhantomData<fn(&mut Transaction<'env>) -> R>,
}

// The future never pins its closure (it calls it through `&mut`) and holds
// nothing else that cares where it lives, so it may move between polls
// whatever `F` is.
impl<F, R> Unpin for TxFuture<'_, F, R> {}

impl<'env, F, R> Future for TxFuture<'env, F, R>
where
    F: FnMut(&mut Transaction<'env>) -> TxResult<R>,
{
    type Output = R;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<R> {
        let this = self.get_mut();
        // Woken (or polled early): leave the registry and run again; an
        // attempt that still has to wait registers anew.
        this.waiting = None;
        match run_until_retry(
            this.options.as_ref(),
            this.read_only,
            this.site,
            &mut this.f,
            cx.waker(),
        ) {
            Ok(value) => Poll::Ready(value),
            Err(registration) => {
                this.waiting = Some(registration);
                Poll::Pending
            }
        }
    }
}

impl<F, R> std::fmt::Debug for TxFuture<'_, F, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TxFuture")
            .field("site", &self.site)
            .field("waiting", &self.waiting.is_some())
            .finish_non_exhaustive()
    }
}

#[track_caller]
fn future<'env, F, R>(options: Option<TxOptions>, read_only: bool, f: F) -> TxFuture<'env, F, R>
where
    F: FnMut(&mut Transaction<'env>) -> TxResult<R>,
{
    TxFuture {
        f,
        options,
        read_only,
        site: Location::caller(),
        waiting: None,
        _env: PhantomData,
    }
}

/// Runs `f` as a transaction inside an async task: [`atomically`]'s
/// semantics (the runtime-wide defaults, retried until it commits), except
/// that a [`retry`](Transaction::retry) suspends the task until a commit
/// changes something the attempt read, instead of blocking the thread. The
/// future needs no particular runtime (only the [`Waker`](std::task::Waker)
/// it is polled with) and is `Send` when `f` is.
///
/// Calling it inside a transaction on the same thread panics when polled,
/// as nested `atomically` does.
///
/// As with `atomically`, the closure borrows the objects it uses (they
/// outlive the future). A spawned task, whose future must own what it
/// uses, owns the objects in its `async move` block and lends them to the
/// closure:
///
/// ```
/// use std::sync::Arc;
/// use txmem::{atomically, atomically_async, TQueue};
///
/// # let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
/// # rt.block_on(async {
/// let queue = Arc::new(TQueue::new());
/// let consumer = {
///     let queue = queue.clone();
///     // Waits (as a task, not a thread) until an item arrives.
///     tokio::spawn(async move { atomically_async(|tx| queue.pop(tx)).await })
/// };
/// tokio::task::yield_now().await;
/// atomically(|tx| queue.push(tx, 42));
/// assert_eq!(consumer.await.unwrap(), 42);
/// # });
/// ```
///
/// [`atomically`]: crate::atomically
#[track_caller]
pub fn atomically_async<'env, F, R>(f: F) -> TxFuture<'env, F, R>
where
    F: FnMut(&mut Transaction<'env>) -> TxResult<R>,
{
    future(None, false, f)
}

/// [`atomically_async`] for a transaction that only reads: the async form
/// of [`read_only`](crate::read_only).
#[track_caller]
pub fn read_only_async<'env, F, R>(f: F) -> TxFuture<'env, F, R>
where
    F: FnMut(&mut Transaction<'env>) -> TxResult<R>,
{
    future(None, true, f)
}

impl TxOptions {
    /// Runs `f` as an async transaction with these options (see
    /// [`atomically_async`]).
    #[track_caller]
    pub fn run_async<'env, F, R>(&self, f: F) -> TxFuture<'env, F, R>
    where
        F: FnMut(&mut Transaction<'env>) -> TxResult<R>,
    {
        future(Some(*self), false, f)
    }
}

#[cfg(test)]
mod tests {
    use std::future::Future;
    use std::pin::Pin;
    use std::task::{Context, Poll, Waker};

    use crate::{atomically, wait, TQueue};

    use super::atomically_async;

    /// A future that waits is registered; dropping it (cancelling the task)
    /// leaves the registry as it was, and a waker that is woken once the
    /// future is gone wakes nobody.
    #[test]
    fn a_dropped_waiting_future_leaves_no_registration() {
        let q = TQueue::<u8>::new();
        let waiting = || wait::waiting_on(&q as *const TQueue<u8> as usize);
        let mut cx = Context::from_waker(Waker::noop());
        let mut fut = atomically_async(|tx| q.pop(tx));
        assert_eq!(Pin::new(&mut fut).poll(&mut cx), Poll::Pending);
        assert_eq!(waiting(), 1);
        drop(fut);
        assert_eq!(waiting(), 0);
        atomically(|tx| q.push(tx, 1));
        assert_eq!(q.load_vec(), vec![1]);
    }

    /// A woken future runs again and completes; one polled early (no
    /// change yet) registers again rather than completing or leaking.
    #[test]
    fn a_future_polled_early_waits_again() {
        let q = TQueue::<u8>::new();
        let waiting = || wait::waiting_on(&q as *const TQueue<u8> as usize);
        let mut cx = Context::from_waker(Waker::noop());
        let mut fut = atomically_async(|tx| q.pop(tx));
        assert_eq!(Pin::new(&mut fut).poll(&mut cx), Poll::Pending);
        assert_eq!(Pin::new(&mut fut).poll(&mut cx), Poll::Pending);
        assert_eq!(waiting(), 1);
        atomically(|tx| q.push(tx, 9));
        assert_eq!(Pin::new(&mut fut).poll(&mut cx), Poll::Ready(9));
        assert_eq!(waiting(), 0);
    }
}
