//! Hostile CSV resources: what an MCP server sends is imported by its bytes,
//! and a file built to amplify is refused before it is built.

use switchboard_proto::runs::v1 as runs;
use switchboard_scripted_model::{ScriptedToolCall, Turn};

use crate::world::{Options, World, final_run, tool_messages_sent, world};

/// Reads `uri` as a resource, then answers with the tool's result.
async fn read(uri: &'static str) -> World {
    world(Options {
        turns_for: Some(Box::new(move |integration_id: &str| {
            let arguments =
                serde_json::json!({"integrationId": integration_id, "resourceUri": uri});
            vec![
                Turn::ToolCalls(vec![ScriptedToolCall::new(
                    "c0",
                    "retrieve_mcp_resource",
                    arguments.to_string(),
                )]),
                Turn::FromToolResults("Answer: {last_tool_result}".into()),
            ]
        })),
        ..Options::default()
    })
    .await
}

#[tokio::test]
async fn a_csv_resource_sent_as_a_blob_is_imported_with_its_rows() {
    let mut w = read("data://sales-blob").await;
    let events = w.say("Import the sales").await;
    assert_eq!(final_run(&events).status(), runs::RunStatus::Completed);
    let imported = &tool_messages_sent(&w.model, 1)[0];
    assert!(
        imported.starts_with("CSV resource imported as data source: data://sales-blob"),
        "{imported}"
    );
    assert!(imported.contains("Rows: 6"), "{imported}");
}

#[tokio::test]
async fn a_csv_resource_of_short_rows_is_refused_at_the_cell_limit() {
    let mut w = read("data://short-rows.csv").await;
    let events = w.say("Import the wide file").await;
    assert_eq!(final_run(&events).status(), runs::RunStatus::Completed);
    let refused = &tool_messages_sent(&w.model, 1)[0];
    assert!(
        refused.starts_with("Resource retrieval failed: the CSV has 500 columns")
            && refused.contains("cells"),
        "{refused}"
    );
}

#[tokio::test]
async fn the_models_integration_id_is_read_in_any_spelling_and_quoted_when_it_names_none() {
    let mut w = world(Options {
        turns_for: Some(Box::new(|integration_id: &str| {
            let read = |named: &str| {
                serde_json::json!({"integrationId": named, "resourceUri": "data://sales.csv"})
                    .to_string()
            };
            vec![
                Turn::ToolCalls(vec![
                    ScriptedToolCall::new(
                        "c0",
                        "retrieve_mcp_resource",
                        read(&integration_id.to_uppercase()),
                    ),
                    ScriptedToolCall::new("c1", "retrieve_mcp_resource", read("sales/../../x")),
                ]),
                Turn::FromToolResults("Answer: {last_tool_result}".into()),
            ]
        })),
        ..Options::default()
    })
    .await;
    let events = w.say("Import the sales").await;
    assert_eq!(final_run(&events).status(), runs::RunStatus::Completed);
    let results = tool_messages_sent(&w.model, 1);
    assert!(
        results[0].starts_with("CSV resource imported as data source: data://sales.csv"),
        "{results:?}"
    );
    assert_eq!(
        results[1],
        "Resource retrieval failed: the integration sales/../../x is not available in this conversation"
    );
}
