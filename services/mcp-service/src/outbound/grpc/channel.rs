//! A gRPC integration's channel: HTTP/2 to its pinned target only, every
//! address dialled checked by the outbound address policy first (a name's
//! addresses as resolved, an IP literal as written), TLS with the system's
//! roots, the deployment's and the integration's own, and mutual TLS with
//! the integration's sealed client key. A channel connects when first used
//! and again after its connection is lost.

use std::{
    future::Future,
    net::{IpAddr, SocketAddr},
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
    time::Duration,
};

use hyper_util::rt::TokioIo;
use secrecy::{ExposeSecret as _, SecretString};
use tokio::net::TcpStream;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint, Identity};

use crate::domain::{address_policy::AddressPolicy, ports::CallError, transport::Grpc};

/// What every gRPC channel of the deployment shares.
#[derive(Debug, Clone)]
pub struct ChannelSettings {
    /// The outbound address policy.
    pub policy: Arc<AddressPolicy>,
    /// Name resolution, TCP and TLS set-up, at most.
    pub connect_timeout: Duration,
    /// The deployment's extra certificate authorities (PEM), trusted for
    /// every target besides the system's.
    pub extra_roots: Option<Vec<u8>>,
}

/// A channel to `grpc`'s target (not yet connected), with `client_key` for
/// mutual TLS when its client certificate is set.
pub fn channel(
    grpc: &Grpc,
    client_key: Option<&SecretString>,
    settings: &ChannelSettings,
) -> Result<Channel, CallError> {
    let refused = |e: tonic::transport::Error| CallError::Connect(format!("the gRPC target: {e}"));
    let mut endpoint = Endpoint::from_shared(grpc.target.clone())
        .map_err(refused)?
        .connect_timeout(settings.connect_timeout)
        .http2_keep_alive_interval(Duration::from_secs(30))
        .keep_alive_timeout(Duration::from_secs(10));
    if grpc.target.starts_with("https://") {
        endpoint = endpoint
            .tls_config(tls(grpc, client_key, settings))
            .map_err(refused)?;
    }
    Ok(endpoint.connect_with_connector_lazy(PolicyConnector {
        policy: settings.policy.clone(),
    }))
}

fn tls(
    grpc: &Grpc,
    client_key: Option<&SecretString>,
    settings: &ChannelSettings,
) -> ClientTlsConfig {
    let mut tls = ClientTlsConfig::new().with_native_roots();
    let roots = settings
        .extra_roots
        .iter()
        .map(Vec::as_slice)
        .chain((!grpc.ca_certificate.is_empty()).then_some(grpc.ca_certificate.as_bytes()));
    tls = tls.ca_certificates(roots.map(Certificate::from_pem));
    if let Some(key) = client_key.filter(|_| !grpc.client_certificate.is_empty()) {
        tls = tls.identity(Identity::from_pem(
            &grpc.client_certificate,
            key.expose_secret(),
        ));
    }
    tls
}

/// Dials a target's addresses once the address policy has passed them.
#[derive(Debug, Clone)]
struct PolicyConnector {
    policy: Arc<AddressPolicy>,
}

type Connecting = Pin<Box<dyn Future<Output = Result<TokioIo<TcpStream>, tower::BoxError>> + Send>>;

impl tower::Service<http::Uri> for PolicyConnector {
    type Response = TokioIo<TcpStream>;
    type Error = tower::BoxError;
    type Future = Connecting;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, uri: http::Uri) -> Self::Future {
        let policy = self.policy.clone();
        Box::pin(async move {
            let addresses = checked_addresses(&policy, &uri).await?;
            let mut last = None;
            for address in addresses {
                match TcpStream::connect(address).await {
                    Ok(stream) => {
                        stream.set_nodelay(true)?;
                        return Ok(TokioIo::new(stream));
                    }
                    Err(error) => last = Some(error),
                }
            }
            Err(last.map_or_else(
                || "the target's name has no address".into(),
                |e| Box::new(e) as tower::BoxError,
            ))
        })
    }
}

/// The addresses of `uri`'s host the policy allows (all of a name's, or
/// none).
async fn checked_addresses(
    policy: &AddressPolicy,
    uri: &http::Uri,
) -> Result<Vec<SocketAddr>, tower::BoxError> {
    let host = uri.host().ok_or("the target has no host")?;
    let port = uri
        .port_u16()
        .unwrap_or(if uri.scheme_str() == Some("https") {
            443
        } else {
            80
        });
    let literal = host.trim_start_matches('[').trim_end_matches(']');
    if let Ok(ip) = literal.parse::<IpAddr>() {
        policy.check_ip(host, ip)?;
        return Ok(vec![SocketAddr::new(ip, port)]);
    }
    Ok(policy.resolve_host(host, port).await?)
}
