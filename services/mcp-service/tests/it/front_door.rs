//! Every front door holds the same bounds, because they live in the domain:
//! one table of what a caller sends (the domain's own constants), run
//! through gRPC and through the MCP endpoint. Past a bound the call is
//! refused naming what is too long, and nothing of it reaches a server or
//! the audit trail; at the bound it goes through. A server's text comes back
//! cut to its bound and marked, whichever door asked. The endpoint judges
//! the `Host` a request names as a host and port, never as text.

use std::{net::SocketAddr, time::Duration};

use rmcp::{
    RoleClient,
    model::{
        CallToolRequestParams, GetPromptRequestParams, ProtocolVersion, ReadResourceRequestParams,
    },
    service::{ClientLifecycleMode, ClientServiceExt as _, RunningService, ServiceError},
    transport::{
        StreamableHttpClientTransport, streamable_http_client::StreamableHttpClientTransportConfig,
    },
};
use serde_json::{Value, json};
use switchboard_example_mcp_server::{HttpServerOptions, RunningHttpServer, spawn_http};
use switchboard_mcp_service::domain::bounds::{Bound, PROMPT_NAME, RESOURCE_URI, TOOL_NAME};
use switchboard_proto::mcp::v1::{self as pb, audit_service_client::AuditServiceClient};
use switchboard_test_support::{DbKind, db_tests, grpc::free_port};
use tonic::Code;

use crate::support::{Harness, admin, create, http_integration, member, req, start_with};

/// The arguments bound the tests set, small enough to pass quickly.
const MAX_ARGUMENTS: usize = 4096;
/// The bound on a server's text (the default).
const MAX_TEXT: usize = 4096;

struct Doors {
    h: Harness,
    upstream: RunningHttpServer,
    addr: SocketAddr,
    id: String,
}

async fn doors(kind: DbKind) -> Doors {
    doors_with(kind, MAX_ARGUMENTS).await
}

async fn doors_with(kind: DbKind, max_arguments_bytes: usize) -> Doors {
    let upstream = spawn_http(HttpServerOptions::default())
        .await
        .expect("upstream");
    let addr = SocketAddr::from(([127, 0, 0, 1], free_port().expect("a port")));
    let mut h = start_with(kind, |config| {
        config.endpoint.listen = Some(addr);
        config.max_arguments_bytes = max_arguments_bytes;
    })
    .await;
    let id = create(
        &mut h,
        &admin("org-a"),
        http_integration("example", &upstream.url()),
    )
    .await
    .id;
    Doors {
        h,
        upstream,
        addr,
        id,
    }
}

impl Doors {
    fn url(&self) -> String {
        format!("http://{}/mcp/integrations/example", self.addr)
    }

    /// A client of the endpoint (the stateless era) as a member of org-a.
    async fn endpoint(&self) -> RunningService<RoleClient, ()> {
        let transport = StreamableHttpClientTransport::from_config(
            StreamableHttpClientTransportConfig::with_uri(self.url()).auth_header(member("org-a")),
        );
        let lifecycle = ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        };
        ().serve_with_lifecycle(transport, lifecycle)
            .await
            .expect("the client connects")
    }

    async fn audited_targets(&self) -> Vec<(String, String)> {
        let mut audit = AuditServiceClient::connect(self.h.server.url())
            .await
            .expect("connects");
        audit
            .list_audit_events(req(pb::ListAuditEventsRequest::default(), &admin("org-a")))
            .await
            .expect("listed")
            .into_inner()
            .events
            .into_iter()
            .filter(|event| event.action() != pb::AuditAction::IntegrationChange)
            .map(|event| (event.target, event.reason))
            .collect()
    }
}

/// What a row of the table asks through each door.
#[derive(Clone, Copy, Debug)]
enum Asked {
    ToolName,
    PromptName,
    ResourceUri,
    ToolArguments,
}

/// The table: what is bounded, the bound, and the field gRPC names.
const TABLE: [(Asked, Bound, &str); 4] = [
    (Asked::ToolName, TOOL_NAME, "tool_name"),
    (Asked::PromptName, PROMPT_NAME, "name"),
    (Asked::ResourceUri, RESOURCE_URI, "uri"),
    (
        Asked::ToolArguments,
        Bound {
            what: "arguments",
            max_bytes: MAX_ARGUMENTS,
        },
        "arguments",
    ),
];

