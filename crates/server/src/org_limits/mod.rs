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
//!
//! A call that finds its organization at its concurrency limit waits its
//! turn in its organization's own line, for as long as the caller can
//! afford (nine tenths of its `grpc-timeout`, at most the queue wait
//! setting), and is refused only when no slot came free by then.
//!
//! Calls in flight and calls per second are counted across the replicas
//! of a service: each replica admits calls from a grant of slots it holds
//! in a shared store ([`SlotGrants`]) and spends tokens it took in batches
//! from its organization's shared bucket ([`TokenBuckets`]), so that all
//! replicas together keep to the limits without a round trip per call.
//!
//! A call refused at its organization's rate is answered after a pause
//! ([`RefusalHold`]), and the token it carried is remembered until the
//! organization's next token, so that the same token's next calls are
//! refused before it is verified again ([`EarlyRefusalLayer`]).

mod early;
mod grants;
mod hold;
mod pg_tokens;
mod postgres;
mod rate;
mod slots;
mod table;
mod tokens;

use std::{collections::HashMap, num::NonZeroU32, sync::Arc, time::Duration};

use http::{Request, Response};
use secrecy::ExposeSecret as _;
use switchboard_auth::{BearerToken, Principal};
use switchboard_proto::common::v1::ErrorReason;
use tokio::time::Instant;
use tonic::{Code, Status, body::Body};
use tonic_types::{ErrorDetails, StatusExt as _};
use tower::{Layer, Service};

use crate::{
    auth_layer::bearer_token,
    error::{ApiError, ERROR_DOMAIN},
    gate::{BoxFuture, Gate, Gated},
    held_body::HeldBody,
};

pub use grants::{Ask, MemorySlotGrants, SlotGrants, grant};
pub use pg_tokens::PgTokenBuckets;
pub use postgres::PgSlotGrants;
pub use slots::{GrantSettings, NotAdmitted, Slots as GrantedSlots};
pub use table::{OrgLimitTable, OrgLimits};
pub use tokens::{MemoryTokenBuckets, Taken, TokenAsk, TokenBuckets};

use early::{RefusedTokens, RefusedUntil};
use hold::RefusalHold;
use rate::{OverRate, Rate};
use slots::Slots;

/// The retry delay suggested to a caller at its concurrency limit: calls in
/// flight end at times nobody knows, and a second neither spins the caller
/// nor is long against a tool call.
const CONCURRENCY_RETRY_DELAY: Duration = Duration::from_secs(1);

#[derive(Debug)]
struct Shared {
    limits: OrgLimitTable,
    /// Calls in flight per organization, within this replica's grants.
    slots: Slots,
    /// Calls per second per organization, spent from this replica's
    /// tokens of the shared buckets.
    rate: Rate,
    /// The longest a call waits for a slot of its organization.
    queue_wait: Duration,
    /// Refusals at an organization's rate, held before they are answered.
    hold: RefusalHold,
    /// Tokens refused at their organization's rate, until its next token.
    refused_tokens: RefusedTokens,
}

/// How long calls at their organization's limits are kept before they are
/// answered.
#[derive(Debug, Clone, Copy)]
pub struct OrgWaits {
    /// The longest a call at its organization's concurrency limit waits for
    /// a slot.
    pub queue: Duration,
    /// The longest a refusal at an organization's rate is held before it is
    /// answered (never past the organization's next token).
    pub refusal_hold: Duration,
    /// The most refusals held at once; more are answered at once.
    pub held_refusals: usize,
    /// The most tokens refused at their organization's rate remembered at
    /// once, to refuse their next calls before verifying them again.
    pub refused_tokens: usize,
}

/// Why a call was not admitted.
enum Refused {
    /// Answered at once with this status.
    Now(Status),
    /// The organization, allowed `rate` calls a second, has no token
    /// before `wait`.
    OverRate { rate: NonZeroU32, wait: Duration },
}

/// Where the replicas of a service keep what they share of each
/// organization's limits: PostgreSQL when several replicas share a
/// database, memory when the process is the only one.
#[derive(Debug, Clone)]
pub struct SharedStores {
    /// Grants of calls in flight.
    pub slots: Arc<dyn SlotGrants>,
    /// Buckets of calls per second.
    pub tokens: Arc<dyn TokenBuckets>,
}

impl SharedStores {
    /// Both stores in the process's memory, grants lasting `ttl`.
    pub fn in_memory(ttl: Duration) -> Self {
        Self {
            slots: Arc::new(MemorySlotGrants::new(ttl)),
            tokens: Arc::new(MemoryTokenBuckets::new()),
        }
    }
}

