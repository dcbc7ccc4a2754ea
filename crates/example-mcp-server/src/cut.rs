//! Dropping a server's open connections on demand, to stand in for a
//! network that fails after a request was delivered.

use std::{
    future::Future as _,
    io,
    pin::Pin,
    sync::{Arc, Mutex, PoisonError},
    task::{Context, Poll},
};

use axum::serve::Listener;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

/// Cuts every connection accepted so far; later ones are unaffected.
#[derive(Debug, Clone, Default)]
pub struct ConnectionCutter {
    current: Arc<Mutex<CancellationToken>>,
}

impl ConnectionCutter {
    fn token(&self) -> CancellationToken {
        self.current
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Resets every open connection.
    pub fn cut(&self) {
        let mut current = self.current.lock().unwrap_or_else(PoisonError::into_inner);
        current.cancel();
        *current = CancellationToken::new();
    }
}

/// A listener whose connections a [`ConnectionCutter`] can reset.
pub struct CuttableListener<L> {
    pub(crate) inner: L,
    pub(crate) cutter: ConnectionCutter,
}

impl<L: Listener> Listener for CuttableListener<L> {
    type Io = CuttableIo<L::Io>;
    type Addr = L::Addr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        let (io, addr) = self.inner.accept().await;
        let cut = Box::pin(self.cutter.token().cancelled_owned());
        (CuttableIo { io, cut }, addr)
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        self.inner.local_addr()
    }
}

/// A connection that fails every read and write once cut.
pub struct CuttableIo<I> {
    io: I,
    cut: Pin<Box<WaitForCancellationFutureOwned>>,
}

impl<I> CuttableIo<I> {
    fn check(&mut self, cx: &mut Context<'_>) -> io::Result<()> {
        match self.cut.as_mut().poll(cx) {
            Poll::Ready(()) => Err(io::Error::new(
                io::ErrorKind::ConnectionReset,
                "connection cut",
            )),
            Poll::Pending => Ok(()),
        }
    }
}

impl<I: AsyncRead + Unpin> AsyncRead for CuttableIo<I> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        self.check(cx)?;
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<I: AsyncWrite + Unpin> AsyncWrite for CuttableIo<I> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.check(cx)?;
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.check(cx)?;
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}
