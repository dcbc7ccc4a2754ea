//! Against the MCP reference server (`@modelcontextprotocol/server-everything`
//! from npm, installed by `make tools`), over streamable HTTP and stdio.

use std::{
    io::{BufRead as _, BufReader},
    path::PathBuf,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use serde_json::json;
use switchboard_proto::{
    json::json_to_struct,
    mcp::v1::{self as pb, content_block::Block},
};
use switchboard_test_support::{DbKind, grpc::free_port};

use crate::support::{Harness, admin, create, http_integration, req, start_with};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn everything_entry() -> PathBuf {
    let entry =
        root().join(".tools/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(
        entry.exists(),
        "{} is missing: run `make tools`",
        entry.display()
    );
    entry
}

fn node() -> PathBuf {
    let output = Command::new("sh")
        .args(["-c", "command -v node"])
        .output()
        .expect("sh runs");
    let path = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    assert!(
        !path.is_empty(),
        "node is required: it ships with the machine image"
    );
    std::fs::canonicalize(path).expect("node resolves")
}

pub(crate) struct NodeServer(Child);

impl Drop for NodeServer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts the reference server over streamable HTTP on a loopback port.
pub(crate) fn start_http_everything() -> (NodeServer, String) {
    let port = free_port().expect("a port");
    let mut child = Command::new(node())
        .arg("--require")
        .arg(root().join("tests/support/listen-loopback.cjs"))
        .arg(everything_entry())
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("node starts");
    let stderr = child.stderr.take().expect("piped");
    let server = NodeServer(child);
    let mut lines = BufReader::new(stderr).lines();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        assert!(
            Instant::now() < deadline,
            "the reference server did not start"
        );
        match lines.next() {
            Some(Ok(line)) if line.contains("listening on port") => break,
            Some(_) => {}
            None => panic!("the reference server exited"),
        }
    }
    // Keep draining its stderr so it never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    (server, format!("http://127.0.0.1:{port}/mcp"))
}

/// server-everything over HTTP, `org-a`'s integration `everything` in an
/// mcp-service whose MCP endpoint listens: the service, the server and the
/// integration's URL on the endpoint.
pub(crate) async fn everything_behind_the_endpoint(kind: DbKind) -> (Harness, NodeServer, String) {
    let (everything, upstream) = start_http_everything();
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], free_port().expect("a port")));
    let mut h = start_with(kind, |config| {
        config.endpoint.listen = Some(addr);
        // Node servers start slowly on a busy machine.
        config.connect_timeout = Duration::from_secs(30);
    })
    .await;
    create(
        &mut h,
        &admin("org-a"),
        http_integration("everything", &upstream),
    )
    .await;
    (
        h,
        everything,
        format!("http://{addr}/mcp/integrations/everything"),
    )
}

async fn call(
    h: &mut Harness,
    id: &str,
    tool: &str,
    arguments: serde_json::Value,
) -> pb::ExecuteToolResponse {
    h.client
        .execute_tool(req(
            pb::ExecuteToolRequest {
                integration_id: id.into(),
                tool_name: tool.into(),
                arguments: json_to_struct(&arguments),
                session_scope: "everything".into(),
                arguments_json: String::new(),
                ..Default::default()
            },
            &admin("org-a"),
        ))
        .await
        .expect("answered")
        .into_inner()
}

fn first_text(response: &pb::ExecuteToolResponse) -> String {
    response
        .content
        .iter()
        .find_map(|b| match &b.block {
            Some(Block::Text(t)) => Some(t.text.clone()),
            _ => None,
        })
        .unwrap_or_default()
}

