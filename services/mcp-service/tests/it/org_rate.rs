//! Calls per second per organization held across replicas: the replicas
//! spend tokens of one bucket per organization, kept in the shared
//! database (`org_rate_buckets`) on PostgreSQL.

use std::time::Duration;

use switchboard_proto::mcp::v1::{self as pb, mcp_service_client::McpServiceClient};
use switchboard_test_support::{DbKind, db_tests};
use tokio::time::Instant;
use tonic::{Code, Status, transport::Channel};
use tonic_types::StatusExt as _;

use crate::{
    org_limits::limits_file,
    support::{admin, req, start_with},
};

const RATE_REASON: &str = "ERROR_REASON_ORGANIZATION_RATE_LIMIT";

/// Makes `n` calls of the holder of `token` on each of `clients` at once;
/// returns how many were admitted, checking that every other one was
/// refused at the organization's rate.
async fn admitted(clients: &[McpServiceClient<Channel>], token: &str, n: usize) -> usize {
    let calls = clients.iter().flat_map(|client| {
        (0..n).map(move |_| {
            let mut client = client.clone();
            let request = req(pb::ListIntegrationsRequest::default(), token);
            async move { client.list_integrations(request).await.map(drop) }
        })
    });
    let results = futures::future::join_all(calls).await;
    let mut admitted = 0;
    for result in results {
        match result {
            Ok(()) => admitted += 1,
            Err(status) => assert_over_rate(&status),
        }
    }
    admitted
}

fn assert_over_rate(status: &Status) {
    assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
    let details = status.get_error_details();
    assert_eq!(
        details.error_info().expect("an ErrorInfo detail").reason,
        RATE_REASON,
        "{status:?}"
    );
    let delay = details.retry_info().expect("a retry delay").retry_delay;
    assert!(
        delay.is_some_and(|d| d > Duration::ZERO && d <= Duration::from_secs(1)),
        "{status:?}"
    );
}

/// Tokens a replica takes from its organization's bucket at once.
const GRANT_BATCH: u32 = 4;

#[tokio::test]
async fn an_organization_rate_holds_across_two_replicas_on_one_postgresql() {
    let dir = tempfile::tempdir().expect("a directory");
    // One call a second on average: the test's own second adds at most two.
    let file = limits_file(
        dir.path(),
        "[orgs.org-twelve]\nrate = 1\nburst = 12\n[orgs.org-three]\nrate = 1\nburst = 3\n",
    );
    let configure = |c: &mut switchboard_mcp_service::Config| {
        c.common.server.org_limits_file = Some(file.clone());
        c.common.server.org_rate_grant_batch = GRANT_BATCH;
    };
    let a = start_with(DbKind::Postgres, configure).await;
    let (_b_server, b) = a.replica(configure).await;
    let both = [a.client.clone(), b];

    // Ten calls on each replica: at most twelve admitted in all, not
    // twenty-four (each replica's own bucket of twelve). Tokens a replica
    // took are gone from the bucket whether it spends them or not, so when
    // one replica serves its ten calls before the other asks, it may end
    // holding up to a batch less one unspent: at least twelve less that
    // for each replica are admitted.
    let started = Instant::now();
    let twelve = admitted(&both, &admin("org-twelve"), 10).await;
    let refilled = usize::try_from(started.elapsed().as_secs()).expect("small") + 1;
    let stranded = both.len() * (GRANT_BATCH as usize - 1);
    assert!(
        (12 - stranded..=12 + refilled).contains(&twelve),
        "{twelve} admitted of a burst of 12"
    );
    // The bucket is empty for either replica: what either admits now is
    // what the rate put back since the test began (a second's token, or
    // more on a slow machine), never a replica's own burst.
    let mut more = 0;
    for client in &both {
        more += admitted(std::slice::from_ref(client), &admin("org-twelve"), 2).await;
    }
    let refilled = usize::try_from(started.elapsed().as_secs()).expect("small") + 1;
    assert!(
        twelve + more <= 12 + refilled,
        "{twelve} then {more} admitted of a burst of 12 and {refilled} tokens of refill"
    );
    // Another organization's own burst holds beside it, and one with the
    // defaults is served in full.
    let three = admitted(&both, &admin("org-three"), 3).await;
    assert!((3..=4).contains(&three), "{three} admitted of a burst of 3");
    assert_eq!(admitted(&both, &admin("org-default"), 20).await, 40);
}

/// The retry delay a refusal at the rate tells its caller.
fn retry_delay(status: &Status) -> Duration {
    assert_over_rate(status);
    status
        .get_error_details()
        .retry_info()
        .and_then(|info| info.retry_delay)
        .expect("a retry delay")
}

