//! Trace ids alone carry a trace as OpenTelemetry spans do.

use std::collections::HashMap;

use opentelemetry::{
    global,
    trace::{TraceFlags, TraceId},
};
use opentelemetry_sdk::{propagation::TraceContextPropagator, trace::SdkTracerProvider};

use crate::{
    Spans, TelemetryConfig, continue_trace, inject_span, logs::tests::Buffer, span_context,
    subscriber,
};

const CALLER_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER_SPAN: &str = "00f067aa0ba902b7";

/// The services' subscriber, tracing spans as `ids_only` says.
fn dispatch(ids_only: bool, tracer: &SdkTracerProvider) -> tracing::Dispatch {
    global::set_text_map_propagator(TraceContextPropagator::new());
    let spans = if ids_only {
        Spans::IdsOnly
    } else {
        Spans::Traced(tracer)
    };
    let writer = Buffer::default();
    let config = TelemetryConfig::new("test");
    tracing::Dispatch::new(subscriber(&config, move || writer.clone(), spans, None).expect("built"))
}

/// Headers of a caller in trace [`CALLER_TRACE`] with `flags` and a state.
fn caller_headers(flags: &str) -> http::HeaderMap {
    let mut headers = http::HeaderMap::new();
    let traceparent = format!("00-{CALLER_TRACE}-{CALLER_SPAN}-{flags}");
    headers.insert("traceparent", traceparent.parse().expect("valid"));
    headers.insert("tracestate", "vendor=value".parse().expect("valid"));
    headers
}

/// What a request made inside `span` carries onwards.
fn forwarded(span: &tracing::Span) -> HashMap<String, String> {
    let mut fields = HashMap::new();
    inject_span(span, &mut fields);
    fields
}

/// The `traceparent` forwarded from a span that continues a caller with
/// `flags`, and from a span inside it, traced as `ids_only` says.
fn forwarded_for_caller(ids_only: bool, flags: &str) -> [HashMap<String, String>; 2] {
    let tracer = SdkTracerProvider::builder().build();
    crate::tests::kept_for_the_process(&tracer);
    tracing::dispatcher::with_default(&dispatch(ids_only, &tracer), || {
        let server = tracing::info_span!("server");
        continue_trace(&server, &caller_headers(flags));
        let inner = server.in_scope(|| tracing::info_span!("tool"));
        [forwarded(&server), forwarded(&inner)]
    })
}

#[test]
fn a_callers_trace_flags_and_state_go_onwards_as_they_do_with_spans() {
    for flags in ["01", "00"] {
        for ids_only in [false, true] {
            let [server, inner] = forwarded_for_caller(ids_only, flags);
            for fields in [&server, &inner] {
                let traceparent = &fields["traceparent"];
                let parts: Vec<&str> = traceparent.split('-').collect();
                assert_eq!(parts[1], CALLER_TRACE, "the caller's trace: {traceparent}");
                assert_ne!(parts[2], CALLER_SPAN, "a span of its own: {traceparent}");
                assert_eq!(parts[3], flags, "the caller's flags (ids only: {ids_only})");
                assert_eq!(fields["tracestate"], "vendor=value", "the caller's state");
            }
            assert_ne!(
                server["traceparent"], inner["traceparent"],
                "the inner span forwards its own id"
            );
        }
    }
}

#[test]
fn a_span_with_no_caller_starts_a_sampled_trace_its_spans_share() {
    let tracer = SdkTracerProvider::builder().build();
    crate::tests::kept_for_the_process(&tracer);
    let (call, inner, other) = tracing::dispatcher::with_default(&dispatch(true, &tracer), || {
        let call = tracing::info_span!("call");
        let inner = call.in_scope(|| tracing::info_span!("inner"));
        let other = call.in_scope(|| tracing::info_span!(parent: None, "other"));
        (
            span_context(&call),
            span_context(&inner),
            span_context(&other),
        )
    });
    assert!(call.is_valid() && call.trace_flags() == TraceFlags::SAMPLED);
    assert_eq!(inner.trace_id(), call.trace_id(), "one trace");
    assert_ne!(inner.span_id(), call.span_id());
    assert_ne!(
        other.trace_id(),
        call.trace_id(),
        "a root span starts its own"
    );
}

#[test]
fn no_valid_caller_and_untraced_spans_change_nothing() {
    let tracer = SdkTracerProvider::builder().build();
    crate::tests::kept_for_the_process(&tracer);
    let (before, after, library) =
        tracing::dispatcher::with_default(&dispatch(true, &tracer), || {
            let server = tracing::info_span!("server");
            let before = span_context(&server);
            let mut headers = http::HeaderMap::new();
            headers.insert("traceparent", "00-not-a-trace-01".parse().expect("valid"));
            continue_trace(&server, &headers);
            let library = tracing::info_span!(target: "hyper::client", "send");
            (before, span_context(&server), span_context(&library))
        });
    assert_eq!(after, before, "a malformed traceparent is ignored");
    assert_eq!(
        library.trace_id(),
        TraceId::INVALID,
        "library spans are not traced"
    );
    assert_eq!(
        span_context(&tracing::Span::none()).trace_id(),
        TraceId::INVALID
    );
}
