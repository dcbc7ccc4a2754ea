//! `chat` when the run needs the person at the terminal: an MCP server's
//! question, answered at a prompt, and an integration the user must
//! connect (OAuth), completed with the address the browser lands on.

use std::process::Stdio;

use switchboard_example_mcp_server::OAuthRealm;
use switchboard_scripted_model::{ScriptedToolCall, Turn};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};

use crate::world::{Setup, World};

const REDIRECT_URI: &str = "https://app.example/oauth/callback";

fn text(output: &std::process::Output) -> (String, String) {
    (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[tokio::test]
async fn chat_asks_a_servers_question_and_the_call_completes_with_the_answer() {
    let world = World::start_with(
        vec![
            Turn::ToolCalls(vec![ScriptedToolCall::new(
                "c1",
                "example__confirm",
                r#"{"action":"deploy"}"#,
            )]),
            Turn::FromToolResults("the tool said: {last_tool_result}".into()),
        ],
        Setup {
            questions_to_caller: true,
            ..Setup::default()
        },
    )
    .await;
    let (_, agent_id) = world.agent(&[]).await;
    let output = world
        .run_with_input(&["chat", &agent_id, "-m", "deploy it"], "y\n")
        .await;
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}{stderr}");
    assert!(
        stdout.contains("⏸ example__confirm waits for your answer"),
        "{stdout}"
    );
    assert!(
        stdout.contains("⏸ `example__confirm` asks: Go ahead with deploy?"),
        "{stdout}"
    );
    assert!(
        stdout.contains("the tool said: confirmed deploy"),
        "{stdout}"
    );
}

/// What the user's browser does: signs in as `user` and is sent back to
/// the application with `code` and `state`; the address it lands on.
async fn sign_in(url: &str, user: &str) -> String {
    let browser = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("a client");
    let response = browser
        .get(format!("{url}&user={user}"))
        .send()
        .await
        .expect("the authorization server answers");
    response.headers()[reqwest::header::LOCATION]
        .to_str()
        .expect("a location")
        .to_owned()
}

#[tokio::test]
async fn chat_connects_an_integration_that_needs_the_users_authorization_and_goes_on() {
    let realm = OAuthRealm::default();
    let world = World::start_with(
        vec![
            Turn::Text("Please connect the example integration first.".into()),
            Turn::ToolCalls(vec![ScriptedToolCall::new(
                "c1",
                "example__echo",
                r#"{"text":"hello"}"#,
            )]),
            Turn::FromToolResults("echo said: {last_tool_result}".into()),
        ],
        Setup {
            oauth: Some(realm.clone()),
            ..Setup::default()
        },
    )
    .await;
    let url = world.upstream.url();
    world
        .ok(&[
            "integrations",
            "create",
            "--slug",
            "example",
            "--url",
            &url,
            "--oauth-redirect-uri",
            REDIRECT_URI,
        ])
        .await;
    let agent = world
        .json(&[
            "agents",
            "create",
            "--name",
            "assistant",
            "--provider",
            "scripted",
            "--model",
            "test-model",
            "--integration",
            "example",
        ])
        .await;
    let agent_id = crate::world::id(&agent);

    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .args(["chat", &agent_id, "-m", "echo hello"])
        .env_clear()
        .envs(world.env())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the CLI starts");
    let mut stdout = BufReader::new(child.stdout.take().expect("piped")).lines();
    let mut seen = String::new();
    let authorization_url = loop {
        let line = stdout
            .next_line()
            .await
            .expect("reads")
            .unwrap_or_else(|| panic!("the CLI never asked to connect: {seen}"));
        seen.push_str(&line);
        seen.push('\n');
        if let Some(url) = line.trim().strip_prefix("http") {
            break format!("http{url}");
        }
    };
    assert!(seen.contains("needs you to connect your account"), "{seen}");
    let landed = sign_in(&authorization_url, "user-cli").await;
    assert!(landed.starts_with(REDIRECT_URI), "{landed}");
    let mut stdin = child.stdin.take().expect("piped");
    stdin
        .write_all(format!("{landed}\n").as_bytes())
        .await
        .expect("writes");
    drop(stdin);
    while let Some(line) = stdout.next_line().await.expect("reads") {
        seen.push_str(&line);
        seen.push('\n');
    }
    let status = child.wait().await.expect("the CLI ends");
    assert!(status.success(), "{seen}");
    assert!(seen.contains("✓ integration"), "{seen}");
    assert!(seen.contains("echo said: hello"), "{seen}");
    assert!(
        !realm
            .issued_tokens()
            .iter()
            .any(|token| seen.contains(token.as_str())),
        "no token is shown"
    );
}
