//! Each text the model reads, word for word.

use std::time::Duration;

use super::*;
use crate::domain::{
    datasource::{
        Busy, Column, ColumnType, DataSource, ImportError, QueryError, QueryResult, Refusal,
    },
    ids::{DataSourceId, IntegrationId, ThreadId},
    ports::{
        Capabilities, Content, FailureFacts, McpCallError, McpPrompt, McpPromptArgument,
        McpResource, PromptLine, ToolFailure, ToolOutput,
    },
};

#[test]
fn failure_texts_keep_the_reference_wording() {
    assert_eq!(
        tool_not_found("x__y"),
        "A tool with the name x__y was not found. Only use tools that are available in your given list of tools."
    );
    assert_eq!(
        mcp_call_failed(&McpCallError::Failed("boom".into())),
        "MCP tool execution failed unexpectedly: boom"
    );
    assert_eq!(
        mcp_call_failed(&McpCallError::Unavailable("connection refused".into())),
        "MCP tool execution failed unexpectedly: mcp-service is unavailable (connection refused)"
    );
    assert_eq!(
        mcp_call_failed(&McpCallError::Timeout),
        "MCP tool execution failed: the tool did not answer in time and the call was cancelled"
    );
    assert_eq!(
        mcp_call_failed(&McpCallError::AuthorizationRequired {
            url: "https://auth.example/authorize?state=s".into()
        }),
        "MCP tool execution failed: the user has not connected their account to this integration. Ask them to connect it at https://auth.example/authorize?state=s and then try again"
    );
    assert_eq!(
        INTERRUPTED_CALL,
        "MCP tool execution failed: the run was interrupted while this tool call was under way, so its result was lost. The call may or may not have taken effect; check before calling it again."
    );
    assert_eq!(
        invalid_arguments("got a string"),
        "MCP tool execution failed: the arguments are not a JSON object (got a string)"
    );
}

