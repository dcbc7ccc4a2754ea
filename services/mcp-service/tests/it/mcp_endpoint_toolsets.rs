//! `/mcp/toolsets/{name}` driven by the official TypeScript SDK's client: a
//! toolset of two integrations is one MCP server whose tools are prefixed
//! with their integration's slug, narrowed to the toolset's selection.

use std::net::SocketAddr;

use serde_json::json;
use switchboard_example_mcp_server::{HttpServerOptions, RunningHttpServer, spawn_http};
use switchboard_proto::mcp::v1::{self as pb, toolsets_service_client::ToolsetsServiceClient};
use switchboard_test_support::{DbKind, db_tests, grpc::free_port, workspace_binary};

use crate::{
    mcp_endpoint::{names, python_client, sdk_client, step},
    support::{Harness, admin, create, http_integration, member, req, start_with},
};

async fn a_toolset_of_two_integrations_is_one_server_with_prefixed_names(kind: DbKind) {
    let (first, second) = (
        spawn_http(HttpServerOptions::default())
            .await
            .expect("upstream"),
        spawn_http(HttpServerOptions::default())
            .await
            .expect("upstream"),
    );
    let addr = SocketAddr::from(([127, 0, 0, 1], free_port().expect("a port")));
    let mut h = start_with(kind, |config| config.endpoint.listen = Some(addr)).await;
    let token = admin("org-a");
    let alpha = create(&mut h, &token, http_integration("alpha", &first.url())).await;
    let beta = create(&mut h, &token, http_integration("beta", &second.url())).await;
    let mut toolsets = ToolsetsServiceClient::connect(h.server.url())
        .await
        .expect("connects");
    let members = vec![
        pb::ToolsetMember {
            integration_id: alpha.id.clone(),
            ..Default::default()
        },
        pb::ToolsetMember {
            integration_id: beta.id.clone(),
            tools: Some(pb::ToolsetSelection {
                names: vec!["add".into()],
            }),
            ..Default::default()
        },
    ];
    toolsets
        .create_toolset(req(
            pb::CreateToolsetRequest {
                toolset: Some(pb::Toolset {
                    name: "team-tools".into(),
                    description: "alpha whole, beta's add".into(),
                    members,
                    ..Default::default()
                }),
            },
            &token,
        ))
        .await
        .expect("created");

    let url = format!("http://{addr}/mcp/toolsets/team-tools");
    let out = sdk_client(
        &url,
        Some(&member("org-a")),
        json!([
            { "op": "listTools" },
            { "op": "callTool", "name": "alpha__echo", "arguments": { "text": "via a toolset" } },
            { "op": "callTool", "name": "beta__add", "arguments": { "a": 2, "b": 3 } },
            { "op": "callTool", "name": "beta__echo", "arguments": { "text": "not selected" } },
        ]),
    )
    .await;
    assert_eq!(out["connected"], true, "{out}");
    let tools = names(&step(&out, 0)["tools"]);
    assert!(tools.contains(&"alpha__echo".to_owned()), "{tools:?}");
    assert!(tools.contains(&"alpha__add".to_owned()), "{tools:?}");
    assert!(tools.contains(&"beta__add".to_owned()), "{tools:?}");
    assert!(
        tools
            .iter()
            .all(|t| !t.starts_with("beta__") || t == "beta__add"),
        "only the selected tool of beta is listed: {tools:?}"
    );
    assert_eq!(step(&out, 1)["content"][0]["text"], "via a toolset");
    let sum = step(&out, 2).to_string();
    assert!(sum.contains('5'), "the call reached beta's add: {sum}");
    let refused = &out["steps"][3];
    assert!(
        refused.get("ok").is_none_or(|ok| ok["isError"] == true),
        "a tool outside the selection is not callable: {refused}"
    );

    // Another organization's caller finds no such toolset, as for a name
    // that was never made.
    for (name, token) in [
        ("team-tools", member("org-b")),
        ("nothing", member("org-a")),
    ] {
        let out = sdk_client(
            &format!("http://{addr}/mcp/toolsets/{name}"),
            Some(&token),
            json!([]),
        )
        .await;
        assert_eq!(out["connected"], false, "{name}: {out}");
    }
}

