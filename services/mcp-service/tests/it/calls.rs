//! Discover, ExecuteTool, RetrieveResource and GetPrompt against real MCP
//! servers (the example server over streamable HTTP and stdio), on reused
//! sessions.

use std::time::{Duration, Instant};

use serde_json::json;
use switchboard_example_mcp_server::{HttpServerOptions, RunningHttpServer, spawn_http};
use switchboard_proto::{
    json::{json_to_struct, struct_to_json},
    mcp::v1::{self as pb, content_block::Block},
};
use switchboard_test_support::{DbKind, db_tests, workspace_binary};
use tonic::Code;

use crate::support::{
    Harness, admin, bad_fields, create, http_integration, req, start, start_with,
};

struct Setup {
    h: Harness,
    upstream: RunningHttpServer,
    id: String,
    token: String,
}

async fn setup(kind: DbKind) -> Setup {
    setup_with(kind, None).await
}

async fn setup_with(kind: DbKind, call_timeout: Option<Duration>) -> Setup {
    let upstream = spawn_http(HttpServerOptions::default())
        .await
        .expect("upstream");
    let mut h = start(kind).await;
    let token = admin("org-a");
    let mut request = http_integration("example", &upstream.url());
    request.timeouts = call_timeout.map(|t| pb::Timeouts {
        connect: None,
        call: Some(prost_types::Duration {
            seconds: i64::try_from(t.as_secs()).expect("small"),
            nanos: 0,
        }),
    });
    let id = create(&mut h, &token, request).await.id;
    Setup {
        h,
        upstream,
        id,
        token,
    }
}

async fn execute(
    s: &mut Setup,
    tool: &str,
    arguments: serde_json::Value,
    scope: &str,
) -> pb::ExecuteToolResponse {
    s.h.client
        .execute_tool(req(
            pb::ExecuteToolRequest {
                integration_id: s.id.clone(),
                tool_name: tool.into(),
                arguments: json_to_struct(&arguments),
                session_scope: scope.into(),
                arguments_json: String::new(),
                ..Default::default()
            },
            &s.token,
        ))
        .await
        .expect("ExecuteTool answers")
        .into_inner()
}

fn texts(response: &pb::ExecuteToolResponse) -> Vec<String> {
    response
        .content
        .iter()
        .filter_map(|b| match &b.block {
            Some(Block::Text(t)) => Some(t.text.clone()),
            _ => None,
        })
        .collect()
}

async fn discovery_lists_every_capability_kind_across_pages(kind: DbKind) {
    let mut s = setup(kind).await;
    let discovered =
        s.h.client
            .discover(req(
                pb::DiscoverRequest {
                    integration_id: s.id.clone(),
                    bypass_cache: false,
                    allowed_tools: None,
                },
                &s.token,
            ))
            .await
            .expect("discovered")
            .into_inner();
    let server = discovered.server.expect("server info");
    assert_eq!(server.name, "switchboard-example");
    assert!(!server.protocol_version.is_empty());
    assert_eq!(discovered.tools.len(), 10, "every page of tools");
    assert_eq!(
        discovered.integration.expect("the integration").slug,
        "example"
    );
    let add = discovered
        .tools
        .iter()
        .find(|t| t.name == "add")
        .expect("add");
    assert!(add.input_schema.is_some() && add.output_schema.is_some());
    let uris: Vec<_> = discovered
        .resources
        .iter()
        .map(|r| r.uri.as_str())
        .collect();
    assert!(uris.contains(&"data://sales.csv"), "{uris:?}");
    assert_eq!(
        discovered.resource_templates[0].uri_template,
        "data://sales/{region}.csv"
    );
    let prompt = &discovered.prompts[0];
    assert_eq!(prompt.name, "summarize");
    assert!(
        prompt
            .arguments
            .iter()
            .any(|a| a.name == "topic" && a.required)
    );
}

