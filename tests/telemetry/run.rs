//! The run, its trace, and what telemetry must not hold.

use std::{
    io,
    sync::{Arc, Mutex},
    time::Duration,
};

use futures::StreamExt as _;
use opentelemetry_proto::tonic::trace::v1::Span;
use serde_json::json;
use switchboard_proto::{mcp::v1 as mcp, runs::v1 as runs};
use switchboard_scripted_model::{ScriptedToolCall, Turn};
use switchboard_telemetry::{LogFormat, TelemetryConfig, TelemetryGuard};
use switchboard_test_support::{
    authed,
    otlp::{Collector, attribute, hex},
};
use tonic_health::pb::{HealthCheckRequest, health_client::HealthClient};

use crate::world::{Options, World, world};

const FIRST_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const SECOND_TRACE: &str = "5cf92f3577b34da6a3ce929d0e0e4737";
const THIRD_TRACE: &str = "6df92f3577b34da6a3ce929d0e0e4738";
const CLIENT_SPAN: &str = "00f067aa0ba902b7";
const CANARY_CREDENTIAL: &str = "canary-credential-7f3a9c02";
const CANARY_ARGUMENT: &str = "canary-argument-51be0d77";
/// An argument the MCP server repeats in its error.
const CANARY_IN_ERROR: &str = "canary-error-9d21e6f4";

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
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().expect("not poisoned")).into_owned()
    }
}

fn turns(integration_id: &str) -> Vec<Turn> {
    let echo = |id: &str| {
        Turn::ToolCalls(vec![ScriptedToolCall::new(
            id,
            "example__echo",
            json!({ "text": CANARY_ARGUMENT }).to_string(),
        )])
    };
    let resource = Turn::ToolCalls(vec![ScriptedToolCall::new(
        "c2",
        "retrieve_mcp_resource",
        json!({ "integrationId": integration_id, "resourceUri": "data://sales.csv" }).to_string(),
    )]);
    let query = Turn::ToolCalls(vec![ScriptedToolCall::new(
        "c3",
        "source_query",
        json!({ "query": "SELECT COUNT(*) AS n FROM sales" }).to_string(),
    )]);
    vec![
        echo("c1"),
        resource,
        query,
        Turn::Text("done".into()),
        echo("c4"),
        Turn::Text("done again".into()),
        Turn::ToolCalls(vec![ScriptedToolCall::new(
            "c5",
            "retrieve_mcp_resource",
            json!({
                "integrationId": integration_id,
                "resourceUri": format!("data://sales/{CANARY_IN_ERROR}.csv"),
            })
            .to_string(),
        )]),
        Turn::Text("not found".into()),
    ]
}

/// Runs the agent as a client in trace `trace` would.
async fn run_in_trace(w: &mut World, trace: &str) -> Vec<runs::ExecuteRunResponse> {
    let mut request = authed(
        runs::ExecuteRunRequest {
            thread_id: w.thread_id.clone(),
            input: Some(runs::execute_run_request::Input::UserMessage(
                runs::UserMessageInput {
                    text: "Echo, then count the sales".into(),
                },
            )),
            ..Default::default()
        },
        &w.token,
    );
    request.metadata_mut().insert(
        "traceparent",
        format!("00-{trace}-{CLIENT_SPAN}-01")
            .parse()
            .expect("ascii"),
    );
    let stream = w
        .runs_client
        .execute_run(request)
        .await
        .expect("the run starts")
        .into_inner();
    tokio::time::timeout(
        Duration::from_secs(60),
        stream.map(|e| e.expect("an event")).collect(),
    )
    .await
    .expect("the run ends in time")
}

/// The spans of trace `trace`, once the run's own span has ended and been
/// exported.
async fn spans_of(collector: &Collector, guard: &TelemetryGuard, trace: &str) -> Vec<Span> {
    for _ in 0..200 {
        tokio::task::block_in_place(|| guard.flush());
        let spans: Vec<Span> = collector
            .spans()
            .into_iter()
            .filter(|s| hex(&s.trace_id) == trace)
            .collect();
        if spans.iter().any(|s| s.name.starts_with("invoke_agent")) {
            return spans;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the run's spans never reached the collector")
}

fn named<'a>(spans: &'a [Span], name: &str) -> &'a Span {
    spans.iter().find(|s| s.name == name).unwrap_or_else(|| {
        let names: Vec<&str> = spans.iter().map(|s| s.name.as_str()).collect();
        panic!("no span `{name}` in {names:?}")
    })
}

