//! Accepted TCP connections turned into TLS connections, handshakes bounded
//! in time and in number.

use std::{
    io,
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
    time::Duration,
};

use futures::{Stream, StreamExt as _};
use tokio::{
    io::{AsyncRead, AsyncWrite, ReadBuf},
    net::{TcpListener, TcpStream},
};
use tokio_rustls::{TlsAcceptor, server::TlsStream};
use tonic::transport::server::{Connected, TcpIncoming};

use super::{PeerIdentity, ReloadingTls, peer_identity};
use crate::connections::Accepted;

/// One client's connection after its TLS handshake.
#[derive(Debug)]
pub struct TlsConnection {
    stream: TlsStream<TcpStream>,
    peer: PeerIdentity,
}

impl Connected for TlsConnection {
    type ConnectInfo = PeerIdentity;

    /// tonic puts this in the extensions of every request of the
    /// connection, where the auth layer finds the calling service.
    fn connect_info(&self) -> PeerIdentity {
        self.peer.clone()
    }
}

impl Accepted for TlsConnection {
    fn remote_ip(&self) -> Option<std::net::IpAddr> {
        self.peer.remote_addr.map(|addr| addr.ip())
    }
}

impl AsyncRead for TlsConnection {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for TlsConnection {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

/// The connections of `listener` after their TLS handshake with the
/// configuration current when each was accepted. At most `max_handshakes`
/// run at once (past it no more connections are accepted until one ends),
/// each within `handshake_timeout`; a failed one is an error item, which
/// the server skips.
pub fn tls_incoming(
    listener: TcpListener,
    tls: Arc<ReloadingTls>,
    handshake_timeout: Duration,
    max_handshakes: usize,
) -> impl Stream<Item = io::Result<TlsConnection>> {
    TcpIncoming::from(listener)
        .with_nodelay(Some(true))
        .map(move |accepted| {
            let acceptor = TlsAcceptor::from(tls.current());
            async move { handshake(acceptor, accepted?, handshake_timeout).await }
        })
        .buffer_unordered(max_handshakes)
}

async fn handshake(
    acceptor: TlsAcceptor,
    tcp: TcpStream,
    timeout: Duration,
) -> io::Result<TlsConnection> {
    let remote_addr = tcp.peer_addr().ok();
    let stream = match tokio::time::timeout(timeout, acceptor.accept(tcp)).await {
        Ok(Ok(stream)) => stream,
        Ok(Err(error)) => {
            tracing::debug!(remote_addr = ?remote_addr, error = %error, "TLS handshake failed");
            return Err(error);
        }
        Err(_) => {
            tracing::debug!(remote_addr = ?remote_addr, "TLS handshake timed out");
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "TLS handshake timed out",
            ));
        }
    };
    // rustls hands out the client's certificates only after verifying them
    // against the client CA; without one it asks for none.
    let service = stream
        .get_ref()
        .1
        .peer_certificates()
        .and_then(|chain| chain.first())
        .and_then(|leaf| peer_identity(leaf));
    Ok(TlsConnection {
        stream,
        peer: PeerIdentity {
            remote_addr,
            service,
        },
    })
}
