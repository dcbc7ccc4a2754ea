//! Checking an OAuth configuration before it is saved: its URLs (see
//! [`check_oauth_url`]), a client secret only with the client id and issuer
//! it belongs to, and for client credentials the credential their client
//! authentication method needs and the token URL or issuer it goes to.
//!
//! Where a credential may go: a credential Switchboard or the operator
//! holds (a client secret, a private key's assertion, the workload token,
//! the caller's token or ID token) is sent only to an endpoint the
//! configuration pins, a token URL or an issuer whose own metadata names
//! it. The authorization code flow without a pre-registered secret needs no
//! pin: all it sends (the code, its PKCE verifier, refresh tokens, a
//! dynamically registered client's secret) was issued within the flow by
//! the authorization server the MCP server names, and goes back only to
//! the token endpoint of that server's own metadata, recorded with the
//! grant.

use jsonwebtoken::{Algorithm, EncodingKey};
use secrecy::{ExposeSecret as _, SecretString};
use switchboard_server::FieldViolation;
use url::Url;

use super::{
    address_policy::AddressPolicy,
    input::AuthInput,
    integration::{AuthConfig, ClientAuth, IdentityProvider, OAuthCodeConfig, OnBehalfOf, Secrets},
    oauth_url::check_oauth_url,
};

/// Why a client-credentials configuration needs a token URL or an issuer.
const UNPINNED: &str = "a token_url or an issuer is required: the client's credential (and, on behalf of the caller, the caller's token) goes only to a token endpoint the integration names, never to one the MCP server points to";

/// Whether `auth` would send a credential to a token endpoint nobody
/// pinned: client credentials (any client authentication, either grant on
/// behalf of the caller) naming neither a token URL nor an issuer. Only a
/// configuration saved before either was required; calls refuse it.
pub fn credential_destination_unpinned(auth: &AuthConfig) -> bool {
    matches!(
        auth,
        AuthConfig::OAuthClientCredentials { token_url, issuer: None, .. } if token_url.is_empty()
    )
}

/// OAuth authorization code: a client secret only with the client id it was
/// issued with and the issuer it is bound to.
pub(super) fn authorization_code(
    prefix: &str,
    config: OAuthCodeConfig,
    client_secret: Option<SecretString>,
    secrets: &mut Secrets,
    violations: &mut Vec<FieldViolation>,
) -> AuthConfig {
    if let Some(secret) = client_secret {
        if config.client_id.is_none() {
            violations.push(FieldViolation::new(
                format!("{prefix}.client_secret"),
                "needs the client_id it was issued with",
            ));
        }
        if config.issuer.is_none() {
            violations.push(FieldViolation::new(
                format!("{prefix}.issuer"),
                "is required with a client secret: the secret is sent to this authorization server only",
            ));
        }
        secrets.insert(Secrets::OAUTH_CLIENT_SECRET, secret);
    }
    AuthConfig::OAuthAuthorizationCode(config)
}

/// What is wrong with an authorization code configuration: URLs are
/// `https` (see [`check_oauth_url`]).
pub(super) fn check_code_config(
    prefix: &str,
    config: &OAuthCodeConfig,
    addresses: &AddressPolicy,
) -> Vec<FieldViolation> {
    let mut violations = Vec::new();
    match check_oauth_url(addresses, &config.redirect_uri) {
        Ok(url) if url.fragment().is_none() => {}
        Ok(_) => violations.push(FieldViolation::new(
            format!("{prefix}.redirect_uri"),
            "must have no fragment",
        )),
        Err(error) => violations.push(FieldViolation::new(
            format!("{prefix}.redirect_uri"),
            error.to_string(),
        )),
    }
    if let Some(Err(error)) = config
        .issuer
        .as_deref()
        .map(|issuer| check_oauth_url(addresses, issuer))
    {
        violations.push(FieldViolation::new(
            format!("{prefix}.issuer"),
            error.to_string(),
        ));
    }
    if let Some(url) = &config.client_metadata_url
        && !Url::parse(url).is_ok_and(|url| url.scheme() == "https" && url.path() != "/")
    {
        violations.push(FieldViolation::new(
            format!("{prefix}.client_metadata_url"),
            "must be an https URL with a path",
        ));
    }
    if config
        .scopes
        .iter()
        .any(|s| s.is_empty() || s.chars().any(|c| c.is_whitespace() || c.is_control()))
    {
        violations.push(FieldViolation::new(
            format!("{prefix}.scopes"),
            "scopes must be non-empty and contain no spaces",
        ));
    }
    violations
}