async fn tools_succeed_fail_and_keep_their_content_typed(kind: DbKind) {
    let mut s = setup(kind).await;
    let echo = execute(&mut s, "echo", json!({"text": "hello"}), "t").await;
    assert!(!echo.is_error);
    assert_eq!(texts(&echo), ["hello"]);

    let add = execute(&mut s, "add", json!({"a": 2, "b": 3.5}), "t").await;
    assert_eq!(
        struct_to_json(add.structured_content.as_ref().expect("structured")),
        json!({"sum": 5.5})
    );

    let fail = execute(
        &mut s,
        "fail",
        json!({"message": "the database is on fire"}),
        "t",
    )
    .await;
    assert!(fail.is_error);
    assert_eq!(fail.error_message, "the database is on fire");

    let unknown = execute(&mut s, "nope", json!({}), "t").await;
    assert!(unknown.is_error);
    assert!(
        unknown.error_message.contains("nope"),
        "{}",
        unknown.error_message
    );

    let mixed = execute(&mut s, "mixed", json!({}), "t").await;
    let kinds: Vec<&str> = mixed
        .content
        .iter()
        .map(|b| match &b.block {
            Some(Block::Text(_)) => "text",
            Some(Block::Image(i)) if !i.data.is_empty() && i.mime_type == "image/png" => "image",
            Some(Block::Audio(a)) if !a.data.is_empty() => "audio",
            Some(Block::Resource(_)) => "resource",
            Some(Block::ResourceLink(l)) if l.uri == "data://sales.csv" => "resource_link",
            _ => "unexpected",
        })
        .collect();
    assert_eq!(
        kinds,
        ["text", "image", "audio", "resource", "resource_link"]
    );
}

// Reads through the deprecated `parameters` Struct, which older callers
// still send.
#[allow(deprecated)]
async fn resources_expand_templates_and_derive_their_kind(kind: DbKind) {
    let s = setup(kind).await;
    let read = |uri: &str, parameters: serde_json::Value| {
        let request = pb::RetrieveResourceRequest {
            integration_id: s.id.clone(),
            uri: uri.into(),
            parameters: json_to_struct(&parameters),
            session_scope: String::new(),
            ..Default::default()
        };
        let token = s.token.clone();
        let mut client = s.h.client.clone();
        async move { client.retrieve_resource(req(request, &token)).await }
    };
    let csv = read("data://sales/{region}.csv", json!({"region": "south"}))
        .await
        .expect("read")
        .into_inner();
    assert_eq!(csv.uri, "data://sales/south.csv");
    assert_eq!(csv.kind(), pb::ResourceKind::Csv);
    let Some(pb::resource_contents::Content::Text(text)) = &csv.contents[0].content else {
        panic!("CSV text expected");
    };
    assert!(text.contains("south") && !text.contains("north"), "{text}");

    let missing = read("data://sales/{region}.csv", json!({}))
        .await
        .expect_err("region is missing");
    assert_eq!(bad_fields(&missing), ["parameters.region"]);

    let readme = read("docs://readme", json!({}))
        .await
        .expect("read")
        .into_inner();
    assert_eq!(readme.kind(), pb::ResourceKind::Text);
    let logo = read("data://logo.png", json!({}))
        .await
        .expect("read")
        .into_inner();
    assert_eq!(logo.kind(), pb::ResourceKind::Binary);
    assert!(
        matches!(logo.contents[0].content, Some(pb::resource_contents::Content::Blob(ref b)) if !b.is_empty())
    );

    let unknown = read("data://nothing.csv", json!({}))
        .await
        .expect_err("no such resource");
    assert_eq!(unknown.code(), Code::NotFound, "{unknown:?}");
}

