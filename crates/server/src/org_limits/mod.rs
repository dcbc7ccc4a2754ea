//! Limits per organization: calls in flight and calls per second.
//!
//! A call is in flight until its response body ends: a streaming call
//! (ExecuteRun, WatchRun) holds its organization's slot for as long as its
//! stream is open, however early its handler returned the stream.
//!
//! The global concurrency limit protects the process; these protect the
//! organizations from one another. Without them one organization whose MCP
//! server hangs fills every slot of the global limit with calls that never
//! end, and the service refuses everybody. Health and reflection carry no
//! organization and are never counted.

mod table;

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use governor::{
    DefaultDirectRateLimiter, Quota, RateLimiter,
    clock::{Clock as _, DefaultClock},
    state::keyed::DefaultKeyedStateStore,
};
use http::{Request, Response};
use switchboard_auth::Principal;
use switchboard_proto::common::v1::ErrorReason;
use tonic::{Code, Status, body::Body};
use tonic_types::{ErrorDetails, StatusExt as _};
use tower::{Layer, Service};

use crate::{
    error::ERROR_DOMAIN,
    gate::{BoxFuture, Gate, Gated},
    held_body::HeldBody,
};

pub use table::{OrgLimitTable, OrgLimits};

/// The retry delay suggested to a caller at its concurrency limit: calls in
/// flight end at times nobody knows, and a second neither spins the caller
/// nor is long against a tool call.
const CONCURRENCY_RETRY_DELAY: Duration = Duration::from_secs(1);

type KeyedLimiter = RateLimiter<String, DefaultKeyedStateStore<String>, DefaultClock>;

#[derive(Debug)]
struct Shared {
    limits: OrgLimitTable,
    /// Calls in flight per organization; an organization with none has no
    /// entry, so the map holds only organizations being served.
    in_flight: Mutex<HashMap<String, usize>>,
    /// The buckets of the organizations on the default rate.
    rate: KeyedLimiter,
    /// The bucket of each organization with limits of its own.
    own_rates: HashMap<String, DefaultDirectRateLimiter>,
}

fn quota(limits: &OrgLimits) -> Quota {
    Quota::per_second(limits.rate).allow_burst(limits.burst)
}

/// Enforces [`OrgLimits`] on calls that [`crate::AuthLayer`]
/// authenticated; must sit after it.
#[derive(Debug, Clone)]
pub struct OrgLimitLayer {
    shared: Arc<Shared>,
}

impl OrgLimitLayer {
    /// A layer enforcing each organization's `limits`.
    pub fn new(limits: OrgLimitTable) -> Self {
        let own_rates = limits
            .overrides()
            .map(|(org, l)| (org.to_owned(), RateLimiter::direct(quota(l))))
            .collect();
        Self {
            shared: Arc::new(Shared {
                rate: RateLimiter::keyed(quota(&limits.defaults())),
                limits,
                in_flight: Mutex::new(HashMap::new()),
                own_rates,
            }),
        }
    }

    /// Forgets the buckets of organizations that are full again, so that the
    /// rate limiter's memory follows the organizations recently active.
    pub fn forget_idle(&self) {
        self.shared.rate.retain_recent();
        self.shared.rate.shrink_to_fit();
    }

    /// Calls [`Self::forget_idle`] every `period` until aborted.
    pub fn spawn_forgetting(&self, period: Duration) -> tokio::task::JoinHandle<()> {
        let layer = self.clone();
        tokio::spawn(async move {
            let mut ticker = tokio::time::interval(period);
            loop {
                ticker.tick().await;
                layer.forget_idle();
            }
        })
    }
}

impl<S> Layer<S> for OrgLimitLayer {
    type Service = Gated<S, Self>;

    fn layer(&self, inner: S) -> Self::Service {
        Gated::new(inner, self.clone())
    }
}

/// One call counted against its organization until dropped (with the
/// call's response body, when it is admitted).
#[derive(Debug)]
struct Slot {
    shared: Arc<Shared>,
    org: String,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut in_flight = lock(&self.shared.in_flight);
        if let Some(count) = in_flight.get_mut(&self.org) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                in_flight.remove(&self.org);
            }
        }
    }
}

fn lock(map: &Mutex<HashMap<String, usize>>) -> std::sync::MutexGuard<'_, HashMap<String, usize>> {
    // The map holds plain counts that every holder leaves consistent, so a
    // panic elsewhere while holding it leaves nothing to repair.
    map.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Shared {
    /// Admits a call of `org` or says why not.
    fn admit(self: &Arc<Self>, org: &str) -> Result<Slot, Status> {
        let limits = self.limits.of(org);
        {
            let mut in_flight = lock(&self.in_flight);
            let count = in_flight.entry(org.to_owned()).or_insert(0);
            if *count >= limits.concurrency {
                return Err(concurrency_refusal(limits.concurrency));
            }
            *count += 1;
        }
        // From here the slot is held; dropping it on refusal gives it back.
        let slot = Slot {
            shared: self.clone(),
            org: org.to_owned(),
        };
        self.check_rate(org, &limits)?;
        Ok(slot)
    }

    /// Takes a token of `org`'s bucket or says how long to wait for one.
    fn check_rate(&self, org: &str, limits: &OrgLimits) -> Result<(), Status> {
        let checked = match self.own_rates.get(org) {
            Some(own) => own.check(),
            None => self.rate.check_key(&org.to_owned()),
        };
        let Err(not_until) = checked else {
            return Ok(());
        };
        let wait = not_until.wait_time_from(DefaultClock::default().now());
        Err(refusal(
            ErrorReason::OrganizationRateLimit,
            format!(
                "your organization made more than {} calls per second; retry after {} ms",
                limits.rate,
                wait.as_millis().max(1)
            ),
            limits.rate.to_string(),
            wait,
        ))
    }
}

/// The refusal of a call of an organization with `limit` calls in flight.
fn concurrency_refusal(limit: usize) -> Status {
    refusal(
        ErrorReason::OrganizationConcurrencyLimit,
        format!("your organization has {limit} calls in flight, its limit; retry when one ends"),
        limit.to_string(),
        CONCURRENCY_RETRY_DELAY,
    )
}

fn refusal(reason: ErrorReason, message: String, limit: String, retry: Duration) -> Status {
    let mut details = ErrorDetails::with_error_info(
        reason.as_str_name(),
        ERROR_DOMAIN,
        HashMap::from([("limit".to_owned(), limit)]),
    );
    details.set_retry_info(Some(retry.max(Duration::from_millis(1))));
    Status::with_error_details(Code::ResourceExhausted, message, details)
}

impl Gate for OrgLimitLayer {
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
        let Some(org) = request
            .extensions()
            .get::<Principal>()
            .map(|p| p.org_id.clone())
        else {
            // Health and reflection: no organization to count.
            return Box::pin(inner.call(request));
        };
        match self.shared.admit(&org) {
            Ok(slot) => {
                let call = inner.call(request);
                Box::pin(async move {
                    let response = call.await?;
                    Ok(response.map(|body| Body::new(HeldBody::new(body, slot))))
                })
            }
            Err(status) => {
                tracing::debug!(org = %org, reason = %status.message(), "call refused at the organization's limit");
                let response = status.into_http();
                Box::pin(async move { Ok(response) })
            }
        }
    }
}
