//! The limits and the metric of the endpoint's requests.
//!
//! `tools/call`, `resources/read` and `prompts/get` are admitted against
//! the very limits the gRPC server enforces ([`CallLimits`], one instance
//! per process): an organization's MCP requests and its gRPC calls take the
//! same slots of calls in flight and the same tokens of calls per second,
//! on this replica and, on PostgreSQL, across replicas. Listings are not
//! counted: they are answered from the discovery cache of each integration
//! and bounded by it, as `Discover` is for runs.
//!
//! A refused request is answered with a JSON-RPC error on that request,
//! not with HTTP 429 or 503: the method is known only once rmcp has read
//! the JSON-RPC body, after the HTTP response of a session's stream may
//! already have begun; an HTTP error on a session's POST fails the client's
//! transport in some SDKs rather than the one request; and a JSON-RPC error
//! reaches exactly the pending request in every client, its message read by
//! the model or the user. The error's `data` says why (`reason`, the gRPC
//! `ErrorInfo` reason of the same refusal) and when to retry
//! (`retryAfterMs`), like the gRPC refusal's `RetryInfo`.

use std::{future::Future, sync::OnceLock, time::Instant};

use opentelemetry::{KeyValue, metrics::Histogram};
use rmcp::{ErrorData, model::ErrorCode};
use serde_json::json;
use switchboard_proto::common::v1::ErrorReason;
use switchboard_server::{CallLimits, GlobalPermit, OrgPermit};
use tonic::Status;
use tonic_types::StatusExt as _;

use super::caller::Caller;

/// The JSON-RPC error code of a request refused at a limit: the first of
/// the range JSON-RPC leaves to servers, as for a session refused at its
/// limit; `data.reason` tells the limits apart.
pub(super) const LIMIT_ERROR_CODE: ErrorCode = ErrorCode(-32000);
/// The retry delay suggested when the process is at its limit of calls in
/// flight, which says nothing of when one ends.
const OVERLOADED_RETRY_MS: u64 = 1000;

/// An MCP method the endpoint serves: the only values its metric's
/// `mcp.method.name` label takes, whatever a client sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Method {
    /// `tools/list`.
    ListTools,
    /// `tools/call`.
    CallTool,
    /// `resources/list`.
    ListResources,
    /// `resources/templates/list`.
    ListResourceTemplates,
    /// `resources/read`.
    ReadResource,
    /// `prompts/list`.
    ListPrompts,
    /// `prompts/get`.
    GetPrompt,
    /// `logging/setLevel`.
    SetLevel,
    /// `resources/subscribe`.
    Subscribe,
    /// `resources/unsubscribe`.
    Unsubscribe,
    /// `completion/complete`.
    Complete,
}

impl Method {
    /// The method's MCP name.
    pub(super) fn name(self) -> &'static str {
        match self {
            Self::ListTools => "tools/list",
            Self::CallTool => "tools/call",
            Self::ListResources => "resources/list",
            Self::ListResourceTemplates => "resources/templates/list",
            Self::ReadResource => "resources/read",
            Self::ListPrompts => "prompts/list",
            Self::GetPrompt => "prompts/get",
            Self::SetLevel => "logging/setLevel",
            Self::Subscribe => "resources/subscribe",
            Self::Unsubscribe => "resources/unsubscribe",
            Self::Complete => "completion/complete",
        }
    }

    /// Whether requests of the method count against the limits: those
    /// a server answers, rather than a listing.
    fn is_limited(self) -> bool {
        !matches!(
            self,
            Self::ListTools | Self::ListResources | Self::ListResourceTemplates | Self::ListPrompts
        )
    }
}

/// How a request ended, the metric's `outcome` label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// Answered with a result (a tool's error result included: the tool
    /// ran).
    Ok,
    /// Answered with a JSON-RPC error other than a refusal.
    Error,
    /// Refused at a limit of calls in flight or per second.
    Refused,
}

impl Outcome {
    fn label(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Error => "error",
            Self::Refused => "refused",
        }
    }
}

fn duration() -> &'static Histogram<f64> {
    static DURATION: OnceLock<Histogram<f64>> = OnceLock::new();
    DURATION.get_or_init(|| {
        switchboard_telemetry::duration_histogram(
            "mcp.server.operation.duration",
            "Duration of MCP requests served by the MCP endpoint, by method and outcome",
        )
    })
}

/// Admits the endpoint's requests against the process's [`CallLimits`]
/// and measures each.
#[derive(Debug, Clone)]
pub(crate) struct Admission {
    limits: CallLimits,
}

impl Admission {
    /// Requests admitted against `limits`, the gRPC server's own.
    pub(crate) fn new(limits: CallLimits) -> Self {
        Self { limits }
    }

