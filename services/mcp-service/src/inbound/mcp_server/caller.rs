//! [`Caller`]: who sends an MCP request and what they reach, as the
//! endpoint's access layer established it before the request reached the
//! MCP server.

use std::sync::Arc;

use http::{HeaderMap, request::Parts};
use rmcp::{
    ErrorData, RoleServer,
    model::Extensions,
    service::{NotificationContext, RequestContext},
};
use switchboard_auth::Principal;
use tracing::Span;

use crate::domain::{calls, integration::OrgId, ports::SessionScope, surface::Surface};

/// The verified caller and their surface, put in the request's extensions
/// by the access layer.
#[derive(Debug, Clone)]
pub(crate) struct Admitted {
    /// The token's principal.
    pub principal: Principal,
    /// What the path reaches in the caller's organization.
    pub surface: Arc<Surface>,
    /// The path, for spans (never a label: slugs are the organization's).
    pub path: String,
}

/// One request's caller, as a handler uses it.
pub(crate) struct Caller {
    /// The token's principal.
    pub principal: Principal,
    /// What the caller reaches.
    pub surface: Arc<Surface>,
    /// The session scope of the calls: the client's MCP session when it has
    /// one, so that each of its sessions keeps its own upstream session.
    pub session_scope: String,
    headers: HeaderMap,
    path: String,
}

impl Caller {
    /// Whether the request belongs to a client session (initialize era),
    /// which has a stream for the server's own messages.
    pub fn in_session(&self) -> bool {
        !self.session_scope.is_empty()
    }

    /// The caller's organization.
    pub fn org(&self) -> OrgId {
        OrgId(self.principal.org_id.clone())
    }

    /// The upstream session scope of the caller's calls, as the domain
    /// makes it.
    pub fn upstream_scope(&self) -> SessionScope {
        calls::scope(&self.principal, &self.session_scope)
    }

    /// A span for the MCP `method` on `target`, continuing the client's W3C
    /// trace, named and attributed after the MCP semantic conventions.
    pub fn span(&self, method: &'static str, target: Option<&str>) -> Span {
        let name = match target {
            Some(target) if method == "tools/call" || method == "prompts/get" => {
                format!("{method} {target}")
            }
            _ => method.to_owned(),
        };
        let span = tracing::info_span!(
            "mcp.server",
            otel.name = %name,
            otel.kind = "server",
            mcp.method.name = method,
            gen_ai.tool.name = tracing::field::Empty,
            mcp.resource.uri = tracing::field::Empty,
            url.path = %self.path,
            enduser.id = %self.principal.user_id,
        );
        match (method, target) {
            ("tools/call", Some(tool)) => {
                span.record("gen_ai.tool.name", tool);
            }
            ("resources/read", Some(uri)) => {
                span.record("mcp.resource.uri", uri);
            }
            _ => {}
        }
        switchboard_telemetry::continue_trace(&span, &self.headers);
        span
    }
}

/// The caller of the request `context` serves.
pub(crate) fn caller_of(context: &RequestContext<RoleServer>) -> Result<Caller, ErrorData> {
    caller_in(&context.extensions)
}

/// The caller who sent the notification `context` serves.
pub(crate) fn notifier_of(context: &NotificationContext<RoleServer>) -> Result<Caller, ErrorData> {
    caller_in(&context.extensions)
}

fn caller_in(extensions: &Extensions) -> Result<Caller, ErrorData> {
    let parts = extensions.get::<Parts>().ok_or_else(|| {
        ErrorData::internal_error("the request came without its HTTP parts", None)
    })?;
    let admitted = parts
        .extensions
        .get::<Admitted>()
        .ok_or_else(|| ErrorData::invalid_request("the request was not authenticated", None))?;
    let session_scope = parts
        .headers
        .get("mcp-session-id")
        .and_then(|id| id.to_str().ok())
        .map(|id| format!("mcp-session:{id}"))
        .unwrap_or_default();
    Ok(Caller {
        principal: admitted.principal.clone(),
        surface: admitted.surface.clone(),
        session_scope,
        headers: parts.headers.clone(),
        path: admitted.path.clone(),
    })
}
