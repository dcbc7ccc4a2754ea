//! What a session's copy on one replica sends on its own (its upstream
//! session's log messages and resource updates) reaches the client's own
//! stream (its GET) on another replica; messages left for other replicas
//! are bounded.

use std::{net::SocketAddr, time::Duration};

use futures::StreamExt as _;
use serde_json::{Value, json};
use switchboard_mcp_service::{
    domain::endpoint_session::{EndpointSessionStore, RelayKind, Relayed},
    outbound::storage::endpoint_sessions::SqlEndpointSessions,
};
use switchboard_test_support::{DbKind, db_tests, grpc::free_port};

use crate::{
    everything::start_http_everything,
    mcp_endpoint::{initialize_url, setup_with},
    support::{admin, create, http_integration, member, start_with},
};

/// A resource of the reference server's.
const DOCUMENT: &str = "demo://resource/dynamic/text/1";

/// `message` POSTed on session `session` at `url` as the session's owner.
async fn post(url: &str, session: &str, message: Value) -> reqwest::StatusCode {
    crate::mcp_endpoint_replicas::post(url, session, &member("org-a"), message).await
}

/// Reads the SSE `stream` until an event contains `text`, for at most
/// `within`; whether one did.
async fn hears(
    stream: &mut (impl futures::Stream<Item = reqwest::Result<bytes::Bytes>> + Unpin),
    text: &str,
    within: Duration,
) -> bool {
    let mut heard = String::new();
    tokio::time::timeout(within, async {
        while let Some(Ok(chunk)) = stream.next().await {
            heard.push_str(&String::from_utf8_lossy(&chunk));
            if heard.contains(text) {
                return true;
            }
        }
        false
    })
    .await
    .unwrap_or(false)
}

async fn a_copys_own_messages_reach_the_clients_stream_on_another_replica(kind: DbKind) {
    let (_everything, upstream) = start_http_everything();
    let addrs: Vec<SocketAddr> = (0..2)
        .map(|_| SocketAddr::from(([127, 0, 0, 1], free_port().expect("a port"))))
        .collect();
    let mut h = start_with(kind, |config| config.endpoint.listen = Some(addrs[0])).await;
    create(
        &mut h,
        &admin("org-a"),
        http_integration("everything", &upstream),
    )
    .await;
    let (_b, _client) = h
        .replica(|config| config.endpoint.listen = Some(addrs[1]))
        .await;
    let [on_a, on_b] = [0, 1].map(|i| format!("http://{}/mcp/integrations/everything", addrs[i]));

    let opened = initialize_url(&on_a, &member("org-a")).await;
    let session = opened.headers()["mcp-session-id"]
        .to_str()
        .expect("text")
        .to_owned();
    drop(opened);
    let initialized = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
    assert_eq!(
        post(&on_a, &session, initialized).await,
        reqwest::StatusCode::ACCEPTED
    );
    // The client's own stream, on replica A.
    let get = reqwest::Client::new()
        .get(&on_a)
        .bearer_auth(member("org-a"))
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-11-25")
        .send()
        .await
        .expect("the stream opens");
    assert_eq!(get.status(), reqwest::StatusCode::OK);
    let mut stream = get.bytes_stream();

    // On replica B: B's copy of the session, with upstream sessions of its
    // own, subscribes; the server acknowledges with a log message to that
    // upstream session.
    let level = json!({ "jsonrpc": "2.0", "id": 2, "method": "logging/setLevel", "params": { "level": "debug" } });
    assert_eq!(post(&on_b, &session, level).await, reqwest::StatusCode::OK);
    let subscribe = json!({ "jsonrpc": "2.0", "id": 3, "method": "resources/subscribe", "params": { "uri": DOCUMENT } });
    assert_eq!(
        post(&on_b, &session, subscribe).await,
        reqwest::StatusCode::OK
    );

    assert!(
        hears(
            &mut stream,
            &format!("Subscribe Resource request for URI: {DOCUMENT}"),
            Duration::from_secs(10)
        )
        .await,
        "B's copy's log message reaches the client's stream on A"
    );
}

async fn messages_left_for_another_replica_stop_at_the_limit_of_their_kind(kind: DbKind) {
    let e = setup_with(kind, |_| {}).await;
    let opened = initialize_url(&e.url("example"), &member("org-a")).await;
    let session = opened.headers()["mcp-session-id"]
        .to_str()
        .expect("text")
        .to_owned();
    drop(opened);
    let pool = sqlx::AnyPool::connect(&e.h.db.url)
        .await
        .expect("raw access");
    let store = SqlEndpointSessions::new(pool);
    let message = |kind| Relayed {
        kind,
        replica: "0123456789abcdef".to_owned(),
        session_id: session.clone(),
        message_json: r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#.to_owned(),
    };
    for i in 0..16 {
        assert!(
            store
                .relay(&message(RelayKind::Notice), 16, 1)
                .await
                .expect("stored"),
            "notice {i} is left"
        );
    }
    assert!(
        !store
            .relay(&message(RelayKind::Notice), 16, 1)
            .await
            .expect("stored"),
        "the 17th notice waiting is refused"
    );
    assert!(
        store
            .relay(&message(RelayKind::Answer), 16, 1)
            .await
            .expect("stored"),
        "answers have a limit of their own"
    );
    let taken = store
        .take_relayed("0123456789abcdef", 64)
        .await
        .expect("taken");
    assert_eq!(taken.len(), 17);
    assert_eq!(
        taken.iter().filter(|m| m.kind == RelayKind::Notice).count(),
        16
    );
    assert!(
        store
            .take_relayed("0123456789abcdef", 64)
            .await
            .expect("taken")
            .is_empty(),
        "each is taken once"
    );
}

db_tests!(
    a_copys_own_messages_reach_the_clients_stream_on_another_replica,
    messages_left_for_another_replica_stop_at_the_limit_of_their_kind,
);
