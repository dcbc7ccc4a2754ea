//! Settings every service shares: server, authentication, telemetry, database.

use std::{path::PathBuf, time::Duration};

use anyhow::{Context as _, bail};
use secrecy::SecretString;
use switchboard_auth::{ClaimLimits, ClaimNames, JwksConfig, JwtKey, VerifierConfig};
use switchboard_db::DatabaseArgs;
use switchboard_telemetry::{LogFormat, MetricsLimits, TelemetryConfig};

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

/// How bearer tokens are verified: an HS256 secret, an RS256 public key, or
/// the key set of the cluster's identity provider.
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
    /// Required `aud` claim. Always checked: a signer (an identity provider,
    /// a shared secret) that issues tokens for other services too must not
    /// open this one with them.
    #[arg(long, env = "SWITCHBOARD_JWT_AUDIENCE", default_value = switchboard_auth::DEFAULT_AUDIENCE)]
    pub jwt_audience: String,
    /// URL of the identity provider's JSON Web Key Set (RS*, PS*, ES256,
    /// ES384 or EdDSA keys, chosen by the token's `kid`); requires the
    /// issuer and audience.
    #[arg(long, env = "SWITCHBOARD_JWT_JWKS_URL")]
    pub jwt_jwks_url: Option<String>,
    /// Claim holding the caller's organization; a dotted name reaches into
    /// nested objects when no claim has that exact name.
    #[arg(long, env = "SWITCHBOARD_JWT_ORG_CLAIM", default_value = "org")]
    pub jwt_org_claim: String,
    /// Claim holding the caller's roles (a list, or space-separated).
    #[arg(long, env = "SWITCHBOARD_JWT_ROLES_CLAIM", default_value = "roles")]
    pub jwt_roles_claim: String,
    /// Claim holding the caller's groups (a list, or space-separated), for
    /// policies.
    #[arg(long, env = "SWITCHBOARD_JWT_GROUPS_CLAIM", default_value = "groups")]
    pub jwt_groups_claim: String,
    /// Claim holding the caller's teams (a list, or space-separated), for
    /// policies.
    #[arg(long, env = "SWITCHBOARD_JWT_TEAMS_CLAIM", default_value = "teams")]
    pub jwt_teams_claim: String,
    /// Most values a token's roles, groups or teams may hold; a token with
    /// more is refused.
    #[arg(long, env = "SWITCHBOARD_JWT_MAX_CLAIM_VALUES", default_value_t = ClaimLimits::default().max_values)]
    pub jwt_max_claim_values: usize,
    /// Longest role, group, team or calling service name, in bytes; a token
    /// with a longer one is refused.
    #[arg(long, env = "SWITCHBOARD_JWT_MAX_CLAIM_VALUE_BYTES", default_value_t = ClaimLimits::default().max_value_bytes)]
    pub jwt_max_claim_value_bytes: usize,
    /// Bounds of fetching the key set.
    #[command(flatten)]
    pub jwks: JwksArgs,
}

/// How the identity provider's key set is fetched.
#[derive(Debug, Clone, clap::Args)]
pub struct JwksArgs {
    /// Age after which the key set is fetched again, in the background.
    #[arg(long, env = "SWITCHBOARD_JWT_JWKS_REFRESH_INTERVAL", default_value = "5m", value_parser = humantime::parse_duration)]
    pub jwt_jwks_refresh_interval: Duration,
    /// Shortest time between two fetches, however many tokens name keys
    /// not yet known.
    #[arg(long, env = "SWITCHBOARD_JWT_JWKS_MIN_REFRESH_INTERVAL", default_value = "30s", value_parser = humantime::parse_duration)]
    pub jwt_jwks_min_refresh_interval: Duration,
    /// Time one fetch may take.
    #[arg(long, env = "SWITCHBOARD_JWT_JWKS_TIMEOUT", default_value = "5s", value_parser = humantime::parse_duration)]
    pub jwt_jwks_timeout: Duration,
    /// Largest key set read, in bytes.
    #[arg(long, env = "SWITCHBOARD_JWT_JWKS_MAX_BYTES", default_value_t = 256 * 1024)]
    pub jwt_jwks_max_bytes: usize,
}

