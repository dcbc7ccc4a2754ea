//! The tower layer that authenticates every gRPC call.

use std::sync::Arc;

use http::{HeaderMap, Request, Response};
use secrecy::SecretString;
use switchboard_auth::{AuthError, Authenticator, BearerToken, Principal};
use tonic::{Status, body::Body};
use tower::{Layer, Service};

use crate::{
    ApiError, PeerIdentity,
    connections::ConnectionHandle,
    gate::{BoxFuture, Gate, Gated},
};

/// Paths served without a token: Kubernetes probes and tooling must reach
/// health and reflection without credentials, and they reveal no tenant data.
pub const PUBLIC_PATH_PREFIXES: &[&str] = &[
    "/grpc.health.v1.Health/",
    "/grpc.reflection.v1.ServerReflection/",
    "/grpc.reflection.v1alpha.ServerReflection/",
];

/// Authenticates requests and attaches the [`Principal`] and [`BearerToken`]
/// to their extensions; refuses the rest with UNAUTHENTICATED.
#[derive(Debug, Clone)]
pub struct AuthLayer {
    authenticator: Arc<Authenticator>,
}

impl AuthLayer {
    /// A layer verifying with `authenticator`.
    pub fn new(authenticator: Arc<Authenticator>) -> Self {
        Self { authenticator }
    }
}

impl<S> Layer<S> for AuthLayer {
    type Service = Gated<S, Self>;

    fn layer(&self, inner: S) -> Self::Service {
        Gated::new(inner, self.clone())
    }
}

impl Gate for AuthLayer {
    fn call<S, B>(
        &self,
        mut inner: S,
        mut request: Request<B>,
    ) -> BoxFuture<Result<Response<Body>, S::Error>>
    where
        S: Service<Request<B>, Response = Response<Body>> + Send + 'static,
        S::Future: Send + 'static,
        B: Send + 'static,
    {
        let path = request.uri().path();
        if PUBLIC_PATH_PREFIXES.iter().any(|p| path.starts_with(p)) {
            return Box::pin(inner.call(request));
        }
        let authenticator = self.authenticator.clone();
        Box::pin(async move {
            match bearer_principal(&authenticator, request.headers()).await {
                Ok((mut principal, token)) => {
                    if let Some(service) = certified_service(request.extensions()) {
                        // A certificate the client CA verified proves which
                        // workload holds this connection; the token's `azp`
                        // only says to whom it was issued, and a token can
                        // be replayed by whoever holds it.
                        principal.service = service.to_owned();
                    }
                    tracing::Span::current().record("enduser.id", principal.user_id.as_str());
                    // The connection leaves the evictable, short-lived set.
                    if let Some(connection) = request.extensions().get::<ConnectionHandle>() {
                        connection.authenticated(&principal.org_id);
                    }
                    request.extensions_mut().insert(principal);
                    request.extensions_mut().insert(token);
                    inner.call(request).await
                }
                Err(error) => {
                    tracing::debug!(error = %error, path = %request.uri().path(), "request refused");
                    Ok(refusal(&error).into_http())
                }
            }
        })
    }
}

/// The calling service the connection's verified client certificate names,
/// if it was made over mutual TLS.
fn certified_service(extensions: &http::Extensions) -> Option<&str> {
    extensions
        .get::<PeerIdentity>()
        .and_then(|peer| peer.service.as_deref())
}

/// The principal and token of a request's `Authorization: Bearer` header,
/// verified by `authenticator`: what every authenticated surface of a
/// service (gRPC, the MCP endpoint) accepts.
pub async fn bearer_principal(
    authenticator: &Authenticator,
    headers: &HeaderMap,
) -> Result<(Principal, BearerToken), AuthError> {
    let token = bearer_token(headers)?;
    let principal = authenticator.authenticate(token).await?;
    Ok((
        principal,
        BearerToken(Arc::new(SecretString::from(token.to_owned()))),
    ))
}

/// The token of a request's `Authorization: Bearer` header, not verified.
pub(crate) fn bearer_token(headers: &HeaderMap) -> Result<&str, AuthError> {
    let value = headers
        .get(http::header::AUTHORIZATION)
        .ok_or(AuthError::Missing)?
        .to_str()
        .map_err(|_| AuthError::NotBearer)?;
    let (scheme, token) = value.split_once(' ').ok_or(AuthError::NotBearer)?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(AuthError::NotBearer);
    }
    Ok(token.trim())
}

/// The status a refused call gets: UNAVAILABLE when the identity provider's
/// keys could not be had (retrying later may succeed), UNAUTHENTICATED else.
fn refusal(error: &AuthError) -> Status {
    match error {
        AuthError::KeysUnavailable => ApiError::Unavailable(error.to_string()),
        _ => ApiError::Unauthenticated(error.to_string()),
    }
    .into()
}

/// Returns the principal that [`AuthLayer`] attached to a request.
pub fn principal<T>(request: &tonic::Request<T>) -> Result<&Principal, Status> {
    request
        .extensions()
        .get::<Principal>()
        .ok_or_else(|| ApiError::Unauthenticated("missing credentials".to_owned()).into())
}

#[cfg(test)]
mod tests {
    use switchboard_proto::common::v1::ErrorReason;
    use tonic::Code;
    use tonic_types::StatusExt;

    use super::*;

    #[test]
    fn missing_keys_are_unavailable_and_bad_tokens_unauthenticated() {
        let unavailable = refusal(&AuthError::KeysUnavailable);
        assert_eq!(unavailable.code(), Code::Unavailable);
        assert_eq!(
            unavailable
                .get_error_details()
                .error_info()
                .map(|i| i.reason.as_str()),
            Some(ErrorReason::Unavailable.as_str_name())
        );
        for error in [AuthError::Invalid, AuthError::Expired, AuthError::Missing] {
            assert_eq!(refusal(&error).code(), Code::Unauthenticated, "{error:?}");
        }
    }
}