/// Enforces [`OrgLimits`] on calls that [`crate::AuthLayer`]
/// authenticated; must sit after it.
#[derive(Debug, Clone)]
pub struct OrgLimitLayer {
    shared: Arc<Shared>,
}

impl OrgLimitLayer {
    /// A layer enforcing each organization's `limits`, counting calls in
    /// flight in grants and calls per second in buckets of `stores` as
    /// replica `replica`; a call at its organization's limit waits for a
    /// slot, and a refusal at its rate is held, as `waits` says.
    pub fn new(
        limits: OrgLimitTable,
        replica: String,
        stores: SharedStores,
        settings: GrantSettings,
        waits: OrgWaits,
    ) -> Self {
        Self {
            shared: Arc::new(Shared {
                rate: Rate::new(stores.tokens, settings.token_batch),
                limits,
                slots: Slots::new(replica, stores.slots, settings),
                queue_wait: waits.queue,
                hold: RefusalHold::new(waits.refusal_hold, waits.held_refusals),
                refused_tokens: RefusedTokens::new(waits.refused_tokens),
            }),
        }
    }

    /// The layer that refuses, before they are authenticated, the calls
    /// whose very token this layer refused at its organization's rate
    /// until that organization's next token; must sit before
    /// [`crate::AuthLayer`].
    pub fn early_refusals(&self) -> EarlyRefusalLayer {
        EarlyRefusalLayer {
            shared: self.shared.clone(),
        }
    }

    /// Forgets the tokens of organizations no call came for since the last
    /// time, so that the memory of the rates follows the organizations
    /// recently active.
    pub fn forget_idle(&self) {
        self.shared.rate.forget_idle();
    }

    /// Renews this replica's grants of calls in flight every `period` (well
    /// within their time-to-live) and gives back the slots left unused,
    /// until aborted.
    pub fn spawn_heartbeat(&self, period: Duration) -> tokio::task::JoinHandle<()> {
        let layer = self.clone();
        tokio::spawn(async move {
            let mut ticker = tokio::time::interval(period);
            ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                ticker.tick().await;
                layer.shared.slots.beat().await;
            }
        })
    }

    /// Gives up this replica's grants, so that the other replicas need not
    /// wait for them to expire (the process stops).
    pub async fn release(&self) {
        self.shared.slots.release().await;
    }

    /// Admits one call of `org` outside the gRPC stack (the MCP endpoint),
    /// against the same slots and tokens as the organization's gRPC calls:
    /// the call counts until the returned permit is dropped. At the
    /// concurrency limit it waits for a slot as a gRPC call does (nine
    /// tenths of `deadline`, at most the queue wait); a refusal is the
    /// status a gRPC call would get, its `RetryInfo` saying when to retry.
    /// A verified `token` refused at the rate is remembered, so that its
    /// next gRPC calls are refused before verification until the next token.
    pub async fn admit(
        &self,
        org: &str,
        token: Option<&BearerToken>,
        deadline: Option<Duration>,
    ) -> Result<OrgPermit, Status> {
        let shared = self.shared.clone();
        let until = Instant::now() + shared.wait_for(deadline);
        match shared.clone().admit(org.to_owned(), until).await {
            Ok(slot) => Ok(OrgPermit { _slot: slot }),
            Err(refused) => Err(shared.answer(org, refused, token, deadline).await),
        }
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

/// One call of an organization admitted by [`OrgLimitLayer::admit`],
/// counted against its organization's calls in flight until dropped.
#[derive(Debug)]
pub struct OrgPermit {
    _slot: Slot,
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
        self.shared.slots.end(&self.org);
    }
}

impl Shared {
    /// How long a call with `headers` may wait for a slot: nine tenths of
    /// what is left of its deadline, so that a refusal reaches the caller
    /// before the deadline does, and at most the queue wait.
    fn wait_for(&self, deadline: Option<Duration>) -> Duration {
        match deadline {
            Some(deadline) => self.queue_wait.min(deadline - deadline / 10),
            None => self.queue_wait,
        }
    }

    /// Admits a call of `org`, waiting for a slot until `until`, or says
    /// why not.
    async fn admit(self: Arc<Self>, org: String, until: Instant) -> Result<Slot, Refused> {
        let limits = self.limits.of(&org);
        match self.slots.admit(&org, limits.concurrency, until).await {
            Ok(()) => {}
            Err(NotAdmitted::AtLimit) => {
                return Err(Refused::Now(concurrency_refusal(limits.concurrency)));
            }
            Err(NotAdmitted::Store(error)) => {
                tracing::warn!(org = %org, error = %format!("{error:#}"), "calls in flight not counted");
                return Err(Refused::Now(Status::from(ApiError::Unavailable(
                    "your organization's calls in flight could not be counted; retry shortly"
                        .to_owned(),
                ))));
            }
        }
        // From here the slot is held; dropping it on refusal gives it back.
        let slot = Slot {
            shared: self.clone(),
            org,
        };
        self.check_rate(&slot.org, &limits).await?;
        Ok(slot)
    }