async fn a_caller_calling_again_at_once_is_held_back_within_the_most_held(kind: DbKind) {
    let dir = tempfile::tempdir().expect("a directory");
    let file = limits_file(
        dir.path(),
        "[orgs.org-loop]\nrate = 4\nburst = 1\n[orgs.org-held]\nrate = 1\nburst = 1\n",
    );
    let h = start_with(kind, |c| {
        c.common.server.org_limits_file = Some(file.clone());
        c.common.server.org_rate_grant_batch = 1;
        c.common.server.org_rate_refusal_hold = Duration::from_secs(2);
        c.common.server.org_rate_held_refusals = 1;
    })
    .await;

    // A closed loop that ignores the retry delay: each refusal is answered
    // when the next token comes (a quarter of a second), so the loop makes
    // a few calls a second, not hundreds.
    let token = admin("org-loop");
    let mut client = h.client.clone();
    let (started, mut calls, mut served) = (Instant::now(), 0, 0);
    while started.elapsed() < Duration::from_secs(1) {
        calls += 1;
        let request = req(pb::ListIntegrationsRequest::default(), &token);
        match client.list_integrations(request).await {
            Ok(_) => served += 1,
            Err(status) => {
                assert!(
                    retry_delay(&status) < Duration::from_millis(100),
                    "{status:?}"
                );
            }
        }
    }
    assert!(calls <= 12, "{calls} calls in a second");
    assert!((2..=6).contains(&served), "{served} served at 4 a second");

    // One refusal held at most: the next is answered at once, telling the
    // caller the whole wait.
    let token = admin("org-held");
    let mut client = h.client.clone();
    client
        .list_integrations(req(pb::ListIntegrationsRequest::default(), &token))
        .await
        .expect("the burst");
    let (mut first, request) = (
        client.clone(),
        req(pb::ListIntegrationsRequest::default(), &token),
    );
    let held = tokio::spawn(async move {
        let started = Instant::now();
        let status = first.list_integrations(request).await.expect_err("refused");
        (started.elapsed(), status)
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    let started = Instant::now();
    let status = client
        .list_integrations(req(pb::ListIntegrationsRequest::default(), &token))
        .await
        .expect_err("refused");
    assert!(started.elapsed() < Duration::from_millis(500));
    assert!(
        retry_delay(&status) > Duration::from_millis(500),
        "{status:?}"
    );
    let (waited, status) = held.await.expect("joined");
    assert!(waited > Duration::from_millis(700), "held {waited:?}");
    assert!(
        retry_delay(&status) < Duration::from_millis(300),
        "{status:?}"
    );
}

/// ListIntegrations as the holder of `token`, its answer's code.
async fn list_code(client: &mut McpServiceClient<Channel>, token: &str) -> Code {
    let request = req(pb::ListIntegrationsRequest::default(), token);
    match client.list_integrations(request).await {
        Ok(_) => Code::Ok,
        Err(status) => status.code(),
    }
}

/// `token` with the last character of its signature changed: the same
/// claims, never verified.
fn resigned(token: &str) -> String {
    let (rest, last) = token.split_at(token.len() - 1);
    format!("{rest}{}", if last == "A" { "B" } else { "A" })
}

async fn a_forged_token_naming_an_organization_costs_it_nothing(kind: DbKind) {
    let dir = tempfile::tempdir().expect("a directory");
    let file = limits_file(dir.path(), "[orgs.org-quiet]\nrate = 1\nburst = 3\n");
    let h = start_with(kind, |c| {
        c.common.server.org_limits_file = Some(file.clone());
        c.common.server.org_rate_grant_batch = 1;
        // Answered at once, so that the test is about what is spent.
        c.common.server.org_rate_refusal_hold = Duration::ZERO;
    })
    .await;
    let mut client = h.client.clone();
    let quiet = admin("org-quiet");
    let forged = [
        switchboard_auth::TokenMinter::hs256("not the service's secret")
            .token("org-quiet", "admin-user", &["admin"])
            .expect("a token"),
        resigned(&quiet),
    ];

    // Forged tokens naming the quiet organization, many more than its
    // burst: each refused as unauthenticated, none spends its tokens.
    for _ in 0..20 {
        for token in &forged {
            assert_eq!(list_code(&mut client, token).await, Code::Unauthenticated);
        }
    }
    for n in 0..3 {
        assert_eq!(
            list_code(&mut client, &quiet).await,
            Code::Ok,
            "call {n} of the burst"
        );
    }
    assert_eq!(
        list_code(&mut client, &quiet).await,
        Code::ResourceExhausted,
        "past the burst"
    );

    // The quiet organization is now over its rate and its token
    // remembered: its own token is refused before it is verified again,
    // a forged one with the same claims is still unauthenticated, and
    // neither lengthens the wait.
    let status = client
        .list_integrations(req(pb::ListIntegrationsRequest::default(), &quiet))
        .await
        .expect_err("refused at the rate");
    let wait = retry_delay(&status);
    for token in &forged {
        assert_eq!(list_code(&mut client, token).await, Code::Unauthenticated);
    }
    tokio::time::sleep(wait + Duration::from_millis(50)).await;
    assert_eq!(
        list_code(&mut client, &quiet).await,
        Code::Ok,
        "the next token, when the wait it was told is over"
    );
}

db_tests!(
    a_caller_calling_again_at_once_is_held_back_within_the_most_held,
    a_forged_token_naming_an_organization_costs_it_nothing,
);
