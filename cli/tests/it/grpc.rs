//! `integrations create --grpc TARGET`: the example inventory service's
//! methods as tools, from its reflection or from a descriptor set read from
//! a file with one method chosen; a chat whose model calls one of them.

use switchboard_example_grpc_service::FILE_DESCRIPTOR_SET;
use switchboard_scripted_model::{ScriptedToolCall, Turn};
use switchboard_test_support::spawn_example_grpc_service;

use crate::world::{World, id};

/// The tool names `integrations discover` reports for `integration`.
async fn tools(world: &World, integration: &str) -> Vec<String> {
    let discovered = world.json(&["integrations", "discover", integration]).await;
    discovered["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no tools in {discovered}"))
        .iter()
        .filter_map(|t| t["name"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test]
async fn a_grpc_integration_from_reflection_is_called_in_a_chat() {
    let service = spawn_example_grpc_service();
    let world = World::start(vec![
        Turn::ToolCalls(vec![ScriptedToolCall::new(
            "c1",
            "inventory__Inventory_GetItem",
            r#"{"id":"9007199254740993"}"#,
        )]),
        Turn::FromToolResults("{last_tool_result}".into()),
    ])
    .await;
    world
        .ok(&[
            "integrations",
            "create",
            "--slug",
            "inventory",
            "--grpc",
            &service.url,
        ])
        .await;
    let shown = world.ok(&["integrations", "show", "inventory"]).await;
    assert!(
        shown.contains(&format!("grpc: {} (schema from reflection)", service.url)),
        "{shown}"
    );
    let offered = tools(&world, "inventory").await;
    for tool in [
        "Inventory_GetItem",
        "Inventory_PutItem",
        "Inventory_ListItems",
    ] {
        assert!(offered.iter().any(|t| t == tool), "{offered:?}");
    }

    let agent = world
        .json(&[
            "agents",
            "create",
            "--name",
            "clerk",
            "--provider",
            "scripted",
            "--model",
            "test-model",
            "--integration",
            "inventory",
        ])
        .await;
    let chat = world
        .ok(&[
            "--json",
            "chat",
            &id(&agent),
            "-m",
            "read item 9007199254740993",
        ])
        .await;
    let events: Vec<serde_json::Value> = chat
        .lines()
        .map(|line| serde_json::from_str(line).expect("each line is JSON"))
        .collect();
    let result = events
        .iter()
        .find_map(|e| e["toolCallFinished"]["result"].as_str())
        .unwrap_or_else(|| panic!("no finished tool call in {chat}"));
    assert!(
        result.contains(r#""9007199254740993""#) && result.contains("anvil"),
        "the 64-bit id comes back exact: {result}"
    );
    assert_eq!(
        events.last().expect("events")["runCompleted"]["run"]["status"],
        "RUN_STATUS_COMPLETED",
        "{chat}"
    );
}

#[tokio::test]
async fn a_grpc_integration_from_a_descriptor_set_offers_only_the_chosen_method() {
    let service = spawn_example_grpc_service();
    let world = World::start(Vec::new()).await;
    let dir = tempfile::tempdir().expect("a directory");
    let path = dir.path().join("inventory.binpb");
    std::fs::write(&path, FILE_DESCRIPTOR_SET).expect("written");
    let path = path.to_string_lossy().into_owned();
    world
        .ok(&[
            "integrations",
            "create",
            "--slug",
            "inventory",
            "--grpc",
            &service.url,
            "--descriptor-set",
            &path,
            "--method",
            "example.inventory.v1.Inventory/GetItem",
        ])
        .await;
    let shown = world.ok(&["integrations", "show", "inventory"]).await;
    assert!(
        shown.contains(&format!(
            "descriptor set of {} bytes",
            FILE_DESCRIPTOR_SET.len()
        )) && shown.contains("methods: example.inventory.v1.Inventory/GetItem"),
        "{shown}"
    );
    assert_eq!(tools(&world, "inventory").await, ["Inventory_GetItem"]);
}

#[tokio::test]
async fn grpc_options_need_a_grpc_target_and_a_client_key_its_certificate() {
    let world = World::start(Vec::new()).await;
    let without_target = world
        .run(&[
            "integrations",
            "create",
            "--slug",
            "x",
            "--url",
            "http://127.0.0.1:9/mcp",
            "--method",
            "a.B/C",
        ])
        .await;
    assert!(!without_target.status.success());
    let stderr = String::from_utf8_lossy(&without_target.stderr);
    assert!(stderr.contains("are for --grpc"), "{stderr}");
    let key_alone = world
        .run(&[
            "integrations",
            "create",
            "--slug",
            "x",
            "--grpc",
            "https://127.0.0.1:9",
            "--client-key",
            "key.pem",
        ])
        .await;
    assert!(!key_alone.status.success());
    let stderr = String::from_utf8_lossy(&key_alone.stderr);
    assert!(stderr.contains("--client-certificate"), "{stderr}");
}
