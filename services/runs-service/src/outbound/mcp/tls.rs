//! How runs-service proves itself to mcp-service and checks mcp-service's
//! certificate: the CA and the client certificate are read from files, and
//! read again as they rotate.

use std::path::PathBuf;

use anyhow::Context as _;
use switchboard_server::tls::read_bounded;
use tonic::transport::{Certificate, ClientTlsConfig, Endpoint, Identity};

/// The files of TLS to mcp-service.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpTls {
    /// PEM CAs mcp-service's certificate must be signed by.
    pub ca_file: PathBuf,
    /// PEM client certificate and key presented to mcp-service (mutual
    /// TLS), if any.
    pub identity: Option<(PathBuf, PathBuf)>,
}

/// What the files held when read, and the configuration they make.
#[derive(Debug, Clone)]
pub struct McpTlsConfig {
    /// The files' bytes, to tell a rotation.
    pub contents: Vec<Vec<u8>>,
    /// The client configuration for the host `domain`.
    pub config: ClientTlsConfig,
}

impl McpTls {
    /// Reads the files; the configuration verifies mcp-service's
    /// certificate for `domain` (the URL's host name).
    pub fn read(&self, domain: &str) -> anyhow::Result<McpTlsConfig> {
        let ca = read_bounded(&self.ca_file)?;
        let mut config = ClientTlsConfig::new()
            .ca_certificate(Certificate::from_pem(&ca))
            .domain_name(domain);
        let mut contents = vec![ca];
        if let Some((cert_file, key_file)) = &self.identity {
            let (cert, key) = (read_bounded(cert_file)?, read_bounded(key_file)?);
            config = config.identity(Identity::from_pem(&cert, &key));
            contents.extend([cert, key]);
        }
        // tonic checks the PEM when the configuration is applied; check it
        // here, so that a bad file is refused before any call needs it.
        Endpoint::from_static("https://mcp-service.invalid")
            .tls_config(config.clone())
            .context("the mcp-service TLS files do not make a TLS configuration")?;
        Ok(McpTlsConfig { contents, config })
    }
}
