//! Token verification: with one static key, or with the key set an identity
//! provider publishes (see [`crate::jwks`]).

use std::sync::Arc;

use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use secrecy::ExposeSecret;
use serde_json::{Map, Value};

use crate::{
    AuthError, Principal,
    cache::VerifiedTokens,
    jwks::JwksKeys,
    token::{ClaimLimits, ClaimNames, JwtKey, VerifierConfig},
};

/// Verifies bearer tokens into [`Principal`]s.
#[derive(Clone)]
pub struct Authenticator {
    keys: Keys,
    validation: Validation,
    claims: ClaimNames,
    limits: ClaimLimits,
    /// Tokens verified lately, shared by every clone.
    verified: Arc<VerifiedTokens>,
}

#[derive(Clone)]
enum Keys {
    /// One key; its kind fixes the only accepted algorithm.
    Static {
        key: DecodingKey,
        algorithm: Algorithm,
    },
    /// An identity provider's keys; each fixes the algorithm of the tokens
    /// naming it by `kid`.
    Jwks(Arc<JwksKeys>),
}

impl std::fmt::Debug for Authenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let keys = match &self.keys {
            Keys::Static { algorithm, .. } => format!("{algorithm:?}"),
            Keys::Jwks(set) => format!("jwks {}", set.url()),
        };
        f.debug_struct("Authenticator")
            .field("keys", &keys)
            .field("claims", &self.claims)
            .finish_non_exhaustive()
    }
}

impl Authenticator {
    /// Builds a verifier. Only the algorithm matching the key is accepted, so a
    /// token signed with another algorithm (or `none`) is refused; with a key
    /// set, only the asymmetric algorithm its key names.
    pub fn new(config: &VerifierConfig) -> Result<Self, AuthError> {
        let keys = match &config.key {
            JwtKey::Hs256(secret) => {
                let secret = secret.expose_secret();
                if secret.len() < 16 {
                    return Err(AuthError::Key(
                        "the HS256 secret must be at least 16 bytes".into(),
                    ));
                }
                Keys::Static {
                    key: DecodingKey::from_secret(secret.as_bytes()),
                    algorithm: Algorithm::HS256,
                }
            }
            JwtKey::Rs256PublicKeyPem(pem) => Keys::Static {
                key: DecodingKey::from_rsa_pem(pem.as_bytes())
                    .map_err(|e| AuthError::Key(e.to_string()))?,
                algorithm: Algorithm::RS256,
            },
            JwtKey::Jwks(jwks) => Keys::Jwks(Arc::new(JwksKeys::new(jwks.clone())?)),
        };
        for (name, claim) in [
            ("organization", &config.claims.org),
            ("roles", &config.claims.roles),
            ("groups", &config.claims.groups),
            ("teams", &config.claims.teams),
        ] {
            if claim.trim().is_empty() {
                return Err(AuthError::Key(format!("the {name} claim name is empty")));
            }
        }
        Ok(Self {
            keys,
            validation: base_validation(config),
            claims: config.claims.clone(),
            limits: config.claim_limits,
            verified: Arc::default(),
        })
    }

    /// Verifies a token and returns who it names, fetching the identity
    /// provider's keys when the token names one not yet known (at most once
    /// per minimum refresh interval) and refreshing them in the background
    /// when they are older than the refresh interval.
    pub async fn authenticate(&self, token: &str) -> Result<Principal, AuthError> {
        match &self.keys {
            Keys::Static { key, algorithm } => self.check_static(token, key, *algorithm),
            Keys::Jwks(set) => {
                let key = set.key(&key_id(token)?).await?;
                self.check(token, &key.decoding, key.algorithm)
            }
        }
    }

    /// Verifies a token and returns who it names, with the keys held now:
    /// never fetches, so with a key set a token naming an unknown key is
    /// refused (and one before the first fetch finds no keys).
    pub fn verify(&self, token: &str) -> Result<Principal, AuthError> {
        match &self.keys {
            Keys::Static { key, algorithm } => self.check_static(token, key, *algorithm),
            Keys::Jwks(set) => {
                let key = set.cached(&key_id(token)?)?;
                self.check(token, &key.decoding, key.algorithm)
            }
        }
    }

