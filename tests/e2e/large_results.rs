//! A tool result too large for the model's context becomes a table of the
//! thread that the next step queries. runs-service runs as a process of its
//! own, so that its peak memory (VmHWM) is its alone.

use std::time::Duration;

use futures::StreamExt as _;
use switchboard_example_mcp_server::{HttpServerOptions, spawn_http};
use switchboard_proto::{
    mcp::v1::mcp_service_client::McpServiceClient,
    runs::v1::{self as runs, runs_service_client::RunsServiceClient},
};
use switchboard_scripted_model::{ScriptedModel, ScriptedToolCall, Turn};
use switchboard_test_support::{
    TEST_JWT_SECRET, TestDb, authed,
    grpc::{ServiceProcess, start_binary, wait_serving},
    peak_rss_mib, workspace_binary,
};

use crate::world::{admin, agent_and_thread, create_integration, final_run, tool_messages_sent};

/// Rows of the result: 50,857,781 bytes of JSON.
const ROWS: usize = 400_000;
const RESULT_BYTES: usize = 50_857_781;

/// Every message and result limit on the way, raised past the result.
const MESSAGE_BYTES: usize = 256 * 1024 * 1024;

/// How much more memory runs-service may hold at its peak than before the
/// run, in copies of the result: it arrives as one gRPC message (its
/// buffer and the decoded text), then the text and its CSV are held
/// together, then the CSV and the import's columns. Measured: about 2.7.
const PEAK_GROWTH_IN_RESULTS: u64 = 4;

async fn start_runs(
    dir: &std::path::Path,
    database_url: &str,
    mcp_url: &str,
    model: &ScriptedModel,
) -> ServiceProcess {
    let providers = format!("scripted=openai,{}", model.base_url());
    let message_bytes = MESSAGE_BYTES.to_string();
    let csv_bytes = (MESSAGE_BYTES / 2).to_string();
    let binary = workspace_binary("switchboard-runs-service", "runs-service");
    let process = start_binary(
        &binary.display().to_string(),
        dir,
        &[
            ("DATABASE_URL", database_url),
            ("SWITCHBOARD_JWT_SECRET", TEST_JWT_SECRET),
            ("SWITCHBOARD_MCP_SERVICE_URL", mcp_url),
            ("SWITCHBOARD_MODEL_PROVIDERS", providers.as_str()),
            ("SWITCHBOARD_TOOL_TIMEOUT", "300s"),
            ("SWITCHBOARD_REQUEST_TIMEOUT", "600s"),
            ("SWITCHBOARD_MAX_MESSAGE_BYTES", message_bytes.as_str()),
            ("SWITCHBOARD_DATA_SOURCE_MAX_CSV_BYTES", csv_bytes.as_str()),
            ("SWITCHBOARD_LOG_FORMAT", "pretty"),
            ("RUST_LOG", "warn"),
        ],
    )
    .expect("runs-service starts");
    wait_serving(&process.url, "", Duration::from_secs(120))
        .await
        .expect("runs-service serves");
    process
}

#[tokio::test]
async fn a_50_mb_json_array_result_becomes_a_table_the_next_step_queries() {
    let token = admin();
    let upstream = spawn_http(HttpServerOptions {
        rows_tool: true,
        ..HttpServerOptions::default()
    })
    .await
    .expect("example server");
    let mcp_db = TestDb::sqlite().expect("db");
    let mut mcp_config = switchboard_mcp_service::Config::for_tests(&mcp_db.url, TEST_JWT_SECRET);
    mcp_config.max_result_bytes = MESSAGE_BYTES / 2;
    mcp_config.common.server.max_message_bytes = MESSAGE_BYTES;
    mcp_config.common.server.request_timeout = Duration::from_secs(300);
    mcp_config.call_timeout = Duration::from_secs(300);
    let mcp = switchboard_mcp_service::spawn(mcp_config)
        .await
        .expect("mcp-service");
    let mut mcp_client = McpServiceClient::connect(mcp.url())
        .await
        .expect("connects");
    let integration = create_integration(
        &mut mcp_client,
        &token,
        "example",
        &upstream.url(),
        Some(300),
    )
    .await;

    let query = "SELECT COUNT(*) AS n, SUM(units) AS units, COUNT(DISTINCT region) AS regions, \
                 MAX(note) AS last FROM sales_rows WHERE shipped OR NOT shipped";
    let model = ScriptedModel::start(vec![
        Turn::ToolCalls(vec![ScriptedToolCall::new(
            "c1",
            "example__sales_rows",
            format!(r#"{{"rows":{ROWS}}}"#),
        )]),
        Turn::ToolCalls(vec![ScriptedToolCall::new(
            "c2",
            "source_query",
            serde_json::json!({ "query": query }).to_string(),
        )]),
        Turn::FromToolResults("Answer: {last_tool_result}".into()),
    ])
    .await
    .expect("scripted model");
    let runs_db = TestDb::sqlite().expect("db");
    let dir = tempfile::tempdir().expect("a directory");
    let process = start_runs(dir.path(), &runs_db.url, &mcp.url(), &model).await;
    let pid = process.child.id();
    let idle_mib = peak_rss_mib(pid).expect("VmHWM");

    let mut client = RunsServiceClient::connect(process.url.clone())
        .await
        .expect("connects");
    let thread_id = agent_and_thread(&mut client, &token, &integration).await;
    let request = runs::ExecuteRunRequest {
        thread_id,
        input: Some(runs::execute_run_request::Input::UserMessage(
            runs::UserMessageInput {
                text: "How many units were sold?".into(),
            },
        )),
        ..Default::default()
    };
    let stream = client
        .execute_run(authed(request, &token))
        .await
        .expect("the run starts")
        .into_inner();
    let events: Vec<_> = tokio::time::timeout(
        Duration::from_secs(600),
        stream.map(|e| e.expect("an event")).collect(),
    )
    .await
    .expect("the run ends in time");
    assert_eq!(final_run(&events).status(), runs::RunStatus::Completed);

    let stored = &tool_messages_sent(&model, 1)[0];
    assert!(
        stored.starts_with(&format!(
            "The result of sales_rows is {RESULT_BYTES} bytes of a JSON array of objects, too large to read here"
        )),
        "{stored}"
    );
    assert!(
        stored.contains(
            "Table: sales_rows\nColumns: id (integer), region (text), units (integer), price (float), shipped (boolean), note (text)\nRows: 400000\nFirst 5 rows:\nid | region | units | price | shipped | note\n0 | north | 0 | 0.25 | true | order 0 of the example server's sales rows\n"
        ),
        "{stored}"
    );
    // units is i % 100 over 400,000 rows: 4,000 × (0 + … + 99).
    assert_eq!(
        tool_messages_sent(&model, 2)[1],
        "n | units | regions | last\n400000 | 19800000 | 4 | order 99999 of the example server's sales rows\n1 row"
    );

    let peak_mib = peak_rss_mib(pid).expect("VmHWM");
    println!(
        "runs-service peak RSS: {peak_mib} MiB ({idle_mib} MiB before the run) for a {RESULT_BYTES}-byte result"
    );
    let bound_mib = idle_mib + PEAK_GROWTH_IN_RESULTS * (RESULT_BYTES as u64) / (1024 * 1024);
    assert!(
        peak_mib < bound_mib,
        "runs-service peaked at {peak_mib} MiB, over {bound_mib} MiB \
         ({idle_mib} MiB and {PEAK_GROWTH_IN_RESULTS} copies of the result)"
    );
}
