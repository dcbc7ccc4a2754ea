//! The Python, TypeScript and Go examples of `examples/`, each with a client
//! generated from `proto/` (scripts/generate-clients.sh, `make clients`),
//! run against both services, the example MCP server and a scripted model.
//! Each example asserts the events it receives and exits non-zero when one is
//! missing; the test checks that, the transcript it prints and that the tool
//! an approval gated ran exactly once.

use std::{path::PathBuf, process::Output, time::Duration};

use switchboard_example_mcp_server::{HttpServerOptions, RunningHttpServer, spawn_http};
use switchboard_scripted_model::{ScriptedModel, ScriptedToolCall, Turn};
use switchboard_server::RunningServer;
use switchboard_test_support::{TEST_JWT_SECRET, TestDb, token};
use tokio::process::Command;

use crate::polyglot::{python, workspace_root};

/// Both services with their databases, an MCP server and a model.
struct Live {
    _mcp_db: TestDb,
    _runs_db: TestDb,
    mcp: RunningServer,
    runs: RunningServer,
    upstream: RunningHttpServer,
    _model: ScriptedModel,
}

/// What the model does: call the example server's echo tool, then the
/// example's client tool, then answer with the client tool's result; asked
/// again (the approval round), call the server's `sleep` tool, which the
/// example's policy gates, and answer with its result.
fn turns() -> Vec<Turn> {
    vec![
        Turn::ToolCalls(vec![ScriptedToolCall::new(
            "call-echo",
            "example__echo",
            r#"{"text":"hello from an example"}"#,
        )]),
        Turn::ToolCalls(vec![ScriptedToolCall::new(
            "call-time",
            "get_local_time",
            r#"{"city":"Paris"}"#,
        )]),
        Turn::FromToolResults("It is {last_tool_result}.".into()),
        Turn::ToolCalls(vec![ScriptedToolCall::new(
            "call-sleep",
            "example__sleep",
            r#"{"ms": 1}"#,
        )]),
        Turn::FromToolResults("Done: {last_tool_result}.".into()),
    ]
}

async fn live() -> Live {
    let upstream = spawn_http(HttpServerOptions::default())
        .await
        .expect("example MCP server");
    let model = ScriptedModel::start(turns()).await.expect("scripted model");
    let mcp_db = TestDb::sqlite().expect("a database");
    let runs_db = TestDb::sqlite().expect("a database");
    let mcp = switchboard_mcp_service::spawn(switchboard_mcp_service::Config::for_tests(
        &mcp_db.url,
        TEST_JWT_SECRET,
    ))
    .await
    .expect("mcp-service starts");
    let mut config =
        switchboard_runs_service::Config::for_tests(&runs_db.url, TEST_JWT_SECRET, &mcp.url());
    config.model_providers = format!("scripted=openai,{}", model.base_url());
    config.tool_timeout = Duration::from_secs(20);
    let runs = switchboard_runs_service::spawn(config)
        .await
        .expect("runs-service starts");
    Live {
        _mcp_db: mcp_db,
        _runs_db: runs_db,
        mcp,
        runs,
        upstream,
        _model: model,
    }
}

fn example_dir(language: &str) -> PathBuf {
    let dir = workspace_root().join("examples").join(language);
    let generated = match language {
        "typescript" => dir.join("src/gen"),
        _ => dir.join("gen"),
    };
    assert!(
        generated.exists(),
        "{} is missing: run `make clients` (scripts/generate-clients.sh)",
        generated.display()
    );
    dir
}

/// Runs `command` against `live` and returns its transcript, after checking
/// that it succeeded and printed what a whole conversation prints.
async fn run_example(mut command: Command, live: Live, language: &str) -> String {
    let output: Output = command
        .env("SWITCHBOARD_MCP_ADDR", live.mcp.addr.to_string())
        .env("SWITCHBOARD_RUNS_ADDR", live.runs.addr.to_string())
        .env(
            "SWITCHBOARD_TOKEN",
            token("org-examples", "user-examples", &["admin"]),
        )
        .env("EXAMPLE_MCP_URL", live.upstream.url())
        .env("EXAMPLE_MODEL_PROVIDER", "scripted")
        .kill_on_drop(true)
        .output()
        .await
        .unwrap_or_else(|e| panic!("the {language} example starts: {e}"));
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "the {language} example failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    for expected in [
        "run_started",
        "tool_call_started example__echo",
        "tool_call_finished example__echo",
        "client_tool_calls_required get_local_time",
        "answer: It is 12:00 in Paris.",
        "tool_approval_required example__sleep example-approvals@1/destructive",
        "tool_call_finished example__sleep",
        "answer: Done: slept 1ms.",
        "policy example-approvals deleted",
        &format!("{language} example: ok"),
    ] {
        assert!(stdout.contains(expected), "no `{expected}` in:\n{stdout}");
    }
    assert!(
        stdout
            .lines()
            .any(|line| line.contains("tool_call_finished example__sleep")
                && line.contains("SUCCEEDED")),
        "the approved sleep did not succeed:\n{stdout}"
    );
    assert_eq!(
        live.upstream.stats.snapshot().tool_calls,
        2,
        "echo once and the approved sleep once:\n{stdout}"
    );
    live.runs.stop().await.expect("runs-service stops");
    live.mcp.stop().await.expect("mcp-service stops");
    stdout
}

#[tokio::test]
async fn the_python_example_runs_a_client_tool_and_an_approved_tool_call() {
    let dir = example_dir("python");
    let live = live().await;
    let mut command = Command::new(python());
    command.arg(dir.join("example.py"));
    run_example(command, live, "python").await;
}

#[tokio::test]
async fn the_typescript_example_runs_a_client_tool_and_an_approved_tool_call() {
    let dir = example_dir("typescript");
    let tsx = dir.join("node_modules/.bin/tsx");
    assert!(
        tsx.exists(),
        "{} is missing: run `make clients`",
        tsx.display()
    );
    let live = live().await;
    let mut command = Command::new(tsx);
    command.arg("src/example.ts").current_dir(&dir);
    run_example(command, live, "typescript").await;
}

#[tokio::test]
async fn the_go_example_runs_a_client_tool_and_an_approved_tool_call() {
    let dir = example_dir("go");
    let live = live().await;
    let mut command = Command::new("go");
    command.args(["run", "."]).current_dir(&dir);
    run_example(command, live, "go").await;
}
