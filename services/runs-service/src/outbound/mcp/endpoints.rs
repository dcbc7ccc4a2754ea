//! Where mcp-service's replicas are: the configured URLs, resolved now and
//! again.
//!
//! The configured address may name several replicas (comma-separated URLs)
//! and each URL's host is resolved again every `resolve_every`, so the pods
//! behind a headless Kubernetes Service join and leave the set as they come
//! and go ([`Replicas`] says which one a call goes to). A replica that stops
//! answering fails its connection, its calls go to the next in their order,
//! and a later lookup drops it. A lookup that fails keeps what the last one
//! found, so trouble with DNS never empties the set.

use std::{collections::BTreeSet, net::SocketAddr, time::Duration};

use anyhow::{Context as _, bail};
use tonic::transport::{Endpoint, Uri};

use super::replicas::Replicas;

/// How mcp-service is reached.
#[derive(Debug, Clone)]
pub struct McpEndpoints {
    /// The replicas' URLs (`http://host:port`), at least one.
    pub urls: Vec<Uri>,
    /// How often host names are resolved again; zero resolves once.
    pub resolve_every: Duration,
    /// The HTTP/2 keepalive ping interval on each connection: pings keep a
    /// connection that waits on a long tool call from being closed as idle
    /// by a proxy between the services, and find a dead replica.
    pub keepalive: Duration,
    /// How long a ping may go unanswered before the connection is dropped.
    pub keepalive_timeout: Duration,
}

impl McpEndpoints {
    /// Parses a comma-separated list of `http://host:port` URLs.
    pub fn parse(
        urls: &str,
        resolve_every: Duration,
        keepalive: Duration,
        keepalive_timeout: Duration,
    ) -> anyhow::Result<Self> {
        let urls = urls
            .split(',')
            .map(str::trim)
            .filter(|url| !url.is_empty())
            .map(parse_url)
            .collect::<anyhow::Result<Vec<_>>>()?;
        if urls.is_empty() {
            bail!("the mcp-service address names no URL");
        }
        Ok(Self {
            urls,
            resolve_every,
            keepalive,
            keepalive_timeout,
        })
    }

    /// Every replica found now, each connecting on first use, kept up to
    /// date in the background while the set is in use.
    pub async fn connect(&self) -> Replicas {
        let replicas = Replicas::default();
        let mut resolver = Resolver {
            endpoints: self.clone(),
            found: vec![BTreeSet::new(); self.urls.len()],
        };
        resolver.refresh(&replicas).await;
        if !self.resolve_every.is_zero() {
            let watched = replicas.downgrade();
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(resolver.endpoints.resolve_every).await;
                    let Some(replicas) = watched.upgrade() else {
                        return; // the client is gone
                    };
                    resolver.refresh(&replicas).await;
                }
            });
        }
        replicas
    }

    fn endpoint(&self, url: &Uri, address: SocketAddr) -> Endpoint {
        let uri: Uri = format!("http://{address}")
            .parse()
            .expect("a socket address makes a valid URI");
        Endpoint::from(uri)
            .origin(url.clone())
            .connect_timeout(Duration::from_secs(5))
            .tcp_nodelay(true)
            .http2_keep_alive_interval(self.keepalive)
            .keep_alive_timeout(self.keepalive_timeout)
            .keep_alive_while_idle(true)
    }
}

fn parse_url(url: &str) -> anyhow::Result<Uri> {
    let uri: Uri = url
        .parse()
        .with_context(|| format!("`{url}` is not a URL"))?;
    if uri.scheme_str() != Some("http") {
        bail!(
            "`{url}`: mcp-service is reached over plain HTTP/2 (`http://host:port`); TLS belongs to the mesh"
        );
    }
    if uri.host().is_none_or(str::is_empty) || uri.port_u16().is_none() {
        bail!("`{url}` needs a host and a port");
    }
    Ok(uri)
}

struct Resolver {
    endpoints: McpEndpoints,
    /// What each URL (by its index in `endpoints.urls`) resolved to last.
    found: Vec<BTreeSet<SocketAddr>>,
}

impl Resolver {
    /// Resolves every URL and tells `replicas` what changed.
    async fn refresh(&mut self, replicas: &Replicas) {
        let before: BTreeSet<SocketAddr> = self.found.iter().flatten().copied().collect();
        for (url, found) in self.endpoints.urls.iter().zip(&mut self.found) {
            let (host, port) = (url.host().unwrap_or_default(), url.port_u16().unwrap_or(80));
            match tokio::net::lookup_host((host.trim_matches(['[', ']']), port)).await {
                Ok(addresses) => *found = addresses.collect(),
                Err(error) => {
                    tracing::warn!(%url, %error, "could not resolve mcp-service; keeping the replicas found before");
                }
            }
        }
        let after: BTreeSet<SocketAddr> = self.found.iter().flatten().copied().collect();
        for gone in before.difference(&after) {
            tracing::info!(address = %gone, "an mcp-service replica left");
            replicas.remove(*gone);
        }
        for (url, addresses) in self.endpoints.urls.iter().zip(&self.found) {
            for new in addresses.difference(&before) {
                tracing::info!(address = %new, "an mcp-service replica joined");
                replicas.insert(*new, self.endpoints.endpoint(url, *new).connect_lazy());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_http_urls_with_a_host_and_port() {
        let parse = |urls| {
            McpEndpoints::parse(
                urls,
                Duration::ZERO,
                Duration::from_secs(30),
                Duration::from_secs(20),
            )
        };
        let endpoints = parse("http://a:1, http://b.svc:50051,").expect("two URLs");
        assert_eq!(endpoints.urls.len(), 2);
        for bad in ["", " , ", "https://a:1", "http://a", "a:1", "http://:1"] {
            assert!(parse(bad).is_err(), "{bad:?} was accepted");
        }
    }
}
