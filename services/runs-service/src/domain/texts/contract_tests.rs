//! The sentences of `mcp_read_resource` and the resource tools' schemas,
//! word for word.

use super::*;
use crate::domain::{
    ids::IntegrationId,
    ports::{Capabilities, McpResource},
};

fn offering(id: u128, resources: usize, templates: usize) -> Capabilities {
    let resource = |i: usize, kind: &str| McpResource {
        uri: format!("data://{kind}{i}"),
        name: format!("{kind}{i}"),
        description: format!("the {kind} {i}"),
        mime_type: "text/csv".into(),
    };
    Capabilities {
        integration_id: IntegrationId::fixed(id),
        slug: "shop".into(),
        tools: vec![],
        resources: (0..resources).map(|i| resource(i, "r")).collect(),
        resource_templates: (0..templates).map(|i| resource(i, "t")).collect(),
        prompts: vec![],
    }
}

#[test]
fn read_resource_texts_keep_the_plans_wording() {
    assert_eq!(
        READ_INPUT_REQUIRED,
        "Resource URI or valid resourceName is required"
    );
    assert_eq!(
        read_failed("boom"),
        r#"{"error":"Failed to read resource: boom"}"#
    );
    assert_eq!(failed_to_read("boom"), "Failed to read resource: boom");
    assert_eq!(
        no_resource_at("data://x"),
        "no integration of this conversation lists the resource data://x"
    );
    assert_eq!(
        offered_by_several(
            "data://sales",
            &[IntegrationId::fixed(1), IntegrationId::fixed(2)]
        ),
        "data://sales is offered by several integrations (00000000-0000-0000-0000-000000000001, 00000000-0000-0000-0000-000000000002); call retrieve_mcp_resource with the integrationId of the one you mean and the resourceUri"
    );
    assert_eq!(
        with_available_resources(READ_INPUT_REQUIRED, &[offering(1, 1, 1)]),
        concat!(
            r#"{"error":"Resource URI or valid resourceName is required","availableResources":["#,
            r#"{"name":"r0","uri":"data://r0","description":"the r 0","mimeType":"text/csv","integrationId":"00000000-0000-0000-0000-000000000001"},"#,
            r#"{"name":"t0","uriTemplate":"data://t0","description":"the t 0","mimeType":"text/csv","integrationId":"00000000-0000-0000-0000-000000000001"}]}"#
        )
    );
    assert_eq!(
        with_available_resources(READ_INPUT_REQUIRED, &[]),
        r#"{"error":"Resource URI or valid resourceName is required","availableResources":[]}"#
    );
}

#[test]
fn the_list_of_readable_resources_stops_at_its_cap_and_counts_the_rest() {
    let read = |text: String| -> serde_json::Value { serde_json::from_str(&text).expect("JSON") };
    let listed = |value: &serde_json::Value| {
        value["availableResources"]
            .as_array()
            .expect("a list")
            .len()
    };
    // Exactly the cap, across integrations and templates: all listed.
    let at_cap = read(with_available_resources(
        "m",
        &[offering(1, READ_LIST_CAP - 5, 2), offering(2, 3, 0)],
    ));
    assert_eq!(listed(&at_cap), READ_LIST_CAP);
    assert!(at_cap.get("more").is_none(), "{at_cap}");
    // One past it: the last is counted, not listed.
    let past = read(with_available_resources(
        "m",
        &[offering(1, READ_LIST_CAP - 5, 2), offering(2, 4, 0)],
    ));
    assert_eq!(listed(&past), READ_LIST_CAP);
    assert_eq!(
        past["more"],
        "1 more (use mcp_list_resources to see them all)"
    );
    let many = read(with_available_resources("m", &[offering(1, 10_000, 0)]));
    assert_eq!(listed(&many), READ_LIST_CAP);
    assert_eq!(
        many["more"],
        "9980 more (use mcp_list_resources to see them all)"
    );
}

#[test]
fn the_resource_tools_are_offered_with_the_references_schemas() {
    let read = read_resource_spec("mcp_read_resource");
    assert_eq!(
        read.description,
        "Read content from an MCP resource. Use this tool to fetch data from available resources."
    );
    assert_eq!(
        read.parameters,
        serde_json::json!({
            "type": "object",
            "properties": {
                "uri": {"type": "string", "description": "The resource URI to read (e.g., \"resource://people\", \"resource://todos/1\")"},
                "resourceName": {"type": "string", "description": "Alternative: resource name from the available resources list"}
            },
            "required": []
        })
    );
    let retrieve = retrieve_resource_spec("retrieve_mcp_resource");
    assert_eq!(
        retrieve.description,
        "Retrieve a resource from an MCP integration. CSV resources are automatically imported as data sources that can be queried with the source_query tool. Text resources return their content directly. Use this when you need to access datasets, files, or configuration from MCP servers."
    );
    assert_eq!(
        retrieve.parameters,
        serde_json::json!({
            "type": "object",
            "properties": {
                "integrationId": {"type": "string", "description": "The ID of the MCP integration to retrieve the resource from"},
                "resourceUri": {"type": "string", "description": "The URI of the resource to retrieve (e.g., \"dataset://sales\" or \"file://config.json\")"},
                "parameters": {"type": "object", "description": "Optional parameters for parameterized resource URIs (e.g., {category: \"electronics\"})", "additionalProperties": true}
            },
            "required": ["integrationId", "resourceUri"]
        })
    );
}

#[test]
fn arguments_an_input_schema_refuses_are_named_field_by_field() {
    use crate::domain::problems::Problem;
    let problem = |at: &str, what: &str| Problem {
        at: at.into(),
        what: what.into(),
    };
    assert_eq!(
        arguments_mismatch(&[problem("/a", "\"one\" is not of type \"number\"")], 0),
        "MCP tool execution failed: the arguments do not match the tool's input schema: `/a`: \"one\" is not of type \"number\""
    );
    assert_eq!(
        arguments_mismatch(
            &[
                problem("", "\"b\" is a required property"),
                problem("/c/0", "-1 is less than the minimum of 0"),
            ],
            4
        ),
        "MCP tool execution failed: the arguments do not match the tool's input schema: \"b\" is a required property; `/c/0`: -1 is less than the minimum of 0; and 4 more"
    );
}

#[test]
fn a_result_its_output_schema_refuses_is_named_field_by_field() {
    use crate::domain::problems::{Problem, ResultMismatch};
    let mismatch = ResultMismatch::Problems(
        vec![Problem {
            at: "/sum".into(),
            what: "\"three\" is not of type \"number\"".into(),
        }],
        0,
    );
    assert_eq!(
        result_mismatch("add", &mismatch),
        "MCP tool execution failed: the result of `add` does not match the tool's output schema: `/sum`: \"three\" is not of type \"number\""
    );
    assert_eq!(
        result_mismatch("add", &ResultMismatch::Missing),
        "MCP tool execution failed: the result of `add` does not match the tool's output schema: it returned no structured result"
    );
    assert_eq!(
        result_mismatch("add", &ResultMismatch::NotJson),
        "MCP tool execution failed: the result of `add` does not match the tool's output schema: its structured result is not JSON"
    );
}
