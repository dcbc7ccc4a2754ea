//! Spans and metrics of mcp-service's work with MCP servers, per the
//! OpenTelemetry MCP and GenAI semantic conventions: one client span per MCP
//! operation (`tools/call {tool}`, `resources/read`, `prompts/get {prompt}`,
//! discovery per integration), the W3C context of that span in each
//! request's `_meta` (the transport copies it into the `traceparent` header
//! of the HTTP request), and the operation's duration and outcome. A tool
//! is a label only when its server listed it ([`metric_labels`]).

pub mod metric_labels;

use std::{future::Future, sync::OnceLock, time::Instant};

use opentelemetry::{
    KeyValue, StringValue,
    metrics::{Counter, Histogram, UpDownCounter},
};
use rmcp::model::RequestParamsMeta;
use switchboard_telemetry::Injector;
use tracing::{Instrument as _, Span};

use crate::domain::{
    integration::{Integration, IntegrationId},
    ports::CallError,
};

struct Instruments {
    operation_duration: Histogram<f64>,
    discovery_failures: Counter<u64>,
    sessions_open: UpDownCounter<i64>,
}

fn instruments() -> &'static Instruments {
    static INSTRUMENTS: OnceLock<Instruments> = OnceLock::new();
    INSTRUMENTS.get_or_init(|| {
        let meter = switchboard_telemetry::meter();
        Instruments {
            operation_duration: switchboard_telemetry::duration_histogram(
                "mcp.client.operation.duration",
                "Duration of MCP operations on upstream servers, by method, integration, tool and error",
            ),
            discovery_failures: meter
                .u64_counter("switchboard.mcp.discovery.failures")
                .with_unit("{failure}")
                .with_description("Discoveries of an integration's capabilities that failed")
                .build(),
            sessions_open: meter
                .i64_up_down_counter("switchboard.mcp.sessions.open")
                .with_unit("{session}")
                .with_description("Sessions open to upstream MCP servers")
                .build(),
        }
    })
}

/// What an MCP operation is about: its method and, for the span's name and
/// attributes, the tool, resource or prompt.
#[derive(Debug, Clone, Copy)]
pub enum Operation<'a> {
    /// `tools/call` of a tool.
    CallTool(&'a str),
    /// `resources/read` of a URI.
    ReadResource(&'a str),
    /// `prompts/get` of a prompt.
    GetPrompt(&'a str),
    /// Listing everything a server offers.
    Discover,
}

impl Operation<'_> {
    fn method(self) -> &'static str {
        match self {
            Self::CallTool(_) => "tools/call",
            Self::ReadResource(_) => "resources/read",
            Self::GetPrompt(_) => "prompts/get",
            Self::Discover => "discover",
        }
    }

    /// The operation's span, every attribute given as it is made: a field
    /// recorded later costs each layer a second visit. Its name carries a
    /// tool or prompt only when the server listed it (else `_other`), and
    /// its attributes at most the first bytes of the name a caller sent.
    fn span(self, integration: &Integration) -> Span {
        let method = self.method();
        let (name, tool, prompt, resource) = match self {
            Self::CallTool(tool) => (
                format!("{method} {}", metric_labels::tool(integration.id, tool)),
                Some(bounded(tool)),
                None,
                None,
            ),
            Self::GetPrompt(prompt) => (
                format!("{method} {}", metric_labels::prompt(integration.id, prompt)),
                None,
                Some(bounded(prompt)),
                None,
            ),
            // A resource URI may name personal data: content, like arguments.
            Self::ReadResource(uri) => (
                method.to_owned(),
                None,
                None,
                switchboard_telemetry::capture_content().then_some(uri),
            ),
            Self::Discover => (method.to_owned(), None, None, None),
        };
        tracing::info_span!(
            "mcp.client",
            otel.name = %name,
            otel.kind = "client",
            mcp.method.name = method,
            gen_ai.operation.name = tool.map(|_| "execute_tool"),
            switchboard.integration.id = %integration.id,
            switchboard.integration.slug = integration.slug.as_str(),
            gen_ai.tool.name = tool,
            gen_ai.prompt.name = prompt,
            mcp.resource.uri = resource,
            gen_ai.tool.call.arguments = tracing::field::Empty,
        )
    }
}

