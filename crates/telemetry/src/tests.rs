//! The log filter and traces, side by side.

use super::*;
use crate::logs::tests::Buffer;

/// Keeps `provider` (an SDK tracer or logger provider a test's subscriber
/// holds) for the rest of the test process. tracing-core rebuilds callsite
/// interest under its dispatchers' lock, and a `Dispatch` whose last
/// reference is dropped there (another test's thread upgraded it) drops its
/// providers there; an SDK provider logs as it shuts down, which asks for
/// that lock behind a waiting writer (a third test's `Dispatch::new`): the
/// test process hangs. A provider kept never shuts down inside that lock.
pub(crate) fn kept_for_the_process<P: Clone>(provider: &P) {
    std::mem::forget(provider.clone());
}

/// The services' subscriber with `log_filter`, writing its lines to
/// `buffer`, with OpenTelemetry spans or (`ids_only`) trace ids alone.
fn subscriber_writing_to(log_filter: &str, buffer: &Buffer, ids_only: bool) -> tracing::Dispatch {
    let config = TelemetryConfig {
        log_filter: log_filter.into(),
        ..TelemetryConfig::new("test")
    };
    let tracer = SdkTracerProvider::builder().build();
    kept_for_the_process(&tracer);
    let spans = if ids_only {
        Spans::IdsOnly
    } else {
        Spans::Traced(&tracer)
    };
    let writer = buffer.clone();
    tracing::Dispatch::new(subscriber(&config, move || writer.clone(), spans, None).expect("built"))
}

/// Both ways of tracing spans.
const BOTH: [bool; 2] = [false, true];

fn text_of(buffer: &Buffer) -> String {
    String::from_utf8(buffer.0.lock().expect("not poisoned").clone()).expect("utf-8")
}

#[test]
fn quieted_logs_keep_spans_and_the_trace_ids_of_the_lines_written() {
    for ids_only in BOTH {
        quieted_logs_keep_the_trace_ids_of_the_lines_written(ids_only);
    }
}

fn quieted_logs_keep_the_trace_ids_of_the_lines_written(ids_only: bool) {
    let buffer = Buffer::default();
    let subscriber = subscriber_writing_to("warn", &buffer, ids_only);
    let trace_id = tracing::dispatcher::with_default(&subscriber, || {
        let span = tracing::info_span!("work");
        let _entered = span.enter();
        tracing::info!("not written");
        tracing::warn!("written");
        span_context(&span).trace_id()
    });

    assert_ne!(
        trace_id,
        opentelemetry::trace::TraceId::INVALID,
        "the info span is traced under a warn log filter"
    );
    let trace_id = trace_id.to_string();
    let text = text_of(&buffer);
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|line| serde_json::from_str(line).expect("each line is JSON"))
        .collect();
    assert_eq!(lines.len(), 1, "only the warning is written: {text}");
    assert_eq!(lines[0]["message"], "written", "{text}");
    assert_eq!(lines[0]["trace_id"], trace_id.as_str(), "{text}");
    assert!(
        lines[0].get("span").is_none(),
        "the fields of a span the log filter hides are not written: {text}"
    );
}

#[test]
fn a_line_in_a_library_span_carries_the_ids_of_the_traced_span_around_it() {
    for ids_only in BOTH {
        a_library_line_carries_the_ids_around_it(ids_only);
    }
}

fn a_library_line_carries_the_ids_around_it(ids_only: bool) {
    let buffer = Buffer::default();
    let subscriber = subscriber_writing_to("info", &buffer, ids_only);
    let span_id = tracing::dispatcher::with_default(&subscriber, || {
        let span = tracing::info_span!("work");
        let _entered = span.enter();
        let library = tracing::info_span!(target: "rmcp::service", "serve");
        let _in_library = library.enter();
        tracing::warn!("written");
        span_context(&span).span_id()
    });

    let text = text_of(&buffer);
    let line: serde_json::Value = serde_json::from_str(text.trim()).expect("one JSON line");
    assert_eq!(line["span_id"], span_id.to_string(), "{text}");
    assert_eq!(line["span"]["name"], "serve", "{text}");
}

