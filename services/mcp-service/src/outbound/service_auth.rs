//! The credential and trace context of a call to a team's own service (an
//! OpenAPI or gRPC integration), as the request's headers.

use http::header::{HeaderMap, HeaderName, HeaderValue};
use rmcp::model::CallToolResult;
use secrecy::{ExposeSecret as _, SecretString};

use crate::{
    domain::{
        integration::{AuthConfig, Integration, Secrets},
        outcome::{Outcome, ToolOutcome},
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

impl Credential {
    /// The headers alone (a gRPC service's credential): a query parameter
    /// is refused.
    pub fn into_headers(self) -> Result<HeaderMap, CallError> {
        if self.query.is_some() {
            return Err(CallError::Connect(
                "an API key in the query is for OpenAPI integrations only".to_owned(),
            ));
        }
        Ok(self.headers)
    }
}

/// Calls a team's own service with `integration`'s credential for `user`:
/// `call` sends the request. When the service refuses the credential, a
/// cached client-credentials token is forgotten (the next call fetches a
/// new one), and a member's own token of the authorization code flow is
/// answered with [`CallError::AuthorizationRequired`] (the caller is handed
/// the URL to connect again); the call is not made again either way.
pub async fn call_with_credential<F, Fut>(
    integration: &Integration,
    user: &str,
    tokens: &IntegrationTokens,
    call: F,
) -> Result<ToolOutcome, CallError>
where
    F: FnOnce(Credential) -> Fut,
    Fut: Future<Output = Result<ServiceAnswer, CallError>>,
{
    let answer = call(credential(integration, user, tokens).await?).await?;
    if answer.credential_refused {
        if integration.uses_authorization_code() {
            return Err(CallError::AuthorizationRequired(None));
        }
        tokens.forget(integration, user);
    }
    Ok(Outcome::Complete(answer.result))
}

/// The integration's credential for `user`: a bearer token, its header,
/// its query parameter, an OAuth client-credentials token (the service's,
/// or one exchanged for the caller's), or the token of `user`'s own grant
/// of the authorization code flow (the organization's, when it is
/// organization-wide), from `tokens`. A DPoP-bound token is refused
/// (these calls carry no proof).
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
        AuthConfig::OAuthClientCredentials { .. } | AuthConfig::OAuthAuthorizationCode(_) => {
            let token = if integration.uses_authorization_code() {
                tokens.authorized(integration, user).await?
            } else {
                tokens.token(integration, user).await?
            };
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
