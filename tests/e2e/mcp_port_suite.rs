//! The `McpPort` suite: what runs-service expects of mcp-service, asked of
//! its gRPC adapter (`GrpcMcp`, over loopback to a real mcp-service in
//! front of the example MCP server) and of the fake the run loop's unit
//! tests use (`fakes::FakeMcp`, set up with the same tools), so that the
//! fake answers as mcp-service does in every case here.

use std::{sync::Arc, time::Duration};

use secrecy::SecretString;
use serde_json::{Map, Value, json};
use switchboard_auth::{BearerToken, Principal};
use switchboard_example_mcp_server::{HttpServerOptions, RunningHttpServer, spawn_http};
use switchboard_proto::mcp::v1::mcp_service_client::McpServiceClient;
use switchboard_runs_service::{
    domain::{
        ids::IntegrationId,
        ports::{
            Caller, Content, FailureFacts, McpCallError, McpPort, McpResourceRequest,
            McpToolRequest, ToolFailure, ToolOutput,
        },
    },
    fakes::{FakeMcp, ToolBehaviour},
    outbound::mcp::{GrpcMcp, McpEndpoints},
};
use switchboard_server::RunningServer;
use switchboard_test_support::{TEST_JWT_SECRET, TestDb};

use crate::world::{ORG, admin, create_integration};

const TIMEOUT: Duration = Duration::from_secs(10);

/// Which implementation a case runs on.
#[derive(Debug, Clone, Copy)]
enum Impl {
    Grpc,
    Fake,
}

/// The port, the integration `example` it reaches, and what serves them.
struct Port {
    mcp: Arc<dyn McpPort>,
    example: IntegrationId,
    caller: Caller,
    _serving: Option<(TestDb, RunningServer, RunningHttpServer)>,
}

async fn port(of: Impl) -> Port {
    let token = admin();
    let caller = Caller {
        principal: Principal::new(ORG, "user-e2e", vec!["admin".to_owned()]),
        token: Some(BearerToken(Arc::new(SecretString::from(token.clone())))),
    };
    match of {
        Impl::Grpc => {
            let upstream = spawn_http(HttpServerOptions::default())
                .await
                .expect("example server");
            let db = TestDb::sqlite().expect("db");
            let config = switchboard_mcp_service::Config::for_tests(&db.url, TEST_JWT_SECRET);
            let mcp = switchboard_mcp_service::spawn(config)
                .await
                .expect("mcp-service");
            let mut client = McpServiceClient::connect(mcp.url())
                .await
                .expect("connects");
            let id =
                create_integration(&mut client, &token, "example", &upstream.url(), None).await;
            let endpoints = McpEndpoints::parse(
                &mcp.url(),
                None,
                Duration::from_secs(30),
                Duration::from_secs(30),
                Duration::from_secs(10),
            )
            .expect("an address");
            Port {
                mcp: Arc::new(GrpcMcp::new(&endpoints).await),
                example: id.parse().expect("a UUID"),
                caller,
                _serving: Some((db, mcp, upstream)),
            }
        }
        Impl::Fake => {
            // The example server's tools that the cases call, as it answers
            // the arguments below.
            let fake = FakeMcp::default()
                .tool(
                    "example",
                    "echo",
                    ToolBehaviour::Answer("hello".into(), Duration::ZERO),
                )
                .tool("example", "fail", ToolBehaviour::Fail("boom".into()))
                .tool(
                    "example",
                    "add",
                    ToolBehaviour::Structured(
                        json!({"type": "object", "properties": {"sum": {"type": "number"}}}),
                        json!({"sum": 5.0}),
                    ),
                );
            Port {
                mcp: Arc::new(fake),
                example: FakeMcp::id("example"),
                caller,
                _serving: None,
            }
        }
    }
}

impl Port {
    async fn call(&self, integration: IntegrationId, tool: &str, arguments: Value) -> ToolOutput {
        self.try_call(integration, tool, arguments)
            .await
            .unwrap_or_else(|e| panic!("{tool}: {e:?}"))
    }

    async fn try_call(
        &self,
        integration_id: IntegrationId,
        tool: &str,
        arguments: Value,
    ) -> Result<ToolOutput, McpCallError> {
        let arguments = arguments.to_string();
        let call = McpToolRequest {
            integration_id,
            tool,
            arguments: &arguments,
            scope: "thread-1",
            answers: None,
            approval_id: None,
            allowed_tools: None,
        };
        self.mcp.execute_tool(&self.caller, call, TIMEOUT).await
    }
}

fn unknown() -> IntegrationId {
    IntegrationId::from(uuid::Uuid::now_v7())
}

