//! The MCP endpoint (`/mcp/integrations/{slug}`) driven by the official
//! TypeScript SDK's client, against the example MCP server behind it:
//! listings, calls, reads and prompts pass through; policies, organizations,
//! tokens and the audit trail hold as they do for gRPC.

use std::{net::SocketAddr, path::PathBuf, time::Duration};

use serde_json::{Value, json};
use switchboard_auth::Claims;
use switchboard_example_mcp_server::{HttpServerOptions, RunningHttpServer, spawn_http};
use switchboard_proto::mcp::v1::{
    self as pb, audit_service_client::AuditServiceClient,
    policy_service_client::PolicyServiceClient,
};
use switchboard_test_support::{DbKind, db_tests, grpc::free_port, minter};

use crate::support::{Harness, admin, create, http_integration, member, req, start_with};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// mcp-service with its MCP endpoint on, and the example server as
/// integration `example` of org-a.
pub(crate) struct Endpoint {
    pub h: Harness,
    upstream: RunningHttpServer,
    addr: SocketAddr,
    pub id: String,
}

async fn setup(kind: DbKind) -> Endpoint {
    setup_with(kind, |_| {}).await
}

pub(crate) async fn setup_with(
    kind: DbKind,
    configure: impl FnOnce(&mut switchboard_mcp_service::Config),
) -> Endpoint {
    setup_as(kind, &admin("org-a"), configure).await
}

/// [`setup_with`], the integration created with `token`.
async fn setup_as(
    kind: DbKind,
    token: &str,
    configure: impl FnOnce(&mut switchboard_mcp_service::Config),
) -> Endpoint {
    let upstream = spawn_http(HttpServerOptions::default())
        .await
        .expect("upstream");
    let addr = SocketAddr::from(([127, 0, 0, 1], free_port().expect("a port")));
    let mut h = start_with(kind, |config| {
        config.endpoint.listen = Some(addr);
        configure(config);
    })
    .await;
    let id = create(&mut h, token, http_integration("example", &upstream.url()))
        .await
        .id;
    Endpoint {
        h,
        upstream,
        addr,
        id,
    }
}

impl Endpoint {
    /// Where the endpoint listens.
    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub(crate) fn url(&self, slug: &str) -> String {
        format!("http://{}/mcp/integrations/{slug}", self.addr)
    }

    /// Runs the SDK client against `slug` with `token` through `steps`.
    pub(crate) async fn client(&self, slug: &str, token: Option<&str>, steps: Value) -> Value {
        sdk_client(&self.url(slug), token, steps).await
    }
}

/// The official TypeScript SDK client, run by node with a plan.
pub(crate) async fn sdk_client(url: &str, token: Option<&str>, steps: Value) -> Value {
    sdk_client_with(url, token, None, steps).await
}

/// [`sdk_client`], answering every elicitation with `answer` when given
/// (the client then declares form elicitation).
pub(crate) async fn sdk_client_with(
    url: &str,
    token: Option<&str>,
    answer: Option<&Value>,
    steps: Value,
) -> Value {
    let plan = json!({ "url": url, "token": token, "steps": steps, "elicitation": answer });
    sdk_client_plan(plan).await
}

/// The official TypeScript SDK client, run with a whole plan (see
/// `fixtures/mcp_client.mjs`).
pub(crate) async fn sdk_client_plan(plan: Value) -> Value {
    let sdk = root().join(".tools/node_modules/@modelcontextprotocol/sdk");
    assert!(
        sdk.exists(),
        "{} is missing: run `make tools`",
        sdk.display()
    );
    let mut run = tokio::process::Command::new("node");
    run.arg(root().join("services/mcp-service/tests/it/fixtures/mcp_client.mjs"))
        .arg(plan.to_string())
        .env("MCP_SDK_DIR", &sdk)
        .kill_on_drop(true);
    client_report(run).await
}

/// The official Python SDK client (`mcp`, in `.tools/venv`), run with a
/// plan; `mode` is the SDK's (`auto` or `legacy`).
pub(crate) async fn python_client(
    url: &str,
    token: Option<&str>,
    mode: &str,
    steps: Value,
) -> Value {
    python_client_with(url, token, mode, None, steps).await
}

