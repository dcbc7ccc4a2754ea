//! Serving over TLS with a certificate made at start-up, offering HTTP/2
//! and HTTP/1.1 by ALPN, so clients can be tested against an `https://`
//! server that speaks HTTP/2.

use std::{io, net::SocketAddr, sync::Arc, time::Duration};

use anyhow::Context as _;
use axum::serve::Listener;
use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio_rustls::{TlsAcceptor, server::TlsStream};

use crate::cut::{CuttableIo, CuttableListener};

/// How long a client has to finish the TLS handshake. Handshakes run one
/// after another in the accept loop, so a client that never finishes holds
/// the next connections back at most this long.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);

/// A self-signed certificate for the loopback names, and the acceptor that
/// presents it.
pub(crate) struct TlsIdentity {
    /// The certificate, PEM-encoded: what a client must trust.
    pub certificate_pem: String,
    pub acceptor: TlsAcceptor,
}

impl TlsIdentity {
    /// A new key and certificate for `localhost`, `127.0.0.1` and `::1`.
    pub fn generate() -> anyhow::Result<Self> {
        let names = ["localhost", "127.0.0.1", "::1"].map(String::from).to_vec();
        let made = rcgen::generate_simple_self_signed(names).context("making a certificate")?;
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(made.signing_key.serialize_der()));
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .context("choosing TLS versions")?
            .with_no_client_auth()
            .with_single_cert(vec![made.cert.der().clone()], key)
            .context("loading the certificate")?;
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(Self {
            certificate_pem: made.cert.pem(),
            acceptor: TlsAcceptor::from(Arc::new(config)),
        })
    }
}

/// A [`CuttableListener`] whose connections speak TLS.
pub(crate) struct TlsListener {
    pub inner: CuttableListener,
    pub acceptor: TlsAcceptor,
}

impl Listener for TlsListener {
    type Io = TlsStream<CuttableIo>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            let (io, addr) = self.inner.accept().await;
            match tokio::time::timeout(HANDSHAKE_TIMEOUT, self.acceptor.accept(io)).await {
                Ok(Ok(stream)) => return (stream, addr),
                Ok(Err(error)) => tracing::warn!(%addr, %error, "TLS handshake failed"),
                Err(_) => tracing::warn!(%addr, "TLS handshake took too long"),
            }
        }
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        self.inner.local_addr()
    }
}
