//! Connection-level limits the admission limiter cannot see: it admits
//! requests, and a client that never completes one holds a socket and a
//! file descriptor all the same.
//!
//! - **Header read timeout**: a connection that started sending a request
//!   head and has not finished it within `header_timeout` is answered
//!   `408 Request Timeout` and closed.
//! - **Idle timeout**: a keep-alive connection with no request for
//!   `idle_timeout` is closed.
//! - **Write timeout**: a connection whose client has stopped reading (a
//!   write to it blocked for `write_timeout`) is closed outright. The
//!   limiter already gave back the response's slots at its maximum hold
//!   time; this gives back the socket, which a graceful close would keep
//!   until the response ends, that is never.
//! - **Connection cap**: at most `max_connections` are open, by default
//!   fewer than the process may open files. At the cap, a new connection
//!   first makes the longest-idle one close; only when none is idle is the
//!   newcomer refused (`503`, `connection: close`). Running out of file
//!   descriptors all the same (`EMFILE`) closes idle connections too,
//!   instead of spinning on `accept`.
//!
//! So idle and slow-header connections can neither starve `/healthz` nor
//! exhaust the process's descriptors.

use std::collections::HashMap;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{ready, Context, Poll};
use std::time::Duration;

use axum::Router;
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;
use tokio::time::Instant;

/// The limits of [`serve`].
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_connections: usize,
    pub header_timeout: Duration,
    pub idle_timeout: Duration,
    pub write_timeout: Duration,
}

impl Default for Limits {
    /// 10 s to send a head, 60 s idle, 30 s for a blocked write, and a cap of 4,096 connections or 64
    /// descriptors below the process's limit (for the listeners, the admin
    /// side and files), whichever is lower. The cap also bounds memory: a
    /// server starved of CPU while clients keep connecting would otherwise
    /// hold every connection up to the descriptor limit (about 10 kB each).
    fn default() -> Self {
        let below_fd_limit = fd_limit().map_or(1024, |n| n.saturating_sub(64).max(16));
        Self {
            max_connections: below_fd_limit.min(4096),
            header_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            write_timeout: Duration::from_secs(30),
        }
    }
}

/// The soft limit on open files of this process (Linux), if known.
pub fn fd_limit() -> Option<usize> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line.split_whitespace().nth(3)?.parse().ok()
}

/// Counters of [`serve`], for tests and the soak script.
#[derive(Debug, Default)]
pub struct Stats {
    pub open: AtomicUsize,
    pub timed_out_heads: AtomicU64,
    pub idle_closed: AtomicU64,
    /// Connections closed because their client stopped reading.
    pub stalled_closed: AtomicU64,
    pub evicted: AtomicU64,
    pub refused: AtomicU64,
}

/// One connection, as the accept loop and its own task see it.
struct Conn {
    /// Requests of this connection being answered.
    in_flight: AtomicUsize,
    /// Bytes arrived since the last request started: a head in progress.
    head_started: AtomicBool,
    /// When the head started, or when the connection last went idle.
    since: Mutex<Instant>,
    /// Since when a write has been blocked (the client is not reading).
    write_blocked_since: Mutex<Option<Instant>>,
    /// Asked to close (evicted): not idle for the next eviction.
    closing: AtomicBool,
    close: Notify,
}

impl Conn {
    fn idle_since(&self) -> Option<Instant> {
        let idle = self.in_flight.load(Ordering::Acquire) == 0
            && !self.head_started.load(Ordering::Acquire)
            && !self.closing.load(Ordering::Acquire);
        idle.then(|| *self.since.lock().unwrap())
    }
}

#[derive(Default)]
struct Registry {
    next: AtomicU64,
    conns: Mutex<HashMap<u64, Arc<Conn>>>,
}

impl Registry {
    /// Asks the longest-idle connection to close; false if none is idle.
    fn evict_idle(&self) -> bool {
        let conns = self.conns.lock().unwrap();
        let oldest = conns
            .values()
            .filter_map(|c| c.idle_since().map(|at| (at, c)))
            .min_by_key(|(at, _)| *at);
        match oldest {
            Some((_, conn)) => {
                conn.closing.store(true, Ordering::Release);
                conn.close.notify_one();
                true
            }
            None => false,
        }
    }
}

