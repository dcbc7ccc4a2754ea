//! Each request of a connection counted in flight until its response's
//! body ends (a stream until it ends), and handed the connection it came on.

use std::{
    future::Future,
    pin::Pin,
    task::{Context, Poll},
};

use http::{Request, Response};
use http_body::{Body, Frame, SizeHint};
use hyper::body::Incoming;
use tower::{Service, ServiceExt as _};

use super::tracker::{ConnectionHandle, InFlight};

/// What a connection's requests are served by: `inner`, with the
/// connection's handle and connect info in each request's extensions.
#[derive(Debug, Clone)]
pub(crate) struct ConnectionService<S, I> {
    pub inner: S,
    pub handle: ConnectionHandle,
    pub connect_info: I,
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

impl<S, I, B> hyper::service::Service<Request<Incoming>> for ConnectionService<S, I>
where
    S: Service<Request<Incoming>, Response = Response<B>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<BoxError>,
    I: Clone + Send + Sync + 'static,
{
    type Response = Response<InFlightBody<B>>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn call(&self, mut request: Request<Incoming>) -> Self::Future {
        let in_flight = self.handle.request_started();
        request.extensions_mut().insert(self.handle.clone());
        request.extensions_mut().insert(self.connect_info.clone());
        let inner = self.inner.clone();
        Box::pin(async move {
            let response = inner.oneshot(request).await.map_err(Into::into)?;
            Ok(response.map(|body| InFlightBody {
                inner: body,
                _in_flight: in_flight,
            }))
        })
    }
}

pin_project_lite::pin_project! {
    /// A response body that keeps its request counted in flight until it
    /// is dropped.
    pub(crate) struct InFlightBody<B> {
        #[pin]
        inner: B,
        _in_flight: InFlight,
    }
}

impl<B: Body> Body for InFlightBody<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        self.project().inner.poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