/// [`python_client`], answering every elicitation with `answer` when given.
pub(crate) async fn python_client_with(
    url: &str,
    token: Option<&str>,
    mode: &str,
    answer: Option<&Value>,
    steps: Value,
) -> Value {
    let plan =
        json!({ "url": url, "token": token, "mode": mode, "steps": steps, "elicitation": answer });
    python_client_plan(plan).await
}

/// The official Python SDK client, run with a whole plan (see
/// `fixtures/mcp_client.py`).
pub(crate) async fn python_client_plan(plan: Value) -> Value {
    let python = root().join(".tools/venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run `make tools`",
        python.display()
    );
    let mut run = tokio::process::Command::new(python);
    run.arg(root().join("services/mcp-service/tests/it/fixtures/mcp_client.py"))
        .arg(plan.to_string())
        .kill_on_drop(true);
    client_report(run).await
}

/// What a client fixture printed: its JSON report of the plan's steps. A
/// client past its bound is stopped and the test fails with what it wrote
/// on stderr (each step as it ended), to tell where it hung.
async fn client_report(mut client: tokio::process::Command) -> Value {
    use tokio::io::AsyncReadExt as _;
    client
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = client.spawn().expect("the client runs");
    let read = |pipe: Option<Box<dyn tokio::io::AsyncRead + Send + Unpin>>| {
        tokio::spawn(async move {
            let mut text = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut text).await;
            }
            String::from_utf8_lossy(&text).into_owned()
        })
    };
    let stdout = read(child.stdout.take().map(|p| Box::new(p) as _));
    let stderr = read(child.stderr.take().map(|p| Box::new(p) as _));
    // A bound on a hung client, not on speed: 200 calls over fresh
    // connections through two replicas on PostgreSQL take far longer under
    // a loaded CI machine than alone.
    let finished = tokio::time::timeout(Duration::from_secs(180), child.wait()).await;
    if finished.is_err() {
        let _ = child.kill().await;
    }
    let (stdout, stderr) = (
        stdout.await.unwrap_or_default(),
        stderr.await.unwrap_or_default(),
    );
    let tail = &stderr[stderr.len().saturating_sub(4000)..];
    assert!(
        finished.is_ok(),
        "the client did not finish; its stderr ends: {tail}"
    );
    serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("the client printed no JSON ({e}): {stdout}\n{tail}"))
}

pub(crate) fn step(out: &Value, i: usize) -> &Value {
    let step = &out["steps"][i];
    assert!(step.get("ok").is_some(), "step {i} failed: {step}");
    &step["ok"]
}

pub(crate) fn names(list: &Value) -> Vec<String> {
    let mut names: Vec<String> = list
        .as_array()
        .expect("a list")
        .iter()
        .map(|item| item["name"].as_str().expect("a name").to_owned())
        .collect();
    names.sort();
    names
}

async fn the_sdk_client_lists_calls_reads_and_gets_prompts_through_an_integration(kind: DbKind) {
    let e = setup(kind).await;
    let out = e
        .client(
            "example",
            Some(&member("org-a")),
            json!([
                { "op": "listTools" },
                { "op": "callTool", "name": "echo", "arguments": { "text": "through switchboard" } },
                { "op": "listResources" },
                { "op": "readResource", "uri": "docs://readme" },
                { "op": "listPrompts" },
                { "op": "getPrompt", "name": "summarize", "arguments": { "topic": "bridges" } },
                { "op": "callTool", "name": "fail", "arguments": { "message": "on purpose" } },
                { "op": "listResourceTemplates" },
            ]),
        )
        .await;
    assert_eq!(out["connected"], true, "{out}");
    assert!(out["sessionId"].is_string(), "a session was opened: {out}");
    let tools = names(&step(&out, 0)["tools"]);
    assert!(tools.contains(&"echo".to_owned()), "{tools:?}");
    assert!(tools.contains(&"add".to_owned()), "{tools:?}");
    let echo = step(&out, 1);
    assert_eq!(echo["content"][0]["text"], "through switchboard", "{echo}");
    let resources = step(&out, 2)["resources"].as_array().expect("resources");
    assert!(
        resources.iter().any(|r| r["uri"] == "docs://readme"),
        "{resources:?}"
    );
    let readme = step(&out, 3);
    assert_eq!(readme["contents"][0]["uri"], "docs://readme");
    assert!(readme["contents"][0]["text"].is_string(), "{readme}");
    assert_eq!(
        names(&step(&out, 4)["prompts"]),
        vec!["summarize".to_owned()]
    );
    let prompt = step(&out, 5);
    assert!(
        prompt["messages"][0]["content"]["text"]
            .as_str()
            .is_some_and(|t| t.contains("bridges")),
        "{prompt}"
    );
    let failed = step(&out, 6);
    assert_eq!(
        failed["isError"], true,
        "a tool's error is a result: {failed}"
    );
    assert!(
        !step(&out, 7)["resourceTemplates"]
            .as_array()
            .expect("templates")
            .is_empty()
    );
}

