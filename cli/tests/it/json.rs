//! `--json` prints what the services answered, in the protobuf JSON
//! mapping, for every command group.

use switchboard_scripted_model::{ScriptedToolCall, Turn};

use crate::world::{World, id};

#[tokio::test]
async fn every_command_prints_json_that_parses() {
    let world = World::start(vec![
        Turn::ToolCalls(vec![ScriptedToolCall::new(
            "c1",
            "example__add",
            r#"{"a":2,"b":3}"#,
        )]),
        Turn::FromToolResults("the sum is {last_tool_result}".into()),
    ])
    .await;
    let (integration_id, agent_id) = world.agent(&[]).await;

    let listed = world.json(&["integrations", "list"]).await;
    assert_eq!(listed["integrations"][0]["slug"], "example");
    let shown = world.json(&["integrations", "show", "example"]).await;
    assert_eq!(id(&shown), integration_id);
    assert_eq!(shown["enabled"], true);
    let validated = world.json(&["integrations", "validate", "example"]).await;
    assert_eq!(validated["ok"], true);
    assert_eq!(validated["toolCount"], 10);
    let discovered = world.json(&["integrations", "discover", "example"]).await;
    let uris: Vec<&str> = discovered["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .filter_map(|r| r["uri"].as_str())
        .collect();
    assert!(uris.contains(&"data://sales.csv"), "{uris:?}");
    assert_eq!(discovered["prompts"][0]["name"], "summarize");
    let catalog = world.json(&["integrations", "catalog"]).await;
    assert!(catalog.is_object());

    let agents = world.json(&["agents", "list"]).await;
    assert_eq!(id(&agents["agents"][0]), agent_id);
    assert_eq!(
        world.json(&["agents", "show", "assistant"]).await["mcpIntegrationIds"][0],
        integration_id.as_str()
    );

    let updated = world
        .json(&[
            "agents",
            "update",
            "assistant",
            "--name",
            "helper",
            "--max-steps",
            "4",
            "--tool-drift",
            "accept",
            "--tool-search",
            "true",
        ])
        .await;
    assert_eq!(
        (updated["name"].as_str(), updated["maxSteps"].as_i64()),
        (Some("helper"), Some(4))
    );
    assert_eq!(updated["toolDrift"], "TOOL_DRIFT_POLICY_ACCEPT");
    assert_eq!(updated["toolSearch"], true);
    assert_eq!(updated["mcpIntegrationIds"][0], integration_id.as_str());

    let thread = world.json(&["threads", "create", &agent_id]).await;
    let thread_id = id(&thread);
    assert_eq!(thread["agentId"], agent_id.as_str());

    // chat prints one event per line; the last one ends the run.
    let chat = world
        .ok(&[
            "--json",
            "chat",
            "--thread",
            &thread_id,
            "-m",
            "add 2 and 3",
        ])
        .await;
    let events: Vec<serde_json::Value> = chat
        .lines()
        .map(|line| serde_json::from_str(line).expect("each line is JSON"))
        .collect();
    assert!(
        events
            .iter()
            .any(|e| e["toolCallFinished"]["result"] == "5")
    );
    let last = events.last().expect("events");
    assert_eq!(
        last["runCompleted"]["run"]["status"],
        "RUN_STATUS_COMPLETED"
    );
    let run_id = last["runId"].as_str().expect("a run id").to_owned();

    let messages = world.json(&["threads", "messages", &thread_id]).await;
    let texts: Vec<&str> = messages["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter_map(|m| m["content"][0]["text"]["text"].as_str())
        .collect();
    assert_eq!(texts, ["add 2 and 3", "the sum is 5"]);

    let runs = world.json(&["runs", "list", "--thread", &thread_id]).await;
    assert_eq!(id(&runs["runs"][0]), run_id);
    let runs = world.json(&["runs", "list", &thread_id]).await;
    assert_eq!(id(&runs["runs"][0]), run_id);

    // Re-attaching from an event on: the rest of the run's events, one per
    // line, as chat printed them.
    let watched = world
        .ok(&["--json", "runs", "watch", &run_id, "--from", "2"])
        .await;
    let replayed: Vec<serde_json::Value> = watched
        .lines()
        .map(|line| serde_json::from_str(line).expect("each line is JSON"))
        .collect();
    assert_eq!(replayed.len(), events.len() - 1);
    assert_eq!(replayed[0]["sequence"], 2);
    assert_eq!(replayed.last(), events.last());
    let cancel = world.run(&["runs", "cancel", &run_id]).await;
    assert!(!cancel.status.success(), "an ended run cannot be cancelled");
    assert!(
        String::from_utf8_lossy(&cancel.stderr).contains("already ended"),
        "{}",
        String::from_utf8_lossy(&cancel.stderr)
    );
    let run = world.json(&["runs", "show", &run_id]).await;
    assert_eq!(run["steps"], 2);
    // What the run used, summed for the month (the world's caller is an
    // admin).
    let usage = world
        .json(&[
            "usage",
            "--from",
            "2000-01-01",
            "--to",
            "2000-12-31",
            "--monthly",
        ])
        .await;
    assert!(usage.get("rows").is_none(), "no usage in 2000: {usage}");
    let today = switchboard_runs_service::domain::usage::day_of(
        i64::try_from(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .expect("after 1970")
                .as_millis(),
        )
        .expect("in range"),
    );
    let usage = world
        .json(&["usage", "--from", &today, "--to", &today, "--by", "agent"])
        .await;
    assert_eq!(usage["rows"][0]["runs"], 1, "{usage}");
    assert_eq!(usage["rows"][0]["toolCalls"], 1, "{usage}");

    let csv = world.home.path().join("prices.csv");
    std::fs::write(&csv, "product,price\nwidget,2.5\n").expect("written");
    let csv = csv.display().to_string();
    let source = world
        .json(&["sources", "import", "--thread", &thread_id, &csv])
        .await;
    assert_eq!(source["tableName"], "prices");
    assert_eq!(source["rowCount"], 1);
    let sources = world
        .json(&["sources", "list", "--thread", &thread_id])
        .await;
    assert_eq!(sources["dataSources"][0]["tableName"], "prices");

    let disabled = world.json(&["integrations", "disable", "example"]).await;
    assert!(
        disabled.get("enabled").is_none(),
        "false is left out: {disabled}"
    );
    assert_eq!(
        world.json(&["integrations", "enable", "example"]).await["enabled"],
        true
    );
}

#[tokio::test]
async fn completions_are_printed_for_each_shell() {
    let world = World::start(Vec::new()).await;
    for shell in ["bash", "zsh", "fish"] {
        let script = world.ok(&["completions", shell]).await;
        assert!(script.contains("integrations"), "{shell}: {script}");
    }
}

#[tokio::test]
async fn a_repeated_create_with_the_same_request_id_happens_once() {
    let world = World::start(Vec::new()).await;
    let create = [
        "--request-id",
        "key-1",
        "agents",
        "create",
        "--name",
        "once",
        "--provider",
        "scripted",
        "--model",
        "m",
    ];
    let first = world.json(&create).await;
    let again = world.json(&create).await;
    assert_eq!(id(&first), id(&again));
    let agents = world.json(&["agents", "list"]).await;
    assert_eq!(
        agents["agents"].as_array().map(Vec::len),
        Some(1),
        "{agents}"
    );
}