fn assert_child(child: &Span, parent: &Span) {
    assert_eq!(
        hex(&child.parent_span_id),
        hex(&parent.span_id),
        "`{}` is a child of `{}`",
        child.name,
        parent.name
    );
}

/// The parent chain client → runs-service → mcp-service → upstream request,
/// and the traceparent the upstream server saw.
fn assert_tool_call_chain(spans: &[Span], upstream_saw: &[String], trace: &str) {
    let execute_run = named(spans, "switchboard.runs.v1.RunsService/ExecuteRun");
    assert_eq!(hex(&execute_run.parent_span_id), CLIENT_SPAN);
    assert_eq!(
        attribute(execute_run, "rpc.grpc.status_code").as_deref(),
        Some("0")
    );
    let agent = named(spans, "invoke_agent assistant");
    assert_child(agent, execute_run);
    let chat = named(spans, "chat test-model");
    assert_child(chat, agent);
    assert!(attribute(chat, "gen_ai.usage.input_tokens").is_some());
    assert_eq!(
        attribute(chat, "gen_ai.provider.name").as_deref(),
        Some("scripted")
    );
    let tool = named(spans, "execute_tool example__echo");
    assert_child(tool, agent);
    assert!(attribute(tool, "gen_ai.tool.call.id").is_some_and(|id| id == "c1" || id == "c4"));
    let served = named(spans, "switchboard.mcp.v1.McpService/ExecuteTool");
    assert_child(served, tool);
    let operation = named(spans, "tools/call echo");
    assert_child(operation, served);
    assert_eq!(
        attribute(operation, "mcp.method.name").as_deref(),
        Some("tools/call")
    );
    assert_eq!(
        attribute(operation, "gen_ai.tool.name").as_deref(),
        Some("echo")
    );
    let request = spans
        .iter()
        .find(|s| s.name == "POST tools/call" && s.parent_span_id == operation.span_id)
        .expect("the upstream request's span");
    assert!(
        attribute(request, "mcp.session.id").is_some(),
        "the session id"
    );
    let sent = format!("00-{trace}-{}-01", hex(&request.span_id));
    assert!(
        upstream_saw.contains(&sent),
        "the upstream server saw {sent}: {upstream_saw:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_run_is_one_trace_from_the_client_to_the_mcp_server() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let collector = Collector::start().await;
    let logs = Logs::default();
    let writer = logs.clone();
    let config = TelemetryConfig {
        log_filter: "info,switchboard_mcp_service=debug,switchboard_runs_service=debug".into(),
        log_format: LogFormat::Json,
        otlp_endpoint: Some(collector.endpoint()),
        metrics_addr: Some("127.0.0.1:0".parse().expect("an address")),
        ..TelemetryConfig::new("switchboard-e2e")
    };
    let guard = switchboard_telemetry::init_with_writer(&config, move || writer.clone())
        .expect("telemetry installed");
    let mut w = world(Options {
        turns_for: Some(Box::new(turns)),
        integration_auth: Some(mcp::auth_config::Method::BearerToken(
            mcp::BearerTokenAuth {
                token: CANARY_CREDENTIAL.into(),
                token_set: false,
            },
        )),
        ..Options::default()
    })
    .await;

    let events = run_in_trace(&mut w, FIRST_TRACE).await;
    assert_eq!(
        crate::world::final_run(&events).status(),
        runs::RunStatus::Completed
    );
    let channel = tonic::transport::Channel::from_shared(w._runs.url())
        .expect("a URL")
        .connect()
        .await
        .expect("connects");
    let mut health = HealthClient::new(channel);
    health
        .check(HealthCheckRequest::default())
        .await
        .expect("health answers");

    let spans = spans_of(&collector, &guard, FIRST_TRACE).await;
    assert_tool_call_chain(&spans, &w.upstream.stats.traceparents(), FIRST_TRACE);
    let resource_tool = named(&spans, "execute_tool retrieve_mcp_resource");
    let retrieved = named(&spans, "switchboard.mcp.v1.McpService/RetrieveResource");
    assert_child(retrieved, resource_tool);
    assert_child(named(&spans, "resources/read"), retrieved);
    let discovered = named(&spans, "switchboard.mcp.v1.McpService/Discover");
    assert_child(named(&spans, "discover"), discovered);
    assert!(
        collector
            .spans()
            .iter()
            .all(|s| !s.name.contains("grpc.health")),
        "health checks are not traced"
    );
    assert!(
        logs.text()
            .contains(&format!("\"trace_id\":\"{FIRST_TRACE}\"")),
        "log lines carry the trace id"
    );

    let scraped = scrape(&guard).await;
    for metric in [
        "rpc_server_call_duration_seconds_bucket",
        "mcp_client_operation_duration_seconds_count",
        "gen_ai_client_token_usage_bucket",
        "gen_ai_client_operation_duration_seconds_count",
        "switchboard_runs_active",
        "switchboard_runs_finished_total",
        "switchboard_mcp_sessions_open",
        "switchboard_datasource_queries_total",
    ] {
        assert!(scraped.contains(metric), "{metric} is served: {scraped}");
    }
    assert!(scraped.contains("rpc_method=\"ExecuteTool\""), "{scraped}");
    assert!(scraped.contains("gen_ai_tool_name=\"echo\""), "{scraped}");
    assert!(
        collector
            .metric_names()
            .contains(&"rpc.server.call.duration".to_owned())
    );

    let secrets = [CANARY_CREDENTIAL, CANARY_ARGUMENT, w.token.as_str()];
    assert_nothing_holds(&secrets, &[&collector.everything(), &logs.text(), &scraped]);

    // With content capture on, the arguments are recorded; credentials never.
    switchboard_telemetry::set_capture_content(true);
    let events = run_in_trace(&mut w, SECOND_TRACE).await;
    assert_eq!(
        crate::world::final_run(&events).status(),
        runs::RunStatus::Completed
    );
    let spans = spans_of(&collector, &guard, SECOND_TRACE).await;
    let tool = named(&spans, "execute_tool example__echo");
    assert!(
        attribute(tool, "gen_ai.tool.call.arguments").is_some_and(|a| a.contains(CANARY_ARGUMENT)),
        "the arguments are captured"
    );
    assert!(
        spans
            .iter()
            .any(|s| attribute(s, "gen_ai.output.messages")
                .is_some_and(|m| m.contains(CANARY_ARGUMENT))),
        "the model's answers are captured"
    );
    assert!(
        spans.iter().any(|s| attribute(s, "gen_ai.input.messages")
            .is_some_and(|m| m.contains(CANARY_ARGUMENT) && m.contains("\"role\":\"tool\""))),
        "what the model is sent is captured"
    );
    let secrets = [CANARY_CREDENTIAL, w.token.as_str()];
    assert_nothing_holds(
        &secrets,
        &[&collector.everything(), &logs.text(), &scrape(&guard).await],
    );

    // With capture off again, a failure's status holds its type, not the
    // server's text (which repeats the argument).
    switchboard_telemetry::set_capture_content(false);
    run_in_trace(&mut w, THIRD_TRACE).await;
    let spans = spans_of(&collector, &guard, THIRD_TRACE).await;
    let failed: Vec<&Span> = spans
        .iter()
        .filter(|s| s.status.as_ref().is_some_and(|status| status.code == 2))
        .collect();
    assert!(
        failed.iter().any(|s| s.name.starts_with("resources/read")),
        "the failed read is marked: {failed:?}"
    );
    for span in failed {
        let message = span.status.as_ref().map(|s| s.message.as_str());
        assert!(
            !message.unwrap_or_default().contains(CANARY_IN_ERROR),
            "{}: {message:?}",
            span.name
        );
    }
}

fn assert_nothing_holds(secrets: &[&str], texts: &[&str]) {
    for secret in secrets {
        for (i, text) in texts.iter().enumerate() {
            assert!(
                !text.contains(secret),
                "telemetry output {i} holds `{secret}`"
            );
        }
    }
}

async fn scrape(guard: &TelemetryGuard) -> String {
    let addr = guard.metrics_addr().expect("the metrics endpoint is on");
    reqwest::get(format!("http://{addr}/metrics"))
        .await
        .expect("the endpoint answers")
        .text()
        .await
        .expect("a body")
}
