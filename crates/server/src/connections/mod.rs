//! Serving a listener's connections within bounds, for the gRPC server and
//! the MCP endpoint alike: a connection that sends no request in time, or
//! stays idle, is closed; connections not yet authenticated are capped per
//! IP address and in all, authenticated ones per organization, all of them
//! within a share of the process's file descriptors; HTTP/2 streams, resets
//! and headers are bounded per connection.

mod args;
mod fd_budget;
mod requests;
mod tracker;

use std::{future::Future, io, net::IpAddr, time::Duration};

use bytes::Bytes;
use futures::{Stream, StreamExt as _};
use http::{Request, Response};
use hyper::body::Incoming;
use hyper_util::{
    rt::{TokioExecutor, TokioIo, TokioTimer},
    server::conn::auto,
};
use tokio::{
    io::{AsyncRead, AsyncWrite},
    net::TcpStream,
    sync::watch,
};
use tonic::transport::server::Connected;
use tower::Service;

pub use self::{
    args::{ConnectionArgs, caps_within},
    fd_budget::{ConnectionCaps, FdBudget, raise_nofile_to_hard_limit},
    tracker::ConnectionHandle,
};
use self::{
    requests::ConnectionService,
    tracker::{Close, Registration, Tracker},
};

/// How long a connection closed for idleness gets to finish its close
/// (HTTP/2 GOAWAY, or the end of an HTTP/1 exchange) before it is dropped.
const CLOSE_GRACE: Duration = Duration::from_secs(1);
/// The pause after accept fails for want of file descriptors, so that the
/// accept loop does not spin while none is free.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The bounds of one listener's connections.
#[derive(Debug, Clone)]
pub struct ConnectionLimits {
    /// A connection with no request in flight this long, that never
    /// authenticated (none sent, or only public ones), is closed; counted
    /// from accept, or from the end of the TLS handshake.
    pub first_request_timeout: Duration,
    /// An authenticated connection with no request in flight this long is
    /// closed; an open stream is a request in flight, pings are not.
    pub idle_timeout: Duration,
    /// The longest an HTTP/1 request's headers take to arrive; `None` where
    /// HTTP/1 is not served.
    pub header_read_timeout: Option<Duration>,
    /// How many connections, in all and not yet authenticated.
    pub caps: ConnectionCaps,
    /// The HTTP/2 bounds of each connection.
    pub http2: Http2Limits,
}

/// The HTTP/2 bounds of one connection.
#[derive(Debug, Clone, Copy)]
pub struct Http2Limits {
    /// Streams open at once on one connection.
    pub max_concurrent_streams: u32,
    /// Streams a client may open and reset before the server accepted them
    /// (the "rapid reset" flood); past it the connection is closed.
    pub max_pending_accept_reset_streams: usize,
    /// Streams the server may reset for a client's protocol errors; past it
    /// the connection is closed.
    pub max_local_error_reset_streams: usize,
    /// Largest header list of a request, in bytes.
    pub max_header_list_bytes: u32,
    /// Ping interval on a quiet connection, and how long an answer may take.
    pub keepalive: Option<(Duration, Duration)>,
}

/// An accepted connection: its IP address for the per-address cap, and the
/// connect info its requests carry (tonic's [`Connected`]).
pub trait Accepted: AsyncRead + AsyncWrite + Connected + Unpin + Send + 'static {
    /// The client's IP address.
    fn remote_ip(&self) -> Option<IpAddr>;
}

impl Accepted for TcpStream {
    fn remote_ip(&self) -> Option<IpAddr> {
        self.peer_addr().ok().map(|addr| addr.ip())
    }
}

/// Serves `service` on the connections of `incoming` within `limits` until
/// `shutdown` resolves; then stops accepting, closes every connection
/// gracefully and resolves once all are closed.
pub async fn serve_connections<C, S, B>(
    incoming: impl Stream<Item = io::Result<C>>,
    service: S,
    limits: ConnectionLimits,
    shutdown: impl Future<Output = ()>,
) where
    C: Accepted,
    S: Service<Request<Incoming>, Response = Response<B>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<BoxError>,
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    let tracker = Tracker::new(limits.caps);
    let builder = http_builder(&limits);
    let (stop_tx, stop_rx) = watch::channel(());
    {
        let accepted = incoming.take_until(shutdown);
        let mut accepted = std::pin::pin!(accepted);
        while let Some(next) = accepted.next().await {
            let io = match next {
                Ok(io) => io,
                Err(error) => {
                    on_accept_error(&error).await;
                    continue;
                }
            };
            let Some(registration) = tracker.admit(io.remote_ip()) else {
                tracing::debug!(remote_ip = ?io.remote_ip(), "connection refused: every connection is authenticated and the listener is full");
                continue;
            };
            let connection = ConnectionService {
                inner: service.clone(),
                handle: registration.handle(),
                connect_info: io.connect_info(),
            };
            tokio::spawn(serve_one(
                builder.clone(),
                (io, connection, registration),
                limits.clone(),
                stop_rx.clone(),
            ));
        }
    }
    let _ = stop_tx.send(());
    drop(stop_rx);
    stop_tx.closed().await;
}