/// A text of `len` bytes for `asked`: arguments `{"text":"x…"}` count as
/// their JSON.
fn text(asked: Asked, len: usize) -> String {
    match asked {
        Asked::ToolArguments => "x".repeat(len - r#"{"text":""}"#.len()),
        _ => "x".repeat(len),
    }
}

async fn through_grpc(d: &mut Doors, asked: Asked, text: String) -> Result<(), tonic::Status> {
    let token = member("org-a");
    let id = d.id.clone();
    match asked {
        Asked::ToolName | Asked::ToolArguments => {
            let (tool_name, arguments_json) = match asked {
                Asked::ToolName => (text, "{}".to_owned()),
                _ => ("echo".to_owned(), json!({ "text": text }).to_string()),
            };
            let request = pb::ExecuteToolRequest {
                integration_id: id,
                tool_name,
                arguments_json,
                ..Default::default()
            };
            d.h.client
                .execute_tool(req(request, &token))
                .await
                .map(drop)
        }
        Asked::PromptName => {
            let request = pb::GetPromptRequest {
                integration_id: id,
                name: text,
                ..Default::default()
            };
            d.h.client.get_prompt(req(request, &token)).await.map(drop)
        }
        Asked::ResourceUri => {
            let request = pb::RetrieveResourceRequest {
                integration_id: id,
                uri: text,
                ..Default::default()
            };
            d.h.client
                .retrieve_resource(req(request, &token))
                .await
                .map(drop)
        }
    }
}

async fn through_endpoint(
    client: &RunningService<RoleClient, ()>,
    asked: Asked,
    text: String,
) -> Result<Value, ServiceError> {
    let answer = match asked {
        Asked::ToolName => {
            serde_json::to_value(client.call_tool(CallToolRequestParams::new(text)).await?)
        }
        Asked::ToolArguments => {
            let mut arguments = serde_json::Map::new();
            arguments.insert("text".into(), json!(text));
            let params = CallToolRequestParams::new("echo").with_arguments(arguments);
            serde_json::to_value(client.call_tool(params).await?)
        }
        Asked::PromptName => {
            serde_json::to_value(client.get_prompt(GetPromptRequestParams::new(text)).await?)
        }
        Asked::ResourceUri => serde_json::to_value(
            client
                .read_resource(ReadResourceRequestParams::new(text))
                .await?,
        ),
    };
    Ok(answer.expect("JSON"))
}

fn refused_as_too_long(error: &ServiceError) -> bool {
    matches!(error, ServiceError::McpError(data)
        if data.code == rmcp::model::ErrorCode::INVALID_PARAMS && data.message.contains("longer than"))
}

async fn each_front_door_refuses_past_each_bound_before_any_server_or_record(kind: DbKind) {
    let mut d = doors(kind).await;
    let client = d.endpoint().await;
    for (asked, bound, field) in TABLE {
        let over = text(asked, bound.max_bytes + 1);
        let status = through_grpc(&mut d, asked, over.clone())
            .await
            .expect_err("refused");
        assert_eq!(
            status.code(),
            Code::InvalidArgument,
            "{asked:?}: {status:?}"
        );
        assert!(
            status.message().contains(field),
            "{asked:?}: {}",
            status.message()
        );
        let error = through_endpoint(&client, asked, over)
            .await
            .expect_err("refused");
        assert!(refused_as_too_long(&error), "{asked:?}: {error}");
    }
    assert_eq!(
        d.upstream.stats.snapshot().sessions,
        0,
        "no server was contacted"
    );
    assert_eq!(
        d.audited_targets().await,
        Vec::new(),
        "nothing was recorded"
    );

    // At each bound the call goes on to the server, which answers for itself.
    for (asked, bound, _) in TABLE {
        let at = text(asked, bound.max_bytes);
        // The server's own refusals (an unknown prompt) say so; none is
        // Switchboard's bound.
        if let Err(status) = through_grpc(&mut d, asked, at.clone()).await {
            assert!(
                !status.message().contains("longer than"),
                "{asked:?}: {status:?}"
            );
        }
        if let Err(error) = through_endpoint(&client, asked, at).await {
            assert!(!refused_as_too_long(&error), "{asked:?}: {error}");
        }
    }
    assert!(
        d.upstream.stats.snapshot().sessions > 0,
        "the server was reached"
    );
    let targets = d.audited_targets().await;
    assert!(
        targets
            .iter()
            .all(|(target, _)| target.len() <= RESOURCE_URI.max_bytes)
    );
    let _ = client.cancel().await;
}

/// The example server's `big` refuses a `bytes` that is not a number with
/// a JSON-RPC error quoting it whole: a server's error as long as a caller
/// makes it.
const LONG_ERROR_INPUT: usize = 200_000;

async fn a_servers_long_error_is_cut_and_marked_through_every_door_and_in_the_audit(kind: DbKind) {
    let mut d = doors_with(kind, 2 * LONG_ERROR_INPUT).await;
    let token = member("org-a");
    let loud = json!({ "bytes": "e".repeat(LONG_ERROR_INPUT) });
    let request = pb::ExecuteToolRequest {
        integration_id: d.id.clone(),
        tool_name: "big".into(),
        arguments_json: loud.to_string(),
        ..Default::default()
    };
    let answered =
        d.h.client
            .execute_tool(req(request, &token))
            .await
            .expect("answered")
            .into_inner();
    assert!(answered.is_error);
    assert_cut(&answered.error_message);

    let client = d.endpoint().await;
    let params = CallToolRequestParams::new("big")
        .with_arguments(loud.as_object().expect("an object").clone());
    match client.call_tool(params).await {
        Err(ServiceError::McpError(data)) => assert_cut(&data.message),
        Ok(result) => {
            let result = serde_json::to_value(result).expect("JSON");
            assert_cut(result["content"][0]["text"].as_str().expect("text"));
        }
        Err(other) => panic!("{other}"),
    }
    let _ = client.cancel().await;

    for _ in 0..50 {
        if d.audited_targets().await.len() >= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let recorded = d.audited_targets().await;
    assert_eq!(recorded.len(), 2, "{recorded:?}");
    for (_, reason) in recorded {
        assert_cut(&reason);
    }
}

fn assert_cut(text: &str) {
    assert!(text.len() < MAX_TEXT + 128, "{} bytes", text.len());
    assert!(
        text.ends_with(" bytes]"),
        "{}",
        &text[text.len().saturating_sub(80)..]
    );
}

async fn a_host_that_is_more_than_host_and_port_is_refused_and_never_reflected(kind: DbKind) {
    let d = doors(kind).await;
    let http = reqwest::Client::new();
    for host in [
        "[localhost]evil.example",
        "[::1]@evil.example",
        "localhost@evil.example",
    ] {
        let call = http
            .post(d.url())
            .header("host", host)
            .header("accept", "application/json, text/event-stream")
            .json(&json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list" }))
            .send()
            .await
            .expect("answers");
        assert_eq!(call.status(), reqwest::StatusCode::FORBIDDEN, "{host}");
        let metadata = http
            .get(format!(
                "http://{}/.well-known/oauth-protected-resource/mcp/integrations/example",
                d.addr
            ))
            .header("host", host)
            .send()
            .await
            .expect("answers");
        assert_eq!(metadata.status(), reqwest::StatusCode::FORBIDDEN, "{host}");
        assert!(!metadata.text().await.expect("a body").contains("evil"));
    }
    // An allowed host is named back as it was parsed.
    let metadata: Value = http
        .get(format!(
            "http://{}/.well-known/oauth-protected-resource/mcp/integrations/example",
            d.addr
        ))
        .header("host", format!("LOCALHOST:{}", d.addr.port()))
        .send()
        .await
        .expect("answers")
        .json()
        .await
        .expect("JSON");
    assert_eq!(
        metadata["resource"],
        format!(
            "http://localhost:{}/mcp/integrations/example",
            d.addr.port()
        )
    );
}

db_tests!(
    each_front_door_refuses_past_each_bound_before_any_server_or_record,
    a_servers_long_error_is_cut_and_marked_through_every_door_and_in_the_audit,
    a_host_that_is_more_than_host_and_port_is_refused_and_never_reflected,
);