/// The stored credentials of a client-credentials integration, kept when
/// an update leaves them out.
#[derive(Default)]
pub(super) struct ClientCredentialsSecrets {
    /// The stored client secret.
    pub client_secret: Option<SecretString>,
    /// The stored private key.
    pub private_key: Option<SecretString>,
    /// The stored DPoP key.
    pub dpop_key: Option<SecretString>,
}

/// A new DPoP key for an integration (an ES256 key pair, its PKCS#8
/// document in base64url): sealed with its other secrets, it proves
/// possession of the tokens its authorization server binds to it, when the
/// server asks for DPoP. `None` only when the system's random source fails.
fn new_dpop_key() -> Option<SecretString> {
    use base64::{Engine as _, engine::general_purpose::URL_SAFE_NO_PAD};
    use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair};
    let rng = ring::rand::SystemRandom::new();
    let document = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).ok()?;
    Some(SecretString::from(
        URL_SAFE_NO_PAD.encode(document.as_ref()),
    ))
}

/// OAuth client credentials: a client id (but with workload identity),
/// scopes without spaces, a token URL OAuth may use (or none, to discover
/// it), an issuer OAuth may use, and the credential the client
/// authentication method sends: the client secret, or a private key that
/// parses for its algorithm.
pub(super) async fn client_credentials(
    prefix: &str,
    input: AuthInput,
    stored: ClientCredentialsSecrets,
    addresses: &AddressPolicy,
    secrets: &mut Secrets,
    violations: &mut Vec<FieldViolation>,
) -> AuthConfig {
    let AuthInput::OAuthClientCredentials {
        token_url,
        client_id,
        client_secret,
        scopes,
        client_auth,
        private_key,
        issuer,
        on_behalf_of,
    } = input
    else {
        return AuthConfig::None;
    };
    check_on_behalf_of(prefix, &on_behalf_of, &client_auth, addresses, violations).await;
    let mut violation = |field: &str, why: &str| {
        violations.push(FieldViolation::new(format!("{prefix}.{field}"), why));
    };
    if client_id.trim().is_empty() && client_auth != ClientAuth::WorkloadIdentity {
        violation("client_id", "is required");
    }
    if scopes
        .iter()
        .any(|s| s.is_empty() || s.chars().any(|c| c.is_whitespace() || c.is_control()))
    {
        violation("scopes", "scopes must be non-empty and contain no spaces");
    }
    let client_secret = client_secret
        .filter(|s| !s.expose_secret().is_empty())
        .or(stored.client_secret);
    let private_key = private_key
        .filter(|s| !s.expose_secret().is_empty())
        .or(stored.private_key);
    store_credential(
        prefix,
        &client_auth,
        client_secret,
        private_key,
        secrets,
        violations,
    );
    // Kept across updates: tokens cached for the integration stay bound to
    // a key it still has.
    if let Some(key) = stored.dpop_key.or_else(new_dpop_key) {
        secrets.insert(Secrets::OAUTH_DPOP_KEY, key);
    }
    check_destination(prefix, &token_url, issuer.as_deref(), addresses, violations).await;
    AuthConfig::OAuthClientCredentials {
        token_url,
        client_id,
        scopes,
        client_auth,
        issuer,
        on_behalf_of,
    }
}

/// Where the client's credential goes: a token URL, or an issuer whose own
/// metadata names the token endpoint (at least one), each one OAuth may
/// use.
async fn check_destination(
    prefix: &str,
    token_url: &str,
    issuer: Option<&str>,
    addresses: &AddressPolicy,
    violations: &mut Vec<FieldViolation>,
) {
    if let Some(Err(error)) = issuer.map(|i| check_oauth_url(addresses, i)) {
        violations.push(FieldViolation::new(
            format!("{prefix}.issuer"),
            error.to_string(),
        ));
    }
    if !token_url.is_empty() {
        check_token_url(prefix, token_url, addresses, violations).await;
    } else if issuer.is_none() {
        violations.push(FieldViolation::new(format!("{prefix}.token_url"), UNPINNED));
    }
}

