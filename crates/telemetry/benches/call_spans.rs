//! What one ExecuteTool call pays for tracing in mcp-service, without the
//! network: the gRPC server span continued from the caller's `traceparent`,
//! the `tools/call` span, the trace context written into the request's
//! `_meta`, the upstream request's span with its `traceparent` header, and
//! the call's two duration histograms. Each span is entered and left as
//! often as an async call polls it.
//!
//! Runs itself once per mode, side by side, alternating rounds: no
//! subscriber (`none`); the services' default, nothing exported and logs at
//! `warn`, where spans keep only their trace ids (`ids`); the same with
//! OpenTelemetry spans made and dropped, as when `OTEL_TRACES_SAMPLER` is set
//! and no exporter is (`spans`); and every span exported to an OTLP collector
//! that accepts and drops them (`export`). See BENCHMARKS.md.
//!
//! `cargo bench -p switchboard-telemetry --bench call_spans`

use std::{
    hint::black_box,
    process::Command,
    time::{Duration, Instant},
};

use opentelemetry::{KeyValue, metrics::Histogram};
use switchboard_telemetry::{
    Extractor, Injector, TelemetryConfig, context_from, continue_trace, duration_histogram,
    inject_current, inject_span, set_parent,
};
use tracing::Span;

const CALLS: u32 = 20_000;
const ROUNDS: usize = 5;
const MODES: [&str; 4] = ["none", "ids", "spans", "export"];
/// How often each span is entered and left: about the polls of a call.
const POLLS: usize = 4;

fn poll(span: &Span) {
    for _ in 0..POLLS {
        let _entered = span.enter();
    }
}

/// The tracing work of one call.
fn call(incoming: &http::HeaderMap, instruments: &Instruments) {
    let server = tracing::info_span!(
        "grpc.server",
        otel.name = "switchboard.mcp.v1.McpService/ExecuteTool",
        otel.kind = "server",
        rpc.system = "grpc",
        rpc.service = "switchboard.mcp.v1.McpService",
        rpc.method = "ExecuteTool",
        rpc.grpc.status_code = tracing::field::Empty,
        enduser.id = tracing::field::Empty,
    );
    continue_trace(&server, incoming);
    poll(&server);
    server.record("enduser.id", "bench-user");
    let operation = server.in_scope(|| {
        tracing::info_span!(
            "mcp.client",
            otel.name = "tools/call echo",
            otel.kind = "client",
            mcp.method.name = "tools/call",
            gen_ai.operation.name = "execute_tool",
            switchboard.integration.id = INTEGRATION_ID,
            switchboard.integration.slug = "bench",
            gen_ai.tool.name = "echo",
        )
    });
    poll(&operation);
    let mut meta = Fields::default();
    operation.in_scope(|| inject_current(&mut meta));
    let upstream = tracing::info_span!(
        "mcp.upstream",
        otel.name = "POST tools/call",
        otel.kind = "client",
        http.request.method = "POST",
        mcp.method.name = "tools/call",
        mcp.session.id = "f5a4c1e0b2d34e0e9c1f3a7b6d8e2c41",
        jsonrpc.request.id = 7,
    );
    set_parent(&upstream, context_from(&meta));
    let mut headers = Fields::default();
    inject_span(&upstream, &mut headers);
    poll(&upstream);
    black_box(&headers);
    drop(upstream);
    instruments.operation.record(
        0.000_2,
        &[
            KeyValue::new("mcp.method.name", "tools/call"),
            KeyValue::new("switchboard.integration.id", INTEGRATION_ID.to_owned()),
            KeyValue::new("gen_ai.tool.name", "echo".to_owned()),
        ],
    );
    drop(operation);
    server.record("rpc.grpc.status_code", 0_i64);
    poll(&server);
    instruments.rpc.record(
        0.000_3,
        &[
            KeyValue::new("rpc.system", "grpc"),
            KeyValue::new("rpc.service", "switchboard.mcp.v1.McpService".to_owned()),
            KeyValue::new("rpc.method", "ExecuteTool".to_owned()),
            KeyValue::new("rpc.grpc.status_code", 0_i64),
        ],
    );
}

const INTEGRATION_ID: &str = "0191a3c2-7d5e-7f00-8000-000000000001";

/// The call's two duration histograms, as the services record them.
struct Instruments {
    rpc: Histogram<f64>,
    operation: Histogram<f64>,
}

/// W3C fields as a request's `_meta` or headers hold them.
#[derive(Default)]
struct Fields(Vec<(String, String)>);

impl Injector for Fields {
    fn set(&mut self, key: &str, value: String) {
        self.0.push((key.to_owned(), value));
    }
}

