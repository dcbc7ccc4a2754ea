//! The cost of the organization limits per call: a call of an organization
//! far from its limits through the gate (its rate bucket, its calls in
//! flight, the slot held with the response body), against the same service
//! without the gate, alternating in batches so that whatever else the
//! machine does slows both alike. Then the same with every call of the
//! organization at its limit, refused at once (queue wait 0). See
//! BENCHMARKS.md.
//!
//! `cargo bench -p switchboard-server --bench org_limits`

use std::{
    convert::Infallible,
    num::NonZeroU32,
    time::{Duration, Instant},
};

use http::{Request, Response};
use switchboard_auth::Principal;
use switchboard_server::{
    GrantSettings, OrgLimitLayer, OrgLimitTable, OrgLimits, OrgWaits, SharedStores,
};
use tonic::body::Body;
use tower::{Layer as _, Service, ServiceExt as _};

/// Calls per batch, and batches per path.
const BATCH: usize = 1_000;
const BATCHES: usize = 200;

fn layer(concurrency: usize) -> OrgLimitLayer {
    let ttl = Duration::from_secs(10);
    OrgLimitLayer::new(
        OrgLimitTable::uniform(OrgLimits {
            concurrency,
            rate: NonZeroU32::MAX,
            burst: NonZeroU32::MAX,
            sessions: None,
            stdio_processes: None,
            data_source_bytes: None,
        }),
        "bench".to_owned(),
        SharedStores::in_memory(ttl),
        GrantSettings {
            batch: 8,
            ttl,
            token_batch: 16,
        },
        OrgWaits {
            queue: Duration::ZERO,
            refusal_hold: Duration::ZERO,
            held_refusals: 0,
            refused_tokens: 0,
        },
    )
}

fn request() -> Request<()> {
    let mut request = Request::new(());
    request.extensions_mut().insert(Principal::new(
        "org-bench",
        "user",
        vec!["member".to_owned()],
    ));
    request
}

/// Runs `BATCH` calls through `service`, each response dropped at once (the
/// slot given back), and returns the time they took.
async fn batch<S>(service: &mut S) -> Duration
where
    S: Service<Request<()>, Response = Response<Body>, Error = Infallible>,
{
    let started = Instant::now();
    for _ in 0..BATCH {
        let response = service
            .ready()
            .await
            .expect("ready")
            .call(request())
            .await
            .expect("answered");
        drop(response);
    }
    started.elapsed()
}

fn per_call(total: Duration) -> f64 {
    total.as_secs_f64() * 1e9 / (BATCH * BATCHES) as f64
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let bare = tower::service_fn(|_: Request<()>| async {
        Ok::<_, Infallible>(Response::new(Body::empty()))
    });
    let mut admitted = layer(256).layer(bare);
    let mut refused = layer(1).layer(bare);
    // The one slot of the refusing organization is held throughout.
    let held = refused
        .ready()
        .await
        .expect("ready")
        .call(request())
        .await
        .expect("admitted");
    let mut plain = bare;
    let (mut t_plain, mut t_admitted, mut t_refused) =
        (Duration::ZERO, Duration::ZERO, Duration::ZERO);
    // A warm-up batch each.
    batch(&mut plain).await;
    batch(&mut admitted).await;
    batch(&mut refused).await;
    for _ in 0..BATCHES {
        t_plain += batch(&mut plain).await;
        t_admitted += batch(&mut admitted).await;
        t_refused += batch(&mut refused).await;
    }
    drop(held);
    println!(
        "{} calls per path, in batches of {BATCH}, alternating; one thread",
        BATCH * BATCHES
    );
    println!(
        "without the gate                         {:>8.0} ns per call",
        per_call(t_plain)
    );
    println!(
        "through the gate, admitted               {:>8.0} ns per call",
        per_call(t_admitted)
    );
    println!(
        "through the gate, refused at the limit   {:>8.0} ns per call",
        per_call(t_refused)
    );
    println!(
        "the limits' cost per admitted call: {:+.0} ns",
        per_call(t_admitted) - per_call(t_plain)
    );
}
