//! Telemetry shared by Switchboard services: a tracing subscriber writing JSON
//! or human-readable logs (JSON lines carry the trace and span ids), an
//! OpenTelemetry tracer that always runs so that W3C trace context is carried
//! across every hop whether or not spans are exported, OTLP export of spans,
//! metrics and audit events (as log records) when a collector is configured,
//! and a Prometheus scrape endpoint for the metrics.

// No function past 60 lines (clippy.toml) outside unit tests; `make clippy`
// enforces it with the other lints.
#![cfg_attr(not(test), deny(clippy::too_many_lines))]

mod audit_logs;
mod content;
mod logs;
mod metrics;
mod propagation;
mod trace_ids;
mod traces;

use std::{io, net::SocketAddr, str::FromStr};

use anyhow::Context as _;
use opentelemetry::{KeyValue, global, trace::TracerProvider as _};
use opentelemetry_sdk::{
    Resource, logs::SdkLoggerProvider, metrics::SdkMeterProvider,
    propagation::TraceContextPropagator, trace::SdkTracerProvider,
};
use tracing_subscriber::{
    EnvFilter, Layer, filter::FilterExt as _, fmt::MakeWriter, layer::SubscriberExt,
    util::SubscriberInitExt,
};

pub use audit_logs::AUDIT_TARGET;
pub use content::{capture_content, set_capture_content};
pub use logs::{escape_controls, escaped_fields};
pub use metrics::{
    DURATION_BUCKETS, MetricsEndpoint, MetricsLimits, OTHER, TOKEN_BUCKETS, max_series,
};
pub use opentelemetry::propagation::{Extractor, Injector};
pub use propagation::{
    context_from, continue_trace, extract_context, inject_context, inject_current,
    inject_current_context, inject_current_headers, inject_span, record_error,
};
pub use trace_ids::{set_parent, span_context};
pub use traces::detached_span;

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LogFormat {
    /// One JSON object per line, for log collectors, with the trace and span
    /// ids of the span the line was written in.
    #[default]
    Json,
    /// Human-readable, for terminals.
    Pretty,
}

impl FromStr for LogFormat {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "json" => Ok(Self::Json),
            "pretty" | "text" => Ok(Self::Pretty),
            other => Err(format!(
                "unknown log format `{other}` (expected json or pretty)"
            )),
        }
    }
}

/// What telemetry a service emits.
#[derive(Debug, Clone)]
pub struct TelemetryConfig {
    /// `service.name` of the OpenTelemetry resource (`OTEL_SERVICE_NAME`
    /// wins when set).
    pub service_name: String,
    /// Log line format.
    pub log_format: LogFormat,
    /// Filter directives (`RUST_LOG` syntax), for example `info,sqlx=warn`.
    pub log_filter: String,
    /// OTLP/gRPC collector endpoint; no spans, metrics or audit log records
    /// are exported when unset (trace context is still propagated).
    pub otlp_endpoint: Option<String>,
    /// Address of the Prometheus scrape endpoint (`GET /metrics`); none when
    /// unset.
    pub metrics_addr: Option<SocketAddr>,
    /// Whether tool arguments, tool results and prompts are recorded on
    /// spans. Credentials never are.
    pub capture_content: bool,
    /// Series per instrument, and bytes per scrape.
    pub metrics_limits: MetricsLimits,
}

impl TelemetryConfig {
    /// JSON logs at `info`, nothing exported, no metrics endpoint, no
    /// content captured.
    pub fn new(service_name: impl Into<String>) -> Self {
        Self {
            service_name: service_name.into(),
            log_format: LogFormat::Json,
            log_filter: "info".into(),
            otlp_endpoint: None,
            metrics_addr: None,
            capture_content: false,
            metrics_limits: MetricsLimits::default(),
        }
    }
}

/// Flushes and stops export, and closes the metrics endpoint, when dropped.
#[derive(Debug)]
#[must_use = "dropping the guard stops telemetry export"]
pub struct TelemetryGuard {
    tracer: Option<SdkTracerProvider>,
    meter: Option<SdkMeterProvider>,
    logger: Option<SdkLoggerProvider>,
    metrics_endpoint: Option<MetricsEndpoint>,
}

impl TelemetryGuard {
    /// The address the Prometheus endpoint listens on, when it is on.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics_endpoint.as_ref().map(MetricsEndpoint::addr)
    }

    /// Exports every finished span, the current metrics and the queued
    /// audit log records now.
    pub fn flush(&self) {
        if let Some(tracer) = &self.tracer
            && let Err(error) = tracer.force_flush()
        {
            tracing::warn!(error = %error, "failed to flush spans");
        }
        if let Some(meter) = &self.meter
            && let Err(error) = meter.force_flush()
        {
            tracing::warn!(error = %error, "failed to flush metrics");
        }
        if let Some(logger) = &self.logger
            && let Err(error) = logger.force_flush()
        {
            tracing::warn!(error = %error, "failed to flush audit log records");
        }
    }
}

impl Drop for TelemetryGuard {
    fn drop(&mut self) {
        if let Some(provider) = self.tracer.take()
            && let Err(error) = provider.shutdown()
        {
            eprintln!("failed to flush spans: {error}");
        }
        if let Some(provider) = self.meter.take()
            && let Err(error) = provider.shutdown()
        {
            eprintln!("failed to flush metrics: {error}");
        }
        if let Some(provider) = self.logger.take()
            && let Err(error) = provider.shutdown()
        {
            eprintln!("failed to flush audit log records: {error}");
        }
    }
}

/// Installs the global subscriber writing logs to stdout.
pub fn init(config: &TelemetryConfig) -> anyhow::Result<TelemetryGuard> {
    init_with_writer(config, io::stdout)
}