    /// With one static key, a token verified lately is answered from
    /// [`VerifiedTokens`]. Tokens of a key set are verified every time, so
    /// that each call looks the key up (which is what refreshes the set) and
    /// a key the provider retired stops verifying as soon as the set is
    /// fetched again.
    fn check_static(
        &self,
        token: &str,
        key: &DecodingKey,
        algorithm: Algorithm,
    ) -> Result<Principal, AuthError> {
        if let Some(principal) = self.verified.get(token) {
            return Ok(principal);
        }
        let (principal, claims) = self.check_claims(token, key, algorithm)?;
        // `exp` is required, so a verified token has one; a fractional one
        // is cut down, so the entry never outlives the token.
        if let Some(expires) = claims.get("exp").and_then(Value::as_f64) {
            self.verified.insert(token, &principal, expires as u64);
        }
        Ok(principal)
    }

    fn check(
        &self,
        token: &str,
        key: &DecodingKey,
        algorithm: Algorithm,
    ) -> Result<Principal, AuthError> {
        self.check_claims(token, key, algorithm)
            .map(|(principal, _)| principal)
    }

    fn check_claims(
        &self,
        token: &str,
        key: &DecodingKey,
        algorithm: Algorithm,
    ) -> Result<(Principal, Map<String, Value>), AuthError> {
        let mut validation = self.validation.clone();
        validation.algorithms = vec![algorithm];
        let data = jsonwebtoken::decode::<Map<String, Value>>(token, key, &validation).map_err(
            |e| match e.kind() {
                jsonwebtoken::errors::ErrorKind::ExpiredSignature => AuthError::Expired,
                _ => AuthError::Invalid,
            },
        )?;
        let principal = principal_from(&data.claims, &self.claims, self.limits)?;
        Ok((principal, data.claims))
    }
}

/// The checks of every token whatever its key: expiry, and the issuer and
/// audience when configured.
fn base_validation(config: &VerifierConfig) -> Validation {
    let mut validation = Validation::new(Algorithm::HS256);
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
    // The library accepts `aud` as a string or a list of strings, and
    // passes when any of them is the configured audience.
    match &config.audience {
        Some(audience) => validation.set_audience(&[audience]),
        None => validation.validate_aud = false,
    }
    validation
}

/// The `kid` a token's header names; a key set is only searched by it.
fn key_id(token: &str) -> Result<String, AuthError> {
    jsonwebtoken::decode_header(token)
        .ok()
        .and_then(|header| header.kid)
        .ok_or(AuthError::Invalid)
}

/// Who verified claims name: `sub`, the organization, roles, groups and
/// teams under their configured names, and the calling service.
fn principal_from(
    claims: &Map<String, Value>,
    names: &ClaimNames,
    limits: ClaimLimits,
) -> Result<Principal, AuthError> {
    let text = |value: Option<&Value>| {
        value
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .ok_or(AuthError::Invalid)
    };
    let user_id = text(claims.get("sub"))?;
    let org_id = text(claim(claims, &names.org))?;
    let list = |name: &str| string_list(claim(claims, name), limits);
    let service = ["azp", "client_id"]
        .into_iter()
        .find_map(|name| claims.get(name).and_then(Value::as_str))
        .unwrap_or_default();
    if service.len() > limits.max_value_bytes {
        return Err(AuthError::Invalid);
    }
    Ok(Principal {
        org_id,
        user_id,
        roles: list(&names.roles)?,
        groups: list(&names.groups)?,
        teams: list(&names.teams)?,
        service: service.to_owned(),
    })
}

/// A claim holding a list of strings, or one string of space-separated
/// values; absent or null is empty. Past `limits` the token is refused.
fn string_list(value: Option<&Value>, limits: ClaimLimits) -> Result<Vec<String>, AuthError> {
    let values: Vec<String> = match value {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(values)) => values
            .split_whitespace()
            .take(limits.max_values.saturating_add(1))
            .map(str::to_owned)
            .collect(),
        Some(Value::Array(values)) if values.len() <= limits.max_values => values
            .iter()
            .map(|value| value.as_str().map(str::to_owned).ok_or(AuthError::Invalid))
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(AuthError::Invalid),
    };
    let within = values.len() <= limits.max_values
        && values.iter().all(|v| v.len() <= limits.max_value_bytes);
    if within {
        Ok(values)
    } else {
        Err(AuthError::Invalid)
    }
}

/// The claim called `name`; when there is none and the name has dots, the
/// claim at that path of nested objects (`realm_access.roles`). A claim
/// whose own name has dots (`https://example.com/org`) is found first.
fn claim<'a>(claims: &'a Map<String, Value>, name: &str) -> Option<&'a Value> {
    if let Some(value) = claims.get(name) {
        return Some(value);
    }
    let mut parts = name.split('.');
    let mut value = claims.get(parts.next()?)?;
    for part in parts {
        value = value.as_object()?.get(part)?;
    }
    Some(value)
}

#[cfg(test)]
mod tests;
