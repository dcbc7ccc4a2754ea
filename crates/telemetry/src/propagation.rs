//! W3C trace-context propagation over gRPC metadata, HTTP headers and MCP
//! `_meta`, and the error status of spans.

use opentelemetry::{
    Context, global,
    propagation::{Extractor, Injector},
    trace::Status,
};
use tonic::metadata::{MetadataKey, MetadataMap, MetadataValue};
use tracing_opentelemetry::OpenTelemetrySpanExt;

use crate::trace_ids::{context_of, set_parent};

struct MetadataInjector<'a>(&'a mut MetadataMap);

impl Injector for MetadataInjector<'_> {
    fn set(&mut self, key: &str, value: String) {
        if let (Ok(key), Ok(value)) = (
            MetadataKey::from_bytes(key.as_bytes()),
            MetadataValue::try_from(value.as_str()),
        ) {
            self.0.insert(key, value);
        }
    }
}

struct HeaderInjector<'a>(&'a mut http::HeaderMap);

impl Injector for HeaderInjector<'_> {
    fn set(&mut self, key: &str, value: String) {
        if let (Ok(key), Ok(value)) = (
            http::HeaderName::from_bytes(key.as_bytes()),
            http::HeaderValue::try_from(value),
        ) {
            self.0.insert(key, value);
        }
    }
}

struct HeaderExtractor<'a>(&'a http::HeaderMap);

impl Extractor for HeaderExtractor<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|v| v.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(http::HeaderName::as_str).collect()
    }
}

/// Writes `context` into outgoing gRPC metadata (`traceparent`, `tracestate`).
pub fn inject_context(context: &Context, metadata: &mut MetadataMap) {
    global::get_text_map_propagator(|propagator| {
        propagator.inject_context(context, &mut MetadataInjector(metadata));
    });
}

/// Writes the current tracing span's context into outgoing gRPC metadata.
pub fn inject_current_context(metadata: &mut MetadataMap) {
    inject_context(&context_of(&tracing::Span::current()), metadata);
}

/// Writes the current tracing span's context into outgoing HTTP headers.
pub fn inject_current_headers(headers: &mut http::HeaderMap) {
    inject_current(&mut HeaderInjector(headers));
}

/// Writes the current tracing span's context (`traceparent` and, when there
/// is one, `tracestate`) through `injector`: an MCP request's `_meta`, say.
pub fn inject_current(injector: &mut dyn Injector) {
    inject_span(&tracing::Span::current(), injector);
}

/// Writes `span`'s context through `injector`, without entering the span.
pub fn inject_span(span: &tracing::Span, injector: &mut dyn Injector) {
    let context = context_of(span);
    global::get_text_map_propagator(|propagator| {
        propagator.inject_context(&context, injector);
    });
}

/// The context W3C fields (`traceparent`, `tracestate`) read through
/// `extractor` name.
pub fn context_from(extractor: &dyn Extractor) -> Context {
    global::get_text_map_propagator(|propagator| propagator.extract(extractor))
}

/// Reads the caller's trace context from incoming request headers.
pub fn extract_context(headers: &http::HeaderMap) -> Context {
    global::get_text_map_propagator(|propagator| propagator.extract(&HeaderExtractor(headers)))
}

/// Makes the caller's trace (from incoming request headers) the parent of `span`.
pub fn continue_trace(span: &tracing::Span, headers: &http::HeaderMap) {
    set_parent(span, extract_context(headers));
}

/// Marks `span` failed, with `error.type` (a low-cardinality class of the
/// failure, per the semantic conventions) and a description. The description
/// is the failure's own text only with content capture on: a server's or a
/// model's error text often repeats the arguments it was sent, so without
/// capture the status says the error type and nothing more.
pub fn record_error(span: &tracing::Span, error_type: &str, description: &str) {
    span.set_attribute("error.type", error_type.to_owned());
    let description = if crate::capture_content() {
        description
    } else {
        error_type
    };
    span.set_status(Status::error(description.to_owned()));
}
