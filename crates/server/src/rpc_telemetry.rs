//! The outcome of each call, once its gRPC status is known (response headers
//! of a trailers-only answer, or the trailers): `rpc.grpc.status_code` and
//! the error status on the call's span, and the `rpc.server.call.duration`
//! histogram per method and status code. Only calls of a method a service
//! serves are measured, under that method's own labels: a caller's path
//! never becomes a label, and paths nothing serves (answered UNIMPLEMENTED
//! or UNAUTHENTICATED) add no series however many there are.

use std::{
    future::Future,
    pin::Pin,
    sync::OnceLock,
    task::{Context, Poll},
    time::Instant,
};

use http_body::{Body, Frame};
use opentelemetry::{KeyValue, StringValue, metrics::Histogram};
use tonic::Code;
use tower::{BoxError, Layer, Service};
use tracing::Span;

use crate::rpc_methods::{RpcMethod, RpcMethods};

/// Methods whose calls are neither traced nor measured: probes and tooling,
/// many times more frequent than API calls and of no interest in a trace.
pub(crate) fn is_untraced(path: &str) -> bool {
    path.starts_with("/grpc.health.") || path.starts_with("/grpc.reflection.")
}

fn duration() -> &'static Histogram<f64> {
    static DURATION: OnceLock<Histogram<f64>> = OnceLock::new();
    DURATION.get_or_init(|| {
        switchboard_telemetry::duration_histogram(
            "rpc.server.call.duration",
            "Duration of gRPC calls served, until their status is sent",
        )
    })
}

/// Observes the status of every call (see the module's documentation).
#[derive(Debug, Clone)]
pub(crate) struct RpcTelemetryLayer {
    methods: RpcMethods,
}

impl RpcTelemetryLayer {
    /// Measures the calls of `methods`.
    pub(crate) fn new(methods: RpcMethods) -> Self {
        Self { methods }
    }
}

impl<S> Layer<S> for RpcTelemetryLayer {
    type Service = RpcTelemetry<S>;

    fn layer(&self, inner: S) -> Self::Service {
        RpcTelemetry {
            inner,
            methods: self.methods.clone(),
        }
    }
}

/// The service of [`RpcTelemetryLayer`].
#[derive(Debug, Clone)]
pub(crate) struct RpcTelemetry<S> {
    inner: S,
    methods: RpcMethods,
}

/// One call being observed: its span and method, and when it started.
struct Call {
    span: Span,
    method: RpcMethod,
    started: Instant,
}

impl Call {
    fn finish(self, code: Code) {
        let code_number = code as i64;
        self.span.record("rpc.grpc.status_code", code_number);
        if is_server_error(code) {
            switchboard_telemetry::record_error(
                &self.span,
                &format!("{code:?}"),
                code.description(),
            );
        }
        duration().record(
            self.started.elapsed().as_secs_f64(),
            &[
                KeyValue::new("rpc.system", "grpc"),
                KeyValue::new("rpc.service", StringValue::from(self.method.service)),
                KeyValue::new("rpc.method", StringValue::from(self.method.method)),
                KeyValue::new("rpc.grpc.status_code", code_number),
            ],
        );
    }
}

/// The codes that make a server span an error, per the OpenTelemetry gRPC
/// conventions (the others are the caller's doing).
fn is_server_error(code: Code) -> bool {
    matches!(
        code,
        Code::Unknown
            | Code::DeadlineExceeded
            | Code::Unimplemented
            | Code::Internal
            | Code::Unavailable
            | Code::DataLoss
    )
}

fn status_of(headers: &http::HeaderMap) -> Option<Code> {
    let value = headers.get("grpc-status")?.to_str().ok()?;
    Some(Code::from_i32(value.parse().ok()?))
}

impl<S, ReqBody, ResBody> Service<http::Request<ReqBody>> for RpcTelemetry<S>
where
    S: Service<http::Request<ReqBody>, Response = http::Response<ResBody>>,
    S::Error: Into<BoxError>,
    S::Future: Send + 'static,
    ResBody: Body,
{
    type Response = http::Response<ObservedBody<ResBody>>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: http::Request<ReqBody>) -> Self::Future {
        let path = request.uri().path();
        let call = self.methods.serves(path).then(|| Call {
            span: Span::current(),
            method: self.methods.get(path).clone(),
            started: Instant::now(),
        });
        let future = self.inner.call(request);
        Box::pin(async move {
            match future.await.map_err(Into::into) {
                Err(error) => {
                    if let Some(call) = call {
                        let code = error
                            .downcast_ref::<tonic::Status>()
                            .map_or(Code::Unknown, tonic::Status::code);
                        call.finish(code);
                    }
                    Err(error)
                }
                Ok(response) => {
                    let call = match (call, status_of(response.headers())) {
                        (Some(call), Some(code)) => {
                            call.finish(code);
                            None
                        }
                        (call, _) => call,
                    };
                    Ok(response.map(|inner| ObservedBody { inner, call }))
                }
            }
        })
    }
}

pin_project_lite::pin_project! {
    /// A response body that reports the call's status from its trailers.
    pub struct ObservedBody<B> {
        #[pin]
        inner: B,
        call: Option<Call>,
    }

    impl<B> PinnedDrop for ObservedBody<B> {
        fn drop(this: Pin<&mut Self>) {
            // The body was dropped before its trailers: the client went away.
            if let Some(call) = this.project().call.take() {
                call.finish(Code::Cancelled);
            }
        }
    }
}

impl<B: Body> Body for ObservedBody<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let this = self.project();
        let polled = this.inner.poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(trailers) = frame.trailers_ref()
                    && let Some(call) = this.call.take()
                {
                    call.finish(status_of(trailers).unwrap_or(Code::Unknown));
                }
            }
            Poll::Ready(Some(Err(_))) => {
                if let Some(call) = this.call.take() {
                    call.finish(Code::Internal);
                }
            }
            Poll::Ready(None) => {
                if let Some(call) = this.call.take() {
                    call.finish(Code::Unknown);
                }
            }
            Poll::Pending => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probes_and_tooling_are_not_traced_and_api_calls_are() {
        assert!(is_untraced("/grpc.health.v1.Health/Check"));
        assert!(is_untraced("/grpc.health.v1.Health/Watch"));
        assert!(is_untraced(
            "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo"
        ));
        assert!(is_untraced(
            "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo"
        ));
        assert!(!is_untraced("/switchboard.runs.v1.RunsService/ExecuteRun"));
    }

    #[test]
    fn the_status_is_read_from_grpc_status_and_only_server_faults_are_errors() {
        let mut headers = http::HeaderMap::new();
        assert_eq!(status_of(&headers), None);
        headers.insert("grpc-status", http::HeaderValue::from_static("14"));
        assert_eq!(status_of(&headers), Some(Code::Unavailable));
        headers.insert("grpc-status", http::HeaderValue::from_static("junk"));
        assert_eq!(status_of(&headers), None);
        assert!(is_server_error(Code::Internal));
        assert!(!is_server_error(Code::InvalidArgument));
        assert!(!is_server_error(Code::Ok));
    }
}