async fn a_tool_a_policy_denies_is_neither_listed_nor_callable(kind: DbKind) {
    let e = setup(kind).await;
    let mut policies = PolicyServiceClient::connect(e.h.server.url())
        .await
        .expect("connects");
    policies
        .put_policy(req(
            pb::PutPolicyRequest {
                policy: Some(pb::Policy {
                    name: "no-add".into(),
                    rules: vec![pb::PolicyRule {
                        name: "deny-add".into(),
                        condition: r#"tool.name == "add""#.into(),
                        effect: pb::PolicyEffect::Deny.into(),
                        reason: "adding is not allowed".into(),
                        ..Default::default()
                    }],
                    ..Default::default()
                }),
                expected_version: 0,
            },
            &admin("org-a"),
        ))
        .await
        .expect("the policy is written");
    let out = e
        .client(
            "example",
            Some(&member("org-a")),
            json!([
                { "op": "listTools" },
                { "op": "callTool", "name": "add", "arguments": { "a": 1, "b": 2 } },
                { "op": "callTool", "name": "echo", "arguments": { "text": "still fine" } },
            ]),
        )
        .await;
    let tools = names(&step(&out, 0)["tools"]);
    assert!(!tools.contains(&"add".to_owned()), "{tools:?}");
    assert!(tools.contains(&"echo".to_owned()), "{tools:?}");
    let denied = &out["steps"][1];
    assert!(
        denied["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("adding is not allowed")),
        "{denied}"
    );
    assert_eq!(step(&out, 2)["content"][0]["text"], "still fine");
}

async fn another_organizations_integration_is_not_found_like_a_missing_one(kind: DbKind) {
    let e = setup(kind).await;
    let http = reqwest::Client::new();
    let initialize = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": { "name": "probe", "version": "1" }
        }
    });
    let mut answers = Vec::new();
    for slug in ["example", "nothing_here", "Not-A-Slug"] {
        let response = http
            .post(e.url(slug))
            .bearer_auth(member("org-b"))
            .header("accept", "application/json, text/event-stream")
            .json(&initialize)
            .send()
            .await
            .expect("answers");
        let status = response.status();
        answers.push((status, response.text().await.expect("a body")));
    }
    assert_eq!(answers[0].0, reqwest::StatusCode::NOT_FOUND);
    assert!(
        answers.iter().all(|a| a == &answers[0]),
        "every missing integration answers alike: {answers:?}"
    );
    let out = e.client("example", Some(&member("org-b")), json!([])).await;
    assert_eq!(out["connected"], false, "{out}");
}