    /// Spends a token of `org`'s bucket or says how long to wait for one.
    async fn check_rate(&self, org: &str, limits: &OrgLimits) -> Result<(), Refused> {
        match self.rate.admit(org, limits.rate, limits.burst).await {
            Ok(()) => Ok(()),
            Err(OverRate::Empty(wait)) => Err(Refused::OverRate {
                rate: limits.rate,
                wait,
            }),
            Err(OverRate::Store(error)) => {
                tracing::warn!(org = %org, error = %format!("{error:#}"), "calls per second not counted");
                Err(Refused::Now(Status::from(ApiError::Unavailable(
                    "your organization's calls per second could not be counted; retry shortly"
                        .to_owned(),
                ))))
            }
        }
    }

    /// The answer to a call of `org` `refused`: a refusal at the
    /// organization's rate after a pause (no longer than the wait for its
    /// next token and its place among the organization's refusals paused,
    /// nor than `deadline` allows), telling the caller to wait only what is
    /// left. The token of a call refused at the rate, `token`, is
    /// remembered until the wait ends.
    async fn answer(
        &self,
        org: &str,
        refused: Refused,
        token: Option<&BearerToken>,
        deadline: Option<Duration>,
    ) -> Status {
        let (rate, wait) = match refused {
            Refused::Now(status) => return status,
            Refused::OverRate { rate, wait } => (rate, wait),
        };
        if let Some(token) = token {
            let until = Instant::now() + wait;
            let org = org.to_owned();
            self.refused_tokens
                .remember(token.0.expose_secret(), RefusedUntil { org, rate, until });
        }
        self.paused_refusal(org, rate, wait, deadline).await
    }

    /// A refusal of `org`, allowed `rate` calls a second and with no token
    /// before `wait`, after its pause.
    async fn paused_refusal(
        &self,
        org: &str,
        rate: NonZeroU32,
        wait: Duration,
        deadline: Option<Duration>,
    ) -> Status {
        let within = deadline.map(|deadline| deadline - deadline / 10);
        let paused = self.hold.pause(org, rate, wait, within).await;
        rate_refusal(rate, wait.saturating_sub(paused))
    }
}

/// The refusal of a call of an organization allowed `rate` calls a second,
/// whose next token comes after `wait`.
fn rate_refusal(rate: NonZeroU32, wait: Duration) -> Status {
    refusal(
        ErrorReason::OrganizationRateLimit,
        format!(
            "your organization made more than {rate} calls per second; retry after {} ms",
            wait.as_millis().max(1)
        ),
        rate.to_string(),
        wait,
    )
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
        let layer = self.clone();
        let deadline = crate::grpc_timeout(request.headers());
        Box::pin(async move {
            let token = request.extensions().get::<BearerToken>().cloned();
            match layer.admit(&org, token.as_ref(), deadline).await {
                Ok(permit) => {
                    let response = inner.call(request).await?;
                    Ok(response.map(|body| Body::new(HeldBody::new(body, permit))))
                }
                Err(status) => {
                    tracing::debug!(org = %org, reason = %status.message(), "call refused at the organization's limit");
                    Ok(status.into_http())
                }
            }
        })
    }
}

/// Refuses, before authentication, a call whose exact token [`OrgLimitLayer`]
/// refused at its organization's rate, until that organization's next
/// token (see `early.rs` for why a forged token gains nothing here).
#[derive(Debug, Clone)]
pub struct EarlyRefusalLayer {
    shared: Arc<Shared>,
}

impl<S> Layer<S> for EarlyRefusalLayer {
    type Service = Gated<S, Self>;

    fn layer(&self, inner: S) -> Self::Service {
        Gated::new(inner, self.clone())
    }
}

impl Gate for EarlyRefusalLayer {
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
        let refused = bearer_token(request.headers())
            .ok()
            .and_then(|token| self.shared.refused_tokens.refused(token));
        let Some(RefusedUntil { org, rate, until }) = refused else {
            return Box::pin(inner.call(request));
        };
        let shared = self.shared.clone();
        let deadline = crate::grpc_timeout(request.headers());
        Box::pin(async move {
            let wait = until.saturating_duration_since(Instant::now());
            let status = shared.paused_refusal(&org, rate, wait, deadline).await;
            tracing::debug!(org = %org, "call refused at the organization's rate before its token was verified again");
            Ok(status.into_http())
        })
    }
}