async fn discovery_names_the_integration_and_its_tools(of: Impl) {
    let p = port(of).await;
    let found = p
        .mcp
        .discover(&p.caller, p.example, None, TIMEOUT)
        .await
        .expect("discovered");
    assert_eq!(
        (found.integration_id, found.slug.as_str()),
        (p.example, "example")
    );
    let tool = |name: &str| {
        found
            .tools
            .iter()
            .find(|t| t.name == name)
            .unwrap_or_else(|| panic!("no tool {name} in {:?}", found.tools))
    };
    assert!(tool("echo").output_schema.is_none());
    assert!(tool("add").output_schema.is_some());
    assert!(tool("fail").input_schema.is_object());
}

async fn a_tool_answers_with_its_content(of: Impl) {
    let p = port(of).await;
    let output = p.call(p.example, "echo", json!({"text": "hello"})).await;
    assert_eq!(output.failure, None);
    assert_eq!(output.content, [Content::Text("hello".into())]);
    assert_eq!(output.structured, None);
}

async fn a_tool_error_is_a_result_carrying_the_tools_text(of: Impl) {
    let p = port(of).await;
    let output = p.call(p.example, "fail", json!({"message": "boom"})).await;
    assert_eq!(output.failure, Some(ToolFailure::ToolError));
    assert!(
        output.content.contains(&Content::Text("boom".into())),
        "{:?}",
        output.content
    );
    assert_eq!(output.facts, None);
}

async fn a_structured_result_comes_as_exact_json(of: Impl) {
    let p = port(of).await;
    let output = p.call(p.example, "add", json!({"a": 2, "b": 3})).await;
    assert_eq!(output.failure, None);
    // Exact: the example server sums as floating point, and says so.
    assert_eq!(output.structured.as_deref(), Some(r#"{"sum":5.0}"#));
}

async fn an_integration_of_no_one_is_not_found(of: Impl) {
    let p = port(of).await;
    let discovered = p.mcp.discover(&p.caller, unknown(), None, TIMEOUT).await;
    assert!(
        matches!(discovered, Err(McpCallError::NotFound(_))),
        "{discovered:?}"
    );
    let called = p.try_call(unknown(), "echo", json!({"text": "x"})).await;
    assert!(
        matches!(called, Err(McpCallError::NotFound(_))),
        "{called:?}"
    );
    let parameters = Map::new();
    let read = McpResourceRequest {
        integration_id: unknown(),
        uri: "example://nothing",
        parameters: &parameters,
        scope: "thread-1",
    };
    let read = p.mcp.retrieve_resource(&p.caller, read, TIMEOUT).await;
    assert!(matches!(read, Err(McpCallError::NotFound(_))), "{read:?}");
}

async fn an_agents_allow_list_narrows_what_is_discovered_and_called(of: Impl) {
    let p = port(of).await;
    let allowed = ["echo".to_owned()];
    let found = p
        .mcp
        .discover(&p.caller, p.example, Some(&allowed), TIMEOUT)
        .await
        .expect("discovered");
    let names: Vec<_> = found.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["echo"]);
    let arguments = json!({"message": "boom"}).to_string();
    let call = McpToolRequest {
        integration_id: p.example,
        tool: "fail",
        arguments: &arguments,
        scope: "thread-1",
        answers: None,
        approval_id: None,
        allowed_tools: Some(&allowed),
    };
    let refused = p.mcp.execute_tool(&p.caller, call, TIMEOUT).await;
    assert!(
        matches!(refused, Err(McpCallError::Refused(_))),
        "{refused:?}"
    );
}

async fn a_tool_the_server_does_not_have_is_the_servers_json_rpc_error(of: Impl) {
    let p = port(of).await;
    let output = p.call(p.example, "no_such_tool", json!({})).await;
    assert_eq!(output.failure, Some(ToolFailure::Protocol));
    // Invalid params: the code MCP gives an unknown tool.
    assert!(
        matches!(
            output.facts,
            Some(FailureFacts::JsonRpc { code: -32602, .. })
        ),
        "{output:?}"
    );
    assert!(output.content.is_empty());
}

macro_rules! mcp_port_suite {
    ($($case:ident),* $(,)?) => {
        mod grpc {
            $(
                #[tokio::test]
                async fn $case() {
                    super::$case(super::Impl::Grpc).await;
                }
            )*
        }
        mod fake {
            $(
                #[tokio::test]
                async fn $case() {
                    super::$case(super::Impl::Fake).await;
                }
            )*
        }
    };
}

mcp_port_suite!(
    discovery_names_the_integration_and_its_tools,
    a_tool_answers_with_its_content,
    a_tool_error_is_a_result_carrying_the_tools_text,
    a_structured_result_comes_as_exact_json,
    an_integration_of_no_one_is_not_found,
    an_agents_allow_list_narrows_what_is_discovered_and_called,
    a_tool_the_server_does_not_have_is_the_servers_json_rpc_error,
);
