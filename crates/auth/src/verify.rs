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
    if within { Ok(values) } else { Err(AuthError::Invalid) }
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
mod tests {
    use std::time::Duration;

    use serde_json::json;

    use super::*;
    use crate::{Claims, TokenMinter, token::unix_now};

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
    fn an_expired_token_is_refused_even_when_remembered_as_verified() {
        let auth = authenticator();
        let mut claims = Claims::new("org", "user", &[], Duration::ZERO);
        claims.exp = unix_now() - 3600;
        let token = TokenMinter::hs256(SECRET).mint(&claims).expect("mints");
        // As if it had been verified while still valid.
        let principal = Principal::new("org", "user", Vec::new());
        auth.verified.insert(&token, &principal, claims.exp);
        assert_eq!(auth.verify(&token), Err(AuthError::Expired));
        assert_eq!(auth.verified.len(), 0, "the stale entry is dropped");
    }

    #[test]
    fn a_remembered_token_is_verified_again_after_the_longest_age() {
        let auth = authenticator();
        let minter = TokenMinter::hs256(SECRET);
        let token = minter.token("org", "user", &[]).expect("mints");
        auth.verify(&token).expect("verifies");
        // Its entry claims another user: served while fresh, replaced once
        // older than the longest age.
        let other = Principal::new("org", "someone-else", Vec::new());
        auth.verified.insert(&token, &other, unix_now() + 600);
        assert_eq!(
            auth.verify(&token).map(|p| p.user_id),
            Ok("someone-else".into())
        );
        let long_ago = std::time::Instant::now()
            .checked_sub(crate::cache::MAX_AGE + Duration::from_secs(1))
            .expect("the clock is past the longest age");
        auth.verified.age(&token, long_ago, unix_now() + 600);
        assert_eq!(auth.verify(&token).map(|p| p.user_id), Ok("user".into()));
    }

    #[test]
    fn a_token_is_never_answered_from_another_tokens_entry() {
        let auth = authenticator();
        let minter = TokenMinter::hs256(SECRET);
        let alice = minter.token("org-a", "alice", &["admin"]).expect("mints");
        let bob = minter.token("org-b", "bob", &[]).expect("mints");
        assert_eq!(auth.verify(&alice).map(|p| p.user_id), Ok("alice".into()));
        assert_eq!(auth.verify(&bob).map(|p| p.org_id), Ok("org-b".into()));
        assert_eq!(auth.verify(&alice).map(|p| p.org_id), Ok("org-a".into()));
        // The same claims under another signature, and the remembered token
        // with one byte changed, are verified on their own and refused.
        let forged = TokenMinter::hs256("another-secret-of-enough-length")
            .token("org-a", "alice", &["admin"])
            .expect("mints");
        assert_eq!(auth.verify(&forged), Err(AuthError::Invalid));
        let signature = alice.rfind('.').expect("a token has three parts") + 1;
        let first = &alice[signature..=signature];
        let altered = format!(
            "{}{}{}",
            &alice[..signature],
            if first == "A" { "B" } else { "A" },
            &alice[signature + 1..]
        );
        assert_eq!(auth.verify(&altered), Err(AuthError::Invalid));
        assert_eq!(auth.verified.len(), 2);
    }

