//! JWT verification and minting.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use secrecy::SecretString;
use serde::{Deserialize, Serialize};

/// The audience Switchboard's services require unless configured otherwise
/// (`SWITCHBOARD_JWT_AUDIENCE`), and the one `switchboard-token` mints for: a
/// token issued for another service of the same signer is refused.
pub const DEFAULT_AUDIENCE: &str = "switchboard";

/// The claims of a Switchboard token.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Claims {
    /// The user id.
    pub sub: String,
    /// The organization id.
    pub org: String,
    /// The user's roles in the organization.
    #[serde(default)]
    pub roles: Vec<String>,
    /// Expiry, seconds since the Unix epoch.
    pub exp: u64,
    /// Issue time, seconds since the Unix epoch.
    #[serde(default)]
    pub iat: u64,
    /// Issuer, checked when the verifier is configured with one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iss: Option<String>,
    /// Audience, checked when the verifier is configured with one (the
    /// services always are).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aud: Option<String>,
}

impl Claims {
    /// Claims for `user` in `org` with `roles`, valid for `ttl` from now, for
    /// the [`DEFAULT_AUDIENCE`].
    pub fn new(org: &str, user: &str, roles: &[&str], ttl: Duration) -> Self {
        let now = unix_now();
        Self {
            sub: user.to_owned(),
            org: org.to_owned(),
            roles: roles.iter().map(|r| (*r).to_owned()).collect(),
            exp: now + ttl.as_secs(),
            iat: now,
            iss: None,
            aud: Some(DEFAULT_AUDIENCE.to_owned()),
        }
    }
}

pub(crate) fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The key tokens are verified with.
#[derive(Debug, Clone)]
pub enum JwtKey {
    /// HS256 with a shared secret.
    Hs256(SecretString),
    /// RS256 with an RSA public key in PEM form.
    Rs256PublicKeyPem(String),
    /// The asymmetric keys an identity provider publishes as a JSON Web Key
    /// Set, fetched, cached and refreshed as it rotates them.
    Jwks(JwksConfig),
}

/// Where an identity provider's key set is fetched from, and the bounds of
/// every fetch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JwksConfig {
    /// The `http(s)://` URL of the JSON Web Key Set.
    pub url: String,
    /// Age after which the set is fetched again (in the background; calls go
    /// on with the keys held), so that rotated keys are picked up.
    pub refresh_interval: Duration,
    /// Shortest time between two fetches, whatever asks for them: a token
    /// naming an unknown key id cannot make the service hammer the provider.
    pub min_refresh_interval: Duration,
    /// Time one fetch may take, connection included.
    pub timeout: Duration,
    /// Largest key set read, in bytes.
    pub max_bytes: usize,
}

impl JwksConfig {
    /// The defaults for `url`: refreshed every 5 minutes, at most every 30
    /// seconds, 5 seconds per fetch, 256 KiB.
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            refresh_interval: Duration::from_secs(300),
            min_refresh_interval: Duration::from_secs(30),
            timeout: Duration::from_secs(5),
            max_bytes: 256 * 1024,
        }
    }
}

/// Which claims name the organization, the roles, the groups and the
/// teams. Identity providers put them under their own names (`tenant`,
/// `groups`, `realm_access.roles`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimNames {
    /// The claim holding the organization id (a string).
    pub org: String,
    /// The claim holding the roles: a list of strings, or one string of
    /// space-separated roles.
    pub roles: String,
    /// The claim holding the groups, read like the roles.
    pub groups: String,
    /// The claim holding the teams, read like the roles.
    pub teams: String,
}

impl Default for ClaimNames {
    fn default() -> Self {
        Self {
            org: "org".into(),
            roles: "roles".into(),
            groups: "groups".into(),
            teams: "teams".into(),
        }
    }
}

/// Bounds of the lists a token carries (roles, groups, teams): a token is
/// input too, and a policy evaluates every value of them on every call. A
/// token past a bound is refused rather than cut, so that a rule denying a
/// group can never be dodged by a list long enough to lose it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClaimLimits {
    /// Most values in one list.
    pub max_values: usize,
    /// Longest value, in bytes.
    pub max_value_bytes: usize,
}

