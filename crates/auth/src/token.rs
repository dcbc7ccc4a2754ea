//! JWT verification and minting.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};

use crate::Principal;

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
    /// Audience, checked when the verifier is configured with one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aud: Option<String>,
}

impl Claims {
    /// Claims for `user` in `org` with `roles`, valid for `ttl` from now.
    pub fn new(org: &str, user: &str, roles: &[&str], ttl: Duration) -> Self {
        let now = unix_now();
        Self {
            sub: user.to_owned(),
            org: org.to_owned(),
            roles: roles.iter().map(|r| (*r).to_owned()).collect(),
            exp: now + ttl.as_secs(),
            iat: now,
            iss: None,
            aud: None,
        }
    }
}

fn unix_now() -> u64 {
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
}

/// How tokens are verified.
#[derive(Debug, Clone)]
pub struct VerifierConfig {
    /// The verification key; its kind fixes the only accepted algorithm.
    pub key: JwtKey,
    /// Required `iss`, when set.
    pub issuer: Option<String>,
    /// Required `aud`, when set.
    pub audience: Option<String>,
    /// Clock skew tolerated on `exp`.
    pub leeway: Duration,
}

impl VerifierConfig {
    /// HS256 verification with `secret` and no issuer or audience checks.
    pub fn hs256(secret: impl Into<String>) -> Self {
        Self {
            key: JwtKey::Hs256(SecretString::from(secret.into())),
            issuer: None,
            audience: None,
            leeway: Duration::from_secs(30),
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
}

/// Verifies bearer tokens into [`Principal`]s.
#[derive(Clone)]
pub struct Authenticator {
    key: DecodingKey,
    validation: Validation,
}

impl std::fmt::Debug for Authenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authenticator")
            .field("algorithms", &self.validation.algorithms)
            .finish_non_exhaustive()
    }
}

impl Authenticator {
    /// Builds a verifier. Only the algorithm matching the key is accepted, so a
    /// token signed with another algorithm (or `none`) is refused.
    pub fn new(config: &VerifierConfig) -> Result<Self, AuthError> {
        let (key, algorithm) = match &config.key {
            JwtKey::Hs256(secret) => {
                let secret = secret.expose_secret();
                if secret.len() < 16 {
                    return Err(AuthError::Key(
                        "the HS256 secret must be at least 16 bytes".into(),
                    ));
                }
                (
                    DecodingKey::from_secret(secret.as_bytes()),
                    Algorithm::HS256,
                )
            }
            JwtKey::Rs256PublicKeyPem(pem) => (
                DecodingKey::from_rsa_pem(pem.as_bytes())
                    .map_err(|e| AuthError::Key(e.to_string()))?,
                Algorithm::RS256,
            ),
        };
        let mut validation = Validation::new(algorithm);
        validation.leeway = config.leeway.as_secs();
        // A configured issuer or audience must be present, not only right
        // when present: the library checks an absent one as passing.
        let mut required = vec!["exp", "sub"];
        required.extend(config.issuer.as_ref().map(|_| "iss"));
        required.extend(config.audience.as_ref().map(|_| "aud"));
        validation.set_required_spec_claims(&required);
        match &config.issuer {
            Some(issuer) => validation.set_issuer(&[issuer]),
            None => validation.iss = None,
        }
        match &config.audience {
            Some(audience) => validation.set_audience(&[audience]),
            None => validation.validate_aud = false,
        }
        Ok(Self { key, validation })
    }

    /// Verifies a token and returns who it names.
    pub fn verify(&self, token: &str) -> Result<Principal, AuthError> {
        let data = jsonwebtoken::decode::<Claims>(token, &self.key, &self.validation).map_err(
            |e| match e.kind() {
                jsonwebtoken::errors::ErrorKind::ExpiredSignature => AuthError::Expired,
                _ => AuthError::Invalid,
            },
        )?;
        let claims = data.claims;
        if claims.org.is_empty() || claims.sub.is_empty() {
            return Err(AuthError::Invalid);
        }
        Ok(Principal {
            org_id: claims.org,
            user_id: claims.sub,
            roles: claims.roles,
        })
    }
}

/// Issues tokens, for tests and local use.
#[derive(Clone)]
pub struct TokenMinter {
    key: EncodingKey,
    algorithm: Algorithm,
}

