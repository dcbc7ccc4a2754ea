//! The model's view of resources as the reference offers them:
//! `mcp_read_resource` by URI or by name across the run's integrations,
//! `retrieve_mcp_resource` with a URI only one integration lists, the tools'
//! schemas as the model receives them, and a tool error without text.

use switchboard_proto::runs::v1 as runs;
use switchboard_scripted_model::{ScriptedToolCall, Turn};

use crate::world::{
    Options, World, admin, create_integration, final_run, tool_messages_sent, tools_offered, world,
};

/// One tool call per turn, then a closing answer.
async fn script(calls: Vec<(&'static str, serde_json::Value)>) -> World {
    let turns = calls
        .into_iter()
        .enumerate()
        .map(|(i, (name, arguments))| {
            Turn::ToolCalls(vec![ScriptedToolCall::new(
                format!("c{i}"),
                name,
                arguments.to_string(),
            )])
        })
        .chain([Turn::Text("done".into())])
        .collect();
    world(Options {
        turns,
        ..Options::default()
    })
    .await
}

/// The schema of `tool` as the model was offered it in the first request.
fn offered_schema(w: &World, tool: &str) -> serde_json::Value {
    w.model.requests()[0]["tools"]
        .as_array()
        .and_then(|tools| tools.iter().find(|t| t["function"]["name"] == tool))
        .map(|t| t["function"]["parameters"].clone())
        .unwrap_or_else(|| panic!("{tool} is offered"))
}

#[tokio::test]
async fn mcp_read_resource_reads_by_uri_by_name_and_by_a_uri_a_template_produces() {
    let mut w = script(vec![
        (
            // As a model in OpenAI's strict mode sends it: every property,
            // `null` for the one it leaves out.
            "mcp_read_resource",
            serde_json::json!({"uri": "data://sales.csv", "resourceName": null}),
        ),
        (
            "mcp_read_resource",
            serde_json::json!({"resourceName": "readme"}),
        ),
        (
            "mcp_read_resource",
            serde_json::json!({"uri": "data://sales/south.csv"}),
        ),
        ("mcp_read_resource", serde_json::json!({})),
        (
            "mcp_read_resource",
            serde_json::json!({"uri": "data://nowhere.csv"}),
        ),
        (
            "mcp_read_resource",
            serde_json::json!({"resourceName": "nowhere"}),
        ),
        (
            "retrieve_mcp_resource",
            serde_json::json!({"resourceUri": "docs://readme"}),
        ),
    ])
    .await;
    assert_eq!(
        final_run(&w.say("read").await).status(),
        runs::RunStatus::Completed
    );
    let told = |i: usize| tool_messages_sent(&w.model, i + 1)[i].clone();

    let by_uri = told(0);
    assert!(
        by_uri.starts_with("CSV resource imported as data source: data://sales.csv\nTable: sales"),
        "{by_uri}"
    );
    assert!(
        told(1).starts_with("Switchboard example server."),
        "{}",
        told(1)
    );
    let templated = told(2);
    assert!(
        templated.starts_with("CSV resource imported as data source: data://sales/south.csv"),
        "{templated}"
    );
    assert!(templated.contains("Rows: 3"), "{templated}");
    // A failed read is the plan's JSON: its error and what can be read.
    let failed = |i: usize| -> serde_json::Value {
        serde_json::from_str(&told(i)).unwrap_or_else(|e| panic!("{e}: {}", told(i)))
    };
    let sales = serde_json::json!({
        "name": "sales",
        "uri": "data://sales.csv",
        "description": "Sales by region and product",
        "mimeType": "text/csv",
        "integrationId": w.integration_id,
    });
    let by_region = serde_json::json!({
        "name": "sales_by_region",
        "uriTemplate": "data://sales/{region}.csv",
        "description": "Sales of one region",
        "mimeType": "text/csv",
        "integrationId": w.integration_id,
    });
    for (i, error) in [
        (3, "Resource URI or valid resourceName is required"),
        (
            4,
            "Failed to read resource: no integration of this conversation lists the resource data://nowhere.csv",
        ),
        (5, "Resource URI or valid resourceName is required"),
    ] {
        let answer = failed(i);
        assert_eq!(answer["error"], error, "{answer}");
        let available = answer["availableResources"].as_array().expect("a list");
        assert_eq!(available.first(), Some(&sales), "{answer}");
        assert_eq!(available.last(), Some(&by_region), "{answer}");
    }
    // A URI alone is enough when one integration lists it.
    assert!(
        told(6).starts_with("Switchboard example server."),
        "{}",
        told(6)
    );

    let offered = tools_offered(&w.model, 0);
    assert!(
        offered.contains(&"mcp_read_resource".to_owned()),
        "{offered:?}"
    );
    // Either property is enough, so neither is required; strict mode, which
    // requires every property, gets both as "a string or null".
    let read = offered_schema(&w, "mcp_read_resource");
    let mut required: Vec<&str> = read["required"]
        .as_array()
        .expect("a list")
        .iter()
        .filter_map(serde_json::Value::as_str)
        .collect();
    required.sort_unstable();
    assert_eq!(required, ["resourceName", "uri"]);
    for property in ["uri", "resourceName"] {
        assert_eq!(
            read["properties"][property]["type"],
            serde_json::json!(["string", "null"])
        );
    }
    assert_eq!(
        offered_schema(&w, "retrieve_mcp_resource")["required"],
        serde_json::json!(["integrationId", "resourceUri"])
    );
}

#[tokio::test]
async fn a_resource_two_integrations_list_is_read_once_the_model_names_one() {
    let mut w = script(vec![
        (
            "mcp_read_resource",
            serde_json::json!({"uri": "data://sales.csv"}),
        ),
        (
            "mcp_read_resource",
            serde_json::json!({"resourceName": "readme"}),
        ),
        (
            "retrieve_mcp_resource",
            serde_json::json!({"resourceUri": "data://sales.csv"}),
        ),
    ])
    .await;
    let upstream = w.upstream.url();
    let twin = create_integration(&mut w.mcp_client, &admin(), "twin", &upstream, None).await;
    w.set_integrations(vec![w.integration_id.clone(), twin.clone()])
        .await;
    final_run(&w.say("which?").await);
    let both = format!("{}, {twin}", w.integration_id);
    assert_eq!(
        tool_messages_sent(&w.model, 1)[0],
        serde_json::json!({
            "error": format!("Failed to read resource: data://sales.csv is offered by several integrations ({both}); call retrieve_mcp_resource with the integrationId of the one you mean and the resourceUri")
        })
        .to_string()
    );
    assert_eq!(
        tool_messages_sent(&w.model, 2)[1],
        serde_json::json!({
            "error": format!("Failed to read resource: readme is offered by several integrations ({both}); call retrieve_mcp_resource with the integrationId of the one you mean and the resourceUri")
        })
        .to_string()
    );
    assert_eq!(
        tool_messages_sent(&w.model, 3)[2],
        "Resource retrieval failed: integrationId parameter is required"
    );
}

#[tokio::test]
async fn a_tool_error_without_text_reads_as_the_references_words() {
    let mut w = script(vec![
        ("example__fail", serde_json::json!({"message": ""})),
        (
            "example__fail",
            serde_json::json!({"message": "out of stock"}),
        ),
    ])
    .await;
    final_run(&w.say("fail").await);
    assert_eq!(
        tool_messages_sent(&w.model, 1)[0],
        "MCP tool execution failed: Tool execution failed"
    );
    assert_eq!(
        tool_messages_sent(&w.model, 2)[1],
        "MCP tool execution failed: out of stock"
    );
}