async fn prompts_render_with_their_arguments(kind: DbKind) {
    let mut s = setup(kind).await;
    let prompt =
        s.h.client
            .get_prompt(req(
                pb::GetPromptRequest {
                    integration_id: s.id.clone(),
                    name: "summarize".into(),
                    arguments: [
                        ("topic".to_owned(), "Q3 sales".to_owned()),
                        ("style".to_owned(), "bullet".to_owned()),
                    ]
                    .into(),
                    session_scope: String::new(),
                    ..Default::default()
                },
                &s.token,
            ))
            .await
            .expect("rendered")
            .into_inner();
    let roles: Vec<_> = prompt.messages.iter().map(|m| m.role()).collect();
    assert_eq!(roles, [pb::Role::User, pb::Role::Assistant]);
    let Some(Block::Text(first)) = prompt.messages[0]
        .content
        .as_ref()
        .and_then(|c| c.block.clone())
    else {
        panic!("text expected");
    };
    assert_eq!(first.text, "Summarize Q3 sales in a bullet style.");
}

async fn calls_in_one_scope_share_one_session_and_scopes_do_not(kind: DbKind) {
    let mut s = setup(kind).await;
    for _ in 0..100 {
        let response = execute(&mut s, "echo", json!({"text": "x"}), "thread-1").await;
        assert!(!response.is_error);
    }
    assert_eq!(
        s.upstream.stats.snapshot().sessions,
        1,
        "100 calls, one session"
    );
    assert_eq!(
        texts(&execute(&mut s, "counter", json!({}), "thread-1").await),
        ["1"]
    );
    assert_eq!(
        texts(&execute(&mut s, "counter", json!({}), "thread-1").await),
        ["2"]
    );
    assert_eq!(
        texts(&execute(&mut s, "counter", json!({}), "thread-2").await),
        ["1"],
        "no state shared"
    );
    assert_eq!(
        s.upstream.stats.snapshot().sessions,
        2,
        "two scopes, two sessions"
    );

    // Concurrent calls on a scope without a session yet still open just one.
    let calls = (0..16).map(|_| {
        let mut client = s.h.client.clone();
        let request = req(
            pb::ExecuteToolRequest {
                integration_id: s.id.clone(),
                tool_name: "echo".into(),
                arguments: json_to_struct(&json!({"text": "y"})),
                session_scope: "thread-3".into(),
                arguments_json: String::new(),
                ..Default::default()
            },
            &s.token,
        );
        async move { client.execute_tool(request).await }
    });
    for result in futures::future::join_all(calls).await {
        assert!(!result.expect("answered").into_inner().is_error);
    }
    assert_eq!(s.upstream.stats.snapshot().sessions, 3);
}

db_tests!(
    discovery_lists_every_capability_kind_across_pages,
    tools_succeed_fail_and_keep_their_content_typed,
    resources_expand_templates_and_derive_their_kind,
    prompts_render_with_their_arguments,
    calls_in_one_scope_share_one_session_and_scopes_do_not,
);

#[tokio::test]
async fn discovery_asks_for_every_listing_at_once() {
    // Each listing is held for a while, so listings asked one after the other
    // never overlap on the server.
    let upstream = spawn_http(HttpServerOptions {
        discovery_delay: Duration::from_millis(300),
        ..HttpServerOptions::default()
    })
    .await
    .expect("upstream");
    let mut h = start(DbKind::Sqlite).await;
    let token = admin("org-a");
    let id = create(&mut h, &token, http_integration("slow", &upstream.url()))
        .await
        .id;
    let discovered = h
        .client
        .discover(req(
            pb::DiscoverRequest {
                integration_id: id,
                bypass_cache: false,
                allowed_tools: None,
            },
            &token,
        ))
        .await
        .expect("discovered")
        .into_inner();
    assert_eq!(discovered.tools.len(), 10);
    assert_eq!(discovered.prompts.len(), 1);
    assert_eq!(
        upstream.stats.snapshot().listings_peak,
        4,
        "tools, resources, resource templates and prompts listed at once"
    );
}

