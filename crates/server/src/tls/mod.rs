//! TLS and mutual TLS on the gRPC listener.
//!
//! The certificate, its key and the client CA are read from PEM files and
//! read again every `tls-reload-interval`, so that a certificate rotated by
//! cert-manager or a SPIFFE agent is served to the next connection without a
//! restart. A file that cannot be used keeps the certificate served before
//! (and logs a warning). With a client CA, every client must present a
//! certificate it signed; the certificate's SPIFFE ID (else its subject's
//! common name) is the calling service of the caller's principal.

mod incoming;
mod peer;
mod reload;

use std::{path::PathBuf, time::Duration};

pub use incoming::{TlsConnection, tls_incoming};
pub use peer::{PeerIdentity, peer_identity};
pub use reload::{ReloadingTls, TlsFiles, read_bounded};

/// Longest calling-service identity taken from a client certificate, in
/// bytes; a certificate naming a longer one gives no identity.
pub const MAX_IDENTITY_BYTES: usize = 2048;

/// How the listener serves TLS; plaintext HTTP/2 when no certificate is set.
#[derive(Debug, Clone, clap::Args)]
pub struct TlsArgs {
    /// PEM file of the server's certificate chain (leaf first); with the key
    /// file the listener serves TLS only.
    #[arg(long, env = "SWITCHBOARD_TLS_CERT_FILE")]
    pub tls_cert_file: Option<PathBuf>,
    /// PEM file of the certificate's private key (PKCS#8, PKCS#1 or SEC1).
    #[arg(long, env = "SWITCHBOARD_TLS_KEY_FILE")]
    pub tls_key_file: Option<PathBuf>,
    /// PEM file of the CAs client certificates must be signed by; when set,
    /// every client must present one (mutual TLS), and its SPIFFE ID or
    /// subject becomes the calling service of the caller's principal.
    #[arg(long, env = "SWITCHBOARD_TLS_CLIENT_CA_FILE")]
    pub tls_client_ca_file: Option<PathBuf>,
    /// How often the certificate, key and client CA files are checked for a
    /// new version (rotation without a restart).
    #[arg(long, env = "SWITCHBOARD_TLS_RELOAD_INTERVAL", default_value = "10s", value_parser = humantime::parse_duration)]
    pub tls_reload_interval: Duration,
    /// Time a client gets to finish the TLS handshake; a slower one is
    /// disconnected.
    #[arg(long, env = "SWITCHBOARD_TLS_HANDSHAKE_TIMEOUT", default_value = "10s", value_parser = humantime::parse_duration)]
    pub tls_handshake_timeout: Duration,
    /// TLS handshakes in progress at once; further connections wait to be
    /// accepted until one ends.
    #[arg(long, env = "SWITCHBOARD_TLS_MAX_HANDSHAKES", default_value_t = 256, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub tls_max_handshakes: usize,
}

impl Default for TlsArgs {
    fn default() -> Self {
        Self {
            tls_cert_file: None,
            tls_key_file: None,
            tls_client_ca_file: None,
            tls_reload_interval: Duration::from_secs(10),
            tls_handshake_timeout: Duration::from_secs(10),
            tls_max_handshakes: 256,
        }
    }
}

impl TlsArgs {
    /// The files to serve TLS with, or `None` for plaintext; a key without
    /// a certificate (or the other way round), or a client CA without
    /// either, is refused.
    pub fn files(&self) -> anyhow::Result<Option<TlsFiles>> {
        match (&self.tls_cert_file, &self.tls_key_file) {
            (Some(cert), Some(key)) => Ok(Some(TlsFiles {
                cert: cert.clone(),
                key: key.clone(),
                client_ca: self.tls_client_ca_file.clone(),
            })),
            (None, None) if self.tls_client_ca_file.is_none() => Ok(None),
            (None, None) => anyhow::bail!(
                "SWITCHBOARD_TLS_CLIENT_CA_FILE requires SWITCHBOARD_TLS_CERT_FILE and SWITCHBOARD_TLS_KEY_FILE"
            ),
            _ => anyhow::bail!(
                "set both SWITCHBOARD_TLS_CERT_FILE and SWITCHBOARD_TLS_KEY_FILE, or neither"
            ),
        }
    }

    /// Refuses settings that cannot work.
    pub fn validate(&self) -> anyhow::Result<()> {
        self.files()?;
        anyhow::ensure!(
            !self.tls_reload_interval.is_zero() && !self.tls_handshake_timeout.is_zero(),
            "SWITCHBOARD_TLS_RELOAD_INTERVAL and SWITCHBOARD_TLS_HANDSHAKE_TIMEOUT must be positive"
        );
        anyhow::ensure!(
            self.tls_max_handshakes > 0,
            "SWITCHBOARD_TLS_MAX_HANDSHAKES must be at least 1"
        );
        Ok(())
    }
}
