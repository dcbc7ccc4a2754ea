//! The credential and trace context of a call to a team's own service (an
//! OpenAPI or gRPC integration), as the request's headers.

use http::header::{HeaderMap, HeaderName, HeaderValue};
use secrecy::ExposeSecret as _;

use crate::domain::{
    integration::{AuthConfig, Integration, Secrets},
    ports::CallError,
};

/// The integration's credential as request headers: a bearer token or its
/// header. Other methods are not offered for a team's own services yet.
pub fn credential_headers(integration: &Integration) -> Result<HeaderMap, CallError> {
    let mut headers = HeaderMap::new();
    let (name, value) = match &integration.auth {
        AuthConfig::None => return Ok(headers),
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
        _ => {
            return Err(CallError::Connect(
                "OpenAPI and gRPC integrations take a bearer token or a header credential"
                    .to_owned(),
            ));
        }
    };
    let mut value = HeaderValue::from_str(&value)
        .map_err(|_| CallError::Connect("the credential is not a valid header value".into()))?;
    value.set_sensitive(true);
    headers.insert(name, value);
    Ok(headers)
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
