//! Who may reach a path of the endpoint: the caller's bearer token verified
//! as every gRPC call's is, the path resolved in the caller's organization
//! only, and the session, if any, the caller's own. Also the OAuth protected
//! resource metadata (RFC 9728) that tells MCP clients where to log in.

use std::sync::Arc;

use axum::{
    extract::{Path, Request, State},
    middleware::Next,
    response::{IntoResponse, Response},
};
use http::{HeaderMap, HeaderValue, StatusCode, header};
use serde_json::json;
use switchboard_auth::{AuthError, Authenticator};
use switchboard_server::{bearer_principal, connections::ConnectionHandle};

use super::{
    authority::Authority,
    caller::Admitted,
    sessions::{BoundedSessions, OPENING, Opening, Owner},
};
use crate::domain::{
    error::McpError, integration::Slug, service::IntegrationService, surface::Surface,
    toolset::serve::ToolsetResolver,
};

/// Where the endpoint's paths of integrations start.
pub(super) const INTEGRATIONS_PATH: &str = "/mcp/integrations";
/// Where the endpoint's paths of toolsets start.
pub(super) const TOOLSETS_PATH: &str = "/mcp/toolsets";
/// Where RFC 9728 puts a resource's metadata: this, then the resource's path.
pub(super) const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";
/// How long a client at a session limit should wait before trying again.
const SESSION_RETRY_AFTER_SECONDS: u32 = 5;

/// What the access layer needs.
pub(super) struct Access {
    pub authenticator: Arc<Authenticator>,
    pub integrations: IntegrationService,
    pub toolsets: ToolsetResolver,
    pub sessions: Arc<BoundedSessions>,
    pub site: Site,
}

/// How the endpoint names itself in URLs and to which hosts it answers.
#[derive(Debug, Clone)]
pub(super) struct Site {
    /// The URL clients reach it at, when configured.
    pub public_url: Option<String>,
    /// The hosts it answers to; empty for any.
    pub allowed_hosts: Vec<Authority>,
    /// The identity provider whose tokens it accepts.
    pub issuer: Option<String>,
}

impl Site {
    /// The endpoint under `allowed_hosts` as configured (entries that are
    /// no host are dropped; the settings refuse them at start-up).
    pub fn new(
        public_url: Option<String>,
        allowed_hosts: &[String],
        issuer: Option<String>,
    ) -> Self {
        Self {
            public_url,
            allowed_hosts: allowed_hosts
                .iter()
                .filter_map(|entry| Authority::parse_entry(entry))
                .collect(),
            issuer,
        }
    }

    /// The endpoint's base URL as the client reached it: the configured
    /// public URL, else `http://` and the request's host as parsed (never
    /// the header's text). None when the host is not one the endpoint
    /// answers to.
    fn base(&self, request: &RequestHost<'_>) -> Option<String> {
        if let Some(url) = &self.public_url {
            return Some(url.trim_end_matches('/').to_owned());
        }
        self.host(request).map(|host| format!("http://{host}"))
    }

    /// The host a request names (its `Host`, else the `:authority` of an
    /// HTTP/2 request), parsed, when the endpoint answers to it: an entry
    /// names its host on any port, or its host and port. None when the
    /// request names no host, something that is no host, or another host.
    pub fn host(&self, request: &RequestHost<'_>) -> Option<Authority> {
        let text = match request.headers.get(header::HOST) {
            Some(value) => value.to_str().ok()?,
            None => request.uri.authority()?.as_str(),
        };
        let host = Authority::parse(text)?;
        let allowed = self.allowed_hosts.is_empty()
            || self.allowed_hosts.iter().any(|entry| entry.admits(&host));
        allowed.then_some(host)
    }
}

/// Where a request says it is going: its headers and its URI.
pub(super) struct RequestHost<'a> {
    pub headers: &'a HeaderMap,
    pub uri: &'a http::Uri,
}

impl<'a> RequestHost<'a> {
    fn of<B>(request: &'a http::Request<B>) -> Self {
        Self {
            headers: request.headers(),
            uri: request.uri(),
        }
    }
}

/// What a path of the endpoint names.
enum Target {
    /// `/mcp/integrations/{slug}`.
    Integration(String),
    /// `/mcp/toolsets/{name}`.
    Toolset(String),
}

/// Admits a request to `/mcp/integrations/{slug}` (see [`admit`]).
pub(super) async fn admit_integration(
    State(access): State<Arc<Access>>,
    Path(slug): Path<String>,
    request: Request,
    next: Next,
) -> Response {
    admit(&access, Target::Integration(slug), request, next).await
}

