//! The accept loop of a real server, with every bound of [`ServerLimits`].
//!
//! - **Connection limit with back-pressure.** At most `connections_max` connections are
//!   served at once. At the limit the loop stops accepting (the kernel's backlog holds the
//!   rest, and past it the clients' own retries) and resumes as soon as one ends. Before it
//!   waits, it sheds the oldest connection that is still waiting on its client: one that has
//!   not sent a whole request head, or whose handler is still reading a request body that
//!   has not all arrived ([`body_read`]). Such a socket is the cheapest thing to give up
//!   (nothing has been done for it), and shedding the oldest first means a client that
//!   connects and sends its request at once is served even while thousands of idle or slow
//!   sockets queue in front of it. A connection whose request is whole is never shed.
//! - **Header timeout.** A connection that has not sent its request head within
//!   `header_timeout` is closed.
//! - **Write stall.** A client that reads nothing of its answer for `write_stall_timeout` is
//!   cut ([`Stalling`]).
//! - **Accept errors** (EMFILE, ENFILE, ENOBUFS, ENOMEM, ECONNABORTED, ...) are logged (one
//!   line per second at most, with how many were left unsaid) and retried after a backoff of
//!   10 ms doubling to 1 s; the loop never returns on one.
//!
//! Every connection still carries the caller's guard, and the stop future ends the loop as
//! in the simulation.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use http::{Request, Response};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::Notify;

use super::{BoxBody, BoxError, ServerLimits};

/// Shortest and longest wait after a failed accept.
const BACKOFF_MIN: Duration = Duration::from_millis(10);
const BACKOFF_MAX: Duration = Duration::from_secs(1);

/// The connections of one listener, shared by the loop and the connection tasks.
#[derive(Default)]
struct Book {
    /// Connections being served.
    open: Cell<usize>,
    /// Woken when a connection ends.
    freed: Notify,
    /// Connections still waiting on their client (no whole head, or a body still being
    /// read), by accept order, each with the signal that sheds it.
    waiting: RefCell<BTreeMap<u64, Rc<Shed>>>,
}

/// The signal that sheds one connection: set, then notified.
#[derive(Default)]
struct Shed {
    set: Cell<bool>,
    notify: Notify,
}

/// The connection a handler serves, for [`body_read`].
struct Current {
    book: Rc<Book>,
    id: u64,
}

tokio::task_local! {
    static CURRENT: Current;
}

/// Says that the handler of this task's connection has read its request body (to its end,
/// or given up on it): the connection no longer waits on its client and is not shed. Outside
/// a bounded real server (every simulation) it does nothing.
pub(crate) fn body_read() {
    let _ = CURRENT.try_with(|c| {
        c.book.waiting.borrow_mut().remove(&c.id);
    });
}

/// Counts a connection while it lives.
struct Open(Rc<Book>, u64);

impl Drop for Open {
    fn drop(&mut self) {
        self.0.waiting.borrow_mut().remove(&self.1);
        self.0.open.set(self.0.open.get() - 1);
        self.0.freed.notify_one();
    }
}

/// Failed accepts, reported at most once a second.
struct AcceptErrors {
    last_report: Option<Instant>,
    unsaid: u64,
    backoff: Duration,
}

impl AcceptErrors {
    fn failed(&mut self, port: Option<u16>, e: &io::Error) -> Duration {
        let now = Instant::now();
        if self
            .last_report
            .is_none_or(|t| now.duration_since(t) >= Duration::from_secs(1))
        {
            let more = if self.unsaid > 0 {
                format!(" ({} more since the last report)", self.unsaid)
            } else {
                String::new()
            };
            tracing::warn!(
                "accept failed on port {}: {e}{more}; serving on, retrying in {} ms",
                port.map_or("?".to_string(), |p| p.to_string()),
                self.backoff.as_millis()
            );
            self.last_report = Some(now);
            self.unsaid = 0;
        } else {
            self.unsaid += 1;
        }
        let wait = self.backoff;
        self.backoff = (self.backoff * 2).min(BACKOFF_MAX);
        wait
    }
}