/// The HTTP server of every connection, within `limits`.
fn http_builder(limits: &ConnectionLimits) -> auto::Builder<TokioExecutor> {
    let mut builder = auto::Builder::new(TokioExecutor::new());
    if limits.header_read_timeout.is_none() {
        builder = builder.http2_only();
    }
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout);
    let http2 = &limits.http2;
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_concurrent_streams(http2.max_concurrent_streams)
        .max_pending_accept_reset_streams(http2.max_pending_accept_reset_streams)
        .max_local_error_reset_streams(http2.max_local_error_reset_streams)
        .max_header_list_size(http2.max_header_list_bytes)
        .keep_alive_interval(http2.keepalive.map(|(interval, _)| interval))
        .keep_alive_timeout(http2.keepalive.map_or(Duration::from_secs(20), |(_, t)| t));
    builder
}

/// Serves one connection until it ends, is evicted, idles past its
/// timeout, or the server stops.
async fn serve_one<C, S, B>(
    builder: auto::Builder<TokioExecutor>,
    (io, service, registration): (C, ConnectionService<S, C::ConnectInfo>, Registration),
    limits: ConnectionLimits,
    mut stop: watch::Receiver<()>,
) where
    C: Accepted,
    S: Service<Request<Incoming>, Response = Response<B>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<BoxError>,
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    let connection = builder.serve_connection(TokioIo::new(io), service);
    let mut connection = std::pin::pin!(connection);
    let closing = registration.closing(limits.first_request_timeout, limits.idle_timeout);
    let mut closing = std::pin::pin!(closing);
    let mut closed_at = None;
    let mut stopping = false;
    loop {
        let grace_over = async {
            match closed_at {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            served = connection.as_mut() => {
                if let Err(error) = served {
                    tracing::debug!(error = %error, "connection ended with an error");
                }
                break;
            }
            close = &mut closing, if closed_at.is_none() && !stopping => {
                if close == Close::Evicted {
                    break;
                }
                tracing::debug!("idle connection closed");
                connection.as_mut().graceful_shutdown();
                closed_at = Some(tokio::time::Instant::now() + CLOSE_GRACE);
            }
            () = grace_over => break,
            _ = stop.changed(), if closed_at.is_none() && !stopping => {
                // The server's drain timeout bounds how long this takes.
                stopping = true;
                connection.as_mut().graceful_shutdown();
            }
        }
    }
}

/// Pauses after a failed accept when the process is out of file
/// descriptors; any other failure (one client's) is passed over at once.
async fn on_accept_error(error: &io::Error) {
    let out_of_descriptors = [rustix::io::Errno::MFILE, rustix::io::Errno::NFILE]
        .iter()
        .any(|errno| error.raw_os_error() == Some(errno.raw_os_error()));
    if out_of_descriptors {
        tracing::warn!(error = %error, "accept failed: out of file descriptors");
        tokio::time::sleep(ACCEPT_BACKOFF).await;
    } else {
        tracing::debug!(error = %error, "connection not accepted");
    }
}

/// Logs a listener's connection bounds and where they come from.
pub fn log_limits(listener: &str, limits: &ConnectionLimits, budget: &FdBudget) {
    tracing::info!(
        listener,
        nofile_soft_limit = budget.soft_limit,
        nofile_reserve = budget.reserve,
        max_connections = limits.caps.max_connections,
        max_unauthenticated = limits.caps.max_unauthenticated,
        max_unauthenticated_per_ip = limits.caps.max_unauthenticated_per_ip,
        max_connections_per_org = limits.caps.max_per_org,
        first_request_timeout = ?limits.first_request_timeout,
        idle_timeout = ?limits.idle_timeout,
        "connection limits"
    );
}

#[cfg(test)]
mod tests;