/// A grant on behalf of the caller: the client authenticates itself (the
/// workload identity grant cannot be combined with another grant), an
/// audience is a non-empty text without spaces, and the identity provider
/// of enterprise-managed authorization is complete and reachable under
/// OAuth's rules.
async fn check_on_behalf_of(
    prefix: &str,
    on_behalf_of: &OnBehalfOf,
    client_auth: &ClientAuth,
    addresses: &AddressPolicy,
    violations: &mut Vec<FieldViolation>,
) {
    if on_behalf_of.is_caller() && *client_auth == ClientAuth::WorkloadIdentity {
        violations.push(FieldViolation::new(
            format!("{prefix}.client_authentication"),
            "workload identity is a grant of its own; a grant on behalf of the caller needs a client secret or a private key",
        ));
    }
    match on_behalf_of {
        OnBehalfOf::Service => {}
        OnBehalfOf::TokenExchange { audience } => {
            if audience
                .as_deref()
                .is_some_and(|a| a.chars().any(|c| c.is_whitespace() || c.is_control()))
            {
                violations.push(FieldViolation::new(
                    format!("{prefix}.audience"),
                    "must contain no spaces",
                ));
            }
        }
        OnBehalfOf::EnterpriseManaged(IdentityProvider {
            issuer,
            token_url,
            client_id,
        }) => {
            let prefix = format!("{prefix}.identity_provider");
            if client_id.trim().is_empty() {
                violations.push(FieldViolation::new(
                    format!("{prefix}.client_id"),
                    "is required",
                ));
            }
            if let Err(error) = check_oauth_url(addresses, issuer) {
                violations.push(FieldViolation::new(
                    format!("{prefix}.issuer"),
                    error.to_string(),
                ));
            }
            check_token_url(&prefix, token_url, addresses, violations).await;
        }
    }
}

/// Stores the credential `client_auth` sends: the client secret, or a
/// private key that parses for its algorithm.
fn store_credential(
    prefix: &str,
    client_auth: &ClientAuth,
    client_secret: Option<SecretString>,
    private_key: Option<SecretString>,
    secrets: &mut Secrets,
    violations: &mut Vec<FieldViolation>,
) {
    let mut violation = |field: &str, why: &str| {
        violations.push(FieldViolation::new(format!("{prefix}.{field}"), why));
    };
    match client_auth {
        ClientAuth::ClientSecretBasic | ClientAuth::ClientSecretPost => match client_secret {
            Some(secret) => secrets.insert(Secrets::OAUTH_CLIENT_SECRET, secret),
            None => violation("client_secret", "is required"),
        },
        ClientAuth::PrivateKeyJwt { algorithm } => {
            if !ClientAuth::SIGNING_ALGORITHMS.contains(&algorithm.as_str()) {
                violation(
                    "signing_algorithm",
                    &format!(
                        "must be one of {}",
                        ClientAuth::SIGNING_ALGORITHMS.join(", ")
                    ),
                );
            }
            match private_key {
                Some(key) => {
                    if ClientAuth::SIGNING_ALGORITHMS.contains(&algorithm.as_str())
                        && let Err(why) = signing_key(algorithm, key.expose_secret())
                    {
                        violation("private_key", &why);
                    }
                    secrets.insert(Secrets::OAUTH_CLIENT_PRIVATE_KEY, key);
                }
                None => violation("private_key", "is required with private_key_jwt"),
            }
        }
        ClientAuth::WorkloadIdentity => {}
    }
}

/// Longest PEM private key accepted (an RSA key of 8192 bits is under 7 KiB).
const MAX_PRIVATE_KEY_BYTES: usize = 16 * 1024;

/// The key that signs `private_key_jwt` assertions with `algorithm`, parsed
/// from `pem` (PKCS#8; PKCS#1 too for RSA); why not, in words that never
/// quote the key.
pub fn signing_key(algorithm: &str, pem: &str) -> Result<(Algorithm, EncodingKey), String> {
    let algorithm: Algorithm = algorithm
        .parse()
        .ok()
        .filter(|_| ClientAuth::SIGNING_ALGORITHMS.contains(&algorithm))
        .ok_or_else(|| format!("signing algorithm {algorithm:?} is not supported"))?;
    if pem.len() > MAX_PRIVATE_KEY_BYTES {
        return Err(format!(
            "must be a PEM private key of at most {MAX_PRIVATE_KEY_BYTES} bytes"
        ));
    }
    let pem = pem.trim().as_bytes();
    let key = match algorithm {
        Algorithm::ES256 | Algorithm::ES384 => EncodingKey::from_ec_pem(pem),
        Algorithm::EdDSA => EncodingKey::from_ed_pem(pem),
        _ => EncodingKey::from_rsa_pem(pem),
    }
    .map_err(|_| "must be a PEM private key of the signing algorithm's type".to_owned())?;
    Ok((algorithm, key))
}

/// Refuses a client-credentials token URL OAuth may not use, or whose host
/// resolves to an address the policy refuses.
async fn check_token_url(
    prefix: &str,
    token_url: &str,
    addresses: &AddressPolicy,
    violations: &mut Vec<FieldViolation>,
) {
    let refusal = match check_oauth_url(addresses, token_url) {
        Err(error) => Some(error.to_string()),
        Ok(_) => addresses
            .check_url_resolved(token_url)
            .await
            .err()
            .map(|e| e.to_string()),
    };
    if let Some(refusal) = refusal {
        violations.push(FieldViolation::new(format!("{prefix}.token_url"), refusal));
    }
}
