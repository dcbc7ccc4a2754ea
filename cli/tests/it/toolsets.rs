//! `switchboard toolsets`: a toolset created from integrations named by
//! slug, with tool and resource selections, read, listed, changed and
//! deleted; a toolset made from an agent's selection.

use switchboard_proto::runs::v1::{self as runs, runs_service_client::RunsServiceClient};
use switchboard_test_support::authed;

use crate::world::{World, id};

#[tokio::test]
async fn a_toolset_is_created_by_slug_read_listed_updated_and_deleted() {
    let world = World::start(Vec::new()).await;
    let url = world.upstream.url();
    let example = id(&world
        .json(&["integrations", "create", "--slug", "example", "--url", &url])
        .await);
    let second = id(&world
        .json(&["integrations", "create", "--slug", "second", "--url", &url])
        .await);

    let created = world
        .json(&[
            "toolsets",
            "create",
            "dev-tools",
            "--description",
            "for the IDE",
            "--member",
            "example",
            "--tools",
            "example=echo,add",
            "--rename",
            "example=echo:say",
            "--describe",
            "example=echo:Says it back.",
            "--hide",
            "example=add",
            "--member",
            &second,
            "--resource",
            &format!("{second}=file:///readme"),
            "--resource",
            &format!("{second}=file:///{{path}}"),
        ])
        .await;
    assert_eq!(created["name"], "dev-tools");
    let members = created["members"].as_array().expect("members");
    assert_eq!(members[0]["integrationId"], example.as_str());
    assert_eq!(members[0]["integrationSlug"], "example");
    assert_eq!(
        members[0]["tools"]["names"],
        serde_json::json!(["echo", "add"])
    );
    assert!(members[0].get("resources").is_none(), "every resource");
    assert_eq!(
        members[0]["toolOverrides"],
        serde_json::json!([
            { "tool": "echo", "name": "say", "description": "Says it back." },
            { "tool": "add", "hidden": true },
        ])
    );
    assert_eq!(members[1]["integrationSlug"], "second");
    assert_eq!(
        members[1]["resources"]["names"],
        serde_json::json!(["file:///readme", "file:///{path}"])
    );

    let shown = world.ok(&["toolsets", "get", "dev-tools"]).await;
    assert!(shown.starts_with("dev-tools: for the IDE"), "{shown}");
    assert!(shown.contains("echo, add"), "{shown}");
    assert!(shown.contains("echo as say, add hidden"), "{shown}");
    let listed = world.ok(&["toolsets", "list"]).await;
    assert!(
        listed.contains("dev-tools") && listed.contains("example, second"),
        "{listed}"
    );

    let unknown = world
        .run(&[
            "toolsets", "create", "other", "--member", "example", "--tools", "nope=x",
        ])
        .await;
    assert!(!unknown.status.success(), "a selection of no member");

    let updated = world
        .json(&[
            "toolsets",
            "update",
            "dev-tools",
            "--member",
            "second",
            "--tools",
            "second=",
        ])
        .await;
    assert_eq!(updated["description"], "for the IDE", "kept");
    assert_eq!(updated["members"][0]["integrationSlug"], "second");
    assert_eq!(
        updated["members"][0]["tools"],
        serde_json::json!({}),
        "selects none"
    );
    let nothing = world.run(&["toolsets", "update", "dev-tools"]).await;
    assert!(!nothing.status.success(), "nothing to change");

    world.ok(&["toolsets", "delete", "dev-tools"]).await;
    let gone = world.run(&["toolsets", "get", "dev-tools"]).await;
    assert!(!gone.status.success());
    assert!(
        String::from_utf8_lossy(&gone.stderr).contains("toolset not found"),
        "{}",
        String::from_utf8_lossy(&gone.stderr)
    );
}

/// `toolsets create --from-agent`: the agent's integrations become the
/// members, each narrowed to the agent's tool allow-list for it; `update
/// --from-agent` takes them again after the agent changed.
#[tokio::test]
async fn a_toolset_is_made_from_an_agents_integrations_and_tool_allow_list() {
    let world = World::start(Vec::new()).await;
    let (example, agent) = world.agent(&[]).await;
    let second = id(&world
        .json(&[
            "integrations",
            "create",
            "--slug",
            "second",
            "--url",
            &world.upstream.url(),
        ])
        .await);
    let mut runs = RunsServiceClient::connect(world.runs_url.clone())
        .await
        .expect("connects");
    let narrowed = runs::Agent {
        id: agent.clone(),
        mcp_integration_ids: vec![example.clone(), second.clone()],
        tool_filters: vec![runs::IntegrationToolFilter {
            integration_id: second.clone(),
            allowed_tools: vec!["echo".into()],
        }],
        ..Default::default()
    };
    runs.update_agent(authed(
        runs::UpdateAgentRequest {
            agent: Some(narrowed),
            update_mask: Some(prost_types::FieldMask {
                paths: vec!["mcp_integration_ids".into(), "tool_filters".into()],
            }),
        },
        &world.token,
    ))
    .await
    .expect("the agent is narrowed");

    let created = world
        .json(&[
            "toolsets",
            "create",
            "assistant-tools",
            "--from-agent",
            "assistant",
        ])
        .await;
    let members = created["members"].as_array().expect("members");
    assert_eq!(members.len(), 2, "{created}");
    assert_eq!(members[0]["integrationId"], example.as_str());
    assert!(members[0].get("tools").is_none(), "every tool: {created}");
    assert_eq!(members[1]["integrationSlug"], "second");
    assert_eq!(members[1]["tools"]["names"], serde_json::json!(["echo"]));

    let both = world
        .run(&[
            "toolsets",
            "create",
            "mixed",
            "--from-agent",
            &agent,
            "--member",
            "example",
        ])
        .await;
    assert!(!both.status.success(), "--from-agent or --member, not both");

    runs.update_agent(authed(
        runs::UpdateAgentRequest {
            agent: Some(runs::Agent {
                id: agent.clone(),
                mcp_integration_ids: vec![second.clone()],
                ..Default::default()
            }),
            update_mask: Some(prost_types::FieldMask {
                paths: vec!["mcp_integration_ids".into()],
            }),
        },
        &world.token,
    ))
    .await
    .expect("the agent changes");
    let unchanged = world.json(&["toolsets", "get", "assistant-tools"]).await;
    assert_eq!(
        unchanged["members"].as_array().map(Vec::len),
        Some(2),
        "a copy"
    );
    let updated = world
        .json(&[
            "toolsets",
            "update",
            "assistant-tools",
            "--from-agent",
            &agent,
        ])
        .await;
    let members = updated["members"].as_array().expect("members");
    assert_eq!(members.len(), 1, "{updated}");
    assert_eq!(members[0]["integrationSlug"], "second");
}