/// Serves `app` on `listener` within `limits` until the listener fails.
pub async fn serve(listener: TcpListener, app: Router, limits: Limits, stats: Arc<Stats>) {
    let registry = Arc::new(Registry::default());
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(error) => {
                // Out of descriptors (or another transient failure): make
                // room, then try again a little later rather than spin.
                if !registry.evict_idle() {
                    eprintln!("accept failed with nothing idle to close: {error}");
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        if stats.open.load(Ordering::Acquire) >= limits.max_connections {
            if registry.evict_idle() {
                stats.evicted.fetch_add(1, Ordering::Relaxed);
            } else {
                stats.refused.fetch_add(1, Ordering::Relaxed);
                let _ = stream.try_write(
                    b"HTTP/1.1 503 Service Unavailable\r\nretry-after: 1\r\nconnection: close\r\ncontent-length: 0\r\n\r\n",
                );
                continue;
            }
        }
        let _ = stream.set_nodelay(true);
        let id = registry.next.fetch_add(1, Ordering::Relaxed);
        let conn = Arc::new(Conn {
            in_flight: AtomicUsize::new(0),
            head_started: AtomicBool::new(false),
            since: Mutex::new(Instant::now()),
            write_blocked_since: Mutex::new(None),
            closing: AtomicBool::new(false),
            close: Notify::new(),
        });
        registry.conns.lock().unwrap().insert(id, Arc::clone(&conn));
        stats.open.fetch_add(1, Ordering::AcqRel);
        let (registry, stats, app) = (Arc::clone(&registry), Arc::clone(&stats), app.clone());
        tokio::spawn(async move {
            serve_one(stream, app, &conn, limits, &stats).await;
            registry.conns.lock().unwrap().remove(&id);
            stats.open.fetch_sub(1, Ordering::AcqRel);
        });
    }
}

async fn serve_one(
    stream: TcpStream,
    app: Router,
    conn: &Arc<Conn>,
    limits: Limits,
    stats: &Stats,
) {
    let stream = Arc::new(stream);
    let io = TokioIo::new(Watched {
        stream: Arc::clone(&stream),
        conn: Arc::clone(conn),
    });
    let service = {
        let conn = Arc::clone(conn);
        tower::ServiceBuilder::new()
            .map_request(
                move |request: axum::extract::Request<hyper::body::Incoming>| {
                    conn.head_started.store(false, Ordering::Release);
                    conn.in_flight.fetch_add(1, Ordering::AcqRel);
                    request
                },
            )
            .service(app)
    };
    let service = Finished {
        inner: service,
        conn: Arc::clone(conn),
    };
    let connection = hyper::server::conn::http1::Builder::new()
        .header_read_timeout(None)
        .serve_connection(io, TowerToHyperService::new(service));
    let mut connection = std::pin::pin!(connection);
    let tick = limits
        .header_timeout
        .min(limits.idle_timeout)
        .min(limits.write_timeout)
        / 4;
    let mut closing = false;
    loop {
        tokio::select! {
            _ = connection.as_mut() => return,
            _ = conn.close.notified(), if !closing => {
                closing = true;
                connection.as_mut().graceful_shutdown();
            }
            _ = tokio::time::sleep(tick) => {
                let blocked = *conn.write_blocked_since.lock().unwrap();
                if blocked.is_some_and(|at| at.elapsed() >= limits.write_timeout) {
                    // Dropping the connection closes the socket.
                    stats.stalled_closed.fetch_add(1, Ordering::Relaxed);
                    return;
                }
                if conn.in_flight.load(Ordering::Acquire) > 0 {
                    continue;
                }
                let since = *conn.since.lock().unwrap();
                if conn.head_started.load(Ordering::Acquire) {
                    if since.elapsed() >= limits.header_timeout && !closing {
                        stats.timed_out_heads.fetch_add(1, Ordering::Relaxed);
                        break;
                    }
                } else if since.elapsed() >= limits.idle_timeout && !closing {
                    stats.idle_closed.fetch_add(1, Ordering::Relaxed);
                    closing = true;
                    connection.as_mut().graceful_shutdown();
                }
            }
        }
    }
    // The head never completed: hyper has written nothing for it and is
    // no longer polled, so the socket is ours to answer on; it closes when
    // this fn returns and drops both handles.
    let _ = stream.try_write(
        b"HTTP/1.1 408 Request Timeout\r\nconnection: close\r\ncontent-length: 0\r\n\r\n",
    );
}

/// Marks the connection idle again when a response head is ready.
#[derive(Clone)]
struct Finished<S> {
    inner: S,
    conn: Arc<Conn>,
}

impl<S, R> tower::Service<R> for Finished<S>
where
    S: tower::Service<R>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn std::future::Future<Output = Result<S::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: R) -> Self::Future {
        let future = self.inner.call(request);
        let conn = Arc::clone(&self.conn);
        Box::pin(async move {
            let response = future.await;
            *conn.since.lock().unwrap() = Instant::now();
            conn.in_flight.fetch_sub(1, Ordering::AcqRel);
            response
        })
    }
}

/// The socket, shared with the connection's task so that it can still
/// answer `408` after hyper gave up on the head; notes when a new head
/// starts arriving.
struct Watched {
    stream: Arc<TcpStream>,
    conn: Arc<Conn>,
}

impl AsyncRead for Watched {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        loop {
            ready!(self.stream.poll_read_ready(cx))?;
            match self.stream.try_read(buf.initialize_unfilled()) {
                Ok(n) => {
                    buf.advance(n);
                    if n > 0
                        && self.conn.in_flight.load(Ordering::Acquire) == 0
                        && !self.conn.head_started.swap(true, Ordering::AcqRel)
                    {
                        *self.conn.since.lock().unwrap() = Instant::now();
                    }
                    return Poll::Ready(Ok(()));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        loop {
            if self.stream.poll_write_ready(cx).is_pending() {
                let mut blocked = self.conn.write_blocked_since.lock().unwrap();
                blocked.get_or_insert_with(Instant::now);
                return Poll::Pending;
            }
            match self.stream.try_write(data) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                result => {
                    *self.conn.write_blocked_since.lock().unwrap() = None;
                    return Poll::Ready(result);
                }
            }
        }
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        // Closed when the last handle to the stream is dropped.
        Poll::Ready(Ok(()))
    }
}
