//! One operation's call as an HTTP request: to the integration's pinned
//! base URL only, under the outbound address policy, with no redirect
//! followed (a redirect would carry the credential and the body elsewhere),
//! the integration's credential, the caller's trace context, and the answer
//! read up to the result bound. What the API answers (an error status
//! included) is the tool's result, for the model to read.

use std::{sync::Arc, time::Duration};

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use rmcp::model::{CallToolResult, ContentBlock};
use secrecy::ExposeSecret as _;
use serde_json::{Map, Value};
use tracing::Instrument as _;

use crate::{
    domain::{
        address_policy::AddressPolicy,
        openapi::{Operation, request::build},
        ports::CallError,
    },
    outbound::{
        http::check_request_url,
        service_auth::{Credential, Headers, ServiceAnswer},
    },
};

/// Sends operations' calls.
#[derive(Debug, Clone)]
pub struct ApiClient {
    http: reqwest::Client,
    policy: Arc<AddressPolicy>,
    max_result_bytes: usize,
}

impl ApiClient {
    /// Calls with `http` (which follows no redirect, and resolves names
    /// under `policy`), answers read up to `max_result_bytes`.
    pub fn new(http: reqwest::Client, policy: Arc<AddressPolicy>, max_result_bytes: usize) -> Self {
        Self {
            http,
            policy,
            max_result_bytes,
        }
    }

    /// A fetcher of documents given by URL with this client (its address
    /// policy, no redirect), each fetch within `timeout`.
    pub fn document_fetcher(&self, timeout: Duration) -> super::DocumentFetcher {
        super::DocumentFetcher::new(self.http.clone(), self.policy.clone(), timeout)
    }

    /// Calls `operation` with `arguments` at `base_url`, carrying
    /// `credential` (the integration's).
    pub async fn call(
        &self,
        credential: Credential,
        base_url: &str,
        operation: &Operation,
        arguments: &Map<String, Value>,
        timeout: Duration,
    ) -> Result<ServiceAnswer, CallError> {
        let request = match build(operation, arguments) {
            Ok(request) => request,
            Err(why) => {
                return Ok(ServiceAnswer {
                    result: CallToolResult::error(vec![ContentBlock::text(why)]),
                    credential_refused: false,
                });
            }
        };
        let url = format!(
            "{}{}",
            base_url.trim_end_matches('/'),
            request.path_and_query
        );
        check_request_url(&self.policy, &url).map_err(|e| CallError::Connect(e.to_string()))?;
        let url = match &credential.query {
            Some((name, value)) => with_key(&url, name, value.expose_secret()),
            None => url,
        };
        let method = reqwest::Method::from_bytes(request.method.as_bytes())
            .map_err(|_| CallError::Connect(format!("method {} is not HTTP", request.method)))?;
        let span = tracing::info_span!(
            "openapi.upstream",
            otel.name = %format_args!("{} {}", request.method, operation.path),
            otel.kind = "client",
            http.request.method = %request.method,
        );
        let mut headers = HeaderMap::new();
        for (name, value) in &request.headers {
            if let (Ok(name), Ok(value)) = (
                HeaderName::from_bytes(name.as_bytes()),
                HeaderValue::from_str(value),
            ) {
                headers.insert(name, value);
            }
        }
        headers.extend(credential.headers);
        switchboard_telemetry::inject_span(&span, &mut Headers(&mut headers));
        let mut builder = self.http.request(method, &url).headers(headers);
        if let Some(body) = &request.body {
            builder = builder.json(body);
        }
        let answered = async {
            let response = builder
                .send()
                .await
                .map_err(|e| CallError::Transport(describe(e)))?;
            self.answer(response).await
        };
        tokio::time::timeout(timeout, answered.instrument(span))
            .await
            .map_err(|_| CallError::Timeout(timeout))?
    }

    /// The API's answer as the tool's result: its text, its JSON object as
    /// structured content, an error result for a status outside 2xx.
    async fn answer(&self, mut response: reqwest::Response) -> Result<ServiceAnswer, CallError> {
        let status = response.status();
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| CallError::Transport(describe(e)))?
        {
            if body.len() + chunk.len() > self.max_result_bytes {
                return Err(CallError::TooLarge {
                    limit: self.max_result_bytes,
                });
            }
            body.extend_from_slice(&chunk);
        }
        let text = String::from_utf8_lossy(&body).into_owned();
        let structured = serde_json::from_slice::<Value>(&body)
            .ok()
            .filter(Value::is_object);
        let mut result = if status.is_success() {
            CallToolResult::success(vec![ContentBlock::text(text)])
        } else {
            CallToolResult::error(vec![ContentBlock::text(format!("HTTP {status}: {text}"))])
        };
        result.structured_content = structured;
        Ok(ServiceAnswer {
            result,
            credential_refused: status == reqwest::StatusCode::UNAUTHORIZED,
        })
    }
}

/// A send failure without its URL (which may carry a query argument).
fn describe(error: reqwest::Error) -> String {
    if error.is_connect() {
        return "could not connect to the API".to_owned();
    }
    error.without_url().to_string()
}

/// `url` carrying the API key `name=value` in its query, in place of any
/// parameter of that name the call's arguments made (the key is always the
/// integration's). `name` is of URL-safe characters, checked when stored.
fn with_key(url: &str, name: &str, value: &str) -> String {
    let (path, query) = url.split_once('?').unwrap_or((url, ""));
    let mut pairs: Vec<&str> = query
        .split('&')
        .filter(|pair| !pair.is_empty() && pair.split('=').next() != Some(name))
        .collect();
    let key = format!(
        "{name}={}",
        url::form_urlencoded::byte_serialize(value.as_bytes()).collect::<String>()
    );
    pairs.push(&key);
    format!("{path}?{}", pairs.join("&"))
}

#[cfg(test)]
mod tests {
    use super::with_key;

    #[test]
    fn the_key_joins_the_query_in_place_of_an_argument_of_its_name() {
        assert_eq!(
            with_key("https://a.test/v1/pets", "api_key", "s e&c"),
            "https://a.test/v1/pets?api_key=s+e%26c"
        );
        assert_eq!(
            with_key(
                "https://a.test/pets?api_key=mine&limit=2&api_keyx=1",
                "api_key",
                "k"
            ),
            "https://a.test/pets?limit=2&api_keyx=1&api_key=k"
        );
    }
}
