//! Settings every service shares: server, authentication, telemetry, database.

use std::path::PathBuf;

use anyhow::{Context as _, bail};
use secrecy::SecretString;
use switchboard_auth::{JwtKey, VerifierConfig};
use switchboard_db::DatabaseArgs;
use switchboard_telemetry::{LogFormat, TelemetryConfig};

use crate::ServerArgs;

/// Settings shared by both services.
#[derive(Debug, Clone, clap::Args)]
pub struct CommonArgs {
    /// gRPC server.
    #[command(flatten)]
    pub server: ServerArgs,
    /// Caller authentication.
    #[command(flatten)]
    pub auth: AuthArgs,
    /// Logs and traces.
    #[command(flatten)]
    pub telemetry: TelemetryArgs,
    /// Storage.
    #[command(flatten)]
    pub database: DatabaseArgs,
}

/// How bearer tokens are verified: an HS256 secret or an RS256 public key.
#[derive(Clone, clap::Args)]
pub struct AuthArgs {
    /// HS256 secret (at least 16 bytes).
    #[arg(long, env = "SWITCHBOARD_JWT_SECRET", hide_env_values = true)]
    pub jwt_secret: Option<String>,
    /// File holding the HS256 secret (a mounted Kubernetes Secret).
    #[arg(long, env = "SWITCHBOARD_JWT_SECRET_FILE")]
    pub jwt_secret_file: Option<PathBuf>,
    /// PEM file of the RS256 public key.
    #[arg(long, env = "SWITCHBOARD_JWT_PUBLIC_KEY_FILE")]
    pub jwt_public_key_file: Option<PathBuf>,
    /// Required `iss` claim.
    #[arg(long, env = "SWITCHBOARD_JWT_ISSUER")]
    pub jwt_issuer: Option<String>,
    /// Required `aud` claim.
    #[arg(long, env = "SWITCHBOARD_JWT_AUDIENCE")]
    pub jwt_audience: Option<String>,
}

impl std::fmt::Debug for AuthArgs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthArgs")
            .field(
                "jwt_secret",
                &self.jwt_secret.as_ref().map(|_| "<redacted>"),
            )
            .field("jwt_secret_file", &self.jwt_secret_file)
            .field("jwt_public_key_file", &self.jwt_public_key_file)
            .field("jwt_issuer", &self.jwt_issuer)
            .field("jwt_audience", &self.jwt_audience)
            .finish()
    }
}

impl AuthArgs {
    /// Verification with an HS256 `secret` only.
    pub fn hs256(secret: &str) -> Self {
        Self {
            jwt_secret: Some(secret.to_owned()),
            jwt_secret_file: None,
            jwt_public_key_file: None,
            jwt_issuer: None,
            jwt_audience: None,
        }
    }

    /// The verifier these settings describe; exactly one key source is required.
    pub fn verifier_config(&self) -> anyhow::Result<VerifierConfig> {
        let key = match (
            &self.jwt_secret,
            &self.jwt_secret_file,
            &self.jwt_public_key_file,
        ) {
            (Some(secret), None, None) => JwtKey::Hs256(SecretString::from(secret.clone())),
            (None, Some(path), None) => {
                let secret = std::fs::read_to_string(path)
                    .with_context(|| format!("failed to read {}", path.display()))?;
                JwtKey::Hs256(SecretString::from(secret.trim().to_owned()))
            }
            (None, None, Some(path)) => JwtKey::Rs256PublicKeyPem(
                std::fs::read_to_string(path)
                    .with_context(|| format!("failed to read {}", path.display()))?,
            ),
            (None, None, None) => bail!(
                "no token verification key: set SWITCHBOARD_JWT_SECRET, \
                 SWITCHBOARD_JWT_SECRET_FILE or SWITCHBOARD_JWT_PUBLIC_KEY_FILE"
            ),
            _ => bail!("set only one of the JWT secret, secret file or public key file"),
        };
        let mut config = VerifierConfig::hs256("");
        config.key = key;
        config.issuer = self.jwt_issuer.clone();
        config.audience = self.jwt_audience.clone();
        Ok(config)
    }
}

/// Log and trace settings.
#[derive(Debug, Clone, clap::Args)]
pub struct TelemetryArgs {
    /// Log format: json or pretty.
    #[arg(long, env = "SWITCHBOARD_LOG_FORMAT", default_value = "json")]
    pub log_format: LogFormat,
    /// Log filter directives.
    #[arg(long, env = "RUST_LOG", default_value = "info")]
    pub log_filter: String,
    /// OTLP/gRPC endpoint spans are exported to (its value is not shown by
    /// `--help`: collector URLs can carry credentials).
    #[arg(long, env = "OTEL_EXPORTER_OTLP_ENDPOINT", hide_env_values = true)]
    pub otlp_endpoint: Option<String>,
}

impl TelemetryArgs {
    /// The telemetry configuration of service `name`.
    pub fn config(&self, name: &str) -> TelemetryConfig {
        TelemetryConfig {
            service_name: name.to_owned(),
            log_format: self.log_format,
            log_filter: self.log_filter.clone(),
            otlp_endpoint: self.otlp_endpoint.clone().filter(|e| !e.is_empty()),
        }
    }
}
