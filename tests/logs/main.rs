//! A run's log lines as an operator reads them (JSON): discovery's start,
//! each integration's outcome and the totals; each MCP tool call's start;
//! each resource read's outcome, with the integration ids, counts, error
//! types, URIs and statuses the reference's tickets log, as fields.
//!
//! A binary of its own: it installs the process's global subscriber, which
//! other tests must not share.

#[allow(dead_code)]
#[path = "../e2e/world.rs"]
mod world;

use std::{
    io,
    sync::{Arc, Mutex},
};

use serde_json::{Value, json};
use switchboard_scripted_model::{ScriptedToolCall, Turn};
use switchboard_telemetry::{LogFormat, TelemetryConfig};
use switchboard_test_support::grpc::free_port;

use crate::world::{Options, admin, create_integration, final_run, world};

#[derive(Clone, Default)]
struct Logs(Arc<Mutex<Vec<u8>>>);

impl io::Write for Logs {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        if let Ok(mut logs) = self.0.lock() {
            logs.extend_from_slice(bytes);
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Logs {
    fn lines(&self) -> Vec<Value> {
        let text = String::from_utf8_lossy(&self.0.lock().expect("not poisoned")).into_owned();
        text.lines()
            .map(|line| serde_json::from_str(line).expect("every log line is JSON"))
            .collect()
    }
}

fn turns(integration_id: &str) -> Vec<Turn> {
    let call = |id: &str, name: &str, arguments: Value| {
        Turn::ToolCalls(vec![ScriptedToolCall::new(id, name, arguments.to_string())])
    };
    vec![
        call("c1", "example__echo", json!({"text": "hi"})),
        call(
            "c2",
            "retrieve_mcp_resource",
            json!({"integrationId": integration_id, "resourceUri": "data://sales.csv"}),
        ),
        call(
            "c3",
            "retrieve_mcp_resource",
            json!({"integrationId": integration_id, "resourceUri": "data://missing.csv"}),
        ),
        Turn::Text("done".into()),
    ]
}

/// The one line saying `message` whose fields hold `fields`.
fn line<'a>(lines: &'a [Value], message: &str, fields: &Value) -> &'a Value {
    let holds = |line: &Value| {
        fields
            .as_object()
            .is_some_and(|fields| fields.iter().all(|(k, v)| &line[k] == v))
    };
    let found: Vec<&Value> = lines
        .iter()
        .filter(|l| l["message"] == message && holds(l))
        .collect();
    match found.as_slice() {
        [one] => one,
        other => {
            let said: Vec<&Value> = lines.iter().map(|l| &l["message"]).collect();
            panic!(
                "{} lines `{message}` with {fields}; the lines said {said:?}",
                other.len()
            )
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_runs_log_lines_carry_the_references_metadata() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let logs = Logs::default();
    let writer = logs.clone();
    let config = TelemetryConfig {
        log_format: LogFormat::Json,
        log_filter: "info".into(),
        ..TelemetryConfig::new("switchboard-logs")
    };
    let _guard = switchboard_telemetry::init_with_writer(&config, move || writer.clone())
        .expect("telemetry installed");
    let mut w = world(Options {
        turns_for: Some(Box::new(turns)),
        ..Options::default()
    })
    .await;
    let down_url = format!("http://127.0.0.1:{}/mcp", free_port().expect("port"));
    let down = create_integration(&mut w.mcp_client, &admin(), "down", &down_url, None).await;
    let up = w.integration_id.clone();
    w.set_integrations(vec![up.clone(), down.clone()]).await;
    final_run(&w.say("go").await);
    let lines = logs.lines();

    let start = line(&lines, "discovering MCP capabilities", &json!({}));
    assert_eq!(start["integration_count"], 2);
    assert_eq!(start["integration_ids"], format!("{up},{down}"));
    let discovered = line(
        &lines,
        "integration discovered",
        &json!({"integration_id": up}),
    );
    assert_eq!(discovered["resources"], 3, "{discovered}");
    assert_eq!(discovered["resource_templates"], 1, "{discovered}");
    assert_eq!(discovered["prompts"], 1, "{discovered}");
    let tools = discovered["tools"].as_u64().expect("a tool count");
    assert!(tools >= 5, "{discovered}");
    let failed = line(
        &lines,
        "integration discovery failed; skipping it",
        &json!({"integration_id": down}),
    );
    assert!(failed["error_type"].is_string(), "{failed}");
    assert!(failed["error"].is_string(), "{failed}");
    let totals = line(
        &lines,
        "MCP discovery complete",
        &json!({"discovered": 1, "failed": 1, "total_resources": 3, "total_resource_templates": 1, "total_prompts": 1}),
    );
    assert_eq!(totals["total_tools"], tools);

    let executing = line(
        &lines,
        "executing MCP tool",
        &json!({"integration_id": up, "tool": "echo"}),
    );
    assert_eq!(executing["resumed"], false);
    line(
        &lines,
        "MCP tool executed",
        &json!({"integration_id": up, "tool": "echo", "is_error": false, "status": "Succeeded"}),
    );

    line(
        &lines,
        "MCP resource retrieved",
        &json!({"integration_id": up, "uri": "data://sales.csv", "status": "succeeded", "kind": "csv"}),
    );
    let missing = line(
        &lines,
        "MCP resource retrieval failed",
        &json!({"integration_id": up, "uri": "data://missing.csv", "status": "failed"}),
    );
    assert!(missing["error_type"].is_string(), "{missing}");
}