    #[test]
    fn remembered_tokens_are_bounded() {
        let auth = authenticator();
        let minter = TokenMinter::hs256(SECRET);
        for user in 0..=crate::cache::MAX_ENTRIES {
            let token = minter
                .token("org", &format!("user-{user}"), &[])
                .expect("mints");
            auth.verify(&token).expect("verifies");
            assert!(auth.verified.len() <= crate::cache::MAX_ENTRIES);
        }
        let long = minter
            .token("org", &"u".repeat(crate::cache::MAX_TOKEN_BYTES), &[])
            .expect("mints");
        let before = auth.verified.len();
        assert_eq!(auth.verify(&long).map(|p| p.org_id), Ok("org".into()));
        assert_eq!(auth.verified.len(), before, "too long to remember");
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
    fn the_audience_may_be_a_string_or_a_list_holding_it() {
        let mut config = VerifierConfig::hs256(SECRET);
        config.audience = Some("switchboard".into());
        let strict = Authenticator::new(&config).expect("valid config");
        let minter = TokenMinter::hs256(SECRET);
        let with_audience = |aud: Value| {
            let token = minter
                .mint(&json!({"sub": "u", "org": "o", "exp": unix_now() + 600, "aud": aud}))
                .expect("mints");
            strict.verify(&token).map(|p| p.user_id)
        };
        assert_eq!(with_audience(json!("switchboard")), Ok("u".into()));
        assert_eq!(
            with_audience(json!(["other", "switchboard"])),
            Ok("u".into())
        );
        assert_eq!(
            with_audience(json!(["other", "more"])),
            Err(AuthError::Invalid)
        );
        assert_eq!(with_audience(json!("other")), Err(AuthError::Invalid));
        assert_eq!(with_audience(json!([])), Err(AuthError::Invalid));
    }

    #[test]
    fn organization_and_roles_are_read_under_their_configured_names() {
        let mut config = VerifierConfig::hs256(SECRET);
        config.claims = ClaimNames {
            org: "https://switchboard.dev/tenant".into(),
            roles: "realm_access.roles".into(),
            ..ClaimNames::default()
        };
        let custom = Authenticator::new(&config).expect("valid config");
        let minter = TokenMinter::hs256(SECRET);
        let token = minter
            .mint(&json!({
                "sub": "alice", "exp": unix_now() + 600,
                "https://switchboard.dev/tenant": "acme",
                "realm_access": {"roles": ["admin", "viewer"]},
                "org": "not-this-one", "roles": ["not-these"],
            }))
            .expect("mints");
        let principal = custom.verify(&token).expect("verifies");
        assert_eq!(principal.org_id, "acme");
        assert_eq!(principal.roles, ["admin", "viewer"]);

        // Roles as one space-separated string (the `scope` style).
        config.claims.roles = "scope".into();
        let scoped = Authenticator::new(&config).expect("valid config");
        let token = minter
            .mint(&json!({"sub": "bob", "exp": unix_now() + 600,
                "https://switchboard.dev/tenant": "acme", "scope": "admin  read"}))
            .expect("mints");
        assert_eq!(
            scoped.verify(&token).expect("verifies").roles,
            ["admin", "read"]
        );
    }

    #[test]
    fn claims_of_the_wrong_shape_are_refused() {
        let minter = TokenMinter::hs256(SECRET);
        for claims in [
            json!({"sub": "u", "exp": unix_now() + 600}),
            json!({"sub": "u", "org": 7, "exp": unix_now() + 600}),
            json!({"sub": 7, "org": "o", "exp": unix_now() + 600}),
            json!({"sub": "u", "org": "o", "roles": [1], "exp": unix_now() + 600}),
            json!({"sub": "u", "org": "o", "roles": {"a": 1}, "exp": unix_now() + 600}),
        ] {
            let token = minter.mint(&claims).expect("mints");
            assert_eq!(
                authenticator().verify(&token),
                Err(AuthError::Invalid),
                "{claims}"
            );
        }
    }

    #[test]
    fn groups_teams_and_the_calling_service_are_read_for_policies() {
        let minter = TokenMinter::hs256(SECRET);
        let token = minter
            .mint(&json!({"sub": "u", "org": "o", "exp": unix_now() + 600,
                "groups": ["eng", "oncall"], "teams": "payments search",
                "azp": "billing-service", "client_id": "not-this-one"}))
            .expect("mints");
        let principal = authenticator().verify(&token).expect("verifies");
        assert_eq!(principal.groups, ["eng", "oncall"]);
        assert_eq!(principal.teams, ["payments", "search"]);
        assert_eq!(principal.service, "billing-service");
        let token = minter
            .mint(&json!({"sub": "u", "org": "o", "exp": unix_now() + 600, "client_id": "cli"}))
            .expect("mints");
        assert_eq!(authenticator().verify(&token).expect("verifies").service, "cli");
        let token = minter.token("o", "u", &[]).expect("mints");
        let bare = authenticator().verify(&token).expect("verifies");
        assert!(bare.groups.is_empty() && bare.teams.is_empty() && bare.service.is_empty());
    }

    #[test]
    fn lists_at_their_bounds_verify_and_past_them_are_refused() {
        let limits = ClaimLimits::default();
        let minter = TokenMinter::hs256(SECRET);
        let verify = |claim: &str, value: Value| {
            let mut claims = json!({"sub": "u", "org": "o", "exp": unix_now() + 600});
            claims[claim] = value;
            authenticator().verify(&minter.mint(&claims).expect("mints"))
        };
        let names = |n: usize| (0..n).map(|i| format!("g{i}")).collect::<Vec<_>>();
        let long = "x".repeat(limits.max_value_bytes);
        for claim in ["roles", "groups", "teams"] {
            assert!(verify(claim, json!(names(limits.max_values))).is_ok());
            assert!(verify(claim, json!(names(limits.max_values).join(" "))).is_ok());
            assert!(verify(claim, json!([long.clone()])).is_ok());
            for over in [
                json!(names(limits.max_values + 1)),
                json!(names(limits.max_values + 1).join(" ")),
                json!([format!("{long}x")]),
                json!(format!("{long}x")),
            ] {
                assert_eq!(verify(claim, over), Err(AuthError::Invalid), "{claim}");
            }
        }
        assert!(verify("azp", json!(long.clone())).is_ok());
        assert_eq!(
            verify("azp", json!(format!("{long}x"))),
            Err(AuthError::Invalid)
        );
    }

    #[test]
    fn a_short_hs256_secret_or_an_empty_claim_name_is_refused() {
        assert!(matches!(
            Authenticator::new(&VerifierConfig::hs256("short")),
            Err(AuthError::Key(_))
        ));
        let mut config = VerifierConfig::hs256(SECRET);
        config.claims.org = " ".into();
        assert!(matches!(
            Authenticator::new(&config),
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
