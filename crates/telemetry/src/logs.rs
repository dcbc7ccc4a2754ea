//! Log lines: JSON (with the trace and span ids of the span they were
//! written in, so a log collector can join them to the trace) or
//! human-readable.

use std::fmt;

use opentelemetry::trace::TraceId;
use tracing::{Event, Subscriber};
use tracing_opentelemetry::OtelData;
use tracing_subscriber::{
    Layer,
    fmt::{FmtContext, FormatEvent, FormatFields, MakeWriter, format::Writer},
    registry::LookupSpan,
};

use crate::LogFormat;

/// The layer writing log lines in `format` to `writer`.
pub(crate) fn layer<S, W>(format: LogFormat, writer: W) -> Box<dyn Layer<S> + Send + Sync>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    match format {
        LogFormat::Json => tracing_subscriber::fmt::layer()
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .with_span_list(false)
            .map_event_format(WithTraceIds)
            .with_writer(writer)
            .boxed(),
        LogFormat::Pretty => tracing_subscriber::fmt::layer().with_writer(writer).boxed(),
    }
}

/// A JSON event format with `trace_id` and `span_id` added to each line
/// written inside a span.
struct WithTraceIds<F>(F);

impl<S, N, F> FormatEvent<S, N> for WithTraceIds<F>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
    F: FormatEvent<S, N>,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let Some((trace_id, span_id)) = current_ids(ctx) else {
            return self.0.format_event(ctx, writer, event);
        };
        let mut line = String::new();
        self.0.format_event(ctx, Writer::new(&mut line), event)?;
        // The inner format writes one JSON object and a newline: the ids go
        // in before its closing brace.
        match line.trim_end().strip_suffix('}') {
            Some(open) if open.len() > 1 => writeln!(
                writer,
                "{open},\"trace_id\":\"{trace_id}\",\"span_id\":\"{span_id}\"}}"
            ),
            _ => writer.write_str(&line),
        }
    }
}

fn current_ids<S, N>(ctx: &FmtContext<'_, S, N>) -> Option<(String, String)>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    let span = ctx.lookup_current()?;
    let extensions = span.extensions();
    let data = extensions.get::<OtelData>()?;
    let trace_id = data.trace_id()?;
    (trace_id != TraceId::INVALID).then(|| {
        (
            trace_id.to_string(),
            data.span_id().map(|s| s.to_string()).unwrap_or_default(),
        )
    })
}
