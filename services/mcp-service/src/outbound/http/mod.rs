//! The outbound HTTP client for MCP servers and OAuth token endpoints, with
//! the outbound address policy enforced on what is actually dialled.
//!
//! * Host names are resolved by [`PolicyResolver`], which checks every
//!   resolved address and hands reqwest only checked addresses, so the
//!   address dialled is the address checked (no DNS-rebinding gap).
//! * IP-literal hosts never reach a resolver (hyper dials them directly) and
//!   reqwest has no pre-connect hook for them, so **callers MUST call
//!   [`check_request_url`] on every URL before sending a request to it**.
//! * Every redirect hop is checked with [`AddressPolicy::check_url`] (scheme
//!   and IP literal) and refused with an error; host-name targets are then
//!   checked by the resolver when dialled. At most `max_redirects` hops are
//!   followed.
//! * A redirect never leaves the origin of the URL first requested (except
//!   to upgrade `http` to `https` on the same host and default ports): it
//!   is refused with an error, not followed. Credentials are configured for
//!   one origin, and reqwest strips only `Authorization` and cookies when the
//!   host changes — not a custom auth header, not on a downgrade from https
//!   to http, and never the body, which a 307/308 sends again (tool
//!   arguments; an OAuth client secret in a token request). An MCP endpoint
//!   or token endpoint is a configured URL: the admin can configure the
//!   final one.
//! * No proxy is taken from the environment (a proxy would dial on our
//!   behalf, past the policy), no `Referer` is sent, TCP_NODELAY is set.
//!
//! A refusal surfaces as a [`reqwest::Error`] whose source chain holds the
//! [`PolicyError`].

use std::error::Error as StdError;
use std::sync::Arc;
use std::time::Duration;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use reqwest::redirect;

use crate::domain::address_policy::{AddressPolicy, PolicyError};

/// Options for outbound HTTP to MCP servers and OAuth token endpoints.
#[derive(Debug, Clone)]
pub struct HttpClientOptions {
    /// Limit on name resolution plus TCP (and TLS) connection set-up.
    pub connect_timeout: Duration,
    /// Redirect hops followed at most; one more is an error. 0 refuses every redirect.
    pub max_redirects: usize,
    /// Certificate authorities trusted besides the system's.
    pub extra_roots: Vec<reqwest::Certificate>,
    /// An idle pooled connection is not used again after this long. Below
    /// the 5 s after which Node's and uvicorn's HTTP servers close an idle
    /// connection by default: a request sent on a connection the server is
    /// closing at that moment fails ("connection reset", "error sending
    /// request"), and one that may have reached the server is not repeated.
    pub pool_idle_timeout: Duration,
}

impl Default for HttpClientOptions {
    fn default() -> Self {
        Self {
            connect_timeout: Duration::from_secs(10),
            max_redirects: 5,
            extra_roots: Vec::new(),
            pool_idle_timeout: Duration::from_secs(4),
        }
    }
}

/// The certificate authorities of a PEM file (one or more certificates).
pub fn read_roots(path: &std::path::Path) -> anyhow::Result<Vec<reqwest::Certificate>> {
    use anyhow::Context as _;
    let pem = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let roots = reqwest::Certificate::from_pem_bundle(&pem)
        .with_context(|| format!("reading the certificates of {}", path.display()))?;
    anyhow::ensure!(!roots.is_empty(), "{} holds no certificate", path.display());
    Ok(roots)
}

/// A reqwest resolver that resolves with tokio and refuses a name when any of
/// its addresses is refused by the policy.
#[derive(Debug, Clone)]
pub struct PolicyResolver {
    policy: Arc<AddressPolicy>,
}

impl PolicyResolver {
    /// A resolver enforcing `policy`.
    pub fn new(policy: Arc<AddressPolicy>) -> Self {
        Self { policy }
    }
}

impl Resolve for PolicyResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let policy = Arc::clone(&self.policy);
        Box::pin(async move {
            let host = name.as_str();
            // Port 0: reqwest substitutes the URL's port.
            match policy.resolve_host(host, 0).await {
                Ok(addrs) => Ok(Box::new(addrs.into_iter()) as Addrs),
                Err(err) => {
                    if matches!(err, PolicyError::Blocked { .. }) {
                        tracing::warn!(host, error = %err, "outbound connection refused by address policy");
                    } else {
                        tracing::debug!(host, error = %err, "outbound name resolution failed");
                    }
                    Err(Box::new(err) as Box<dyn StdError + Send + Sync>)
                }
            }
        })
    }
}

