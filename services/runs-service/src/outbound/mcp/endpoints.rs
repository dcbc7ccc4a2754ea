//! mcp-service's replicas as one balanced gRPC channel.
//!
//! The configured address may name several replicas (comma-separated URLs)
//! and each URL's host is resolved again every `resolve_every`, so the pods
//! behind a headless Kubernetes Service join and leave the set as they come
//! and go. Calls spread across the replicas (power of two choices on load);
//! a replica that stops answering fails its connection and a later lookup
//! drops it. A lookup that fails keeps what the last one found, so trouble
//! with DNS never empties the set.

use std::{collections::BTreeSet, net::SocketAddr, time::Duration};

use anyhow::{Context as _, bail};
use tokio::sync::mpsc::Sender;
use tonic::transport::{Channel, Endpoint, Uri, channel::Change};

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

    /// A channel over every replica found now, kept up to date in the
    /// background while the channel lives.
    pub async fn connect(&self) -> Channel {
        // Changes are few (replicas, not calls); the balancer drains them.
        let (channel, changes) = Channel::balance_channel(64);
        let mut resolver = Resolver {
            endpoints: self.clone(),
            found: vec![BTreeSet::new(); self.urls.len()],
            changes,
        };
        resolver.refresh().await;
        if !self.resolve_every.is_zero() {
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(resolver.endpoints.resolve_every).await;
                    if !resolver.refresh().await {
                        return; // the channel is gone
                    }
                }
            });
        }
        channel
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
    changes: Sender<Change<SocketAddr, Endpoint>>,
}

impl Resolver {
    /// Resolves every URL and tells the balancer what changed; false when
    /// the channel is gone.
    async fn refresh(&mut self) -> bool {
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
            if self.changes.send(Change::Remove(*gone)).await.is_err() {
                return false;
            }
        }
        for (url, addresses) in self.endpoints.urls.iter().zip(&self.found) {
            for new in addresses.difference(&before) {
                tracing::info!(address = %new, "an mcp-service replica joined");
                let endpoint = self.endpoints.endpoint(url, *new);
                if self
                    .changes
                    .send(Change::Insert(*new, endpoint))
                    .await
                    .is_err()
                {
                    return false;
                }
            }
        }
        true
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
