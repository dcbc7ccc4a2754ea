//! Dropping a server's open connections on demand, to stand in for a
//! network that fails after a request was delivered.

use std::{
    collections::HashMap,
    io,
    net::{Shutdown, SocketAddr},
    pin::Pin,
    sync::{
        Arc, Mutex, PoisonError,
        atomic::{AtomicU64, Ordering},
    },
    task::{Context, Poll},
    time::Duration,
};

use axum::serve::Listener;
use tokio::{
    io::{AsyncRead, AsyncWrite, ReadBuf},
    net::{TcpListener, TcpStream},
};

use crate::stats::Stats;

/// Shuts down every connection open now; later ones are unaffected.
#[derive(Debug, Clone, Default)]
pub struct ConnectionCutter {
    /// A second handle on each open connection's socket, by connection.
    open: Arc<Mutex<HashMap<u64, std::net::TcpStream>>>,
    next: Arc<AtomicU64>,
}

impl ConnectionCutter {
    fn open(&self) -> std::sync::MutexGuard<'_, HashMap<u64, std::net::TcpStream>> {
        self.open.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Resets every open connection: both directions are shut down at once,
    /// whatever the server is doing with them.
    pub fn cut(&self) {
        for (_, socket) in self.open().drain() {
            if let Err(error) = socket.shutdown(Shutdown::Both) {
                tracing::debug!(%error, "connection already closed");
            }
        }
    }

    /// Registers `stream`; the returned connection leaves the register when
    /// dropped.
    fn track(&self, stream: TcpStream) -> io::Result<CuttableIo> {
        let std = stream.into_std()?;
        let handle = std.try_clone()?;
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        self.open().insert(id, handle);
        Ok(CuttableIo {
            io: TcpStream::from_std(std)?,
            id,
            cutter: self.clone(),
        })
    }
}

/// A TCP listener whose connections a [`ConnectionCutter`] can shut down.
pub struct CuttableListener {
    pub(crate) inner: TcpListener,
    pub(crate) cutter: ConnectionCutter,
    /// Counts the connections accepted.
    pub(crate) stats: Arc<Stats>,
}

impl Listener for CuttableListener {
    type Io = CuttableIo;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            let accepted = match self.inner.accept().await {
                Ok((stream, addr)) => {
                    // MCP messages are small request/response exchanges
                    // that Nagle's algorithm would otherwise delay.
                    if let Err(error) = stream.set_nodelay(true) {
                        tracing::warn!(%error, "failed to set TCP_NODELAY on an accepted connection");
                    }
                    self.stats.record_connection();
                    self.cutter.track(stream).map(|io| (io, addr))
                }
                Err(error) => Err(error),
            };
            match accepted {
                Ok(accepted) => return accepted,
                Err(error) => {
                    tracing::warn!(%error, "failed to accept a connection");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        self.inner.local_addr()
    }
}

/// An accepted connection, registered with its [`ConnectionCutter`].
pub struct CuttableIo {
    io: TcpStream,
    id: u64,
    cutter: ConnectionCutter,
}

impl Drop for CuttableIo {
    fn drop(&mut self) {
        self.cutter.open().remove(&self.id);
    }
}

impl AsyncRead for CuttableIo {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl AsyncWrite for CuttableIo {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}