/// At most the first [`metric_labels::MAX_LABEL_BYTES`] of `name` (on a
/// character boundary): what a span may carry of a name a caller chose.
fn bounded(name: &str) -> &str {
    let mut end = name.len().min(metric_labels::MAX_LABEL_BYTES);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    &name[..end]
}

/// A low-cardinality class of a failure, for `error.type`.
pub fn error_type(error: &CallError) -> &'static str {
    match error {
        CallError::AuthorizationRequired(_) => "authorization_required",
        CallError::Connect(_) => "connect",
        CallError::Upstream { .. } => "upstream_error",
        CallError::Transport(_) => "transport",
        CallError::Timeout(_) => "timeout",
        CallError::TooLarge { .. } => "too_large",
        CallError::ListingTooLong(_) => "listing_too_long",
        CallError::Exhausted { .. } => "exhausted",
        CallError::ExchangeRefused(_) => "exchange_refused",
    }
}

/// Runs `work` as `operation` on `integration`: in the operation's span, its
/// duration and outcome recorded.
pub async fn observe<T>(
    integration: &Integration,
    operation: Operation<'_>,
    arguments: Option<&serde_json::Map<String, serde_json::Value>>,
    work: impl Future<Output = Result<T, CallError>>,
) -> Result<T, CallError> {
    let span = operation.span(integration);
    if let Some(arguments) = arguments
        && switchboard_telemetry::capture_content()
    {
        span.record(
            "gen_ai.tool.call.arguments",
            serde_json::Value::Object(arguments.clone()).to_string(),
        );
    }
    let started = Instant::now();
    let outcome = work.instrument(span.clone()).await;
    let mut attributes = vec![
        KeyValue::new("mcp.method.name", operation.method()),
        KeyValue::new("switchboard.integration.id", integration.id.to_string()),
    ];
    if let Operation::CallTool(tool) = operation {
        let label = metric_labels::tool(integration.id, tool);
        attributes.push(KeyValue::new("gen_ai.tool.name", StringValue::from(label)));
    }
    if let Err(error) = &outcome {
        let error_type = error_type(error);
        switchboard_telemetry::record_error(&span, error_type, &error.to_string());
        attributes.push(KeyValue::new("error.type", error_type));
        if matches!(operation, Operation::Discover) {
            instruments().discovery_failures.add(
                1,
                &[KeyValue::new(
                    "switchboard.integration.id",
                    integration.id.to_string(),
                )],
            );
        }
    }
    instruments()
        .operation_duration
        .record(started.elapsed().as_secs_f64(), &attributes);
    outcome
}

/// Writes the current span's trace context into a request's `_meta`
/// (`traceparent`, `tracestate`), where the MCP protocol carries it.
pub fn with_trace<P: RequestParamsMeta>(mut params: P) -> P {
    switchboard_telemetry::inject_current(&mut MetaFields(&mut params));
    params
}

/// A request's `_meta`, as the propagator writes its W3C fields.
struct MetaFields<'a, P>(&'a mut P);

impl<P: RequestParamsMeta> Injector for MetaFields<'_, P> {
    fn set(&mut self, key: &str, value: String) {
        match key {
            "traceparent" => self.0.set_traceparent(&value),
            "tracestate" if !value.is_empty() => self.0.set_tracestate(&value),
            _ => {}
        }
    }
}

/// Counts an upstream session as open until dropped.
#[derive(Debug)]
pub struct SessionOpen(IntegrationId);

impl SessionOpen {
    /// A session of `integration` was opened.
    pub fn new(integration: IntegrationId) -> Self {
        instruments().sessions_open.add(
            1,
            &[KeyValue::new(
                "switchboard.integration.id",
                integration.to_string(),
            )],
        );
        Self(integration)
    }
}

impl Drop for SessionOpen {
    fn drop(&mut self) {
        instruments().sessions_open.add(
            -1,
            &[KeyValue::new(
                "switchboard.integration.id",
                self.0.to_string(),
            )],
        );
    }
}