/// Admits a request to `/mcp/toolsets/{name}` (see [`admit`]).
pub(super) async fn admit_toolset(
    State(access): State<Arc<Access>>,
    Path(name): Path<String>,
    request: Request,
    next: Next,
) -> Response {
    admit(&access, Target::Toolset(name), request, next).await
}

/// Admits a request: 401 without a valid token, 404 for an integration or
/// toolset the caller's organization does not have (whether it exists
/// elsewhere or not), 404 for a session another caller opened; 503 when a
/// session limit is reached.
async fn admit(access: &Access, target: Target, mut request: Request, next: Next) -> Response {
    let path = request.uri().path().to_owned();
    if access.site.host(&RequestHost::of(&request)).is_none() {
        return (
            StatusCode::FORBIDDEN,
            "Forbidden: Host header is not allowed",
        )
            .into_response();
    }
    let principal = match bearer_principal(&access.authenticator, request.headers()).await {
        Ok((principal, _token)) => {
            // The connection leaves the evictable, short-lived set.
            if let Some(connection) = request.extensions().get::<ConnectionHandle>() {
                connection.authenticated(&principal.org_id);
            }
            principal
        }
        Err(error) => {
            return unauthenticated(&access.site, &RequestHost::of(&request), &path, &error);
        }
    };
    let surface = match resolve(access, &principal, &target).await {
        Ok(surface) => surface,
        Err(response) => return response,
    };
    let owner = Owner {
        org_id: principal.org_id.clone(),
        user_id: principal.user_id.clone(),
        path: path.clone(),
    };
    let session = request
        .headers()
        .get("mcp-session-id")
        .and_then(|id| id.to_str().ok());
    if let Some(id) = session {
        match access.sessions.owner(id).await {
            Ok(Some(stored)) if stored != owner => {
                return (StatusCode::NOT_FOUND, "Not Found: Session not found").into_response();
            }
            Ok(_) => access.sessions.used(id),
            Err(error) => {
                tracing::error!(error = %error, "the endpoint's session could not be looked up");
                return (StatusCode::SERVICE_UNAVAILABLE, "Service Unavailable").into_response();
            }
        }
    }
    tracing::Span::current().record("enduser.id", principal.user_id.as_str());
    request.extensions_mut().insert(Admitted {
        principal,
        surface: Arc::new(surface),
        path,
    });
    let opening = Opening::new(owner);
    let response = OPENING.scope(opening.clone(), next.run(request)).await;
    match opening.refusal() {
        Some(reason) => session_refused(&reason),
        None => response,
    }
}

/// The surface `target` names in the caller's organization, or the
/// response that says there is none.
async fn resolve(
    access: &Access,
    principal: &switchboard_auth::Principal,
    target: &Target,
) -> Result<Surface, Response> {
    let unavailable = |error: McpError| {
        tracing::error!(error = %error, "the endpoint's path could not be resolved");
        (StatusCode::SERVICE_UNAVAILABLE, "Service Unavailable").into_response()
    };
    match target {
        Target::Integration(slug) => {
            let not_found =
                || (StatusCode::NOT_FOUND, "Not Found: no such integration").into_response();
            let slug = Slug::parse("slug", slug).map_err(|_| not_found())?;
            match access.integrations.by_slug(principal, &slug).await {
                Ok(integration) => Ok(Surface::integration(integration.id)),
                Err(McpError::NotFound) => Err(not_found()),
                Err(error) => Err(unavailable(error)),
            }
        }
        Target::Toolset(name) => match access.toolsets.resolve(principal, name).await {
            Ok(toolset) => Ok(toolset.surface()),
            Err(McpError::ToolsetNotFound) => {
                Err((StatusCode::NOT_FOUND, "Not Found: no such toolset").into_response())
            }
            Err(error) => Err(unavailable(error)),
        },
    }
}

/// 401 with the challenge that names the metadata (RFC 9728 §5.1), or 503
/// when the identity provider's keys could not be had.
fn unauthenticated(
    site: &Site,
    request: &RequestHost<'_>,
    path: &str,
    error: &AuthError,
) -> Response {
    if matches!(error, AuthError::KeysUnavailable) {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            "Service Unavailable: token keys unavailable",
        )
            .into_response();
    }
    let mut challenge = String::from("Bearer");
    if let Some(base) = site.base(request) {
        challenge.push_str(&format!(
            r#" resource_metadata="{base}{METADATA_PATH}{path}""#
        ));
    }
    if !matches!(error, AuthError::Missing) {
        let sep = if challenge.len() > "Bearer".len() {
            ","
        } else {
            ""
        };
        challenge.push_str(&format!(r#"{sep} error="invalid_token""#));
    }
    tracing::debug!(error = %error, path, "request refused");
    let mut response = (StatusCode::UNAUTHORIZED, "Unauthorized").into_response();
    if let Ok(value) = HeaderValue::from_str(&challenge) {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, value);
    }
    response
}

