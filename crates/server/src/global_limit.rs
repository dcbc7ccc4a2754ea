//! The process's limit of calls in flight, across all connections and
//! organizations.
//!
//! A call holds its permit until its response body ends, not until its
//! handler returns: a streaming call (ExecuteRun, WatchRun) does its work
//! while its stream is open, so that is when it costs memory, tasks and
//! database reads. At the limit a call is refused at once with UNAVAILABLE,
//! which gRPC clients retry with backoff; queueing behind streams that may
//! last minutes would only turn overload into timeouts.

use std::sync::Arc;

use http::{Request, Response};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tonic::body::Body;
use tower::{Layer, Service};

use crate::{
    gate::{BoxFuture, Gate, Gated},
    held_body::HeldBody,
};

/// What a caller refused at the global limit reads.
const OVERLOADED: &str = "server is at its concurrency limit; retry with backoff";

/// Bounds the calls in flight to `limit`, streams counted until they end.
#[derive(Debug, Clone)]
pub struct GlobalLimitLayer {
    permits: Arc<Semaphore>,
}

impl GlobalLimitLayer {
    /// A layer admitting `limit` calls at once.
    pub fn new(limit: usize) -> Self {
        Self {
            permits: Arc::new(Semaphore::new(limit.min(Semaphore::MAX_PERMITS))),
        }
    }

    /// Admits one call outside the gRPC stack (the MCP endpoint) against
    /// the same permits as the gRPC calls, at once or not at all: the call
    /// counts until the returned permit is dropped; None at the limit.
    pub fn try_admit(&self) -> Option<GlobalPermit> {
        self.permits
            .clone()
            .try_acquire_owned()
            .ok()
            .map(|permit| GlobalPermit { _permit: permit })
    }
}

/// One call admitted by [`GlobalLimitLayer::try_admit`], counted against the
/// process's calls in flight until dropped.
#[derive(Debug)]
pub struct GlobalPermit {
    _permit: OwnedSemaphorePermit,
}

impl<S> Layer<S> for GlobalLimitLayer {
    type Service = Gated<S, Self>;

    fn layer(&self, inner: S) -> Self::Service {
        Gated::new(inner, self.clone())
    }
}

impl Gate for GlobalLimitLayer {
    fn call<S, B>(
        &self,
        mut inner: S,
        request: Request<B>,
    ) -> BoxFuture<Result<Response<Body>, S::Error>>
    where
        S: Service<Request<B>, Response = Response<Body>> + Send + 'static,
        S::Future: Send + 'static,
        B: Send + 'static,
    {
        let Some(permit) = self.try_admit() else {
            tracing::debug!("call refused at the process's concurrency limit");
            let response = tonic::Status::unavailable(OVERLOADED).into_http();
            return Box::pin(async move { Ok(response) });
        };
        let call = inner.call(request);
        Box::pin(async move {
            let response = call.await?;
            Ok(response.map(|body| Body::new(HeldBody::new(body, permit))))
        })
    }
}
