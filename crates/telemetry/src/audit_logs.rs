//! Audit events as OpenTelemetry log records over OTLP. Only events of the
//! `audit` target are exported: they are the contract (fields chosen to hold
//! no content), while other log lines may carry content and stay on stdout.
//!
//! Records are batched by the SDK's batch processor, whose queue is bounded
//! (`OTEL_BLRP_MAX_QUEUE_SIZE`, 2048 by default): a call only hands its
//! record to the queue, and when a slow or dead collector lets the queue
//! fill, records are dropped and counted (the SDK warns at the first drop
//! and logs the total at shutdown), never waited for.

use anyhow::Context as _;
use opentelemetry_appender_tracing::layer::OpenTelemetryTracingBridge;
use opentelemetry_otlp::{LogExporter, WithExportConfig as _};
use opentelemetry_sdk::{
    Resource,
    logs::{SdkLogger, SdkLoggerProvider},
};
use tracing::{Dispatch, Event, Subscriber};
use tracing_subscriber::{
    Layer,
    filter::{FilterFn, LevelFilter, filter_fn},
    layer::{Context, Identity},
    registry::LookupSpan,
};

use crate::logs::Dispatcher;

/// The target of audit events, the only ones exported as log records.
pub const AUDIT_TARGET: &str = "audit";

/// A logger provider batching records to `endpoint` with the service's
/// `resource` and the limits of the standard `OTEL_BLRP_*` variables; none
/// without an endpoint.
pub(crate) fn logger_provider(
    resource: Resource,
    endpoint: Option<&str>,
) -> anyhow::Result<Option<SdkLoggerProvider>> {
    let Some(endpoint) = endpoint else {
        return Ok(None);
    };
    let exporter = LogExporter::builder()
        .with_tonic()
        .with_endpoint(endpoint)
        .build()
        .context("failed to build the OTLP log exporter")?;
    Ok(Some(
        SdkLoggerProvider::builder()
            .with_resource(resource)
            .with_batch_exporter(exporter)
            .build(),
    ))
}

/// The layer turning audit events into log records of `provider`, each
/// carrying the trace and span ids of the traced span it happens in; one
/// doing nothing without a provider. (Boxed rather than an `Option`: an
/// `Option` layer does not tell the layer inside the dispatcher it is
/// registered with.) The layer doing nothing is filtered to nothing: a layer
/// without a filter asks for every span and event at every level, and the
/// registry would make each trace span of h2, hyper and tokio for it.
pub(crate) fn layer<S>(provider: Option<&SdkLoggerProvider>) -> Box<dyn Layer<S> + Send + Sync>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    let Some(provider) = provider else {
        return Identity::new().with_filter(LevelFilter::OFF).boxed();
    };
    AuditRecords {
        bridge: OpenTelemetryTracingBridge::new(provider),
        dispatcher: Dispatcher::default(),
    }
    .with_filter(audit_events())
    .boxed()
}

/// Audit events only, whatever the log filter says: quieting the log lines
/// does not quiet the audit trail, as it does not stop traces.
fn audit_events() -> FilterFn<impl Fn(&tracing::Metadata<'_>) -> bool> {
    filter_fn(|metadata| metadata.is_event() && metadata.target() == AUDIT_TARGET)
}

/// The tracing bridge, given the trace context of the event's traced span.
/// The OpenTelemetry layer does not make a span's context current on entry
/// (that would cost every poll), and the bridge reads the ids of the current
/// context: the context is made current for the event alone.
struct AuditRecords {
    bridge: OpenTelemetryTracingBridge<SdkLoggerProvider, SdkLogger>,
    dispatcher: Dispatcher,
}

impl<S> Layer<S> for AuditRecords
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_register_dispatch(&self, dispatch: &Dispatch) {
        <Dispatcher as Layer<S>>::on_register_dispatch(&self.dispatcher, dispatch);
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let _current = self
            .dispatcher
            .traced_context_around(event)
            .map(opentelemetry::Context::attach);
        self.bridge.on_event(event, ctx);
    }
}

#[cfg(test)]
mod tests;