async fn a_toolset_shows_a_tool_renamed_described_anew_or_hidden_and_calls_the_servers_own(
    kind: DbKind,
) {
    let upstream = spawn_http(HttpServerOptions::default())
        .await
        .expect("upstream");
    let addr = SocketAddr::from(([127, 0, 0, 1], free_port().expect("a port")));
    let mut h = start_with(kind, |config| config.endpoint.listen = Some(addr)).await;
    let token = admin("org-a");
    let alpha = create(&mut h, &token, http_integration("alpha", &upstream.url())).await;
    let mut toolsets = ToolsetsServiceClient::connect(h.server.url())
        .await
        .expect("connects");
    let overrides = vec![
        pb::ToolsetToolOverride {
            tool: "echo".into(),
            name: "say".into(),
            description: "Says the text back, word for word.".into(),
            hidden: false,
        },
        pb::ToolsetToolOverride {
            tool: "add".into(),
            hidden: true,
            ..Default::default()
        },
    ];
    let created = toolsets
        .create_toolset(req(
            pb::CreateToolsetRequest {
                toolset: Some(pb::Toolset {
                    name: "renamed".into(),
                    members: vec![pb::ToolsetMember {
                        integration_id: alpha.id.clone(),
                        tool_overrides: overrides.clone(),
                        ..Default::default()
                    }],
                    ..Default::default()
                }),
            },
            &token,
        ))
        .await
        .expect("created")
        .into_inner();
    let created = created.toolset.expect("the toolset");
    assert_eq!(created.members[0].tool_overrides, overrides, "read back");

    let out = sdk_client(
        &format!("http://{addr}/mcp/toolsets/renamed"),
        Some(&member("org-a")),
        json!([
            { "op": "listTools" },
            { "op": "callTool", "name": "say", "arguments": { "text": "under a new name" } },
            { "op": "callTool", "name": "alpha__echo", "arguments": { "text": "old name" } },
            { "op": "callTool", "name": "alpha__add", "arguments": { "a": 2, "b": 3 } },
        ]),
    )
    .await;
    assert_eq!(out["connected"], true, "{out}");
    let listed = &step(&out, 0)["tools"];
    let tools = names(listed);
    assert!(tools.contains(&"say".to_owned()), "{tools:?}");
    assert!(
        !tools
            .iter()
            .any(|t| t == "alpha__echo" || t == "alpha__add"),
        "neither the old name nor the hidden tool is listed: {tools:?}"
    );
    let say = listed
        .as_array()
        .and_then(|tools| tools.iter().find(|t| t["name"] == "say"))
        .expect("listed");
    assert_eq!(say["description"], "Says the text back, word for word.");
    assert!(
        say["inputSchema"]["properties"].get("text").is_some(),
        "the server's own schema: {say}"
    );
    assert_eq!(step(&out, 1)["content"][0]["text"], "under a new name");
    for refused in [&out["steps"][2], &out["steps"][3]] {
        assert!(
            refused.get("ok").is_none_or(|ok| ok["isError"] == true),
            "neither the old name nor a hidden tool is callable: {refused}"
        );
    }

    // A name an override gives may not look like another member's tool.
    let mut bad = overrides;
    bad[0].name = "beta__echo".into();
    let refused = toolsets
        .create_toolset(req(
            pb::CreateToolsetRequest {
                toolset: Some(pb::Toolset {
                    name: "bad".into(),
                    members: vec![pb::ToolsetMember {
                        integration_id: alpha.id.clone(),
                        tool_overrides: bad,
                        ..Default::default()
                    }],
                    ..Default::default()
                }),
            },
            &token,
        ))
        .await
        .expect_err("refused");
    assert_eq!(refused.code(), tonic::Code::InvalidArgument);
    assert!(
        refused.message().contains("tool_overrides[0].name"),
        "{}",
        refused.message()
    );
}

/// An integration of the example server over stdio, run as `binary`.
fn stdio_integration(slug: &str, binary: &str) -> pb::CreateIntegrationRequest {
    let mut request = http_integration(slug, "http://unused");
    request.source = Some(pb::create_integration_request::Source::Custom(
        pb::CustomIntegrationSpec {
            transport: Some(pb::Transport {
                kind: Some(pb::transport::Kind::Stdio(pb::StdioTransport {
                    command: binary.to_owned(),
                    args: vec!["--transport".into(), "stdio".into()],
                    ..Default::default()
                })),
            }),
            auth: None,
        },
    ));
    request
}

/// mcp-service with its endpoint on, and toolset `mixed` of org-a: the
/// example server as integration `remote` (HTTP) and as `local` (stdio).
struct Mixed {
    _h: Harness,
    _upstream: RunningHttpServer,
    /// The toolset's URL on the endpoint.
    url: String,
}

