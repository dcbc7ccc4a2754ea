//! How runs-service proves itself to mcp-service and checks mcp-service's
//! certificate: the CA and the client certificate are read from files, and
//! read again as they rotate.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use tonic::transport::{Certificate, ClientTlsConfig, Endpoint, Identity};

/// Largest CA, certificate or key file read, in bytes.
const MAX_FILE_BYTES: u64 = 1024 * 1024;

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

fn read_bounded(path: &Path) -> anyhow::Result<Vec<u8>> {
    use std::io::Read as _;
    let file =
        std::fs::File::open(path).with_context(|| format!("failed to open {}", path.display()))?;
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("failed to read {}", path.display()))?;
    anyhow::ensure!(
        bytes.len() as u64 <= MAX_FILE_BYTES,
        "{} is larger than {MAX_FILE_BYTES} bytes",
        path.display()
    );
    Ok(bytes)
}
