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
//!
//! Over `https://` each lookup also reads the TLS files again: when they
//! changed (a rotated client certificate or CA), every replica is connected
//! to anew with them, and calls in flight finish on the old connections.

use std::{collections::BTreeSet, net::SocketAddr, time::Duration};

use anyhow::{Context as _, bail};
use tonic::transport::{Endpoint, Uri};

use super::{
    replicas::Replicas,
    tls::{McpTls, McpTlsConfig},
};

/// How mcp-service is reached.
#[derive(Debug, Clone)]
pub struct McpEndpoints {
    /// The replicas' URLs (`http://host:port`, or `https://host:port` with
    /// `tls`), at least one.
    pub urls: Vec<Uri>,
    /// The files of TLS to mcp-service, for `https://` URLs.
    pub tls: Option<McpTls>,
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
    /// Parses a comma-separated list of URLs: `https://host:port` with
    /// `tls` (whose files are read here, so that a bad one stops the start),
    /// `http://host:port` without.
    pub fn parse(
        urls: &str,
        tls: Option<McpTls>,
        resolve_every: Duration,
        keepalive: Duration,
        keepalive_timeout: Duration,
    ) -> anyhow::Result<Self> {
        let scheme = if tls.is_some() { "https" } else { "http" };
        let urls = urls
            .split(',')
            .map(str::trim)
            .filter(|url| !url.is_empty())
            .map(|url| parse_url(url, scheme))
            .collect::<anyhow::Result<Vec<_>>>()?;
        if urls.is_empty() {
            bail!("the mcp-service address names no URL");
        }
        if let Some(tls) = &tls {
            for url in &urls {
                tls.read(url.host().unwrap_or_default())?;
            }
        }
        Ok(Self {
            urls,
            tls,
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
            tls: Vec::new(),
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

    fn endpoint(
        &self,
        url: &Uri,
        address: SocketAddr,
        tls: Option<&McpTlsConfig>,
    ) -> anyhow::Result<Endpoint> {
        let scheme = if tls.is_some() { "https" } else { "http" };
        let uri: Uri = format!("{scheme}://{address}")
            .parse()
            .expect("a socket address makes a valid URI");
        let endpoint = Endpoint::from(uri)
            .origin(url.clone())
            .connect_timeout(Duration::from_secs(5))
            .tcp_nodelay(true)
            .http2_keep_alive_interval(self.keepalive)
            .keep_alive_timeout(self.keepalive_timeout)
            .keep_alive_while_idle(true);
        match tls {
            Some(tls) => endpoint
                .tls_config(tls.config.clone())
                .context("the mcp-service TLS files do not make a TLS configuration"),
            None => Ok(endpoint),
        }
    }
}

fn parse_url(url: &str, scheme: &str) -> anyhow::Result<Uri> {
    let uri: Uri = url
        .parse()
        .with_context(|| format!("`{url}` is not a URL"))?;
    if uri.scheme_str() != Some(scheme) {
        bail!(
            "`{url}`: mcp-service is reached at `{scheme}://host:port` here; \
             `https://` URLs need SWITCHBOARD_MCP_SERVICE_TLS_CA_FILE and `http://` URLs none of the TLS settings"
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
    /// The TLS configuration of each URL (by index), as last read; empty
    /// over plaintext.
    tls: Vec<McpTlsConfig>,
}

impl Resolver {
    /// Reads the TLS files again; whether they changed since the last read
    /// that worked. A read that fails keeps the configuration read before.
    fn reload_tls(&mut self) -> bool {
        let Some(tls) = &self.endpoints.tls else {
            return false;
        };
        let read = self
            .endpoints
            .urls
            .iter()
            .map(|url| tls.read(url.host().unwrap_or_default()))
            .collect::<anyhow::Result<Vec<_>>>();
        match read {
            Ok(configs) => {
                let changed =
                    self.tls.first().map(|c| &c.contents) != configs.first().map(|c| &c.contents);
                if changed && !self.tls.is_empty() {
                    tracing::info!(
                        "the mcp-service TLS files changed; connecting to every replica with them"
                    );
                }
                let rotated = changed && !self.tls.is_empty();
                if changed {
                    self.tls = configs;
                }
                rotated
            }
            Err(error) => {
                tracing::warn!(
                    error = format!("{error:#}"),
                    "could not read the mcp-service TLS files; keeping the ones read before"
                );
                false
            }
        }
    }

    /// Resolves every URL and tells `replicas` what changed.
    async fn refresh(&mut self, replicas: &Replicas) {
        let rotated = self.reload_tls();
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
        for (index, (url, addresses)) in self.endpoints.urls.iter().zip(&self.found).enumerate() {
            for address in addresses {
                let new = !before.contains(address);
                if !new && !rotated {
                    continue;
                }
                if new {
                    tracing::info!(address = %address, "an mcp-service replica joined");
                }
                let tls = self.tls.get(index);
                if self.endpoints.tls.is_some() && tls.is_none() {
                    // Never plaintext to an `https://` URL.
                    continue;
                }
                match self.endpoints.endpoint(url, *address, tls) {
                    Ok(endpoint) => replicas.insert(*address, endpoint.connect_lazy()),
                    Err(error) => {
                        tracing::warn!(address = %address, error = format!("{error:#}"), "cannot connect to an mcp-service replica");
                    }
                }
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
                None,
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

    #[test]
    fn https_urls_need_the_tls_files_and_refuse_bad_ones() {
        let pki = switchboard_test_support::pki::TestPki::new("test CA");
        let client = pki.client("runs", None, "runs-service");
        let parse = |urls, tls| {
            McpEndpoints::parse(
                urls,
                tls,
                Duration::ZERO,
                Duration::from_secs(30),
                Duration::from_secs(20),
            )
        };
        let tls = McpTls {
            ca_file: pki.ca_file(),
            identity: Some((client.cert_file.clone(), client.key_file.clone())),
        };
        parse("https://mcp.svc:50051", Some(tls.clone())).expect("https with a CA and identity");
        assert!(
            parse("http://mcp.svc:50051", Some(tls.clone())).is_err(),
            "TLS files with an http:// URL"
        );
        let missing = McpTls {
            ca_file: pki.dir().join("absent.pem"),
            identity: None,
        };
        assert!(parse("https://mcp.svc:50051", Some(missing)).is_err());
        let not_pem = pki.dir().join("not.pem");
        std::fs::write(&not_pem, "not a certificate").expect("written");
        let bad = McpTls {
            ca_file: pki.ca_file(),
            identity: Some((not_pem, client.key_file)),
        };
        assert!(parse("https://mcp.svc:50051", Some(bad)).is_err());
    }
}
