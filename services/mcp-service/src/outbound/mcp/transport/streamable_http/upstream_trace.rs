//! The span of each HTTP request to an MCP server, and its `traceparent`.
//!
//! Requests are sent by the session's transport task, outside the span of
//! the operation that asked for them; the operation's context travels with
//! the request in its `_meta` (see
//! [`crate::outbound::telemetry::with_trace`]), and is
//! taken from there as the parent of the request's span, whose own context
//! goes out in the `traceparent` header.

use std::collections::HashMap;

use http::{HeaderName, HeaderValue};
use rmcp::{
    model::{ClientJsonRpcMessage, ClientRequest, RequestMetaObject, RequestParamsMeta},
    transport::streamable_http_client::StreamableHttpError,
};
use switchboard_telemetry::{Extractor, Injector};
use tracing::Span;

/// The `_meta` of the requests mcp-service sends with a trace context.
fn meta_of(request: &ClientRequest) -> Option<&RequestMetaObject> {
    match request {
        ClientRequest::CallToolRequest(r) => r.params.meta(),
        ClientRequest::ReadResourceRequest(r) => r.params.meta(),
        ClientRequest::GetPromptRequest(r) => r.params.meta(),
        ClientRequest::ListToolsRequest(r) => r.params.as_ref()?.meta(),
        ClientRequest::ListResourcesRequest(r) => r.params.as_ref()?.meta(),
        ClientRequest::ListResourceTemplatesRequest(r) => r.params.as_ref()?.meta(),
        ClientRequest::ListPromptsRequest(r) => r.params.as_ref()?.meta(),
        _ => None,
    }
}

/// The W3C fields of a request's `_meta`, as the propagator reads them.
struct MetaFields<'a>(&'a RequestMetaObject);

impl Extractor for MetaFields<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.0.0.get(key).and_then(serde_json::Value::as_str)
    }

    fn keys(&self) -> Vec<&str> {
        self.0.0.0.keys().map(String::as_str).collect()
    }
}

/// The headers of an HTTP request, as the propagator writes them.
struct Headers<'a>(&'a mut HashMap<HeaderName, HeaderValue>);

impl Injector for Headers<'_> {
    fn set(&mut self, key: &str, value: String) {
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(key.as_bytes()),
            HeaderValue::try_from(value),
        ) {
            self.0.insert(name, value);
        }
    }
}

/// The span of sending `message` on session `session_id`, and `headers`
/// with its `traceparent`; no span for a message that carries no trace
/// context (handshakes, notifications).
pub fn upstream_request(
    message: &ClientJsonRpcMessage,
    session_id: Option<&str>,
    mut headers: HashMap<HeaderName, HeaderValue>,
) -> (Span, HashMap<HeaderName, HeaderValue>) {
    let ClientJsonRpcMessage::Request(request) = message else {
        return (Span::none(), headers);
    };
    let Some(meta) = meta_of(&request.request) else {
        return (Span::none(), headers);
    };
    if meta.get_traceparent().is_none() {
        return (Span::none(), headers);
    }
    let method = request.request.method();
    let span = tracing::info_span!(
        "mcp.upstream",
        otel.name = %format_args!("POST {method}"),
        otel.kind = "client",
        http.request.method = "POST",
        mcp.method.name = %method,
        mcp.session.id = session_id,
        jsonrpc.request.id = %request.id,
    );
    switchboard_telemetry::set_parent(
        &span,
        switchboard_telemetry::context_from(&MetaFields(meta)),
    );
    switchboard_telemetry::inject_span(&span, &mut Headers(&mut headers));
    (span, headers)
}

/// Marks the request's span failed when it got no answer. The error's own
/// text is not recorded: it names the URL, which may carry a credential.
pub fn record_failure<T, E>(span: &Span, response: &Result<T, StreamableHttpError<E>>)
where
    E: std::error::Error + Send + Sync + 'static,
{
    let Err(error) = response else {
        return;
    };
    let error_type = match error {
        StreamableHttpError::Client(_) => "transport",
        StreamableHttpError::ResponseBodyTooLarge { .. } => "too_large",
        _ => "upstream_error",
    };
    switchboard_telemetry::record_error(span, error_type, "the request to the MCP server failed");
}