/// Accepts and serves connections on `listener` within `limits` until `stop` resolves.
pub(super) async fn accept_until<H, F, G, T>(
    listener: &tokio::net::TcpListener,
    limits: ServerLimits,
    mut stop: Pin<&mut impl Future<Output = ()>>,
    handler: &H,
    guard: &G,
) where
    H: Fn(Request<Incoming>) -> F + Clone + 'static,
    F: Future<Output = Result<Response<BoxBody>, BoxError>> + 'static,
    G: Fn() -> T,
    T: 'static,
{
    let book = Rc::new(Book::default());
    let port = listener.local_addr().ok().map(|a| a.port());
    let mut errors = AcceptErrors {
        last_report: None,
        unsaid: 0,
        backoff: BACKOFF_MIN,
    };
    let mut next_id = 0u64;
    let connections_max = limits.connections_max.max(1);
    loop {
        // Back-pressure: at the limit, shed the oldest connection still waiting for its
        // head, and accept nothing until one ends.
        while book.open.get() >= connections_max {
            let oldest = book.waiting.borrow_mut().pop_first();
            if let Some((_, shed)) = oldest {
                shed.set.set(true);
                shed.notify.notify_one();
            }
            tokio::select! {
                biased;
                () = &mut stop => return,
                () = book.freed.notified() => {}
            }
        }
        let accepted = tokio::select! {
            biased;
            () = &mut stop => return,
            accepted = listener.accept() => accepted,
        };
        match accepted {
            Ok((stream, _peer)) => {
                errors.backoff = BACKOFF_MIN;
                let _ = stream.set_nodelay(true);
                let id = next_id;
                next_id += 1;
                book.open.set(book.open.get() + 1);
                let shed = Rc::new(Shed::default());
                book.waiting.borrow_mut().insert(id, shed.clone());
                let open = Open(book.clone(), id);
                serve(stream, limits, handler.clone(), guard(), open, shed);
            }
            Err(e) => {
                let wait = errors.failed(port, &e);
                tokio::select! {
                    biased;
                    () = &mut stop => return,
                    () = tokio::time::sleep(wait) => {}
                }
            }
        }
    }
}

/// Serves one connection: its head within the header timeout (or until it is shed), then
/// its request to the end.
fn serve<H, F, T>(
    stream: tokio::net::TcpStream,
    limits: ServerLimits,
    handler: H,
    guard: T,
    open: Open,
    shed: Rc<Shed>,
) where
    H: Fn(Request<Incoming>) -> F + Clone + 'static,
    F: Future<Output = Result<Response<BoxBody>, BoxError>> + 'static,
    T: 'static,
{
    crate::activity::spawn(async move {
        let _guard = guard;
        let headed = Rc::new(Cell::new(false));
        let service = {
            let (headed, book, id) = (headed.clone(), open.0.clone(), open.1);
            hyper::service::service_fn(move |req: Request<Incoming>| {
                // The head is in; the connection waits on its client until its body is read
                // (at once when it has none).
                headed.set(true);
                if http_body::Body::is_end_stream(req.body()) {
                    book.waiting.borrow_mut().remove(&id);
                }
                CURRENT.scope(
                    Current {
                        book: book.clone(),
                        id,
                    },
                    handler(req),
                )
            })
        };

        let io = Stalling::new(stream, limits.write_stall_timeout);
        let connection = hyper::server::conn::http1::Builder::new()
            .auto_date_header(false)
            .keep_alive(false)
            .serve_connection(TokioIo::new(io), service);
        tokio::pin!(connection);
        let deadline = tokio::time::sleep(limits.header_timeout);
        tokio::pin!(deadline);
        loop {
            tokio::select! {
                biased;
                _ = &mut connection => break,
                () = &mut deadline, if !headed.get() => {
                    if !headed.get() {
                        break;
                    }
                }
                // Shed by the accept loop (only ever while it waited on its client).
                () = shed.notify.notified() => {
                    if shed.set.get() {
                        break;
                    }
                }
            }
        }
        drop(open);
    });
}

/// A stream whose writes give up when the peer reads nothing for `limit`: a client that
/// stops reading its answer cannot hold a connection (and its buffers) forever.
struct Stalling<S> {
    inner: S,
    limit: Duration,
    stalled: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl<S> Stalling<S> {
    fn new(inner: S, limit: Duration) -> Self {
        Stalling {
            inner,
            limit,
            stalled: None,
        }
    }

    /// After a write that could not proceed: the stall's deadline, armed on the first one;
    /// `Err` once it has passed.
    fn pending(&mut self, cx: &mut Context<'_>) -> io::Result<()> {
        let limit = self.limit;
        let sleep = self
            .stalled
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
        match sleep.as_mut().poll(cx) {
            Poll::Ready(()) => Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("the client read nothing for {} ms", limit.as_millis()),
            )),
            Poll::Pending => Ok(()),
        }
    }

    fn wrote<R>(&mut self, cx: &mut Context<'_>, poll: Poll<io::Result<R>>) -> Poll<io::Result<R>> {
        match poll {
            Poll::Pending => match self.pending(cx) {
                Ok(()) => Poll::Pending,
                Err(e) => Poll::Ready(Err(e)),
            },
            ready => {
                self.stalled = None;
                ready
            }
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Stalling<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Stalling<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let poll = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.wrote(cx, poll)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let poll = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.wrote(cx, poll)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let poll = Pin::new(&mut self.inner).poll_flush(cx);
        self.wrote(cx, poll)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_errors_back_off_and_report_once_a_second() {
        let mut errors = AcceptErrors {
            last_report: None,
            unsaid: 0,
            backoff: BACKOFF_MIN,
        };
        let e = io::Error::from_raw_os_error(libc::EMFILE);
        let waits: Vec<u128> = (0..9)
            .map(|_| errors.failed(Some(1), &e).as_millis())
            .collect();
        assert_eq!(waits, [10, 20, 40, 80, 160, 320, 640, 1000, 1000]);
        assert_eq!(errors.unsaid, 8, "one report, eight left unsaid");
    }
}