/// A reqwest client whose DNS resolution goes through the policy (so the
/// address actually dialled is the one checked — no DNS-rebinding gap), that
/// refuses IP-literal URLs the policy refuses (checked before dialling, by
/// the caller: see [`check_request_url`]), follows at most `max_redirects`
/// redirects and refuses any redirect whose target fails `check_url` (scheme
/// or IP literal) — hostname targets are then checked by the resolver —,
/// sets TCP_NODELAY, the connect timeout, and no proxy from the environment.
/// Over TLS it offers HTTP/2 and HTTP/1.1 (ALPN), so a server that speaks
/// HTTP/2 carries every concurrent request on one connection; plain `http://`
/// stays HTTP/1.1.
///
/// The workspace builds reqwest with `rustls-no-provider`: a rustls
/// `CryptoProvider` must be installed process-wide before this is called
/// (reqwest panics otherwise), e.g. at start-up with
/// `rustls::crypto::ring::default_provider().install_default()`.
pub fn build_client(
    policy: Arc<AddressPolicy>,
    options: &HttpClientOptions,
) -> Result<reqwest::Client, reqwest::Error> {
    reqwest::Client::builder()
        .redirect(redirect_policy(Arc::clone(&policy), options.max_redirects))
        .dns_resolver(PolicyResolver::new(policy))
        .tls_certs_merge(options.extra_roots.iter().cloned())
        .connect_timeout(options.connect_timeout)
        .pool_idle_timeout(options.pool_idle_timeout)
        .tcp_nodelay(true)
        .no_proxy()
        .referer(false)
        .build()
}

/// Like [`build_client`], but a redirect is returned to the caller, never
/// followed (OAuth discovery reads some redirects rather than following them).
pub fn build_client_without_redirects(
    policy: Arc<AddressPolicy>,
    options: &HttpClientOptions,
) -> Result<reqwest::Client, reqwest::Error> {
    reqwest::Client::builder()
        .redirect(redirect::Policy::none())
        .dns_resolver(PolicyResolver::new(policy))
        .tls_certs_merge(options.extra_roots.iter().cloned())
        .connect_timeout(options.connect_timeout)
        .pool_idle_timeout(options.pool_idle_timeout)
        .tcp_nodelay(true)
        .no_proxy()
        .referer(false)
        .build()
}

/// Checks a request URL before it is sent: scheme, host, and an IP-literal
/// host against the policy (= [`AddressPolicy::check_url`]).
///
/// Callers MUST call this before sending any request with a client from
/// [`build_client`]: IP-literal hosts bypass the policy resolver, and reqwest
/// offers no hook to check them before connecting. (Redirect targets are
/// checked by the client itself.)
pub fn check_request_url(policy: &AddressPolicy, url: &str) -> Result<(), PolicyError> {
    policy.check_url(url).map(|_| ())
}

/// The error a redirect chain longer than `max_redirects` ends with.
#[derive(Debug, thiserror::Error)]
#[error("too many redirects (at most {0} are followed)")]
struct TooManyRedirects(usize);

/// The error a redirect to another origin ends with. It names origins only
/// (scheme, host, port), never a path or query.
#[derive(Debug, thiserror::Error)]
#[error(
    "the server redirected to another origin ({to}); credentials stay with the origin they \
     were configured for ({from}), so the redirect was not followed: configure the final URL"
)]
pub struct CrossOriginRedirect {
    from: String,
    to: String,
}

/// Whether a redirect from `original` to `next` stays where the request's
/// credentials were configured to go: the same origin, or the same host
/// upgraded from http on port 80 to https on port 443.
pub fn stays_with_origin(original: &url::Url, next: &url::Url) -> bool {
    original.origin() == next.origin()
        || (original.scheme() == "http"
            && next.scheme() == "https"
            && original.host() == next.host()
            && original.port_or_known_default() == Some(80)
            && next.port_or_known_default() == Some(443))
}

fn redirect_policy(policy: Arc<AddressPolicy>, max_redirects: usize) -> redirect::Policy {
    redirect::Policy::custom(move |attempt| {
        // `previous` holds the original URL and every hop followed so far.
        if attempt.previous().len() > max_redirects {
            return attempt.error(TooManyRedirects(max_redirects));
        }
        match policy.check_url(attempt.url().as_str()) {
            Ok(_) => match attempt.previous().first() {
                Some(original) if !stays_with_origin(original, attempt.url()) => {
                    let refusal = CrossOriginRedirect {
                        from: original.origin().ascii_serialization(),
                        to: attempt.url().origin().ascii_serialization(),
                    };
                    tracing::warn!(error = %refusal, "outbound redirect to another origin refused");
                    attempt.error(refusal)
                }
                _ => attempt.follow(),
            },
            Err(err) => {
                tracing::warn!(
                    host = attempt.url().host_str().unwrap_or_default(),
                    error = %err,
                    "outbound redirect refused by address policy"
                );
                attempt.error(err)
            }
        }
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests;