#[test]
fn a_traced_span_inside_a_library_span_is_the_child_of_the_traced_span_around_it() {
    for ids_only in BOTH {
        let subscriber = subscriber_writing_to("warn", &Buffer::default(), ids_only);
        let (outer, inner) = tracing::dispatcher::with_default(&subscriber, || {
            let call = tracing::info_span!("call");
            let _in_call = call.enter();
            let library = tracing::info_span!(target: "hyper::client", "send");
            let _in_library = library.enter();
            let request = tracing::info_span!("request");
            (span_context(&call), span_context(&request))
        });
        assert!(outer.is_valid() && inner.is_valid(), "ids only: {ids_only}");
        assert_eq!(inner.trace_id(), outer.trace_id(), "one trace");
        assert_ne!(inner.span_id(), outer.span_id(), "a span of its own");
    }
}

#[test]
fn work_in_a_detached_span_is_outside_the_callers_span_under_quiet_logs() {
    for ids_only in BOTH {
        let subscriber = subscriber_writing_to("warn", &Buffer::default(), ids_only);
        let current = tracing::dispatcher::with_default(&subscriber, || {
            let call = tracing::info_span!("call");
            call.in_scope(|| detached_span().in_scope(tracing::Span::current))
        });
        assert_eq!(
            current.metadata().map(tracing::Metadata::name),
            Some("detached"),
            "a task spawned here would hold the caller's span open"
        );
    }
}

#[test]
fn library_spans_and_events_no_layer_reads_are_not_made_under_a_quiet_log_filter() {
    for ids_only in BOTH {
        let config = TelemetryConfig {
            log_filter: "warn".into(),
            ..TelemetryConfig::new("test")
        };
        let tracer = SdkTracerProvider::builder().build();
        kept_for_the_process(&tracer);
        let spans = if ids_only {
            Spans::IdsOnly
        } else {
            Spans::Traced(&tracer)
        };
        let subscriber = subscriber(&config, io::sink, spans, None).expect("built");
        assert_eq!(
            tracing::Subscriber::max_level_hint(&subscriber),
            Some(tracing::level_filters::LevelFilter::INFO),
            "spans are made at info and above, nothing finer (ids only: {ids_only})"
        );
        // Asked directly: a callsite's interest is shared by every subscriber
        // in the process, and other tests install their own.
        let subscriber = tracing::Dispatch::new(subscriber);
        let frame = tracing::callsite!(
            name: "pop_frame",
            kind: tracing::metadata::Kind::SPAN,
            target: "h2::proto",
            level: tracing::Level::TRACE,
            fields: []
        );
        let serve = tracing::callsite!(
            name: "serve",
            kind: tracing::metadata::Kind::SPAN,
            target: "rmcp::service",
            level: tracing::Level::INFO,
            fields: []
        );
        let event = tracing::callsite!(
            name: "frame decoded",
            kind: tracing::metadata::Kind::EVENT,
            target: "h2::codec",
            level: tracing::Level::TRACE,
            fields: []
        );
        assert!(
            subscriber
                .register_callsite(tracing::callsite::Callsite::metadata(frame))
                .is_never(),
            "a library's trace span would be made and closed per poll (ids only: {ids_only})"
        );
        assert!(
            subscriber
                .register_callsite(tracing::callsite::Callsite::metadata(serve))
                .is_never(),
            "a library's info span, traced by no layer, would be made (ids only: {ids_only})"
        );
        assert!(
            subscriber
                .register_callsite(tracing::callsite::Callsite::metadata(event))
                .is_never(),
            "a library's trace event would reach every layer (ids only: {ids_only})"
        );
    }
}