#[tokio::test]
async fn a_hanging_tool_times_out_and_the_server_sees_the_cancellation() {
    let mut s = setup_with(DbKind::Sqlite, Some(Duration::from_secs(1))).await;
    let started = Instant::now();
    let response = execute(&mut s, "sleep", json!({"ms": 20_000}), "t").await;
    let elapsed = started.elapsed();
    assert!(response.is_error);
    assert!(
        response.error_message.contains("did not answer within 1s"),
        "{}",
        response.error_message
    );
    // Well before the tool's 20 s, with room for a busy machine.
    assert!(elapsed < Duration::from_secs(10), "{elapsed:?}");
    let deadline = Instant::now() + Duration::from_secs(5);
    while s.upstream.stats.snapshot().cancellations == 0 {
        assert!(
            Instant::now() < deadline,
            "the server never saw the cancellation"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The session survives a cancelled call.
    assert_eq!(
        texts(&execute(&mut s, "echo", json!({"text": "still here"}), "t").await),
        ["still here"]
    );
}

#[tokio::test]
async fn the_callers_deadline_caps_the_call_timeout() {
    let mut s = setup(DbKind::Sqlite).await;
    let mut request = req(
        pb::ExecuteToolRequest {
            integration_id: s.id.clone(),
            tool_name: "sleep".into(),
            arguments: json_to_struct(&json!({"ms": 20_000})),
            session_scope: String::new(),
            arguments_json: String::new(),
            ..Default::default()
        },
        &s.token,
    );
    request.set_timeout(Duration::from_millis(800));
    let started = Instant::now();
    let response =
        s.h.client
            .execute_tool(request)
            .await
            .expect("a result before the deadline")
            .into_inner();
    assert!(response.is_error);
    // Well before the tool's 20 s, with room for a busy machine.
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[tokio::test]
async fn an_oversized_result_is_an_error_result() {
    let mut s = setup(DbKind::Sqlite).await;
    let response = execute(&mut s, "big", json!({"bytes": 5 * 1024 * 1024}), "t").await;
    assert!(response.is_error);
    assert!(
        response.error_message.contains("larger than 4 MiB"),
        "{}",
        response.error_message
    );
    assert!(response.content.is_empty());
}

#[tokio::test]
async fn a_server_restarted_mid_session_serves_the_next_call() {
    let mut s = setup(DbKind::Sqlite).await;
    assert_eq!(
        texts(&execute(&mut s, "echo", json!({"text": "before"}), "t").await),
        ["before"]
    );
    let Setup {
        h,
        upstream,
        id,
        token,
    } = s;
    let addr = upstream.addr;
    upstream.shutdown().await;
    let restarted = spawn_http(HttpServerOptions {
        addr,
        ..HttpServerOptions::default()
    })
    .await
    .expect("restarted");
    let mut s = Setup {
        h,
        upstream: restarted,
        id,
        token,
    };
    let after = execute(&mut s, "echo", json!({"text": "after"}), "t").await;
    assert!(!after.is_error, "{}", after.error_message);
    assert_eq!(texts(&after), ["after"]);
}

#[tokio::test]
async fn access_is_checked_before_any_call() {
    let mut s = setup(DbKind::Sqlite).await;
    let foreign =
        s.h.client
            .execute_tool(req(
                pb::ExecuteToolRequest {
                    integration_id: s.id.clone(),
                    tool_name: "echo".into(),
                    arguments: None,
                    session_scope: String::new(),
                    arguments_json: String::new(),
                    ..Default::default()
                },
                &admin("org-b"),
            ))
            .await
            .expect_err("another organization");
    assert_eq!(foreign.code(), Code::NotFound);
    s.h.client
        .disable_integration(req(
            pb::DisableIntegrationRequest { id: s.id.clone() },
            &s.token,
        ))
        .await
        .expect("disabled");
    let disabled =
        s.h.client
            .discover(req(
                pb::DiscoverRequest {
                    integration_id: s.id.clone(),
                    bypass_cache: false,
                    allowed_tools: None,
                },
                &s.token,
            ))
            .await
            .expect_err("disabled");
    assert_eq!(disabled.code(), Code::FailedPrecondition);
    assert_eq!(
        tonic_types::StatusExt::get_error_details(&disabled)
            .error_info()
            .map(|info| info.reason.clone())
            .as_deref(),
        Some("ERROR_REASON_INTEGRATION_DISABLED")
    );
    assert_eq!(
        s.upstream.stats.snapshot().tool_calls,
        0,
        "nothing reached the server"
    );
}

#[tokio::test]
async fn list_changed_drops_the_cached_discovery() {
    let mut s = setup(DbKind::Sqlite).await;
    let discover = |bypass_cache| {
        let mut client = s.h.client.clone();
        let request = req(
            pb::DiscoverRequest {
                integration_id: s.id.clone(),
                bypass_cache,
                allowed_tools: None,
            },
            &s.token,
        );
        async move {
            client
                .discover(request)
                .await
                .expect("discovered")
                .into_inner()
                .tools
                .len()
        }
    };
    assert_eq!(discover(false).await, 10);
    assert_eq!(discover(false).await, 10, "served from the cache");
    execute(&mut s, "add_tool", json!({}), "t").await;
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let mut client = s.h.client.clone();
        let request = req(
            pb::DiscoverRequest {
                integration_id: s.id.clone(),
                bypass_cache: false,
                allowed_tools: None,
            },
            &s.token,
        );
        if client
            .discover(request)
            .await
            .expect("discovered")
            .into_inner()
            .tools
            .len()
            == 11
        {
            break;
        }
        assert!(Instant::now() < deadline, "the cache was never invalidated");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_stdio_server_gets_exactly_its_environment_and_dies_with_its_session() {
    let binary = workspace_binary("switchboard-example-mcp-server", "example-mcp-server")
        .display()
        .to_string();
    let allowed = format!("{binary} --transport stdio env=PLAIN|API_KEY");
    let mut h = start_with(DbKind::Sqlite, move |config| config.stdio_allow = allowed).await;
    let token = admin("org-a");
    let mut request = http_integration("local", "http://unused");
    request.source = Some(pb::create_integration_request::Source::Custom(
        pb::CustomIntegrationSpec {
            transport: Some(pb::Transport {
                kind: Some(pb::transport::Kind::Stdio(pb::StdioTransport {
                    command: binary,
                    args: vec!["--transport".into(), "stdio".into()],
                    env: [("PLAIN".to_owned(), "1".to_owned())].into(),
                    secret_env: [("API_KEY".to_owned(), "s3cret".to_owned())].into(),
                    secret_env_names: vec![],
                })),
            }),
            auth: None,
        },
    ));
    let id = create(&mut h, &token, request).await.id;
    let response = h
        .client
        .execute_tool(req(
            pb::ExecuteToolRequest {
                integration_id: id.clone(),
                tool_name: "process".into(),
                arguments: None,
                session_scope: String::new(),
                arguments_json: String::new(),
                ..Default::default()
            },
            &token,
        ))
        .await
        .expect("answered")
        .into_inner();
    assert!(!response.is_error, "{}", response.error_message);
    let Some(Block::Text(text)) = response.content[0].block.clone() else {
        panic!("text")
    };
    let process: serde_json::Value = serde_json::from_str(&text.text).expect("json");
    assert_eq!(
        process["env"],
        json!([
            "API_KEY",
            "HOME",
            "PATH",
            "PLAIN",
            "PYTHONNOUSERSITE",
            "TMPDIR",
            "XDG_CACHE_HOME",
            "XDG_CONFIG_HOME",
            "XDG_DATA_HOME",
            "XDG_RUNTIME_DIR",
            "XDG_STATE_HOME"
        ]),
        "exactly the integration's environment, with a fixed PATH and a private home"
    );
    let pid = process["pid"].as_u64().expect("a pid");

    h.client
        .delete_integration(req(pb::DeleteIntegrationRequest { id }, &token))
        .await
        .expect("deleted");
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        // Gone, or a zombie awaiting its reaper: either way no longer running.
        if state.is_empty() || state.split_whitespace().nth(2) == Some("Z") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the stdio server outlived its session"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
