//! The deadline of each call.
//!
//! A caller that sends `grpc-timeout` knows how long it will wait, so that
//! deadline is honoured, up to a ceiling; cutting it shorter would drop work
//! the caller still waits for (a tool call with a 5-minute limit cut at one
//! minute). A call without one gets the default request timeout, except the
//! methods a service declares self-limited: they bound their own work by
//! limits of their own (an integration's connect and call timeouts), and get
//! the ceiling as a backstop only.

use std::{
    collections::{HashMap, HashSet},
    sync::Arc,
    time::Duration,
};

use http::{Request, Response};
use switchboard_proto::common::v1::ErrorReason;
use tonic::{Code, Status, body::Body};
use tonic_types::{ErrorDetails, StatusExt as _};
use tower::{Layer, Service};

use crate::{
    error::ERROR_DOMAIN,
    gate::{BoxFuture, Gate, Gated},
};

/// How long calls may take.
#[derive(Debug, Clone)]
pub struct Deadlines {
    /// Calls without `grpc-timeout`.
    pub default: Duration,
    /// The longest any call may take.
    pub ceiling: Duration,
    /// Paths (`/package.Service/Method`) that bound their own work and get
    /// the ceiling without `grpc-timeout`.
    pub self_limited: HashSet<String>,
}

impl Deadlines {
    /// The deadline of a call to `path` with `headers`.
    pub fn of(&self, path: &str, headers: &http::HeaderMap) -> Duration {
        match crate::grpc_timeout(headers) {
            Some(asked) => asked.min(self.ceiling),
            None if self.self_limited.contains(path) => self.ceiling,
            None => self.default,
        }
    }
}

/// Ends each call at its deadline with DEADLINE_EXCEEDED.
#[derive(Debug, Clone)]
pub struct DeadlineLayer {
    deadlines: Arc<Deadlines>,
}

impl DeadlineLayer {
    /// A layer applying `deadlines`.
    pub fn new(deadlines: Deadlines) -> Self {
        Self {
            deadlines: Arc::new(deadlines),
        }
    }
}

impl<S> Layer<S> for DeadlineLayer {
    type Service = Gated<S, Self>;

    fn layer(&self, inner: S) -> Self::Service {
        Gated::new(inner, self.clone())
    }
}

impl Gate for DeadlineLayer {
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
        let deadline = self.deadlines.of(request.uri().path(), request.headers());
        let call = inner.call(request);
        Box::pin(async move {
            match tokio::time::timeout(deadline, call).await {
                Ok(response) => response,
                Err(_) => Ok(deadline_exceeded(deadline).into_http()),
            }
        })
    }
}

fn deadline_exceeded(deadline: Duration) -> Status {
    Status::with_error_details(
        Code::DeadlineExceeded,
        format!(
            "the call did not finish within its deadline of {}",
            humantime::format_duration(deadline)
        ),
        ErrorDetails::with_error_info(
            ErrorReason::DeadlineExceeded.as_str_name(),
            ERROR_DOMAIN,
            HashMap::new(),
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deadlines() -> Deadlines {
        Deadlines {
            default: Duration::from_secs(60),
            ceiling: Duration::from_secs(900),
            self_limited: HashSet::from(["/p.S/Long".to_owned()]),
        }
    }

    fn headers(timeout: Option<&str>) -> http::HeaderMap {
        let mut headers = http::HeaderMap::new();
        if let Some(timeout) = timeout {
            headers.insert("grpc-timeout", timeout.parse().expect("ascii"));
        }
        headers
    }

    #[test]
    fn the_callers_deadline_wins_up_to_the_ceiling() {
        let d = deadlines();
        assert_eq!(
            d.of("/p.S/Short", &headers(Some("120S"))),
            Duration::from_secs(120)
        );
        assert_eq!(
            d.of("/p.S/Short", &headers(Some("2m"))),
            Duration::from_millis(2)
        );
        assert_eq!(
            d.of("/p.S/Short", &headers(Some("5H"))),
            Duration::from_secs(900)
        );
    }

    #[test]
    fn without_a_deadline_self_limited_methods_get_the_ceiling_and_others_the_default() {
        let d = deadlines();
        assert_eq!(d.of("/p.S/Short", &headers(None)), Duration::from_secs(60));
        assert_eq!(d.of("/p.S/Long", &headers(None)), Duration::from_secs(900));
        assert_eq!(
            d.of("/p.S/Short", &headers(Some("junk"))),
            Duration::from_secs(60)
        );
    }
}