impl std::fmt::Debug for TokenMinter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenMinter")
            .field("algorithm", &self.algorithm)
            .finish_non_exhaustive()
    }
}

impl TokenMinter {
    /// A minter signing with an HS256 secret.
    pub fn hs256(secret: &str) -> Self {
        Self {
            key: EncodingKey::from_secret(secret.as_bytes()),
            algorithm: Algorithm::HS256,
        }
    }

    /// A minter signing with an RSA private key in PEM form (RS256).
    pub fn rs256(private_key_pem: &str) -> Result<Self, AuthError> {
        Ok(Self {
            key: EncodingKey::from_rsa_pem(private_key_pem.as_bytes())
                .map_err(|e| AuthError::Key(e.to_string()))?,
            algorithm: Algorithm::RS256,
        })
    }

    /// Signs `claims`.
    pub fn mint(&self, claims: &Claims) -> Result<String, AuthError> {
        jsonwebtoken::encode(&Header::new(self.algorithm), claims, &self.key)
            .map_err(|e| AuthError::Key(e.to_string()))
    }

    /// A token for `user` in `org` with `roles`, valid for an hour.
    pub fn token(&self, org: &str, user: &str, roles: &[&str]) -> Result<String, AuthError> {
        self.mint(&Claims::new(org, user, roles, Duration::from_secs(3600)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "a-test-secret-of-enough-length";

    fn authenticator() -> Authenticator {
        Authenticator::new(&VerifierConfig::hs256(SECRET)).expect("valid config")
    }

    #[test]
    fn a_minted_token_verifies_into_its_principal() {
        let token = TokenMinter::hs256(SECRET)
            .token("org-1", "user-1", &["admin"])
            .expect("mints");
        let principal = authenticator().verify(&token).expect("verifies");
        assert_eq!(principal.org_id, "org-1");
        assert_eq!(principal.user_id, "user-1");
        assert!(principal.is_admin());
    }

    #[test]
    fn an_expired_token_is_refused() {
        let mut claims = Claims::new("org", "user", &[], Duration::ZERO);
        claims.exp = unix_now() - 3600;
        let token = TokenMinter::hs256(SECRET).mint(&claims).expect("mints");
        assert_eq!(authenticator().verify(&token), Err(AuthError::Expired));
    }

    #[test]
    fn a_token_signed_with_another_secret_is_refused() {
        let token = TokenMinter::hs256("another-secret-of-enough-length")
            .token("org", "user", &[])
            .expect("mints");
        assert_eq!(authenticator().verify(&token), Err(AuthError::Invalid));
    }

    /// Found by the `jwt` fuzz target: a verifier configured with an issuer
    /// and audience accepted a token that carried neither.
    #[test]
    fn a_token_without_the_required_issuer_or_audience_is_refused() {
        let mut config = VerifierConfig::hs256(SECRET);
        config.issuer = Some("https://issuer.example".into());
        config.audience = Some("switchboard".into());
        let strict = Authenticator::new(&config).expect("valid config");
        let minter = TokenMinter::hs256(SECRET);
        let mut claims = Claims::new("org", "user", &[], Duration::from_secs(3600));
        claims.aud = Some("switchboard".into());
        let no_issuer = minter.mint(&claims).expect("mints");
        assert_eq!(strict.verify(&no_issuer), Err(AuthError::Invalid));
        claims.aud = None;
        claims.iss = Some("https://issuer.example".into());
        let no_audience = minter.mint(&claims).expect("mints");
        assert_eq!(strict.verify(&no_audience), Err(AuthError::Invalid));
        claims.aud = Some("switchboard".into());
        let both = minter.mint(&claims).expect("mints");
        assert!(strict.verify(&both).is_ok());
    }

    #[test]
    fn a_short_hs256_secret_is_refused() {
        assert!(matches!(
            Authenticator::new(&VerifierConfig::hs256("short")),
            Err(AuthError::Key(_))
        ));
    }

    #[test]
    fn a_token_without_organization_is_refused() {
        let token = TokenMinter::hs256(SECRET)
            .token("", "user", &[])
            .expect("mints");
        assert_eq!(authenticator().verify(&token), Err(AuthError::Invalid));
    }
}
