//! What the chassis's own layers share: each decides, per call, whether and
//! how the call goes on (authenticated, admitted, given a deadline); being a
//! tower service around the next one is the same for all of them and lives
//! here once.

use std::{
    future::Future,
    pin::Pin,
    task::{Context, Poll},
};

use http::{Request, Response};
use tonic::body::Body;
use tower::Service;

/// A call's answer, built on the heap so that every gate's future has one type.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// The decision one layer makes about each call.
pub trait Gate: Clone + Send + Sync + 'static {
    /// Passes `request` to `inner`, changed, bounded or held as this layer
    /// requires, or answers it without `inner`.
    fn call<S, B>(
        &self,
        inner: S,
        request: Request<B>,
    ) -> BoxFuture<Result<Response<Body>, S::Error>>
    where
        S: Service<Request<B>, Response = Response<Body>> + Send + 'static,
        S::Future: Send + 'static,
        B: Send + 'static;
}

/// The service a [`Gate`]'s layer wraps around the next one.
#[derive(Debug, Clone)]
pub struct Gated<S, G> {
    inner: S,
    gate: G,
}

impl<S, G> Gated<S, G> {
    /// `inner`, behind `gate`.
    pub(crate) fn new(inner: S, gate: G) -> Self {
        Self { inner, gate }
    }
}

impl<S, B, G> Service<Request<B>> for Gated<S, G>
where
    S: Service<Request<B>, Response = Response<Body>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    B: Send + 'static,
    G: Gate,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = BoxFuture<Result<Self::Response, Self::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        // The clone that was polled ready must serve this call.
        let clone = self.inner.clone();
        let inner = std::mem::replace(&mut self.inner, clone);
        self.gate.call(inner, request)
    }
}
