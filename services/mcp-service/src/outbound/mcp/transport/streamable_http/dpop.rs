//! A DPoP-bound token presented to the MCP server (RFC 9449 section 7):
//! `Authorization: DPoP <token>`, never `Bearer`, and on every request a
//! fresh proof naming its method and URL, the token's hash (`ath`) and the
//! server's nonce once it gave one.
//!
//! A request refused with `use_dpop_nonce` (a 401, so nothing ran) is sent
//! once more with the server's nonce, never more. rmcp's HTTP client hands
//! back a 401's `WWW-Authenticate` challenge but not its other headers, so
//! the nonce is learned from the server's answer to a `ping` sent with a
//! proof of the same token (harmless whether the server runs it or not);
//! the nonce is then used by every later request of the session, and a
//! rotated one costs one more `ping`.

use std::{collections::HashMap, sync::Arc, time::Duration};

use futures::stream::BoxStream;
use http::{HeaderName, HeaderValue, Method};
use rmcp::{
    model::ClientJsonRpcMessage,
    transport::streamable_http_client::{
        StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
        StreamableHttpResponseLimits,
    },
};
use sse_stream::{Error as SseError, Sse};

use crate::outbound::oauth::dpop::{DPOP_HEADER, DpopKey, Nonce, USE_NONCE};

/// The longest the `ping` that learns the server's nonce may take.
const NONCE_PING_TIME: Duration = Duration::from_secs(30);
/// The session header rmcp sends (reserved in custom headers).
const SESSION_HEADER: &str = "mcp-session-id";
/// The protocol version header, passed on to the `ping`.
const VERSION_HEADER: &str = "mcp-protocol-version";

/// `inner`, its token presented with the DPoP scheme and a proof of `key`.
#[derive(Clone)]
pub struct DpopClient<C> {
    inner: C,
    key: DpopKey,
    nonce: Nonce,
    /// Sends the `ping` that learns the server's nonce.
    http: reqwest::Client,
}

impl<C> std::fmt::Debug for DpopClient<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DpopClient").finish_non_exhaustive()
    }
}

/// Whether a `WWW-Authenticate` challenge asks for a proof with the
/// server's nonce.
fn asks_for_nonce<E: std::error::Error + Send + Sync + 'static>(
    error: &StreamableHttpError<E>,
) -> bool {
    matches!(error, StreamableHttpError::AuthRequired(challenge)
        if challenge.www_authenticate_header.contains(USE_NONCE))
}

impl<C: StreamableHttpClient> DpopClient<C> {
    /// Wraps `inner`, proving possession of `key`; `http` (built by
    /// [`crate::outbound::http::build_client`]) sends the nonce `ping`.
    pub fn new(inner: C, key: DpopKey, http: reqwest::Client) -> Self {
        Self {
            inner,
            key,
            nonce: Nonce::default(),
            http,
        }
    }