impl Default for JwksArgs {
    fn default() -> Self {
        let defaults = JwksConfig::new("");
        Self {
            jwt_jwks_refresh_interval: defaults.refresh_interval,
            jwt_jwks_min_refresh_interval: defaults.min_refresh_interval,
            jwt_jwks_timeout: defaults.timeout,
            jwt_jwks_max_bytes: defaults.max_bytes,
        }
    }
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
            .field("jwt_jwks_url", &self.jwt_jwks_url)
            .field("jwt_org_claim", &self.jwt_org_claim)
            .field("jwt_roles_claim", &self.jwt_roles_claim)
            .field("jwt_groups_claim", &self.jwt_groups_claim)
            .field("jwt_teams_claim", &self.jwt_teams_claim)
            .field("jwt_max_claim_values", &self.jwt_max_claim_values)
            .field("jwt_max_claim_value_bytes", &self.jwt_max_claim_value_bytes)
            .field("jwks", &self.jwks)
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
            jwt_audience: switchboard_auth::DEFAULT_AUDIENCE.to_owned(),
            jwt_jwks_url: None,
            jwt_org_claim: "org".into(),
            jwt_roles_claim: "roles".into(),
            jwt_groups_claim: "groups".into(),
            jwt_teams_claim: "teams".into(),
            jwt_max_claim_values: ClaimLimits::default().max_values,
            jwt_max_claim_value_bytes: ClaimLimits::default().max_value_bytes,
            jwks: JwksArgs::default(),
        }
    }

    /// The verifier these settings describe; exactly one key source is required.
    pub fn verifier_config(&self) -> anyhow::Result<VerifierConfig> {
        let key = match (
            &self.jwt_secret,
            &self.jwt_secret_file,
            &self.jwt_public_key_file,
            &self.jwt_jwks_url,
        ) {
            (Some(secret), None, None, None) => JwtKey::Hs256(SecretString::from(secret.clone())),
            (None, Some(path), None, None) => {
                let secret = std::fs::read_to_string(path)
                    .with_context(|| format!("failed to read {}", path.display()))?;
                JwtKey::Hs256(SecretString::from(secret.trim().to_owned()))
            }
            (None, None, Some(path), None) => JwtKey::Rs256PublicKeyPem(
                std::fs::read_to_string(path)
                    .with_context(|| format!("failed to read {}", path.display()))?,
            ),
            (None, None, None, Some(url)) => {
                // A cluster's identity provider signs tokens for every
                // service in it: without both checks a token issued for
                // another audience (or by another issuer using the same
                // keys) would be accepted here.
                if self.jwt_issuer.is_none() {
                    bail!("SWITCHBOARD_JWT_JWKS_URL requires SWITCHBOARD_JWT_ISSUER");
                }
                JwtKey::Jwks(JwksConfig {
                    url: url.clone(),
                    refresh_interval: self.jwks.jwt_jwks_refresh_interval,
                    min_refresh_interval: self.jwks.jwt_jwks_min_refresh_interval,
                    timeout: self.jwks.jwt_jwks_timeout,
                    max_bytes: self.jwks.jwt_jwks_max_bytes,
                })
            }
            (None, None, None, None) => bail!(
                "no token verification key: set SWITCHBOARD_JWT_SECRET, \
                 SWITCHBOARD_JWT_SECRET_FILE, SWITCHBOARD_JWT_PUBLIC_KEY_FILE or SWITCHBOARD_JWT_JWKS_URL"
            ),
            _ => bail!("set only one of the JWT secret, secret file, public key file or JWKS URL"),
        };
        if self.jwt_audience.trim().is_empty() {
            bail!("SWITCHBOARD_JWT_AUDIENCE must not be empty");
        }
        let mut config = VerifierConfig::with_key(key);
        config.issuer = self.jwt_issuer.clone();
        config.audience = Some(self.jwt_audience.clone());
        config.claims = ClaimNames {
            org: self.jwt_org_claim.clone(),
            roles: self.jwt_roles_claim.clone(),
            groups: self.jwt_groups_claim.clone(),
            teams: self.jwt_teams_claim.clone(),
        };
        config.claim_limits = ClaimLimits {
            max_values: self.jwt_max_claim_values,
            max_value_bytes: self.jwt_max_claim_value_bytes,
        };
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
    /// Address of the Prometheus scrape endpoint (`GET /metrics`), for
    /// example `0.0.0.0:9464`; off when unset.
    #[arg(long, env = "SWITCHBOARD_METRICS_ADDR")]
    pub metrics_addr: Option<std::net::SocketAddr>,
    /// Record tool arguments, tool results and prompts on spans (they may
    /// hold personal data); credentials are never recorded.
    #[arg(
        long,
        env = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT",
        default_value_t = false,
        action = clap::ArgAction::Set
    )]
    pub capture_content: bool,
    /// Series one metric instrument keeps (distinct label sets); further
    /// ones are added to its overflow series.
    #[arg(long, env = "SWITCHBOARD_METRICS_MAX_SERIES", default_value_t = MetricsLimits::default().max_series, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub metrics_max_series: usize,
    /// Largest answer of a metrics scrape, in bytes; metric families past it
    /// are left out.
    #[arg(long, env = "SWITCHBOARD_METRICS_MAX_SCRAPE_BYTES", default_value_t = MetricsLimits::default().max_scrape_bytes)]
    pub metrics_max_scrape_bytes: usize,
}

