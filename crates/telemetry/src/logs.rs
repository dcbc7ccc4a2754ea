//! Log lines: JSON (with the trace and span ids of the span they were
//! written in, so a log collector can join them to the trace) or
//! human-readable.

use std::{
    fmt,
    sync::{Arc, OnceLock},
};

use opentelemetry::trace::TraceContextExt as _;
use tracing::{Dispatch, Event, Subscriber, dispatcher::WeakDispatch};
use tracing_opentelemetry::OtelData;
use tracing_subscriber::{
    Layer,
    field::MakeExt as _,
    fmt::{FmtContext, FormatEvent, FormatFields, MakeWriter, format::Writer},
    registry::{LookupSpan, Registry, SpanRef},
};

use crate::LogFormat;

/// The layer writing log lines in `format` to `writer`.
pub(crate) fn layer<S, W>(format: LogFormat, writer: W) -> Box<dyn Layer<S> + Send + Sync>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    let dispatcher = Dispatcher::default();
    match format {
        LogFormat::Json => tracing_subscriber::fmt::layer()
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .with_span_list(false)
            .map_event_format(|format| WithTraceIds {
                format,
                dispatcher: dispatcher.clone(),
            })
            .with_writer(writer)
            .and_then(dispatcher)
            .boxed(),
        LogFormat::Pretty => tracing_subscriber::fmt::layer()
            .fmt_fields(escaped_fields())
            .with_writer(writer)
            .boxed(),
    }
}

/// How human-readable lines write an event's and a span's fields: each
/// value with its control characters escaped, so that a value a client, a
/// model or an MCP server chose (a URI, a name, an error) cannot start a
/// line of its own. JSON lines escape them already.
pub fn escaped_fields() -> impl for<'w> FormatFields<'w> + Send + Sync + 'static {
    tracing_subscriber::fmt::format::debug_fn(|writer, field, value| {
        let text = escape_controls(&format!("{value:?}"));
        if field.name() == "message" {
            write!(writer, "{text}")
        } else {
            write!(writer, "{field}={text}")
        }
    })
    .delimited(" ")
}

/// `text` with its control characters (line breaks, escape, …) written as
/// escapes: a value from outside cannot start a log line of its own.
pub fn escape_controls(text: &str) -> String {
    text.chars()
        .flat_map(|c| {
            let escaped: Vec<char> = if c.is_control() {
                c.escape_default().collect()
            } else {
                vec![c]
            };
            escaped
        })
        .collect()
}

/// The dispatcher a layer is part of, kept once the subscriber is made one:
/// the spans the layer's own filter hides are read through it.
#[derive(Clone, Default)]
pub(crate) struct Dispatcher(Arc<OnceLock<WeakDispatch>>);

impl Dispatcher {
    /// The trace context around `event` (see [`traced_context_around`]),
    /// once the layer is registered.
    pub(crate) fn traced_context_around(
        &self,
        event: &Event<'_>,
    ) -> Option<opentelemetry::Context> {
        let dispatch = self.0.get()?.upgrade()?;
        traced_context_around(event, &dispatch)
    }
}

impl<S: Subscriber> Layer<S> for Dispatcher {
    fn on_register_dispatch(&self, dispatch: &Dispatch) {
        // A layer is registered with one dispatcher only.
        let _ = self.0.set(dispatch.downgrade());
    }
}

/// A JSON event format with `trace_id` and `span_id` added to each line
/// written inside a traced span.
struct WithTraceIds<F> {
    format: F,
    dispatcher: Dispatcher,
}

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
        let Some(context) = self.dispatcher.traced_context_around(event) else {
            return self.format.format_event(ctx, writer, event);
        };
        let span = context.span();
        let span_context = span.span_context();
        let (trace_id, span_id) = (span_context.trace_id(), span_context.span_id());
        let mut line = String::new();
        self.format
            .format_event(ctx, Writer::new(&mut line), event)?;
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