async fn no_token_is_401_naming_the_protected_resource_metadata(kind: DbKind) {
    const ISSUER: &str = "https://login.example.com";
    let mut claims = Claims::new("org-a", "admin-user", &["admin"], Duration::from_secs(600));
    claims.iss = Some(ISSUER.into());
    let token = minter().mint(&claims).expect("a token");
    let e = setup_as(kind, &token, |config| {
        config.common.auth.jwt_issuer = Some(ISSUER.into());
    })
    .await;
    let http = reqwest::Client::new();
    let response = http
        .post(e.url("example"))
        .header("accept", "application/json, text/event-stream")
        .json(&json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list" }))
        .send()
        .await
        .expect("answers");
    assert_eq!(response.status(), reqwest::StatusCode::UNAUTHORIZED);
    let challenge = response.headers()["www-authenticate"]
        .to_str()
        .expect("text")
        .to_owned();
    let metadata_url = format!(
        "http://{}/.well-known/oauth-protected-resource/mcp/integrations/example",
        e.addr
    );
    assert_eq!(
        challenge,
        format!(r#"Bearer resource_metadata="{metadata_url}""#)
    );
    let bad = http
        .post(e.url("example"))
        .bearer_auth("not-a-token")
        .json(&json!({}))
        .send()
        .await
        .expect("answers");
    assert_eq!(bad.status(), reqwest::StatusCode::UNAUTHORIZED);
    assert!(
        bad.headers()["www-authenticate"]
            .to_str()
            .expect("text")
            .contains(r#"error="invalid_token""#)
    );
    let metadata: Value = http
        .get(&metadata_url)
        .send()
        .await
        .expect("answers")
        .json()
        .await
        .expect("JSON");
    assert_eq!(metadata["resource"], e.url("example"));
    assert_eq!(
        metadata["authorization_servers"],
        json!(["https://login.example.com"])
    );
    let out = e.client("example", None, json!([])).await;
    assert_eq!(out["connected"], false, "{out}");
}

async fn calls_through_the_endpoint_are_in_the_audit_trail_with_the_caller(kind: DbKind) {
    let e = setup(kind).await;
    let out = e
        .client(
            "example",
            Some(&member("org-a")),
            json!([{ "op": "callTool", "name": "echo", "arguments": { "text": "audited" } }]),
        )
        .await;
    step(&out, 0);
    let mut audit = AuditServiceClient::connect(e.h.server.url())
        .await
        .expect("connects");
    let mut events = Vec::new();
    for _ in 0..50 {
        events = audit
            .list_audit_events(req(pb::ListAuditEventsRequest::default(), &admin("org-a")))
            .await
            .expect("listed")
            .into_inner()
            .events;
        if events
            .iter()
            .any(|ev| ev.action() == pb::AuditAction::ToolCall)
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let call = events
        .iter()
        .find(|ev| ev.action() == pb::AuditAction::ToolCall)
        .expect("the call is recorded");
    assert_eq!(call.subject, "member-user");
    assert_eq!(call.integration_id, e.id);
    assert_eq!(call.target, "echo");
    assert_eq!(call.outcome(), pb::AuditOutcome::Ok);
}

async fn sessions_are_bounded_per_organization(kind: DbKind) {
    let e = setup_with(kind, |config| {
        config.endpoint.max_sessions_per_org = 1;
    })
    .await;
    let http = reqwest::Client::new();
    let initialize = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": { "name": "probe", "version": "1" }
        }
    });
    let open = |token: String| {
        let http = http.clone();
        let url = e.url("example");
        let initialize = initialize.clone();
        async move {
            http.post(url)
                .bearer_auth(token)
                .header("accept", "application/json, text/event-stream")
                .json(&initialize)
                .send()
                .await
                .expect("answers")
        }
    };
    let first = open(member("org-a")).await;
    assert_eq!(first.status(), reqwest::StatusCode::OK);
    let session = first.headers()["mcp-session-id"]
        .to_str()
        .expect("text")
        .to_owned();
    let second = open(admin("org-a")).await;
    assert_eq!(
        second.status(),
        reqwest::StatusCode::SERVICE_UNAVAILABLE,
        "the organization's second session is refused"
    );
    assert!(second.headers().contains_key("retry-after"));
    // Another user may not use the first caller's session.
    let hijack = http
        .post(e.url("example"))
        .bearer_auth(admin("org-a"))
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-11-25")
        .json(&json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list" }))
        .send()
        .await
        .expect("answers");
    assert_eq!(hijack.status(), reqwest::StatusCode::NOT_FOUND);
    // Closing the session makes room.
    let closed = http
        .delete(e.url("example"))
        .bearer_auth(member("org-a"))
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-11-25")
        .send()
        .await
        .expect("answers");
    assert!(closed.status().is_success(), "{}", closed.status());
    let third = open(admin("org-a")).await;
    assert_eq!(third.status(), reqwest::StatusCode::OK);
}

async fn a_body_past_the_limit_is_413(kind: DbKind) {
    let e = setup_with(kind, |config| {
        config.endpoint.max_body_bytes = 2048;
    })
    .await;
    let http = reqwest::Client::new();
    let call = |text: String| {
        json!({
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": { "name": text, "version": "1" }
            }
        })
    };
    let at_limit = call("x".repeat(1800));
    assert!(at_limit.to_string().len() <= 2048);
    let under = http
        .post(e.url("example"))
        .bearer_auth(member("org-a"))
        .header("accept", "application/json, text/event-stream")
        .json(&at_limit)
        .send()
        .await
        .expect("answers");
    assert_eq!(under.status(), reqwest::StatusCode::OK);
    let over = http
        .post(e.url("example"))
        .bearer_auth(member("org-a"))
        .header("accept", "application/json, text/event-stream")
        .json(&call("x".repeat(2100)))
        .send()
        .await
        .expect("answers");
    assert_eq!(over.status(), reqwest::StatusCode::PAYLOAD_TOO_LARGE);
}

async fn a_host_not_allowed_is_refused(kind: DbKind) {
    let e = setup(kind).await;
    let response = reqwest::Client::new()
        .post(e.url("example"))
        .header("host", "evil.example")
        .bearer_auth(member("org-a"))
        .json(&json!({}))
        .send()
        .await
        .expect("answers");
    assert_eq!(response.status(), reqwest::StatusCode::FORBIDDEN);
}

/// rmcp's client asks `server/discover` first: the 2026-07-28 era,
/// stateless, no session.
async fn a_client_of_the_stateless_era_discovers_and_calls_without_a_session(kind: DbKind) {
    use rmcp::{
        model::{CallToolRequestParams, ProtocolVersion},
        service::{ClientLifecycleMode, ClientServiceExt as _},
        transport::{
            StreamableHttpClientTransport,
            streamable_http_client::StreamableHttpClientTransportConfig,
        },
    };
    let e = setup(kind).await;
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(e.url("example"))
            .auth_header(member("org-a")),
    );
    let lifecycle = ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    };
    let client = ().serve_with_lifecycle(transport, lifecycle).await.expect("the client connects");
    let server = client.peer_info().expect("the server described itself");
    assert_eq!(server.protocol_version, ProtocolVersion::V_2026_07_28);
    assert_eq!(
        server.server_info.as_ref().map(|i| i.name.as_str()),
        Some("switchboard")
    );
    let tools = client.list_all_tools().await.expect("tools listed");
    assert!(tools.iter().any(|t| t.name == "echo"));
    let mut arguments = serde_json::Map::new();
    arguments.insert("text".into(), json!("stateless"));
    let result = client
        .call_tool(CallToolRequestParams::new("echo").with_arguments(arguments))
        .await
        .expect("called");
    assert_eq!(
        serde_json::to_value(&result).expect("JSON")["content"][0]["text"],
        "stateless"
    );
    let _ = client.cancel().await;
}

