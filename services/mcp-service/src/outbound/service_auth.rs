//! The credential and trace context of a call to a team's own service (an
//! OpenAPI or gRPC integration), as the request's headers.

use http::header::{HeaderMap, HeaderName, HeaderValue};
use rmcp::model::CallToolResult;
use secrecy::{ExposeSecret as _, SecretString};

use crate::{
    domain::{
        integration::{AuthConfig, Integration, Secrets},
        ports::CallError,
    },
    outbound::oauth::integration_token::IntegrationTokens,
};

/// A service's answer as a tool's result, and whether the service refused
/// the credential (its cached token is then forgotten; the call is not
/// made again).
#[derive(Debug)]
pub struct ServiceAnswer {
    /// The tool's result.
    pub result: CallToolResult,
    /// Whether the service answered 401 or `UNAUTHENTICATED`.
    pub credential_refused: bool,
}

/// The integration's credential for one request: headers, and for an API
/// that takes its key in the query, that parameter.
#[derive(Debug, Default)]
pub struct Credential {
    /// Headers the request carries.
    pub headers: HeaderMap,
    /// A query parameter the request carries (name, value): an OpenAPI
    /// integration's API key.
    pub query: Option<(String, SecretString)>,
}

/// The integration's credential as request headers (a gRPC service's):
/// see [`credential`]; a query parameter is refused.
pub async fn credential_headers(
    integration: &Integration,
    user: &str,
    tokens: &IntegrationTokens,
) -> Result<HeaderMap, CallError> {
    let credential = credential(integration, user, tokens).await?;
    if credential.query.is_some() {
        return Err(CallError::Connect(
            "an API key in the query is for OpenAPI integrations only".to_owned(),
        ));
    }
    Ok(credential.headers)
}

/// The integration's credential for `user`: a bearer token, its header,
/// its query parameter, or an OAuth client-credentials token (the
/// service's, or one exchanged for the caller's) from `tokens`. A
/// DPoP-bound token is refused (these calls carry no proof), as is the
/// authorization code flow (not offered for a team's own services yet).
pub async fn credential(
    integration: &Integration,
    user: &str,
    tokens: &IntegrationTokens,
) -> Result<Credential, CallError> {
    let mut credential = Credential::default();
    let (name, value) = match &integration.auth {
        AuthConfig::None => return Ok(credential),
        AuthConfig::Query { parameter_name } => {
            let value = integration
                .secrets
                .get(Secrets::QUERY_VALUE)
                .cloned()
                .ok_or_else(|| CallError::Connect("the integration has no query_value".into()))?;
            credential.query = Some((parameter_name.clone(), value));
            return Ok(credential);
        }
        AuthConfig::OAuthClientCredentials { .. } => {
            let token = tokens.token(integration, user).await?;
            if token.dpop.is_some() {
                return Err(CallError::Connect(
                    "the authorization server binds its tokens with DPoP, which OpenAPI and \
                     gRPC integrations do not prove"
                        .to_owned(),
                ));
            }
            let bearer = format!("Bearer {}", token.token.expose_secret());
            (http::header::AUTHORIZATION, bearer)
        }
        AuthConfig::BearerToken => {
            let token = secret(integration, Secrets::BEARER_TOKEN)?;
            (http::header::AUTHORIZATION, format!("Bearer {token}"))
        }
        AuthConfig::Header { header_name: name } => (
            HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
                CallError::Connect("the credential's header name is invalid".into())
            })?,
            secret(integration, Secrets::HEADER_VALUE)?,
        ),
        AuthConfig::OAuthAuthorizationCode(_) => {
            return Err(CallError::Connect(
                "OpenAPI and gRPC integrations take a bearer token, a header, a query \
                 parameter or OAuth client credentials"
                    .to_owned(),
            ));
        }
    };
    let mut value = HeaderValue::from_str(&value)
        .map_err(|_| CallError::Connect("the credential is not a valid header value".into()))?;
    value.set_sensitive(true);
    credential.headers.insert(name, value);
    Ok(credential)
}

fn secret(integration: &Integration, name: &str) -> Result<String, CallError> {
    integration
        .secrets
        .get(name)
        .map(|s| s.expose_secret().to_owned())
        .ok_or_else(|| CallError::Connect(format!("the integration has no {name}")))
}

/// A request's headers, as the propagator writes them.
#[derive(Debug)]
pub struct Headers<'a>(pub &'a mut HeaderMap);

impl switchboard_telemetry::Injector for Headers<'_> {
    fn set(&mut self, key: &str, value: String) {
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(key.as_bytes()),
            HeaderValue::try_from(value),
        ) {
            self.0.insert(name, value);
        }
    }
}