async fn mixed_toolset(kind: DbKind) -> Mixed {
    let upstream = spawn_http(HttpServerOptions::default())
        .await
        .expect("upstream");
    let binary = workspace_binary("switchboard-example-mcp-server", "example-mcp-server")
        .display()
        .to_string();
    let addr = SocketAddr::from(([127, 0, 0, 1], free_port().expect("a port")));
    let allowed = format!("{binary} --transport stdio");
    let mut h = start_with(kind, |config| {
        config.endpoint.listen = Some(addr);
        config.stdio_allow = allowed;
    })
    .await;
    let token = admin("org-a");
    let remote = create(&mut h, &token, http_integration("remote", &upstream.url())).await;
    let local = create(&mut h, &token, stdio_integration("local", &binary)).await;
    let mut toolsets = ToolsetsServiceClient::connect(h.server.url())
        .await
        .expect("connects");
    let members = [remote.id, local.id]
        .into_iter()
        .map(|integration_id| pb::ToolsetMember {
            integration_id,
            ..Default::default()
        })
        .collect();
    toolsets
        .create_toolset(req(
            pb::CreateToolsetRequest {
                toolset: Some(pb::Toolset {
                    name: "mixed".into(),
                    description: "over HTTP and over stdio".into(),
                    members,
                    ..Default::default()
                }),
            },
            &token,
        ))
        .await
        .expect("created");
    Mixed {
        _h: h,
        _upstream: upstream,
        url: format!("http://{addr}/mcp/toolsets/mixed"),
    }
}

async fn both_sdk_clients_use_a_toolset_of_an_http_and_a_stdio_integration(kind: DbKind) {
    let mixed = mixed_toolset(kind).await;
    let url = &mixed.url;
    let steps = json!([
        { "op": "listTools" },
        { "op": "callTool", "name": "local__echo", "arguments": { "text": "from a child process" } },
        { "op": "callTool", "name": "remote__add", "arguments": { "a": 2, "b": 3 } },
        { "op": "listPrompts" },
    ]);
    let typescript = sdk_client(url, Some(&member("org-a")), steps.clone()).await;
    let python = python_client(url, Some(&member("org-a")), "auto", steps).await;
    for out in [&typescript, &python] {
        assert_eq!(out["connected"], true, "{out}");
        let tools = names(&step(out, 0)["tools"]);
        for name in [
            "local__echo",
            "local__process",
            "remote__echo",
            "remote__add",
        ] {
            assert!(tools.contains(&name.to_owned()), "{name} in {tools:?}");
        }
        assert_eq!(step(out, 1)["content"][0]["text"], "from a child process");
        assert!(step(out, 2).to_string().contains('5'), "{out}");
        assert_eq!(
            names(&step(out, 3)["prompts"]),
            vec![
                "local__summarize".to_owned(),
                "remote__summarize".to_owned()
            ]
        );
    }
}

/// A tool its server runs as a task (the Tasks extension): mcp-service
/// follows the task on the client's behalf (`tasks/get` upstream until it
/// ends) and both SDK clients, which call it as any tool, get its result,
/// over HTTP and over stdio, in both eras.
async fn both_sdk_clients_get_the_result_of_a_tool_their_server_runs_as_a_task(kind: DbKind) {
    let mixed = mixed_toolset(kind).await;
    let steps = json!([
        { "op": "callTool", "name": "remote__task_sleep", "arguments": { "ms": 150 } },
        { "op": "callTool", "name": "local__task_sleep", "arguments": { "ms": 150 } },
        { "op": "callTool", "name": "remote__task_fail", "arguments": { "message": "no luck" } },
    ]);
    let token = member("org-a");
    let typescript = sdk_client(&mixed.url, Some(&token), steps.clone()).await;
    let stateless = python_client(&mixed.url, Some(&token), "auto", steps.clone()).await;
    let session = python_client(&mixed.url, Some(&token), "legacy", steps).await;
    for out in [&typescript, &stateless, &session] {
        assert_eq!(out["connected"], true, "{out}");
        for i in [0, 1] {
            assert_eq!(step(out, i)["content"][0]["text"], "slept 150ms", "{out}");
            assert_ne!(step(out, i)["isError"], true, "{out}");
        }
        // A task that fails is the call's tool error, its message kept.
        assert_eq!(step(out, 2)["isError"], true, "{out}");
        assert!(step(out, 2).to_string().contains("no luck"), "{out}");
    }
}

db_tests!(
    a_toolset_of_two_integrations_is_one_server_with_prefixed_names,
    a_toolset_shows_a_tool_renamed_described_anew_or_hidden_and_calls_the_servers_own,
    both_sdk_clients_use_a_toolset_of_an_http_and_a_stdio_integration,
    both_sdk_clients_get_the_result_of_a_tool_their_server_runs_as_a_task,
);
