//! MCP resources and prompts as tools of the model, and CSV resources as data
//! sources it queries with SQL.

use switchboard_proto::runs::v1 as runs;
use switchboard_scripted_model::{ScriptedToolCall, Turn};
use switchboard_test_support::authed;
use tonic::Code;

use crate::world::{Options, World, final_run, tool_messages_sent, tools_offered, world};

fn call(id: &str, name: &str, arguments: String) -> ScriptedToolCall {
    ScriptedToolCall::new(id, name, arguments)
}

/// One tool call per turn, then a closing answer.
async fn script(calls: Vec<(&'static str, serde_json::Value)>) -> World {
    let calls: Vec<(String, String)> = calls
        .into_iter()
        .map(|(name, arguments)| (name.to_owned(), arguments.to_string()))
        .collect();
    world(Options {
        turns_for: Some(Box::new(move |integration_id: &str| {
            let mut turns: Vec<Turn> = calls
                .iter()
                .enumerate()
                .map(|(i, (name, arguments))| {
                    Turn::ToolCalls(vec![call(
                        &format!("c{i}"),
                        name,
                        arguments.replace("$INTEGRATION", integration_id),
                    )])
                })
                .collect();
            turns.push(Turn::FromToolResults("Answer: {last_tool_result}".into()));
            turns
        })),
        ..Options::default()
    })
    .await
}

#[tokio::test]
async fn the_model_imports_a_csv_resource_queries_it_and_answers_from_the_result() {
    let mut w = script(vec![
        (
            "retrieve_mcp_resource",
            serde_json::json!({"integrationId": "$INTEGRATION", "resourceUri": "data://sales.csv"}),
        ),
        (
            "source_query",
            serde_json::json!({"query": "SELECT region, SUM(units) AS units FROM sales GROUP BY region ORDER BY region"}),
        ),
    ])
    .await;
    let events = w.say("Units by region?").await;
    assert_eq!(final_run(&events).status(), runs::RunStatus::Completed);

    let imported = &tool_messages_sent(&w.model, 1)[0];
    assert!(
        imported.starts_with("CSV resource imported as data source: data://sales.csv"),
        "{imported}"
    );
    assert!(imported.contains("Table: sales"), "{imported}");
    assert!(
        imported.contains("units (integer)") && imported.contains("Rows: 6"),
        "{imported}"
    );
    assert!(imported.contains("source_query"), "{imported}");

    assert!(
        !tools_offered(&w.model, 0).contains(&"source_query".to_owned()),
        "no data sources yet"
    );
    assert!(
        tools_offered(&w.model, 1).contains(&"source_query".to_owned()),
        "offered once imported"
    );
    let queried = &tool_messages_sent(&w.model, 2)[1];
    assert!(
        queried.contains("north") && queried.contains("23") && queried.contains("27"),
        "{queried}"
    );
    let answer: String = events
        .iter()
        .filter_map(|e| match &e.event {
            Some(runs::execute_run_response::Event::TextDelta(d)) => Some(d.text.clone()),
            _ => None,
        })
        .collect();
    assert!(
        answer.contains("23") && answer.contains("27"),
        "the answer is built from the query: {answer}"
    );

    let sources = w
        .runs_client
        .list_data_sources(authed(
            runs::ListDataSourcesRequest {
                thread_id: w.thread_id.clone(),
                ..Default::default()
            },
            &w.token,
        ))
        .await
        .expect("listed")
        .into_inner()
        .data_sources;
    assert_eq!(sources.len(), 1);
    assert_eq!(sources[0].origin, "data://sales.csv");
    assert_eq!(sources[0].integration_id, w.integration_id);
    assert_eq!(sources[0].row_count, 6);

    let system = w.model.requests()[0]["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        system.contains("Resource Access Guidelines") && system.contains("data://sales.csv"),
        "{system}"
    );
    assert!(system.contains("summarize"), "prompts are listed: {system}");
}

#[tokio::test]
async fn a_template_resource_is_expanded_and_a_missing_parameter_is_named() {
    let mut w = script(vec![
        (
            "retrieve_mcp_resource",
            serde_json::json!({"integrationId": "$INTEGRATION", "resourceUri": "data://sales/{region}.csv", "parameters": {"region": "south"}}),
        ),
        (
            "retrieve_mcp_resource",
            serde_json::json!({"integrationId": "$INTEGRATION", "resourceUri": "data://sales/{region}.csv"}),
        ),
    ])
    .await;
    let events = w.say("south?").await;
    final_run(&events);
    let first = &tool_messages_sent(&w.model, 1)[0];
    assert!(
        first.starts_with("CSV resource imported as data source: data://sales/south.csv"),
        "{first}"
    );
    assert!(first.contains("Rows: 3"), "{first}");
    let second = &tool_messages_sent(&w.model, 2)[1];
    assert!(
        second.starts_with("Resource retrieval failed: "),
        "{second}"
    );
    assert!(
        second.contains("region"),
        "names the missing parameter: {second}"
    );
}

#[tokio::test]
async fn resources_by_name_text_binary_and_the_list() {
    let mut w = script(vec![
        (
            "retrieve_mcp_resource",
            serde_json::json!({"resourceName": "readme"}),
        ),
        (
            "retrieve_mcp_resource",
            serde_json::json!({"resourceName": "logo"}),
        ),
        ("mcp_list_resources", serde_json::json!({})),
        (
            "retrieve_mcp_resource",
            serde_json::json!({"resourceName": "nonexistent"}),
        ),
    ])
    .await;
    final_run(&w.say("look around").await);
    let readme = &tool_messages_sent(&w.model, 1)[0];
    assert!(
        readme.starts_with("Switchboard example server."),
        "text comes back as is: {readme}"
    );
    let logo = &tool_messages_sent(&w.model, 2)[1];
    assert!(
        logo.starts_with("Binary resource data://logo.png: image/png,"),
        "{logo}"
    );
    assert!(!logo.contains("iVBOR"), "no base64");
    let list = &tool_messages_sent(&w.model, 3)[2];
    assert!(
        list.contains("data://sales.csv")
            && list.contains(&w.integration_id)
            && list.contains("text/csv"),
        "{list}"
    );
    assert!(
        list.contains("data://sales/{region}.csv"),
        "templates are listed: {list}"
    );
    // The plan's JSON: the resources, their count and its message.
    let list: serde_json::Value = serde_json::from_str(list).expect("a JSON list");
    let count = list["resources"].as_array().expect("resources").len();
    assert_eq!(list["count"], count);
    assert_eq!(
        list["message"],
        format!("Found {count} available resources")
    );
    let missing = &tool_messages_sent(&w.model, 4)[3];
    assert!(
        missing.starts_with("Resource retrieval failed: no resource is named nonexistent"),
        "{missing}"
    );
}

#[tokio::test]
async fn resource_failures_keep_the_reference_wording() {
    let mut w = script(vec![
        // No integration lists this URI (one that does is read: see
        // read_resource.rs).
        ("retrieve_mcp_resource", serde_json::json!({"resourceUri": "data://unlisted.csv"})),
        ("retrieve_mcp_resource", serde_json::json!({"integrationId": "$INTEGRATION"})),
        ("retrieve_mcp_resource", serde_json::json!({"integrationId": "$INTEGRATION", "resourceUri": "data://missing.csv"})),
    ])
    .await;
    final_run(&w.say("try").await);
    assert_eq!(
        tool_messages_sent(&w.model, 1)[0],
        "Resource retrieval failed: integrationId parameter is required"
    );
    assert_eq!(
        tool_messages_sent(&w.model, 2)[1],
        "Resource retrieval failed: resourceUri parameter is required"
    );
    assert!(tool_messages_sent(&w.model, 3)[2].starts_with("Resource retrieval failed: "));
}

#[tokio::test]
async fn prompts_are_rendered_with_role_labels() {
    let mut w = script(vec![
        (
            "retrieve_mcp_prompt",
            serde_json::json!({"integrationId": "$INTEGRATION", "promptName": "summarize", "arguments": {"topic": "Q3 sales", "style": "bullet"}}),
        ),
        ("retrieve_mcp_prompt", serde_json::json!({"integrationId": "$INTEGRATION", "promptName": "summarize"})),
    ])
    .await;
    final_run(&w.say("prompt").await);
    assert_eq!(
        tool_messages_sent(&w.model, 1)[0],
        "Prompt: summarize\nDescription: Summary of Q3 sales\n\n1. User: Summarize Q3 sales in a bullet style.\n2. Assistant: Here is a summary of Q3 sales:"
    );
    let failed = &tool_messages_sent(&w.model, 2)[1];
    assert!(failed.starts_with("Prompt retrieval failed: "), "{failed}");
    assert!(failed.contains("topic"), "{failed}");
}

#[tokio::test]
async fn a_64_bit_integer_in_resource_parameters_and_prompt_arguments_arrives_exactly() {
    let big = 9_007_199_254_740_993_u64; // 2^53 + 1: a double would round it
    let mut w = script(vec![
        (
            "retrieve_mcp_resource",
            serde_json::json!({"integrationId": "$INTEGRATION", "resourceUri": "data://sales/{region}.csv", "parameters": {"region": big}}),
        ),
        (
            "retrieve_mcp_prompt",
            serde_json::json!({"integrationId": "$INTEGRATION", "promptName": "summarize", "arguments": {"topic": big}}),
        ),
    ])
    .await;
    final_run(&w.say("exact").await);
    // The server knows no such region and names the URI it expanded.
    let read = &tool_messages_sent(&w.model, 1)[0];
    assert!(read.contains("data://sales/9007199254740993.csv"), "{read}");
    assert_eq!(
        tool_messages_sent(&w.model, 2)[1],
        "Prompt: summarize\nDescription: Summary of 9007199254740993\n\n1. User: Summarize 9007199254740993 in a concise style.\n2. Assistant: Here is a summary of 9007199254740993:"
    );
}

#[tokio::test]
async fn clients_import_csv_bytes_and_list_them() {
    let mut w = script(vec![]).await;
    let imported = w
        .runs_client
        .import_data_source(authed(
            runs::ImportDataSourceRequest {
                thread_id: w.thread_id.clone(),
                name: "Quarterly Numbers".into(),
                csv: b"quarter,revenue\nQ1,10.5\nQ2,12\n".to_vec(),
                ..Default::default()
            },
            &w.token,
        ))
        .await
        .expect("imported")
        .into_inner()
        .data_source
        .expect("a data source");
    assert_eq!(imported.table_name, "quarterly_numbers");
    assert_eq!(imported.row_count, 2);
    let refused = w
        .runs_client
        .import_data_source(authed(
            runs::ImportDataSourceRequest {
                thread_id: w.thread_id.clone(),
                name: "broken".into(),
                csv: vec![0xff, 0xfe, b'\n', 0x80],
                ..Default::default()
            },
            &w.token,
        ))
        .await
        .expect_err("invalid UTF-8");
    assert_eq!(refused.code(), Code::InvalidArgument);
}