/// Installs the global subscriber writing logs to `writer` (tests capture logs
/// this way). With a metrics address, it must run inside a tokio runtime.
pub fn init_with_writer<W>(config: &TelemetryConfig, writer: W) -> anyhow::Result<TelemetryGuard>
where
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    // Propagation and the tracer run even without export: a service in the
    // middle of someone else's trace passes the context on either way.
    global::set_text_map_propagator(TraceContextPropagator::new());
    set_capture_content(config.capture_content);

    let resource = resource(&config.service_name);
    let tracer = traces::tracer_provider(resource.clone(), config.otlp_endpoint.as_deref())?;
    let logger = audit_logs::logger_provider(resource.clone(), config.otlp_endpoint.as_deref())?;
    let (meter, registry) = metrics::meter_provider(
        resource,
        config.otlp_endpoint.as_deref(),
        config.metrics_addr.is_some(),
        config.metrics_limits,
    )?;
    let metrics_endpoint = match (config.metrics_addr, registry) {
        (Some(addr), Some(registry)) => Some(MetricsEndpoint::spawn(
            addr,
            registry,
            config.metrics_limits.max_scrape_bytes,
        )?),
        _ => None,
    };
    subscriber(config, writer, spans(config, &tracer), logger.as_ref())?
        .try_init()
        .context("failed to install the tracing subscriber")?;
    global::set_tracer_provider(tracer.clone());
    global::set_meter_provider(meter.clone());
    Ok(TelemetryGuard {
        tracer: Some(tracer),
        meter: Some(meter),
        logger,
        metrics_endpoint,
    })
}

/// What becomes of spans: OpenTelemetry spans of `tracer` when something
/// may read them (an exporter is configured, or `OTEL_TRACES_SAMPLER` chooses
/// what is sampled), else only their W3C ids ([`trace_ids`]): the context
/// forwarded and written on log lines is the same, and nothing is built
/// that no one reads.
pub(crate) enum Spans<'a> {
    /// OpenTelemetry spans of this tracer.
    Traced(&'a SdkTracerProvider),
    /// Trace and span ids only.
    IdsOnly,
}

fn spans<'a>(config: &TelemetryConfig, tracer: &'a SdkTracerProvider) -> Spans<'a> {
    if config.otlp_endpoint.is_some() || std::env::var_os("OTEL_TRACES_SAMPLER").is_some() {
        Spans::Traced(tracer)
    } else {
        Spans::IdsOnly
    }
}

/// Log lines (as the log filter chooses), spans (every one at `info`
/// and above, whatever the log filter says, so quieting the logs with
/// `RUST_LOG=warn` neither stops traces nor loses the trace ids of the lines
/// still written) and, with a `logger`, audit events as log records (also
/// whatever the log filter says). The log layer sees only the spans its
/// filter enables: the fields of the others are never formatted.
fn subscriber<W>(
    config: &TelemetryConfig,
    writer: W,
    spans: Spans<'_>,
    logger: Option<&SdkLoggerProvider>,
) -> anyhow::Result<impl tracing::Subscriber + Send + Sync + 'static>
where
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    let filter = EnvFilter::try_new(&config.log_filter)
        .with_context(|| format!("invalid log filter `{}`", config.log_filter))?;
    // Source locations, thread names and busy/idle times would be
    // attributes of every span, and the last costs two clock reads each time
    // a task polls inside one; Switchboard's spans are named for what they do.
    // Nothing reads the OpenTelemetry context as "current" (propagation and
    // log lines take it from the tracing span), so entering a span does not
    // make its context current: that would cost every poll inside a span.
    // One boxed layer either way: an `Option` layer left `None` would ask
    // for every callsite the other layers turn down, and the registry would
    // make each library span nothing reads.
    let spans_layer = match spans {
        Spans::Traced(tracer) => tracing_opentelemetry::layer()
            .with_tracer(tracer.tracer(config.service_name.clone()))
            .with_location(false)
            .with_threads(false)
            .with_tracked_inactivity(false)
            .with_context_activation(false)
            .with_filter(traces::exported())
            .boxed(),
        Spans::IdsOnly => trace_ids::IdsLayer::default()
            .with_filter(traces::exported())
            .boxed(),
    };
    Ok(tracing_subscriber::registry()
        .with(logs::layer(config.log_format, writer).with_filter(filter.or(traces::detached())))
        .with(spans_layer)
        .with(audit_logs::layer(logger)))
}

/// The service's resource: the SDK's and `OTEL_RESOURCE_ATTRIBUTES`, the
/// service name (unless `OTEL_SERVICE_NAME` names it) and version.
fn resource(service_name: &str) -> Resource {
    let mut builder = Resource::builder()
        .with_attribute(KeyValue::new("service.version", env!("CARGO_PKG_VERSION")));
    if std::env::var_os("OTEL_SERVICE_NAME").is_none() {
        builder = builder.with_service_name(service_name.to_owned());
    }
    builder.build()
}

/// The meter Switchboard's instruments are made from. Instruments bind to
/// the provider installed when they are made: make them after [`init`].
pub fn meter() -> opentelemetry::metrics::Meter {
    global::meter("switchboard")
}

/// A duration histogram in seconds with [`DURATION_BUCKETS`].
pub fn duration_histogram(
    name: &'static str,
    description: &'static str,
) -> opentelemetry::metrics::Histogram<f64> {
    meter()
        .f64_histogram(name)
        .with_unit("s")
        .with_description(description)
        .with_boundaries(DURATION_BUCKETS.to_vec())
        .build()
}

#[cfg(test)]
mod tests;
