//! W3C trace-context propagation over gRPC metadata.

use opentelemetry::{
    Context, global,
    propagation::{Extractor, Injector},
};
use tonic::metadata::{MetadataKey, MetadataMap, MetadataValue};
use tracing_opentelemetry::OpenTelemetrySpanExt;

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
    inject_context(&tracing::Span::current().context(), metadata);
}

/// Reads the caller's trace context from incoming request headers.
pub fn extract_context(headers: &http::HeaderMap) -> Context {
    global::get_text_map_propagator(|propagator| propagator.extract(&HeaderExtractor(headers)))
}

/// A tonic client interceptor that propagates the current trace context.
pub fn trace_context_interceptor(
    mut request: tonic::Request<()>,
) -> Result<tonic::Request<()>, tonic::Status> {
    inject_current_context(request.metadata_mut());
    Ok(request)
}

/// Makes the caller's trace (from incoming request headers) the parent of `span`.
pub fn continue_trace(span: &tracing::Span, headers: &http::HeaderMap) {
    // Fails only when no OpenTelemetry layer is installed; then there is
    // nothing to continue.
    let _ = span.set_parent(extract_context(headers));
}
