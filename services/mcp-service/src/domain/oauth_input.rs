//! Checking an OAuth authorization code configuration before it is saved:
//! its URLs (see [`check_oauth_url`]) and a client secret only with the
//! client id and issuer it belongs to.

use secrecy::SecretString;
use switchboard_server::FieldViolation;
use url::Url;

use super::{
    address_policy::AddressPolicy,
    integration::{AuthConfig, OAuthCodeConfig, Secrets},
    oauth_url::check_oauth_url,
};

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

/// Refuses a client-credentials token URL OAuth may not use, or whose host
/// resolves to an address the policy refuses.
pub(super) async fn check_token_url(
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