impl Default for TelemetryArgs {
    fn default() -> Self {
        Self {
            log_format: LogFormat::Json,
            log_filter: "info".into(),
            otlp_endpoint: None,
            metrics_addr: None,
            capture_content: false,
            metrics_max_series: MetricsLimits::default().max_series,
            metrics_max_scrape_bytes: MetricsLimits::default().max_scrape_bytes,
        }
    }
}

impl TelemetryArgs {
    /// The telemetry configuration of service `name`.
    pub fn config(&self, name: &str) -> TelemetryConfig {
        TelemetryConfig {
            service_name: name.to_owned(),
            log_format: self.log_format,
            log_filter: self.log_filter.clone(),
            otlp_endpoint: self.otlp_endpoint.clone().filter(|e| !e.is_empty()),
            metrics_addr: self.metrics_addr,
            capture_content: self.capture_content,
            metrics_limits: MetricsLimits {
                max_series: self.metrics_max_series,
                max_scrape_bytes: self.metrics_max_scrape_bytes,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser as _;

    use super::*;

    #[derive(Debug, clap::Parser)]
    struct Auth {
        #[command(flatten)]
        auth: AuthArgs,
    }

    #[test]
    fn an_audience_is_always_required() {
        let parse = |args: &[&str]| {
            Auth::try_parse_from([&["test", "--jwt-secret=0123456789abcdef"], args].concat())
                .expect("parses")
                .auth
                .verifier_config()
        };
        let config = parse(&[]).expect("the default audience");
        assert_eq!(
            config.audience.as_deref(),
            Some(switchboard_auth::DEFAULT_AUDIENCE)
        );
        let config = parse(&["--jwt-audience=billing"]).expect("a chosen audience");
        assert_eq!(config.audience.as_deref(), Some("billing"));
        let error = parse(&["--jwt-audience="]).expect_err("an empty audience");
        assert!(
            error.to_string().contains("SWITCHBOARD_JWT_AUDIENCE"),
            "{error}"
        );
    }

    #[test]
    fn a_jwks_url_needs_an_issuer_and_brings_its_bounds() {
        let parse = |args: &[&str]| {
            Auth::try_parse_from([&["test"], args].concat())
                .expect("parses")
                .auth
                .verifier_config()
        };
        let url = "--jwt-jwks-url=https://idp.example/jwks";
        let error = parse(&[url, "--jwt-audience=switchboard"]).expect_err("no issuer");
        assert!(
            error.to_string().contains("SWITCHBOARD_JWT_ISSUER"),
            "{error}"
        );
        let config = parse(&[
            url,
            "--jwt-issuer=https://idp.example",
            "--jwt-audience=switchboard",
            "--jwt-org-claim=tenant",
            "--jwt-jwks-max-bytes=1000",
        ])
        .expect("complete");
        assert_eq!(config.claims.org, "tenant");
        assert_eq!(config.claims.roles, "roles");
        match config.key {
            JwtKey::Jwks(jwks) => {
                assert_eq!(jwks.max_bytes, 1000);
                assert_eq!(jwks.min_refresh_interval, Duration::from_secs(30));
            }
            other => panic!("expected a key set, got {other:?}"),
        }
        assert!(parse(&[url, "--jwt-secret=a-secret-of-enough-length"]).is_err());
    }
}