// Reads through the deprecated `parameters` Struct, which older callers
// still send.
#[allow(deprecated)]
async fn exercise(h: &mut Harness, id: &str) {
    let token = admin("org-a");
    let discovered = h
        .client
        .discover(req(
            pb::DiscoverRequest {
                integration_id: id.into(),
                bypass_cache: true,
                allowed_tools: None,
            },
            &token,
        ))
        .await
        .expect("discovered")
        .into_inner();
    let tools: Vec<_> = discovered.tools.iter().map(|t| t.name.as_str()).collect();
    assert!(
        tools.contains(&"echo") && tools.contains(&"get-sum"),
        "{tools:?}"
    );
    assert!(!discovered.resources.is_empty());
    assert!(
        discovered
            .resource_templates
            .iter()
            .any(|t| t.uri_template == "demo://resource/dynamic/text/{resourceId}"),
        "{:?}",
        discovered.resource_templates
    );
    let args_prompt = discovered
        .prompts
        .iter()
        .find(|p| p.name == "args-prompt")
        .expect("args-prompt");
    assert!(
        args_prompt
            .arguments
            .iter()
            .any(|a| a.name == "city" && a.required)
    );

    let echo = call(h, id, "echo", json!({"message": "hi"})).await;
    assert!(!echo.is_error, "{}", echo.error_message);
    assert_eq!(first_text(&echo), "Echo: hi");
    let sum = call(h, id, "get-sum", json!({"a": 2, "b": 3})).await;
    assert!(first_text(&sum).contains('5'), "{sum:?}");
    let invalid = call(h, id, "echo", json!({})).await;
    assert!(invalid.is_error, "a missing argument is an error result");
    let image = call(h, id, "get-tiny-image", json!({})).await;
    assert!(
        image
            .content
            .iter()
            .any(|b| matches!(&b.block, Some(Block::Image(i)) if !i.data.is_empty()))
    );

    let resource = h
        .client
        .retrieve_resource(req(
            pb::RetrieveResourceRequest {
                integration_id: id.into(),
                uri: "demo://resource/dynamic/text/{resourceId}".into(),
                parameters: json_to_struct(&json!({"resourceId": 7})),
                session_scope: String::new(),
                ..Default::default()
            },
            &token,
        ))
        .await
        .expect("read")
        .into_inner();
    assert_eq!(resource.uri, "demo://resource/dynamic/text/7");
    assert_eq!(resource.kind(), pb::ResourceKind::Text);

    let prompt = h
        .client
        .get_prompt(req(
            pb::GetPromptRequest {
                integration_id: id.into(),
                name: "args-prompt".into(),
                arguments: [("city".to_owned(), "Paris".to_owned())].into(),
                session_scope: String::new(),
                ..Default::default()
            },
            &token,
        ))
        .await
        .expect("rendered")
        .into_inner();
    let text = prompt.messages.iter().find_map(|m| {
        match m.content.as_ref().and_then(|c| c.block.as_ref()) {
            Some(Block::Text(t)) => Some(t.text.clone()),
            _ => None,
        }
    });
    assert!(text.unwrap_or_default().contains("Paris"));
}

#[tokio::test]
async fn the_reference_server_works_over_streamable_http() {
    let (_server, url) = start_http_everything();
    let mut h = start_with(DbKind::Sqlite, |_| {}).await;
    let id = create(
        &mut h,
        &admin("org-a"),
        http_integration("everything", &url),
    )
    .await
    .id;
    exercise(&mut h, &id).await;
}

#[tokio::test]
async fn the_reference_server_works_over_stdio() {
    let node = node().display().to_string();
    let allowed = format!("{node} {} stdio", everything_entry().display());
    let mut h = start_with(DbKind::Sqlite, move |config| config.stdio_allow = allowed).await;
    let mut request = http_integration("everything", "http://unused");
    request.source = Some(pb::create_integration_request::Source::Custom(
        pb::CustomIntegrationSpec {
            transport: Some(pb::Transport {
                kind: Some(pb::transport::Kind::Stdio(pb::StdioTransport {
                    command: node,
                    args: vec![everything_entry().display().to_string(), "stdio".into()],
                    ..Default::default()
                })),
            }),
            auth: None,
        },
    ));
    let id = create(&mut h, &admin("org-a"), request).await.id;
    exercise(&mut h, &id).await;
}