async fn sessions_are_bounded_overall(kind: DbKind) {
    let e = setup_with(kind, |config| {
        config.endpoint.max_sessions = 1;
    })
    .await;
    let mut e = e;
    create(
        &mut e.h,
        &admin("org-b"),
        http_integration("example", &e.upstream.url()),
    )
    .await;
    let first = initialize(&e, &member("org-a")).await;
    assert_eq!(first.status(), reqwest::StatusCode::OK);
    let other_org = initialize(&e, &member("org-b")).await;
    assert_eq!(
        other_org.status(),
        reqwest::StatusCode::SERVICE_UNAVAILABLE,
        "the endpoint's second session is refused, whichever organization asks"
    );
}

async fn an_idle_session_is_closed_and_makes_room(kind: DbKind) {
    let e = setup_with(kind, |config| {
        config.endpoint.max_sessions_per_org = 1;
        config.endpoint.session_idle_timeout = Duration::from_millis(300);
    })
    .await;
    let first = initialize(&e, &member("org-a")).await;
    assert_eq!(first.status(), reqwest::StatusCode::OK);
    let session = first.headers()["mcp-session-id"]
        .to_str()
        .expect("text")
        .to_owned();
    drop(first);
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let stale = reqwest::Client::new()
        .post(e.url("example"))
        .bearer_auth(member("org-a"))
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-11-25")
        .json(&json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list" }))
        .send()
        .await
        .expect("answers");
    assert_eq!(stale.status(), reqwest::StatusCode::NOT_FOUND);
    let again = initialize(&e, &member("org-a")).await;
    assert_eq!(again.status(), reqwest::StatusCode::OK);
}

/// An `initialize` POST of the 2025-11-25 era with `token`.
async fn initialize(e: &Endpoint, token: &str) -> reqwest::Response {
    initialize_at(e, "example", token).await
}

/// An `initialize` POST of the 2025-11-25 era to `slug`'s path with `token`.
pub(crate) async fn initialize_at(e: &Endpoint, slug: &str, token: &str) -> reqwest::Response {
    initialize_url(&e.url(slug), token).await
}

/// An `initialize` POST of the 2025-11-25 era to `url` with `token`.
pub(crate) async fn initialize_url(url: &str, token: &str) -> reqwest::Response {
    reqwest::Client::new()
        .post(url)
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .json(&json!({
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": { "name": "probe", "version": "1" }
            }
        }))
        .send()
        .await
        .expect("answers")
}