/// The context of the innermost span being traced around `event`: the
/// event's span or the nearest of its parents the OpenTelemetry layer sees,
/// whether or not the calling layer's filter shows it. Spans are walked in
/// the registry itself, as a filtered layer's own view holds only the spans
/// its filter enables.
fn traced_context_around(event: &Event<'_>, dispatch: &Dispatch) -> Option<opentelemetry::Context> {
    let registry = dispatch.downcast_ref::<Registry>()?;
    let current = dispatch.current_span();
    let id = event.parent().or_else(|| current.id())?;
    registry
        .span(id)?
        .scope()
        .find_map(|span| traced_context(&span, dispatch))
}

/// The trace context of `span` when a layer traces it (the OpenTelemetry
/// layer, or [`crate::trace_ids::IdsLayer`]) and its context is valid.
fn traced_context(
    span: &SpanRef<'_, Registry>,
    dispatch: &Dispatch,
) -> Option<opentelemetry::Context> {
    if let Some(context) = crate::trace_ids::kept(span) {
        return context
            .is_valid()
            .then(|| opentelemetry::Context::new().with_remote_span_context(context));
    }
    let mut extensions = span.extensions_mut();
    extensions.get_mut::<OtelData>()?;
    let context = tracing_opentelemetry::get_otel_context(&mut extensions, dispatch)?;
    let valid = context.span().span_context().is_valid();
    valid.then_some(context)
}

#[cfg(test)]
pub(crate) mod tests {
    use std::{
        io,
        sync::{Arc, Mutex},
    };

    use opentelemetry::trace::{TraceContextExt as _, TracerProvider as _};
    use opentelemetry_sdk::trace::SdkTracerProvider;
    use tracing_opentelemetry::OpenTelemetrySpanExt as _;
    use tracing_subscriber::layer::SubscriberExt as _;

    use super::*;

    /// A log writer whose lines tests read back.
    #[derive(Clone, Default)]
    pub(crate) struct Buffer(pub(crate) Arc<Mutex<Vec<u8>>>);

    impl io::Write for Buffer {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            self.0
                .lock()
                .expect("not poisoned")
                .extend_from_slice(bytes);
            Ok(bytes.len())
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn json_lines_inside_a_span_carry_its_trace_and_span_ids() {
        let buffer = Buffer::default();
        let writer = buffer.clone();
        let provider = SdkTracerProvider::builder().build();
        crate::tests::kept_for_the_process(&provider);
        let subscriber = tracing_subscriber::registry()
            .with(layer(LogFormat::Json, move || writer.clone()))
            .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("test")));
        let (trace_id, span_id) = tracing::subscriber::with_default(subscriber, || {
            tracing::info!("outside");
            let span = tracing::info_span!("work");
            let _entered = span.enter();
            tracing::info!(answer = 42, "inside");
            let context = span.context();
            let span_context = context.span().span_context().clone();
            (span_context.trace_id(), span_context.span_id())
        });
        let text =
            String::from_utf8(buffer.0.lock().expect("not poisoned").clone()).expect("utf-8");
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|line| serde_json::from_str(line).expect("each line is JSON"))
            .collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert!(lines[0].get("trace_id").is_none(), "{text}");
        assert_eq!(lines[1]["trace_id"], trace_id.to_string(), "{text}");
        assert_eq!(lines[1]["span_id"], span_id.to_string(), "{text}");
        assert_eq!(lines[1]["answer"], 42, "{text}");
    }

    #[test]
    fn a_chosen_value_cannot_start_a_human_readable_line_of_its_own() {
        let buffer = Buffer::default();
        let writer = buffer.clone();
        let subscriber =
            tracing_subscriber::registry().with(layer(LogFormat::Pretty, move || writer.clone()));
        tracing::subscriber::with_default(subscriber, || {
            let uri = "data://x\nERROR forged: the audit trail was cleared";
            tracing::info!(uri = %uri, name = ?uri, "read {uri}");
        });
        let text =
            String::from_utf8(buffer.0.lock().expect("not poisoned").clone()).expect("utf-8");
        assert_eq!(text.lines().count(), 1, "{text}");
        assert!(
            text.contains(r"read data://x\nERROR forged")
                && text.contains(r"uri=data://x\nERROR forged"),
            "{text}"
        );
    }
}