    /// `headers` with the token and a fresh proof for a `method` request
    /// to `uri`, or the error the proof could not be made with.
    fn authorized(
        &self,
        method: &Method,
        uri: &str,
        token: &str,
        nonce: Option<&str>,
        mut headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<HashMap<HeaderName, HeaderValue>, StreamableHttpError<C::Error>> {
        let unusable =
            |what: &str| StreamableHttpError::UnexpectedServerResponse(what.to_owned().into());
        let proof = self
            .key
            .proof(method.as_str(), uri, nonce, Some(token))
            .map_err(|e| unusable(&e.to_string()))?;
        let mut authorization = HeaderValue::from_str(&format!("DPoP {token}"))
            .map_err(|_| unusable("the access token is not a valid header value"))?;
        authorization.set_sensitive(true);
        let proof = HeaderValue::from_str(&proof)
            .map_err(|_| unusable("the DPoP proof is not a valid header value"))?;
        headers.insert(http::header::AUTHORIZATION, authorization);
        headers.insert(HeaderName::from_static(DPOP_HEADER), proof);
        Ok(headers)
    }

    /// Makes a request with `call` (given the headers to send), the token
    /// proven; once more with the server's nonce when it asks for one.
    async fn send<T, F, Fut>(
        &self,
        method: Method,
        uri: &str,
        session_id: Option<&str>,
        token: Option<String>,
        headers: HashMap<HeaderName, HeaderValue>,
        call: F,
    ) -> Result<T, StreamableHttpError<C::Error>>
    where
        F: Fn(HashMap<HeaderName, HeaderValue>) -> Fut,
        Fut: Future<Output = Result<T, StreamableHttpError<C::Error>>>,
    {
        // Without a token the request goes out as it is: the server's
        // challenge drives authorization.
        let Some(token) = token else {
            return call(headers).await;
        };
        let used = self.nonce.get();
        let first =
            call(self.authorized(&method, uri, &token, used.as_deref(), headers.clone())?).await;
        match first {
            Err(error) if asks_for_nonce(&error) => {
                let version = headers
                    .get(&HeaderName::from_static(VERSION_HEADER))
                    .cloned();
                self.learn_nonce(uri, session_id, &token, version).await;
                let nonce = self.nonce.get();
                if nonce.is_none() || nonce == used {
                    return Err(error);
                }
                tracing::debug!("mcp server asked for its dpop nonce; sending once more");
                call(self.authorized(&method, uri, &token, nonce.as_deref(), headers)?).await
            }
            result => result,
        }
    }

    /// Learns the server's nonce from its answer to a `ping`, whatever its
    /// status; the answer's body is not read.
    async fn learn_nonce(
        &self,
        uri: &str,
        session_id: Option<&str>,
        token: &str,
        version: Option<HeaderValue>,
    ) {
        let Ok(headers) = self.authorized(&Method::POST, uri, token, None, HashMap::new()) else {
            return;
        };
        let mut request = self
            .http
            .post(uri)
            .header(http::header::ACCEPT, "application/json, text/event-stream")
            .json(&serde_json::json!({"jsonrpc": "2.0", "id": "dpop-nonce", "method": "ping"}))
            .timeout(NONCE_PING_TIME);
        for (name, value) in headers {
            request = request.header(name, value);
        }
        if let Some(session) = session_id {
            request = request.header(SESSION_HEADER, session);
        }
        if let Some(version) = version {
            request = request.header(VERSION_HEADER, version);
        }
        match request.send().await {
            Ok(response) => {
                if !self.nonce.learn(response.headers()) {
                    tracing::warn!("the mcp server asked for a dpop nonce and gave none");
                }
            }
            Err(error) => {
                tracing::warn!(error = %error.without_url(), "the mcp server's dpop nonce could not be learned");
            }
        }
    }
}

impl<C: StreamableHttpClient + Sync> StreamableHttpClient for DpopClient<C> {
    type Error = C::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        let session = session_id.clone();
        self.send(
            Method::POST,
            &uri,
            session.as_deref(),
            auth_token,
            custom_headers,
            |headers| {
                self.inner.post_message(
                    uri.clone(),
                    message.clone(),
                    session_id.clone(),
                    None,
                    headers,
                )
            },
        )
        .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        let session = session_id.clone();
        self.send(
            Method::POST,
            &uri,
            session.as_deref(),
            auth_token,
            custom_headers,
            |headers| {
                self.inner.post_message_with_max_sse_event_size(
                    uri.clone(),
                    message.clone(),
                    session_id.clone(),
                    None,
                    headers,
                    max_sse_event_size,
                )
            },
        )
        .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        let session = session_id.clone();
        self.send(
            Method::POST,
            &uri,
            session.as_deref(),
            auth_token,
            custom_headers,
            |headers| {
                self.inner.post_message_with_response_limits(
                    uri.clone(),
                    message.clone(),
                    session_id.clone(),
                    None,
                    headers,
                    limits,
                )
            },
        )
        .await
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), StreamableHttpError<Self::Error>> {
        self.send(
            Method::DELETE,
            &uri,
            Some(&session_id),
            auth_token,
            custom_headers,
            |headers| {
                self.inner
                    .delete_session(uri.clone(), session_id.clone(), None, headers)
            },
        )
        .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<Self::Error>> {
        let session = session_id.clone();
        self.send(
            Method::GET,
            &uri,
            session.as_deref(),
            auth_token,
            custom_headers,
            |headers| {
                self.inner.get_stream(
                    uri.clone(),
                    session_id.clone(),
                    last_event_id.clone(),
                    None,
                    headers,
                )
            },
        )
        .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<Self::Error>> {
        let session = session_id.clone();
        self.send(
            Method::GET,
            &uri,
            session.as_deref(),
            auth_token,
            custom_headers,
            |headers| {
                self.inner.get_stream_with_max_sse_event_size(
                    uri.clone(),
                    session_id.clone(),
                    last_event_id.clone(),
                    None,
                    headers,
                    max_sse_event_size,
                )
            },
        )
        .await
    }
}
