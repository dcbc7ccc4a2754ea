//! The request phase of a model call: sending it, judging the response
//! status, and retrying what is worth retrying.
//!
//! Only this phase is retried. Once a response has started streaming, the
//! model's output has been seen by the caller, and a second call could answer
//! differently.

use std::time::Duration;

use backon::{ExponentialBuilder, Retryable as _};
use reqwest::{Response, StatusCode, header};
use secrecy::{ExposeSecret as _, SecretString};

use crate::domain::model::ModelError;

/// Most characters of a response body kept in a [`ModelError::Http`].
const BODY_EXCERPT_CHARS: usize = 512;
/// Most bytes read from an error response to build that excerpt.
const BODY_READ_LIMIT: usize = 8 * 1024;

/// How often and how patiently the request phase is retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RetryPolicy {
    /// Retries after the first attempt.
    pub(crate) max_retries: u32,
    /// First backoff delay; it doubles with every retry, plus jitter.
    pub(crate) min_delay: Duration,
    /// Longest wait between attempts, for backoff and `Retry-After` alike.
    pub(crate) max_delay: Duration,
}

impl RetryPolicy {
    /// Backs off from half a second up to 30 seconds.
    pub(crate) fn new(max_retries: u32) -> Self {
        Self {
            max_retries,
            min_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(30),
        }
    }
}

/// What one attempt of the request phase needs besides the request.
#[derive(Debug, Clone)]
pub(crate) struct RequestPhase {
    /// Provider name, for logs.
    pub(crate) provider: String,
    /// Deadline for the response headers, connecting included.
    pub(crate) deadline: Duration,
    pub(crate) retry: RetryPolicy,
    /// Kept to scrub it from anything that ends up in an error.
    pub(crate) api_key: Option<SecretString>,
}

impl RequestPhase {
    /// Sends the request built by `build` until it gets a successful
    /// response, retrying 429s, 5xx statuses and connection failures with
    /// exponential backoff and jitter (or the server's `Retry-After`, capped
    /// at the policy's maximum delay).
    pub(crate) async fn send(
        &self,
        build: impl Fn() -> reqwest::RequestBuilder,
    ) -> Result<Response, ModelError> {
        let backoff = ExponentialBuilder::default()
            .with_min_delay(self.retry.min_delay)
            .with_max_delay(self.retry.max_delay)
            .with_max_times(usize::try_from(self.retry.max_retries).unwrap_or(usize::MAX))
            .with_jitter();
        let max_delay = self.retry.max_delay;
        (|| self.attempt(build()))
            .retry(backoff)
            .sleep(tokio::time::sleep)
            .when(is_retryable)
            .adjust(move |error, backoff| {
                // `None` means the attempts are used up; a Retry-After cannot
                // extend them.
                let backoff = backoff?;
                match error {
                    ModelError::RateLimited {
                        retry_after: Some(after),
                    } => Some((*after).min(max_delay)),
                    _ => Some(backoff),
                }
            })
            .notify(|error, delay| {
                tracing::warn!(
                    provider = %self.provider,
                    %error,
                    delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
                    "retrying model request"
                );
            })
            .await
    }

    async fn attempt(&self, request: reqwest::RequestBuilder) -> Result<Response, ModelError> {
        // The model call's span is the parent of whatever the provider traces.
        let mut trace_headers = http::HeaderMap::new();
        switchboard_telemetry::inject_current_headers(&mut trace_headers);
        let request = request.headers(trace_headers);
        let response = match tokio::time::timeout(self.deadline, request.send()).await {
            Err(_elapsed) => return Err(ModelError::Timeout),
            Ok(Err(error)) => return Err(self.transport_error(&error)),
            Ok(Ok(response)) => response,
        };
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        if status == StatusCode::TOO_MANY_REQUESTS {
            return Err(ModelError::RateLimited {
                retry_after: retry_after(&response),
            });
        }
        let body = self.body_excerpt(response).await;
        Err(ModelError::Http {
            status: status.as_u16(),
            body,
        })
    }

    /// Maps a failure of `reqwest` before or while reading the response.
    pub(crate) fn transport_error(&self, error: &reqwest::Error) -> ModelError {
        if error.is_timeout() {
            ModelError::Timeout
        } else if error.is_builder() {
            ModelError::Protocol(self.redact(&error_chain(error)))
        } else {
            // Connection refused or reset, or closed before a response: no
            // model output was seen, so these are safe to retry.
            ModelError::Connect(self.redact(&error_chain(error)))
        }
    }

    /// The start of an error response's body, as text without the API key.
    pub(crate) async fn body_excerpt(&self, mut response: Response) -> String {
        let mut bytes = Vec::new();
        let read = async {
            while bytes.len() < BODY_READ_LIMIT {
                match response.chunk().await {
                    Ok(Some(chunk)) => bytes.extend_from_slice(&chunk),
                    Ok(None) | Err(_) => break,
                }
            }
        };
        // The body is only context for the error; a slow one is cut short.
        let _ = tokio::time::timeout(self.deadline, read).await;
        self.redact(&excerpt(&String::from_utf8_lossy(&bytes)))
    }

    /// Replaces the API key wherever it appears in `text`.
    pub(crate) fn redact(&self, text: &str) -> String {
        match &self.api_key {
            Some(key) if !key.expose_secret().is_empty() => {
                text.replace(key.expose_secret(), "[redacted]")
            }
            _ => text.to_owned(),
        }
    }
}

fn is_retryable(error: &ModelError) -> bool {
    match error {
        ModelError::RateLimited { .. } | ModelError::Connect(_) => true,
        ModelError::Http { status, .. } => *status >= 500,
        ModelError::Timeout | ModelError::Protocol(_) | ModelError::Limit(_) => false,
    }
}

/// `Retry-After` in seconds; the HTTP-date form is not used by model APIs.
fn retry_after(response: &Response) -> Option<Duration> {
    let value = response.headers().get(header::RETRY_AFTER)?.to_str().ok()?;
    let seconds: f64 = value.trim().parse().ok()?;
    (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds))
}

/// The first [`BODY_EXCERPT_CHARS`] characters of `text`, trimmed.
pub(crate) fn excerpt(text: &str) -> String {
    let text = text.trim();
    match text.char_indices().nth(BODY_EXCERPT_CHARS) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

/// An error and its sources, since `reqwest` puts the cause (refused,
/// reset…) in the sources.
fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut message = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn excerpt_cuts_long_bodies_on_a_char_boundary() {
        let long = "é".repeat(BODY_EXCERPT_CHARS + 10);
        let cut = excerpt(&long);
        assert_eq!(cut.chars().count(), BODY_EXCERPT_CHARS + 1);
        assert!(cut.ends_with('…'));
        assert_eq!(excerpt("  short  "), "short");
    }

    #[test]
    fn only_transient_failures_are_retried() {
        assert!(is_retryable(&ModelError::RateLimited { retry_after: None }));
        assert!(is_retryable(&ModelError::Connect("refused".into())));
        assert!(is_retryable(&ModelError::Http {
            status: 503,
            body: String::new()
        }));
        assert!(!is_retryable(&ModelError::Http {
            status: 400,
            body: String::new()
        }));
        assert!(!is_retryable(&ModelError::Timeout));
        assert!(!is_retryable(&ModelError::Protocol("bad".into())));
    }
}