    /// Runs `request`, a `method` request of `caller`, once admitted (for
    /// a limited method), measuring its duration and outcome.
    pub(super) async fn serve<T>(
        &self,
        caller: &Caller,
        method: Method,
        request: impl Future<Output = Result<T, ErrorData>>,
    ) -> Result<T, ErrorData> {
        let started = Instant::now();
        let result = match self.admit(caller, method).await {
            Ok(permits) => {
                let result = request.await;
                drop(permits);
                result.map_err(|error| (error, Outcome::Error))
            }
            Err(refusal) => Err((refusal, Outcome::Refused)),
        };
        let outcome = match &result {
            Ok(_) => Outcome::Ok,
            Err((_, outcome)) => *outcome,
        };
        duration().record(
            started.elapsed().as_secs_f64(),
            &[
                KeyValue::new("mcp.method.name", method.name()),
                KeyValue::new("outcome", outcome.label()),
            ],
        );
        result.map_err(|(error, _)| error)
    }

    /// The permits a `method` request of `caller` holds while it runs: its
    /// organization's slot and token first, waiting in its organization's
    /// line as a gRPC call does, then one of the process's slots; or the
    /// refusal.
    async fn admit(&self, caller: &Caller, method: Method) -> Result<Permits, ErrorData> {
        if !method.is_limited() {
            return Ok(None);
        }
        let org = self
            .limits
            .org
            .admit(&caller.principal.org_id, None, None)
            .await
            .map_err(|status| {
                tracing::debug!(org = %caller.principal.org_id, reason = %status.message(), "MCP request refused at the organization's limit");
                limit_refusal(&status)
            })?;
        let global = self.limits.global.try_admit().ok_or_else(|| {
            tracing::debug!("MCP request refused at the process's concurrency limit");
            overloaded()
        })?;
        Ok(Some((org, global)))
    }
}

/// What an admitted request holds until it is answered: its
/// organization's slot and one of the process's; none for a method the
/// limits do not count.
type Permits = Option<(OrgPermit, GlobalPermit)>;

/// The JSON-RPC error of a request refused at its organization's limit,
/// from the gRPC status the same refusal gives.
fn limit_refusal(status: &Status) -> ErrorData {
    let details = status.get_error_details();
    let reason = details.error_info().map_or_else(
        || ErrorReason::Unavailable.as_str_name().to_owned(),
        |info| info.reason.clone(),
    );
    let retry_ms = details
        .retry_info()
        .and_then(|info| info.retry_delay)
        .map_or(OVERLOADED_RETRY_MS, |delay| {
            u64::try_from(delay.as_millis()).unwrap_or(u64::MAX).max(1)
        });
    ErrorData::new(
        LIMIT_ERROR_CODE,
        status.message().to_owned(),
        Some(json!({ "reason": reason, "retryAfterMs": retry_ms })),
    )
}

/// The JSON-RPC error of a request refused at the process's limit of calls
/// in flight.
fn overloaded() -> ErrorData {
    ErrorData::new(
        LIMIT_ERROR_CODE,
        "the server is at its concurrency limit; retry with backoff",
        Some(json!({
            "reason": ErrorReason::Unavailable.as_str_name(),
            "retryAfterMs": OVERLOADED_RETRY_MS,
        })),
    )
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tonic::Code;
    use tonic_types::ErrorDetails;

    use super::*;

    #[test]
    fn a_rate_refusal_keeps_its_reason_and_retry_delay() {
        let mut details = ErrorDetails::with_error_info(
            ErrorReason::OrganizationRateLimit.as_str_name(),
            "switchboard.dev",
            std::collections::HashMap::new(),
        );
        details.set_retry_info(Some(Duration::from_millis(750)));
        let status = Status::with_error_details(Code::ResourceExhausted, "too fast", details);
        let error = limit_refusal(&status);
        assert_eq!(error.code, LIMIT_ERROR_CODE);
        assert_eq!(error.message, "too fast");
        assert_eq!(
            error.data,
            Some(json!({ "reason": "ERROR_REASON_ORGANIZATION_RATE_LIMIT", "retryAfterMs": 750 }))
        );
    }

    #[test]
    fn a_refusal_without_details_is_unavailable_after_a_second() {
        let error = limit_refusal(&Status::unavailable("store down"));
        assert_eq!(
            error.data,
            Some(json!({ "reason": "ERROR_REASON_UNAVAILABLE", "retryAfterMs": 1000 }))
        );
    }

    #[test]
    fn only_requests_a_server_answers_are_limited() {
        let limited: Vec<_> = [
            Method::ListTools,
            Method::CallTool,
            Method::ListResources,
            Method::ListResourceTemplates,
            Method::ReadResource,
            Method::ListPrompts,
            Method::GetPrompt,
            Method::SetLevel,
            Method::Subscribe,
            Method::Unsubscribe,
            Method::Complete,
        ]
        .into_iter()
        .filter(|m| m.is_limited())
        .map(Method::name)
        .collect();
        assert_eq!(
            limited,
            [
                "tools/call",
                "resources/read",
                "prompts/get",
                "logging/setLevel",
                "resources/subscribe",
                "resources/unsubscribe",
                "completion/complete"
            ]
        );
    }
}
