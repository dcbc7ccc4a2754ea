//! Which events become log records, with which ids, and what a collector
//! that never answers costs the caller.

use std::{
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use opentelemetry::{
    logs::AnyValue,
    trace::{SpanContext, TraceContextExt as _},
};
use opentelemetry_sdk::{
    error::OTelSdkResult,
    logs::{LogBatch, LogExporter, SdkLogRecord},
    trace::SdkTracerProvider,
};
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

use super::*;
use crate::{Spans, TelemetryConfig, logs::tests::Buffer, subscriber, tests::kept_for_the_process};

/// Keeps every record exported, for the test to read back.
#[derive(Debug, Clone, Default)]
struct Kept(Arc<Mutex<Vec<SdkLogRecord>>>);

impl LogExporter for Kept {
    async fn export(&self, batch: LogBatch<'_>) -> OTelSdkResult {
        let mut kept = self.0.lock().expect("not poisoned");
        kept.extend(batch.iter().map(|(record, _)| record.clone()));
        Ok(())
    }
}

impl Kept {
    fn records(&self) -> Vec<SdkLogRecord> {
        self.0.lock().expect("not poisoned").clone()
    }
}

/// The services' subscriber under `log_filter`, with audit records going to
/// `logger`.
fn subscriber_with(log_filter: &str, logger: &SdkLoggerProvider, buffer: &Buffer) -> Dispatch {
    let config = TelemetryConfig {
        log_filter: log_filter.into(),
        ..TelemetryConfig::new("test")
    };
    let tracer = SdkTracerProvider::builder().build();
    kept_for_the_process(&tracer);
    kept_for_the_process(logger);
    let writer = buffer.clone();
    let subscriber = subscriber(
        &config,
        move || writer.clone(),
        Spans::Traced(&tracer),
        Some(logger),
    );
    Dispatch::new(subscriber.expect("built"))
}

fn attribute<'r>(record: &'r SdkLogRecord, key: &str) -> Option<&'r AnyValue> {
    record
        .attributes_iter()
        .find(|(k, _)| k.as_str() == key)
        .map(|(_, value)| value)
}

fn ids(context: &SpanContext) -> (String, String) {
    (
        context.trace_id().to_string(),
        context.span_id().to_string(),
    )
}

fn record_ids(record: &SdkLogRecord) -> Option<(String, String)> {
    record
        .trace_context()
        .map(|c| (c.trace_id.to_string(), c.span_id.to_string()))
}

#[test]
fn only_audit_events_become_records_with_the_ids_of_their_span_under_quiet_logs() {
    let kept = Kept::default();
    let logger = SdkLoggerProvider::builder()
        .with_simple_exporter(kept.clone())
        .build();
    let subscriber = subscriber_with("warn", &logger, &Buffer::default());
    let (call, library_call) = tracing::dispatcher::with_default(&subscriber, || {
        let call = tracing::info_span!("call");
        let ids_of_call = call.in_scope(|| {
            tracing::info!("a log line");
            tracing::warn!(argument = "content", "a warning");
            tracing::info!(target: AUDIT_TARGET, org_id = "org-a", action = "execute_tool", duration_micros = 42_i64, "audit event");
            ids(call.context().span().span_context())
        });
        let other = tracing::info_span!("other call");
        let ids_of_other = other.in_scope(|| {
            let library = tracing::info_span!(target: "rmcp::service", "serve");
            library.in_scope(
                || tracing::warn!(target: AUDIT_TARGET, action = "resource_read", "audit event"),
            );
            ids(other.context().span().span_context())
        });
        (ids_of_call, ids_of_other)
    });

    let records = kept.records();
    assert_eq!(records.len(), 2, "the audit events alone: {records:?}");
    let first = &records[0];
    assert_eq!(first.target().map(AsRef::as_ref), Some(AUDIT_TARGET));
    assert_eq!(first.body(), Some(&AnyValue::from("audit event")));
    assert_eq!(attribute(first, "org_id"), Some(&AnyValue::from("org-a")));
    assert_eq!(
        attribute(first, "action"),
        Some(&AnyValue::from("execute_tool"))
    );
    assert_eq!(
        attribute(first, "duration_micros"),
        Some(&AnyValue::from(42_i64))
    );
    assert_eq!(
        record_ids(first),
        Some(call),
        "the call's span, never entered as a context"
    );
    assert_eq!(
        record_ids(&records[1]),
        Some(library_call),
        "the traced span around the library's"
    );
}

#[test]
fn an_audit_event_outside_any_span_is_a_record_without_ids() {
    let kept = Kept::default();
    let logger = SdkLoggerProvider::builder()
        .with_simple_exporter(kept.clone())
        .build();
    let subscriber = subscriber_with("info", &logger, &Buffer::default());
    tracing::dispatcher::with_default(&subscriber, || {
        tracing::info!(target: AUDIT_TARGET, "old audit events removed");
    });
    let records = kept.records();
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!(record_ids(&records[0]), None);
}

/// More records than the batch queue holds (2048 by default).
const FLOOD: usize = 5_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_collector_that_never_answers_costs_a_call_no_wait_and_drops_are_counted() {
    // Accepts connections and never answers: every export waits for its
    // timeout.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("binds");
    let endpoint = format!("http://{}", listener.local_addr().expect("an address"));
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    let logger = logger_provider(Resource::builder().build(), Some(&endpoint))
        .expect("built")
        .expect("an endpoint is set");
    let buffer = Buffer::default();
    let subscriber = subscriber_with("info", &logger, &buffer);

    let started = Instant::now();
    tracing::dispatcher::with_default(&subscriber, || {
        let call = tracing::info_span!("call");
        let _in_call = call.enter();
        for _ in 0..FLOOD {
            tracing::info!(target: AUDIT_TARGET, action = "execute_tool", "audit event");
        }
    });
    let emitting = started.elapsed();
    assert!(
        emitting < Duration::from_secs(2),
        "{FLOOD} records took {emitting:?} to hand over"
    );

    let started = Instant::now();
    tracing::dispatcher::with_default(&subscriber, || {
        let _ = logger.shutdown();
    });
    let stopping = started.elapsed();
    assert!(
        stopping < Duration::from_secs(7),
        "shutdown waited {stopping:?}"
    );
    let text = String::from_utf8_lossy(&buffer.0.lock().expect("not poisoned")).into_owned();
    assert!(
        text.contains("dropped_logs_count"),
        "the dropped records are counted in the logs: {text}"
    );
}