impl Default for ClaimLimits {
    /// 256 values of at most 256 bytes each.
    fn default() -> Self {
        Self {
            max_values: 256,
            max_value_bytes: 256,
        }
    }
}

/// How tokens are verified.
#[derive(Debug, Clone)]
pub struct VerifierConfig {
    /// The verification key; its kind fixes the accepted algorithms.
    pub key: JwtKey,
    /// Required `iss`, when set.
    pub issuer: Option<String>,
    /// Required `aud` (a token's `aud` may be this string or a list holding
    /// it), when set.
    pub audience: Option<String>,
    /// Clock skew tolerated on `exp`.
    pub leeway: Duration,
    /// The claims naming the organization and the roles.
    pub claims: ClaimNames,
    /// Bounds of the roles, groups and teams lists.
    pub claim_limits: ClaimLimits,
}

impl VerifierConfig {
    /// HS256 verification with `secret` and no issuer or audience checks.
    pub fn hs256(secret: impl Into<String>) -> Self {
        Self::with_key(JwtKey::Hs256(SecretString::from(secret.into())))
    }

    /// Verification with `key`, no issuer or audience checks, the default
    /// claim names.
    pub fn with_key(key: JwtKey) -> Self {
        Self {
            key,
            issuer: None,
            audience: None,
            leeway: Duration::from_secs(30),
            claims: ClaimNames::default(),
            claim_limits: ClaimLimits::default(),
        }
    }
}

/// Why a token was refused. The messages are safe to return to the caller.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum AuthError {
    /// No `authorization` metadata.
    #[error("missing bearer token")]
    Missing,
    /// Not `Bearer <token>`.
    #[error("authorization must be a bearer token")]
    NotBearer,
    /// The token expired.
    #[error("token expired")]
    Expired,
    /// Signature, algorithm, format or claims are wrong.
    #[error("invalid token")]
    Invalid,
    /// The verification key could not be loaded.
    #[error("invalid verification key: {0}")]
    Key(String),
    /// The identity provider's key set could not be had yet: the call may
    /// succeed later, so it is not the caller's fault.
    #[error("token verification keys are unavailable")]
    KeysUnavailable,
}

/// Issues tokens, for tests and local use.
#[derive(Clone)]
pub struct TokenMinter {
    key: EncodingKey,
    algorithm: Algorithm,
    key_id: Option<String>,
}

impl std::fmt::Debug for TokenMinter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenMinter")
            .field("algorithm", &self.algorithm)
            .field("key_id", &self.key_id)
            .finish_non_exhaustive()
    }
}

impl TokenMinter {
    /// A minter signing with an HS256 secret.
    pub fn hs256(secret: &str) -> Self {
        Self::new(
            Algorithm::HS256,
            EncodingKey::from_secret(secret.as_bytes()),
        )
    }

    /// A minter signing with `key` and `algorithm` (which must suit each other).
    pub fn new(algorithm: Algorithm, key: EncodingKey) -> Self {
        Self {
            key,
            algorithm,
            key_id: None,
        }
    }

    /// The same minter, naming `key_id` in the `kid` header of its tokens.
    pub fn with_key_id(mut self, key_id: impl Into<String>) -> Self {
        self.key_id = Some(key_id.into());
        self
    }

    /// Signs `claims` ([`Claims`], or any JSON object an identity provider
    /// would issue).
    pub fn mint(&self, claims: &impl Serialize) -> Result<String, AuthError> {
        let mut header = Header::new(self.algorithm);
        header.kid.clone_from(&self.key_id);
        jsonwebtoken::encode(&header, claims, &self.key).map_err(|e| AuthError::Key(e.to_string()))
    }

    /// A token for `user` in `org` with `roles`, valid for an hour.
    pub fn token(&self, org: &str, user: &str, roles: &[&str]) -> Result<String, AuthError> {
        self.mint(&Claims::new(org, user, roles, Duration::from_secs(3600)))
    }
}