/// 503 with `Retry-After` for a request refused a session at a limit.
fn session_refused(reason: &str) -> Response {
    let body = json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": { "code": -32000, "message": reason },
    });
    let mut response = json_response(StatusCode::SERVICE_UNAVAILABLE, &body);
    response.headers_mut().insert(
        header::RETRY_AFTER,
        HeaderValue::from(SESSION_RETRY_AFTER_SECONDS),
    );
    response
}

/// The protected resource metadata (RFC 9728) of `/mcp/integrations/{slug}`:
/// the resource's URL and the identity provider that issues its tokens.
/// Public, and the same for every slug, so it says nothing of what exists.
pub(super) async fn resource_metadata(
    State(access): State<Arc<Access>>,
    uri: http::Uri,
    headers: HeaderMap,
) -> Response {
    let resource = uri.path().strip_prefix(METADATA_PATH).unwrap_or_default();
    let Some(base) = access.site.base(&RequestHost {
        headers: &headers,
        uri: &uri,
    }) else {
        return (
            StatusCode::FORBIDDEN,
            "Forbidden: Host header is not allowed",
        )
            .into_response();
    };
    let mut metadata = json!({
        "resource": format!("{base}{resource}"),
        "bearer_methods_supported": ["header"],
        "resource_name": "Switchboard",
    });
    if let Some(issuer) = &access.site.issuer {
        metadata["authorization_servers"] = json!([issuer]);
    }
    json_response(StatusCode::OK, &metadata)
}

/// `body` as a JSON response.
fn json_response(status: StatusCode, body: &serde_json::Value) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site(hosts: &[&str]) -> Site {
        let hosts: Vec<String> = hosts.iter().map(|h| (*h).to_owned()).collect();
        Site::new(None, &hosts, None)
    }

    fn host(site: &Site, host: &str) -> Option<String> {
        let mut headers = HeaderMap::new();
        headers.insert(header::HOST, HeaderValue::from_str(host).expect("a header"));
        let uri = http::Uri::from_static("/mcp/integrations/docs");
        site.host(&RequestHost {
            headers: &headers,
            uri: &uri,
        })
        .map(|host| host.to_string())
    }

    #[test]
    fn hosts_are_allowed_by_name_for_any_port_or_by_exact_authority() {
        let site = site(&["localhost", "mcp.example.com:8443", "::1"]);
        let allows = |name: &str| host(&site, name).is_some();
        let any = self::site(&[]);
        assert!(allows("localhost"));
        assert!(allows("LOCALHOST:3000"));
        assert!(allows("mcp.example.com:8443"));
        assert!(!allows("mcp.example.com:443"));
        assert!(allows("[::1]:8080"));
        assert!(!allows("evil.example"));
        assert!(!allows("localhost.evil.example"));
        assert!(host(&any, "anything").is_some());
    }

    #[test]
    fn a_host_with_more_than_host_and_port_is_refused_even_when_any_host_is() {
        let loopback = site(&["localhost", "::1"]);
        for text in [
            "[localhost]evil.example",
            "[::1]@evil.example",
            "localhost@evil.example",
        ] {
            assert_eq!(host(&loopback, text), None, "{text}");
            assert_eq!(host(&site(&[]), text), None, "{text}");
        }
    }

    #[test]
    fn an_http2_request_is_judged_by_its_authority() {
        let site = site(&["localhost"]);
        let headers = HeaderMap::new();
        let allowed = http::Uri::from_static("http://localhost:9000/mcp/integrations/docs");
        let other = http::Uri::from_static("http://evil.example/mcp/integrations/docs");
        let judge = |uri: &http::Uri| {
            site.host(&RequestHost {
                headers: &headers,
                uri,
            })
        };
        assert!(judge(&allowed).is_some());
        assert!(judge(&other).is_none());
    }

    #[test]
    fn the_challenge_names_the_metadata_of_the_path() {
        let mut headers = HeaderMap::new();
        headers.insert(header::HOST, HeaderValue::from_static("localhost:9000"));
        let uri = http::Uri::from_static("/mcp/integrations/docs");
        let response = unauthenticated(
            &site(&["localhost"]),
            &RequestHost {
                headers: &headers,
                uri: &uri,
            },
            "/mcp/integrations/docs",
            &AuthError::Invalid,
        );
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(
            response.headers()[header::WWW_AUTHENTICATE],
            r#"Bearer resource_metadata="http://localhost:9000/.well-known/oauth-protected-resource/mcp/integrations/docs", error="invalid_token""#
        );
    }
}
