//! The TLS configuration read from files, and read again when they change.

use std::{
    io::Read as _,
    path::{Path, PathBuf},
    sync::{Arc, Mutex, PoisonError, RwLock},
    time::Duration,
};

use anyhow::Context as _;
use rustls::{
    RootCertStore, ServerConfig,
    crypto::CryptoProvider,
    pki_types::{CertificateDer, PrivateKeyDer, pem::PemObject as _},
    server::WebPkiClientVerifier,
};
use tokio::task::JoinHandle;

/// Largest certificate, key or CA file read, in bytes: a bundle of many CAs
/// fits, a wrong file (a log, a device) is refused rather than read whole.
const MAX_FILE_BYTES: u64 = 1024 * 1024;

/// The files a TLS listener is configured from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    /// PEM certificate chain, leaf first.
    pub cert: PathBuf,
    /// PEM private key of the leaf.
    pub key: PathBuf,
    /// PEM CAs that sign client certificates; when set, clients must
    /// present one.
    pub client_ca: Option<PathBuf>,
}

/// What the files held when last read.
#[derive(PartialEq, Eq)]
struct Contents {
    cert: Vec<u8>,
    key: Vec<u8>,
    client_ca: Option<Vec<u8>>,
}

impl TlsFiles {
    fn read(&self) -> anyhow::Result<Contents> {
        Ok(Contents {
            cert: read_bounded(&self.cert)?,
            key: read_bounded(&self.key)?,
            client_ca: self.client_ca.as_deref().map(read_bounded).transpose()?,
        })
    }
}

/// The bytes of the TLS file at `path` (a certificate chain, a key or a CA
/// bundle), refused past 1 MiB: no PEM file of a certificate is near it.
pub fn read_bounded(path: &Path) -> anyhow::Result<Vec<u8>> {
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

/// The server's TLS configuration built from `contents`: HTTP/2 by ALPN,
/// client certificates required when a client CA is given.
fn server_config(contents: &Contents) -> anyhow::Result<ServerConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let chain = CertificateDer::pem_slice_iter(&contents.cert)
        .collect::<Result<Vec<_>, _>>()
        .context("the certificate file is not PEM")?;
    anyhow::ensure!(
        !chain.is_empty(),
        "the certificate file holds no certificate"
    );
    let key = PrivateKeyDer::from_pem_slice(&contents.key)
        .context("the key file holds no PEM private key")?;
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .context("no TLS version is available")?;
    let builder = match &contents.client_ca {
        Some(pem) => builder.with_client_cert_verifier(client_verifier(pem, provider)?),
        None => builder.with_no_client_auth(),
    };
    let mut config = builder
        .with_single_cert(chain, key)
        .context("the certificate and key do not make a pair")?;
    config.alpn_protocols = vec![b"h2".to_vec()];
    Ok(config)
}

fn client_verifier(
    pem: &[u8],
    provider: Arc<CryptoProvider>,
) -> anyhow::Result<Arc<dyn rustls::server::danger::ClientCertVerifier>> {
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(pem) {
        roots
            .add(cert.context("the client CA file is not PEM")?)
            .context("the client CA file holds a certificate that is not a CA")?;
    }
    anyhow::ensure!(!roots.is_empty(), "the client CA file holds no certificate");
    WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
        .build()
        .context("failed to build the client certificate verifier")
}

/// The TLS configuration new connections get, replaced when the files
/// change and the new ones make a working configuration.
pub struct ReloadingTls {
    files: TlsFiles,
    served: RwLock<Served>,
    /// The contents last refused, so that a bad file is warned about once
    /// rather than at every check.
    refused: Mutex<Option<Contents>>,
}

struct Served {
    config: Arc<ServerConfig>,
    contents: Contents,
}

impl std::fmt::Debug for ReloadingTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReloadingTls")
            .field("files", &self.files)
            .finish_non_exhaustive()
    }
}

impl ReloadingTls {
    /// Reads `files`; an error when they do not make a working
    /// configuration, so that a server never starts without one.
    pub fn load(files: TlsFiles) -> anyhow::Result<Arc<Self>> {
        let contents = files.read()?;
        let config = server_config(&contents)?;
        Ok(Arc::new(Self {
            files,
            served: RwLock::new(Served {
                config: Arc::new(config),
                contents,
            }),
            refused: Mutex::new(None),
        }))
    }

    /// The configuration a connection accepted now gets.
    pub fn current(&self) -> Arc<ServerConfig> {
        self.served
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .config
            .clone()
    }

    /// Reads the files again and serves what they hold from the next
    /// connection on, if it changed and works; returns whether it did.
    pub fn reload(&self) -> bool {
        let contents = match self.files.read() {
            Ok(contents) => contents,
            Err(error) => {
                tracing::warn!(
                    error = format!("{error:#}"),
                    "could not read the TLS files; serving the certificate read before"
                );
                return false;
            }
        };
        if self
            .served
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .contents
            == contents
        {
            return false;
        }
        let mut refused = self.refused.lock().unwrap_or_else(PoisonError::into_inner);
        if refused.as_ref() == Some(&contents) {
            return false;
        }
        match server_config(&contents) {
            Ok(config) => {
                *self.served.write().unwrap_or_else(PoisonError::into_inner) = Served {
                    config: Arc::new(config),
                    contents,
                };
                *refused = None;
                tracing::info!(cert = %self.files.cert.display(), "serving a new TLS certificate");
                true
            }
            Err(error) => {
                tracing::warn!(
                    cert = %self.files.cert.display(),
                    error = format!("{error:#}"),
                    "the TLS files changed but cannot be used; serving the certificate read before"
                );
                *refused = Some(contents);
                false
            }
        }
    }

    /// Checks the files every `every` on a background task, until aborted.
    pub fn spawn_watch(self: &Arc<Self>, every: Duration) -> JoinHandle<()> {
        let tls = Arc::clone(self);
        tokio::spawn(async move {
            let mut interval = tokio::time::interval(every);
            interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            interval.tick().await; // the first tick is now; the files were just read
            loop {
                interval.tick().await;
                let tls = Arc::clone(&tls);
                // Reading files blocks; a slow volume must not stall the runtime.
                let _ = tokio::task::spawn_blocking(move || tls.reload()).await;
            }
        })
    }
}
