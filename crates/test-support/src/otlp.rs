//! An OTLP/gRPC collector inside a test or benchmark: the trace, metrics and logs
//! services of the OpenTelemetry protocol, keeping what they receive.

use std::{
    net::SocketAddr,
    sync::{Arc, Mutex},
};

use opentelemetry_proto::tonic::{
    collector::{
        logs::v1::{
            ExportLogsServiceRequest, ExportLogsServiceResponse,
            logs_service_server::{LogsService, LogsServiceServer},
        },
        metrics::v1::{
            ExportMetricsServiceRequest, ExportMetricsServiceResponse,
            metrics_service_server::{MetricsService, MetricsServiceServer},
        },
        trace::v1::{
            ExportTraceServiceRequest, ExportTraceServiceResponse,
            trace_service_server::{TraceService, TraceServiceServer},
        },
    },
    common::v1::{AnyValue, KeyValue, any_value::Value},
    logs::v1::LogRecord,
    trace::v1::Span,
};
use tokio::net::TcpListener;
use tokio_stream::wrappers::TcpListenerStream;
use tonic::{Request, Response, Status};

#[derive(Debug, Default)]
struct Received {
    traces: Vec<ExportTraceServiceRequest>,
    metrics: Vec<ExportMetricsServiceRequest>,
    logs: Vec<ExportLogsServiceRequest>,
}

/// The collector's store, shared with its services.
#[derive(Debug, Clone, Default)]
pub struct Collector {
    received: Arc<Mutex<Received>>,
    addr: Option<SocketAddr>,
    /// The thread it alone runs on, when started on one of its own.
    thread: Option<u32>,
}

impl Collector {
    /// Serves the collector on a loopback port, in the background.
    pub async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("binds");
        let collector = Self {
            addr: Some(listener.local_addr().expect("an address")),
            ..Self::default()
        };
        let (traces, metrics, logs) = (collector.clone(), collector.clone(), collector.clone());
        tokio::spawn(async move {
            tonic::transport::Server::builder()
                .add_service(TraceServiceServer::new(traces))
                .add_service(MetricsServiceServer::new(metrics))
                .add_service(LogsServiceServer::new(logs))
                .serve_with_incoming(TcpListenerStream::new(listener))
                .await
                .expect("the collector serves");
        });
        collector
    }

    /// Serves the collector on a thread and runtime of its own, so that a
    /// benchmark can tell the collector's CPU time ([`Self::cpu_time`]) from
    /// that of the rest of its process.
    pub fn start_on_own_thread() -> Self {
        let (started, collector) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("otlp-collector".into())
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("a runtime");
                runtime.block_on(async move {
                    let collector = Self {
                        thread: crate::current_thread_id(),
                        ..Self::start().await
                    };
                    let _ = started.send(collector);
                    std::future::pending::<()>().await;
                });
            })
            .expect("the collector's thread starts");
        collector.recv().expect("the collector starts")
    }

    /// CPU time the collector has used so far; zero unless it was started
    /// on its own thread.
    pub fn cpu_time(&self) -> std::time::Duration {
        self.thread.map(crate::thread_cpu_time).unwrap_or_default()
    }

    /// The `http://` endpoint exporters are pointed at.
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr.expect("started"))
    }

    /// Every span received so far.
    pub fn spans(&self) -> Vec<Span> {
        let received = self.received.lock().expect("not poisoned");
        received
            .traces
            .iter()
            .flat_map(|r| &r.resource_spans)
            .flat_map(|r| &r.scope_spans)
            .flat_map(|s| s.spans.clone())
            .collect()
    }

    /// Every log record received so far, with the name of its scope (the
    /// target of the event it was made from).
    pub fn log_records(&self) -> Vec<(String, LogRecord)> {
        let received = self.received.lock().expect("not poisoned");
        received
            .logs
            .iter()
            .flat_map(|r| &r.resource_logs)
            .flat_map(|r| &r.scope_logs)
            .flat_map(|s| {
                let scope = s.scope.as_ref().map(|s| s.name.clone()).unwrap_or_default();
                s.log_records
                    .iter()
                    .map(move |l| (scope.clone(), l.clone()))
            })
            .collect()
    }

    /// The `service.name` of every resource log records were received from.
    pub fn log_resources(&self) -> Vec<String> {
        let received = self.received.lock().expect("not poisoned");
        received
            .logs
            .iter()
            .flat_map(|r| &r.resource_logs)
            .filter_map(|r| r.resource.as_ref())
            .filter_map(|r| text_of(&r.attributes, "service.name"))
            .collect()
    }

    /// The names of every metric received so far.
    pub fn metric_names(&self) -> Vec<String> {
        let received = self.received.lock().expect("not poisoned");
        received
            .metrics
            .iter()
            .flat_map(|r| &r.resource_metrics)
            .flat_map(|r| &r.scope_metrics)
            .flat_map(|s| s.metrics.iter().map(|m| m.name.clone()))
            .collect()
    }

    /// Everything received, as text, to search for what must not be there.
    pub fn everything(&self) -> String {
        let received = self.received.lock().expect("not poisoned");
        format!(
            "{:?}\n{:?}\n{:?}",
            received.traces, received.metrics, received.logs
        )
    }
}

#[tonic::async_trait]
impl TraceService for Collector {
    async fn export(
        &self,
        request: Request<ExportTraceServiceRequest>,
    ) -> Result<Response<ExportTraceServiceResponse>, Status> {
        if let Ok(mut received) = self.received.lock() {
            received.traces.push(request.into_inner());
        }
        Ok(Response::new(ExportTraceServiceResponse::default()))
    }
}

#[tonic::async_trait]
impl LogsService for Collector {
    async fn export(
        &self,
        request: Request<ExportLogsServiceRequest>,
    ) -> Result<Response<ExportLogsServiceResponse>, Status> {
        if let Ok(mut received) = self.received.lock() {
            received.logs.push(request.into_inner());
        }
        Ok(Response::new(ExportLogsServiceResponse::default()))
    }
}

#[tonic::async_trait]
impl MetricsService for Collector {
    async fn export(
        &self,
        request: Request<ExportMetricsServiceRequest>,
    ) -> Result<Response<ExportMetricsServiceResponse>, Status> {
        if let Ok(mut received) = self.received.lock() {
            received.metrics.push(request.into_inner());
        }
        Ok(Response::new(ExportMetricsServiceResponse::default()))
    }
}

/// The value of attribute `key` of `span`, as text.
pub fn attribute(span: &Span, key: &str) -> Option<String> {
    text_of(&span.attributes, key)
}

/// The value of attribute `key` of log record `record`, as text.
pub fn log_attribute(record: &LogRecord, key: &str) -> Option<String> {
    text_of(&record.attributes, key)
}

/// The value of `key` among `attributes`, as text.
fn text_of(attributes: &[KeyValue], key: &str) -> Option<String> {
    attributes
        .iter()
        .find(|KeyValue { key: k, .. }| k == key)
        .and_then(|kv| kv.value.as_ref())
        .and_then(|AnyValue { value }| value.as_ref())
        .map(|value| match value {
            Value::StringValue(s) => s.clone(),
            Value::IntValue(i) => i.to_string(),
            Value::BoolValue(b) => b.to_string(),
            Value::DoubleValue(d) => d.to_string(),
            other => format!("{other:?}"),
        })
}

/// Lower-case hex of an id.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