impl Extractor for Fields {
    fn get(&self, key: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.iter().map(|(k, _)| k.as_str()).collect()
    }
}

/// Nanoseconds per call, best of `ROUNDS` rounds of `CALLS` calls.
fn measure(mode: &str) {
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    let _guard = runtime.enter();
    let collector = (mode == "export").then(|| runtime.block_on(sink::start()));
    let telemetry = (mode != "none").then(|| {
        let config = TelemetryConfig {
            log_filter: "warn".into(),
            otlp_endpoint: collector.as_ref().map(|(endpoint, _)| endpoint.clone()),
            ..TelemetryConfig::new("bench")
        };
        switchboard_telemetry::init_with_writer(&config, std::io::sink).expect("installed")
    });
    let mut incoming = http::HeaderMap::new();
    incoming.insert(
        "traceparent",
        http::HeaderValue::from_static("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
    );
    let instruments = Instruments {
        rpc: duration_histogram("rpc.server.call.duration", "gRPC calls"),
        operation: duration_histogram("mcp.client.operation.duration", "MCP operations"),
    };
    let per_call = (0..ROUNDS)
        .map(|_| {
            let started = Instant::now();
            for _ in 0..CALLS {
                call(&incoming, &instruments);
            }
            started.elapsed() / CALLS
        })
        .min()
        .unwrap_or(Duration::ZERO);
    if let Some(telemetry) = telemetry {
        telemetry.flush();
    }
    let exported = collector.map_or(0, |(_, spans)| {
        spans.load(std::sync::atomic::Ordering::Relaxed)
    });
    println!("{mode} {} {exported}", per_call.as_nanos());
}

fn main() {
    if let Ok(mode) = std::env::var("CALL_SPANS_MODE") {
        measure(&mode);
        return;
    }
    let exe = std::env::current_exe().expect("the bench's own path");
    let mut results: Vec<(&str, Vec<u128>, u64)> =
        MODES.iter().map(|mode| (*mode, Vec::new(), 0)).collect();
    for _ in 0..3 {
        for (mode, times, exported) in &mut results {
            let mut run = Command::new(&exe);
            run.env("CALL_SPANS_MODE", *mode)
                .env_remove("OTEL_TRACES_SAMPLER");
            if *mode == "spans" {
                // The SDK's default sampler, named: spans are made, not exported.
                run.env("OTEL_TRACES_SAMPLER", "parentbased_always_on");
            }
            let output = run.output().expect("the bench runs a mode");
            let line = String::from_utf8_lossy(&output.stdout);
            let mut fields = line.split_whitespace().skip(1);
            times.push(fields.next().and_then(|n| n.parse().ok()).unwrap_or(0));
            *exported += fields.next().and_then(|n| n.parse().ok()).unwrap_or(0);
        }
    }
    println!(
        "tracing work of one ExecuteTool call (3 spans), best of {ROUNDS} x {CALLS} calls, 3 runs per mode alternating"
    );
    let none = results[0].1.iter().min().copied().unwrap_or(0);
    for (mode, times, exported) in &results {
        let best = times.iter().min().copied().unwrap_or(0);
        println!(
            "{mode:<8} {:>7.2} µs per call (runs: {:?} ns), +{:.2} µs over none, {exported} spans exported",
            best as f64 / 1e3,
            times,
            (best.saturating_sub(none)) as f64 / 1e3,
        );
    }
}

/// An OTLP trace collector that counts the spans it is sent and keeps none.
mod sink {
    use std::sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    };

    use opentelemetry_proto::tonic::collector::trace::v1::{
        ExportTraceServiceRequest, ExportTraceServiceResponse,
        trace_service_server::{TraceService, TraceServiceServer},
    };

    struct Sink(Arc<AtomicU64>);

    #[tonic::async_trait]
    impl TraceService for Sink {
        async fn export(
            &self,
            request: tonic::Request<ExportTraceServiceRequest>,
        ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
            let spans = request
                .into_inner()
                .resource_spans
                .iter()
                .flat_map(|r| &r.scope_spans)
                .map(|s| s.spans.len() as u64)
                .sum();
            self.0.fetch_add(spans, Ordering::Relaxed);
            Ok(tonic::Response::new(ExportTraceServiceResponse::default()))
        }
    }

    /// Serves on a free loopback port; the endpoint and the span count.
    pub(crate) async fn start() -> (String, Arc<AtomicU64>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a port");
        let endpoint = format!("http://{}", listener.local_addr().expect("bound"));
        let spans = Arc::new(AtomicU64::new(0));
        let service = TraceServiceServer::new(Sink(spans.clone()));
        tokio::spawn(
            tonic::transport::Server::builder()
                .add_service(service)
                .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener)),
        );
        (endpoint, spans)
    }
}
