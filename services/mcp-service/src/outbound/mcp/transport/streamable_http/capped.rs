//! The streamable HTTP client of MCP sessions: rmcp's reqwest client, with a
//! response too large to accept turned into that request's own error.
//!
//! rmcp bounds every SSE event and JSON body, but it reports a bound crossed
//! as a broken stream: the call fails with "Transport closed", exactly as if
//! the connection had dropped after the server ran the tool. A result too
//! large to accept is instead answered here, as a JSON-RPC error for the
//! request it belongs to, so the call says what happened, the session stays
//! open, and nothing is ever retried because of it.
//!
//! It also tells the session's [`StandaloneStream`] when an initialize was
//! answered with a session id and when the standalone GET was answered, so
//! that the session is used only once the server can reach it there.

use std::{collections::HashMap, sync::Arc};

use futures::{StreamExt as _, stream};
use http::{HeaderName, HeaderValue};
use rmcp::{
    model::{ClientJsonRpcMessage, ErrorCode, ErrorData, RequestId, ServerJsonRpcMessage},
    transport::streamable_http_client::{
        StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    },
};
use serde_json::json;
use sse_stream::{Error as SseError, Sse};
use tracing::Instrument as _;

use super::{
    sse_answer::answer_or_stream,
    standalone_stream::{StandaloneStream, is_initialize},
    upstream_trace::{record_failure, upstream_request},
};
use crate::outbound::mcp::transport::TOO_LARGE_MARKER;

/// What rmcp's SSE reader says when an event crosses the size bound (its
/// error type is private, its message is not).
const SSE_EVENT_TOO_LARGE: &str = "SSE event exceeded the maximum size";

/// rmcp's reqwest client, answering oversized responses with an error.
#[derive(Debug, Clone)]
pub struct CappedHttpClient {
    http: reqwest::Client,
    standalone: StandaloneStream,
}

impl CappedHttpClient {
    /// Wraps `http` (built by [`crate::outbound::http::build_client`]) for
    /// one session, whose standalone stream `standalone` follows.
    pub fn new(http: reqwest::Client, standalone: StandaloneStream) -> Self {
        Self { http, standalone }
    }

    /// A POST, its oversized answer replaced by an error answering it.
    async fn post_capped(
        self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<reqwest::Error>> {
        let request_id = match &message {
            ClientJsonRpcMessage::Request(request) => Some(request.id.clone()),
            _ => None,
        };
        let (span, custom_headers) =
            upstream_request(&message, session_id.as_deref(), custom_headers);
        let initialize = is_initialize(&message);
        let response = self
            .http
            .post_message_with_max_sse_event_size(
                uri,
                message,
                session_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .instrument(span.clone())
            .await;
        record_failure(&span, &response);
        if let Ok(
            StreamableHttpPostResponse::Json(_, session)
            | StreamableHttpPostResponse::Sse(_, session),
        ) = &response
        {
            self.standalone.initialized(initialize, session.as_deref());
        }
        match (response, request_id) {
            (Ok(StreamableHttpPostResponse::Sse(events, session)), Some(id)) => {
                let events = answer_oversize(events, id.clone());
                Ok(answer_or_stream(events, session, &id)
                    .instrument(span)
                    .await)
            }
            (Err(StreamableHttpError::ResponseBodyTooLarge { .. }), Some(id)) => {
                Ok(StreamableHttpPostResponse::Json(too_large(id), None))
            }
            (other, _) => other,
        }
    }
}

fn too_large(id: RequestId) -> ServerJsonRpcMessage {
    ServerJsonRpcMessage::error(
        ErrorData::new(
            ErrorCode::INTERNAL_ERROR,
            "the result is too large",
            Some(json!({ TOO_LARGE_MARKER: true })),
        ),
        Some(id),
    )
}

/// `events`, with a crossed size bound replaced by an error answering `id`.
fn answer_oversize(
    events: stream::BoxStream<'static, Result<Sse, SseError>>,
    id: RequestId,
) -> stream::BoxStream<'static, Result<Sse, SseError>> {
    events
        .scan(false, move |ended, event| {
            if *ended {
                return futures::future::ready(None);
            }
            let event = match event {
                Err(error) if error.to_string().contains(SSE_EVENT_TOO_LARGE) => {
                    *ended = true;
                    match serde_json::to_string(&too_large(id.clone())) {
                        Ok(data) => Ok(Sse {
                            data: Some(data),
                            ..Sse::default()
                        }),
                        Err(_) => Err(error),
                    }
                }
                other => other,
            };
            futures::future::ready(Some(event))
        })
        .boxed()
}

impl StreamableHttpClient for CappedHttpClient {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        let (span, custom_headers) =
            upstream_request(&message, session_id.as_deref(), custom_headers);
        let response = self
            .http
            .post_message(uri, message, session_id, auth_header, custom_headers)
            .instrument(span.clone())
            .await;
        record_failure(&span, &response);
        response
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        self.clone()
            .post_capped(
                uri,
                message,
                session_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), StreamableHttpError<Self::Error>> {
        self.http
            .delete_session(uri, session_id, auth_header, custom_headers)
            .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<stream::BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<Self::Error>>
    {
        let _opening = self
            .standalone
            .opening(session_id.as_deref(), last_event_id.as_deref());
        self.http
            .get_stream(uri, session_id, last_event_id, auth_header, custom_headers)
            .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<stream::BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<Self::Error>>
    {
        let _opening = self
            .standalone
            .opening(session_id.as_deref(), last_event_id.as_deref());
        self.http
            .get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await
    }
}