#[test]
fn a_tool_result_is_its_text_and_otherwise_described() {
    let failed = ToolOutput {
        failure: Some(ToolFailure::ToolError),
        error_message: "boom".into(),
        content: vec![Content::Text("boom".into())],
        ..ToolOutput::default()
    };
    assert_eq!(
        tool_output("deploy", &failed),
        ("MCP tool execution failed: boom".to_owned(), true)
    );
    // A tool's error without text reads as the reference's default, not as
    // mcp-service's description of it.
    for content in [
        vec![],
        vec![Content::Text(" ".into())],
        vec![Content::Image {
            mime_type: "image/png".into(),
            bytes: 3,
        }],
    ] {
        let silent = ToolOutput {
            failure: Some(ToolFailure::ToolError),
            error_message: "the tool `deploy` reported an error".into(),
            content,
            ..ToolOutput::default()
        };
        assert_eq!(
            tool_output("deploy", &silent),
            (
                "MCP tool execution failed: Tool execution failed".to_owned(),
                true
            )
        );
    }
    assert_eq!(TOOL_EXECUTION_FAILED, "Tool execution failed");
    let blocks = ToolOutput {
        content: vec![
            Content::Text("hello".into()),
            Content::Image {
                mime_type: "image/png".into(),
                bytes: 3,
            },
            Content::Audio {
                mime_type: "audio/wav".into(),
                bytes: 4,
            },
            Content::Resource {
                uri: "file:///a.txt".into(),
                mime_type: "text/plain".into(),
                text: Some("inside".into()),
                blob_bytes: None,
            },
            Content::Resource {
                uri: "file:///b.bin".into(),
                mime_type: "application/octet-stream".into(),
                text: None,
                blob_bytes: Some(9),
            },
            Content::ResourceLink {
                uri: "file:///c".into(),
                name: "c".into(),
            },
        ],
        structured: Some(r#"{"ignored":true}"#.into()),
        ..ToolOutput::default()
    };
    assert_eq!(
        tool_output("deploy", &blocks).0,
        "hello\n[image: image/png, 3 bytes]\n[audio: audio/wav, 4 bytes]\n[resource file:///a.txt]\ninside\n[resource file:///b.bin: application/octet-stream, 9 bytes]\n[resource link: file:///c (c)]"
    );
    let structured = ToolOutput {
        structured: Some(r#"{"id":9007199254740993,"ratio":1.0}"#.into()),
        ..ToolOutput::default()
    };
    assert_eq!(
        tool_output("deploy", &structured).0,
        r#"{"id":9007199254740993,"ratio":1.0}"#
    );
    assert_eq!(
        tool_output("deploy", &ToolOutput::default()),
        ("The tool returned no content.".to_owned(), false)
    );
}

#[test]
fn a_timeout_is_worded_from_its_limit() {
    let timed_out = |limit: Option<Duration>| ToolOutput {
        failure: Some(ToolFailure::Timeout),
        error_message: "mcp-service's description".into(),
        facts: limit.map(FailureFacts::Timeout),
        ..ToolOutput::default()
    };
    assert_eq!(
        tool_output("sleep", &timed_out(Some(Duration::from_secs(1)))),
        (
            "MCP tool execution failed: the tool `sleep` did not answer within 1s and was cancelled"
                .to_owned(),
            true
        )
    );
    assert_eq!(
        tool_output("sleep", &timed_out(Some(Duration::from_millis(2500)))).0,
        "MCP tool execution failed: the tool `sleep` did not answer within 2.5s and was cancelled"
    );
    // An mcp-service that sends no limit is quoted.
    assert_eq!(
        tool_output("sleep", &timed_out(None)).0,
        "MCP tool execution failed: mcp-service's description"
    );
}

fn integration() -> Capabilities {
    let resource = |uri: &str, name: &str| McpResource {
        uri: uri.into(),
        name: name.into(),
        description: format!("the {name}"),
        mime_type: "text/csv".into(),
    };
    Capabilities {
        integration_id: IntegrationId::fixed(1),
        slug: "shop".into(),
        tools: vec![],
        resources: vec![resource("data://sales", "sales")],
        resource_templates: vec![resource("data://sales/{year}", "sales by year")],
        prompts: vec![McpPrompt {
            name: "review".into(),
            description: "reviews".into(),
            arguments: vec![McpPromptArgument {
                name: "code".into(),
                description: String::new(),
                required: true,
            }],
        }],
    }
}

#[test]
fn the_resource_guide_lists_resources_templates_and_prompts() {
    let guide = resource_guide(&[integration()], true).expect("a guide");
    assert_eq!(
        guide,
        "Resource Access Guidelines:\n\
         1. Use the \"mcp_read_resource\" tool to fetch resource content.\n\
         2. Use the \"mcp_list_resources\" tool to see all available resources.\n\
         3. Provide either \"uri\" or \"resourceName\" parameter.\n\
         4. For a resource template, use the \"retrieve_mcp_resource\" tool with \"integrationId\", \"resourceUri\" and \"parameters\".\n\
         5. CSV resources become data sources you can query with the \"source_query\" tool.\n\
         \n\
         \n\
         Available resources:\n\
         1. sales - the sales\n   URI: data://sales\n   Type: text/csv\n   Integration: 00000000-0000-0000-0000-000000000001\n\
         \n\
         \n\
         Resource templates (fill the {placeholders} with \"parameters\"):\n\
         1. sales by year - the sales by year\n   URI template: data://sales/{year}\n   Integration: 00000000-0000-0000-0000-000000000001\n\
         \n\
         Available prompts (use the \"retrieve_mcp_prompt\" tool):\n\
         1. review - reviews (integration 00000000-0000-0000-0000-000000000001; arguments: code (required))"
    );
    let prompts_only = resource_guide(&[integration()], false).expect("a guide");
    assert!(
        prompts_only.starts_with("Available prompts"),
        "{prompts_only}"
    );
    assert_eq!(
        integrations_unavailable(&[(IntegrationId::fixed(2), "refused".into())]).as_deref(),
        Some(
            "Note: these MCP integrations could not be reached for this conversation and their tools are unavailable: 00000000-0000-0000-0000-000000000002 (refused)."
        )
    );
    assert_eq!(integrations_unavailable(&[]), None);
}

#[test]
fn built_in_tool_results_read_as_the_reference_wrote_them() {
    assert_eq!(
        list_resources(&[integration()]),
        concat!(
            r#"{"resources":["#,
            r#"{"name":"sales","uri":"data://sales","description":"the sales","mimeType":"text/csv","integrationId":"00000000-0000-0000-0000-000000000001"},"#,
            r#"{"name":"sales by year","uriTemplate":"data://sales/{year}","description":"the sales by year","mimeType":"text/csv","integrationId":"00000000-0000-0000-0000-000000000001"}],"#,
            r#""count":2,"message":"Found 2 available resources"}"#
        )
    );
    assert_eq!(
        list_resources(&[]),
        r#"{"resources":[],"count":0,"message":"Found 0 available resources"}"#
    );
    let source = DataSource {
        columns: vec![Column {
            name: "amount".into(),
            column_type: ColumnType::Float,
        }],
        row_count: 3,
        table_name: "sales".into(),
        id: DataSourceId::fixed(1),
        thread_id: ThreadId::fixed(1),
        origin: "data://sales".into(),
        integration_id: None,
        size_bytes: 10,
        created_at: 0,
    };
    assert_eq!(
        csv_imported("data://sales", &source),
        "CSV resource imported as data source: data://sales\nTable: sales\nColumns: amount (float)\nRows: 3\nYou can now query this data using the source_query tool, for example: SELECT * FROM sales LIMIT 10"
    );
    assert_eq!(text_resource("abcdef".into(), 10), "abcdef");
    assert_eq!(
        text_resource("abcdef".into(), 2),
        "ab\n[The resource was cut at 2 of 6 characters.]"
    );
    assert_eq!(
        binary_resource("file:///x", "", 5),
        "Binary resource file:///x: unknown type, 5 bytes. Its content cannot be shown as text."
    );
    assert_eq!(resource_failed("nope"), "Resource retrieval failed: nope");
    assert_server_failures_are_worded_as_mcp_service_describes_them();
    assert_eq!(prompt_failed("nope"), "Prompt retrieval failed: nope");
    let lines = [PromptLine {
        role: "user".into(),
        content: Content::Text("review this".into()),
    }];
    assert_eq!(
        prompt_rendered("review", "reviews", &lines),
        "Prompt: review\nDescription: reviews\n\n1. User: review this"
    );
    assert_eq!(query_failed("x"), "Query failed: x");
    assert_eq!(query_refused("x"), "Query refused: x");
    assert_eq!(
        query_timed_out(Duration::from_secs(5)),
        "Query failed: it ran longer than 5s and was stopped"
    );
    assert_eq!(query_internal_error(), "Query failed: internal error");
}

#[test]
fn built_in_tools_are_offered_with_their_parameters() {
    assert_eq!(
        retrieve_prompt_spec("retrieve_mcp_prompt").parameters["required"],
        serde_json::json!(["integrationId", "promptName"])
    );
    assert_eq!(
        list_resources_spec("mcp_list_resources").description,
        "List all available MCP resources with their URIs and descriptions."
    );
    assert!(
        retrieve_resource_spec("retrieve_mcp_resource")
            .description
            .starts_with("Retrieve a resource from an MCP integration.")
    );
    let spec = source_query_spec("source_query", &[]);
    assert_eq!(spec.parameters["required"], serde_json::json!(["query"]));
}

#[test]
fn argument_texts_keep_their_wording() {
    assert_eq!(
        resource_failed(parameter_required("integrationId")),
        "Resource retrieval failed: integrationId parameter is required"
    );
    assert_eq!(
        prompt_failed(integration_unavailable("i9")),
        "Prompt retrieval failed: the integration i9 is not available in this conversation"
    );
    assert_eq!(
        no_resource_named("orders"),
        "no resource is named orders; use mcp_list_resources to see the available resources"
    );
    assert_eq!(
        query_failed(QUERY_REQUIRED),
        "Query failed: the query parameter is required"
    );
    assert_eq!(
        invalid_arguments(&not_an_object(&serde_json::json!([1]))),
        "MCP tool execution failed: the arguments are not a JSON object (got an array)"
    );
    assert_eq!(not_an_object(&serde_json::Value::Null), "got null");
}

#[test]
fn the_query_table_escapes_cells_and_says_how_many_rows() {
    let result = QueryResult {
        columns: vec!["a".into(), "b".into()],
        rows: vec![vec!["x|y".into(), "line\nbreak".into()]],
        truncated: false,
    };
    assert_eq!(query_table(&result), "a | b\nx\\|y | line\\nbreak\n1 row");
    let none = QueryResult {
        rows: Vec::new(),
        ..result.clone()
    };
    assert_eq!(query_table(&none), "a | b\n0 rows");
    let cut = QueryResult {
        truncated: true,
        ..result
    };
    assert_eq!(
        query_table(&cut),
        "a | b\nx\\|y | line\\nbreak\nshowing first 1 rows; the result was cut"
    );
}

#[test]
fn rendered_line_bytes_match_the_query_table() {
    let cells = vec!["x|y".to_owned(), "a\\b\nc".to_owned(), "é".to_owned()];
    let table = query_table(&QueryResult {
        columns: cells.clone(),
        rows: Vec::new(),
        truncated: false,
    });
    assert_eq!(rendered_line_bytes(&cells), table.len() - "0 rows".len());
}

#[test]
fn import_failures_keep_their_wording() {
    let cases = [
        (
            ImportError::TooLarge {
                limit: 10,
                actual: 11,
            },
            "the CSV is 11 bytes; the limit is 10 bytes",
        ),
        (
            ImportError::TooManyRows {
                limit: 2,
                actual: 3,
            },
            "the CSV has 3 data rows; the limit is 2 rows",
        ),
        (
            ImportError::TooManyColumns {
                limit: 2,
                actual: 3,
            },
            "the CSV has 3 columns; the limit is 2 columns",
        ),
        (
            ImportError::TooManyCells {
                limit: 100,
                columns: 10,
                rows: 10,
                line: 12,
            },
            "the CSV has 10 columns and more than 10 data rows (line 12), more than 100 cells (rows × columns, short rows counted in full); import fewer rows or fewer columns",
        ),
        (
            ImportError::OrgQuotaExceeded {
                limit: 100,
                used: 90,
                size: 20,
            },
            "the organization's data sources hold 90 bytes; this CSV of 20 bytes would pass the limit of 100 bytes; delete threads with data sources you no longer need",
        ),
        (
            ImportError::Busy(Busy::OrgBusy { limit: 2 }),
            "your organization already runs 2 data-source queries or imports at once, its limit; retry this import when one of them has finished",
        ),
        (
            ImportError::Busy(Busy::Timeout(Duration::from_millis(1500))),
            "every data-source slot stayed busy for 1.5s; retry this import in a few seconds",
        ),
        (
            ImportError::FieldTooLarge {
                line: 3,
                column: 2,
                limit: 8,
                actual: 9,
            },
            "line 3, column 2: a field is 9 bytes; the limit is 8 bytes per field",
        ),
        (
            ImportError::ExtraFields {
                line: 3,
                expected: 2,
                actual: 3,
            },
            "line 3 has 3 fields but the header names 2 columns; add names to the header for the extra fields",
        ),
        (
            ImportError::InvalidUtf8 { line: 4 },
            "line 4 is not valid UTF-8 text",
        ),
        (
            ImportError::InvalidCsv {
                line: 5,
                message: "unequal lengths".into(),
            },
            "line 5 is not valid CSV: unequal lengths",
        ),
        (
            ImportError::NoHeader,
            "the first line must name the columns, but every name in it is blank",
        ),
        (ImportError::Empty, "the CSV is empty"),
        (
            ImportError::Storage(anyhow::anyhow!("disk full")),
            "failed to store the data source",
        ),
    ];
    for (error, expected) in cases {
        assert_eq!(import_failed(&error), expected);
        assert_eq!(error.to_string(), expected);
    }
}

#[test]
fn query_refusals_keep_their_wording() {
    let cases = [
        (
            Refusal::TooLong {
                bytes: 65537,
                limit: 65536,
            },
            "the query is 65537 bytes; the limit is 65536 bytes",
        ),
        (
            Refusal::StatementCount(2),
            "send exactly one SELECT statement; this text has 2",
        ),
        (Refusal::NoStatement, "the text has no statement"),
        (
            Refusal::NotReadOnly("DROP TABLE".into()),
            "only a read-only query (SELECT, or WITH … SELECT) may run, not DROP TABLE",
        ),
        (
            Refusal::Recursive,
            "recursive queries (WITH RECURSIVE) are not allowed; use joins, window functions or generate_series instead",
        ),
        (
            Refusal::TooManyTokens {
                count: 4001,
                limit: 4000,
            },
            "the query has 4001 tokens; the limit is 4000; filter with a condition instead of listing values",
        ),
        (
            Refusal::TooManyOperators {
                count: 129,
                limit: 128,
            },
            "the query has 129 operators; the limit is 128; use IN (…) for long lists of values",
        ),
        (
            Refusal::FunctionNotAvailable("read_csv".into()),
            "the function `read_csv` is not available in data-source queries; use common SQL functions (aggregates, window functions, string, number and date functions, casts)",
        ),
        (
            Refusal::NonConstantArguments("generate_series".into()),
            "the arguments of `generate_series` must be constants (numbers, dates, intervals), not function calls or subqueries",
        ),
        (
            Refusal::HeaderTooLarge {
                columns: 300,
                bytes: 70000,
                limit: 65536,
            },
            "the result's 300 column names alone take 70000 bytes; the limit is 65536 bytes for a whole result; select fewer columns",
        ),
        (
            Refusal::NotAllowed("DDL not supported: CreateView".into()),
            "DDL not supported: CreateView",
        ),
        (
            Refusal::Busy(Busy::OrgBusy { limit: 2 }),
            "your organization already runs 2 data-source queries or imports at once, its limit; retry this query when one of them has finished",
        ),
        (
            Refusal::Busy(Busy::Timeout(Duration::from_secs(10))),
            "every data-source slot stayed busy for 10s; retry this query in a few seconds",
        ),
        (Refusal::NoDataSources, "the thread has no data sources"),
    ];
    for (refusal, expected) in cases {
        assert_eq!(query_refusal(&refusal), expected);
        assert_eq!(
            QueryError::Refused(refusal).to_string(),
            format!("query refused: {expected}")
        );
    }
    assert_eq!(
        query_out_of_memory(512 * 1024 * 1024),
        "the query needed more than the 512 MiB of memory a query may use and was stopped; filter or aggregate earlier, or build smaller values"
    );
}

/// The sentences mcp-service's status messages hold for the same failures
/// (its `inbound::error` tests hold them too).
fn assert_server_failures_are_worded_as_mcp_service_describes_them() {
    let detail = |text: &str| text.to_owned();
    let cases = [
        (
            FailureFacts::Timeout(Duration::from_millis(1500)),
            "MCP server: timed out after 1.5s",
        ),
        (
            FailureFacts::TooLarge {
                limit_bytes: 1 << 20,
            },
            "MCP server: the result is larger than 1 MiB",
        ),
        (
            FailureFacts::Unreachable {
                detail: detail("connection refused"),
            },
            "MCP server: could not connect to the MCP server: connection refused",
        ),
        (
            FailureFacts::ConnectionLost {
                detail: detail("reset"),
            },
            "MCP server: the connection to the MCP server failed: reset",
        ),
        (
            FailureFacts::JsonRpc {
                code: -32602,
                message: detail("missing topic"),
            },
            "MCP server: missing topic",
        ),
        (
            FailureFacts::ListingBound {
                detail: detail("more than 10 pages"),
            },
            "MCP server: more than 10 pages",
        ),
        (
            FailureFacts::LimitReached {
                detail: detail("all sessions are busy"),
                retry_after: Duration::from_millis(2500),
            },
            "all sessions are busy; retry in 2s",
        ),
    ];
    for (facts, expected) in cases {
        let error = McpCallError::Server {
            facts,
            message: "mcp-service's own words".into(),
        };
        assert_eq!(mcp_error(&error), expected);
    }
    let busy = McpCallError::Server {
        facts: FailureFacts::LimitReached {
            detail: detail("all sessions are busy"),
            retry_after: Duration::from_secs(1),
        },
        message: String::new(),
    };
    assert_eq!(
        mcp_call_failed(&busy),
        "MCP tool execution failed unexpectedly: all sessions are busy; retry in 1s"
    );
}