/// The official Python SDK client, in both eras: it probes
/// `server/discover` (2026-07-28, stateless) and, told to, opens an
/// initialize session (2025-11-25).
async fn the_python_sdk_client_uses_an_integration_in_both_eras(kind: DbKind) {
    let e = setup(kind).await;
    for (mode, version) in [("auto", "2026-07-28"), ("legacy", "2025-11-25")] {
        let out = python_client(
            &e.url("example"),
            Some(&member("org-a")),
            mode,
            json!([
                { "op": "listTools" },
                { "op": "callTool", "name": "echo", "arguments": { "text": mode } },
                { "op": "readResource", "uri": "docs://readme" },
                { "op": "getPrompt", "name": "summarize", "arguments": { "topic": "rivers" } },
            ]),
        )
        .await;
        assert_eq!(out["connected"], true, "{out}");
        assert_eq!(out["protocolVersion"], version, "{out}");
        assert!(
            names(&step(&out, 0)["tools"]).contains(&"echo".to_owned()),
            "{out}"
        );
        assert_eq!(step(&out, 1)["content"][0]["text"], mode, "{out}");
        assert_eq!(step(&out, 2)["contents"][0]["uri"], "docs://readme");
        assert!(
            step(&out, 3)["messages"][0]["content"]["text"]
                .as_str()
                .is_some_and(|t| t.contains("rivers")),
            "{out}"
        );
    }
    let refused = python_client(&e.url("example"), None, "auto", json!([])).await;
    assert_eq!(refused["connected"], false, "{refused}");
}

db_tests!(
    the_python_sdk_client_uses_an_integration_in_both_eras,
    a_client_of_the_stateless_era_discovers_and_calls_without_a_session,
    sessions_are_bounded_overall,
    an_idle_session_is_closed_and_makes_room,
    the_sdk_client_lists_calls_reads_and_gets_prompts_through_an_integration,
    a_tool_a_policy_denies_is_neither_listed_nor_callable,
    another_organizations_integration_is_not_found_like_a_missing_one,
    no_token_is_401_naming_the_protected_resource_metadata,
    calls_through_the_endpoint_are_in_the_audit_trail_with_the_caller,
    sessions_are_bounded_per_organization,
    a_body_past_the_limit_is_413,
    a_host_not_allowed_is_refused,
);
