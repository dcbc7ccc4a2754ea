//! `chat` from a script: the streamed answer, tool-call outcomes, skipped
//! integrations, client tools answered on stdin, failed runs.

use switchboard_scripted_model::{ScriptedToolCall, Turn};

use crate::world::{World, id};

fn text(output: &std::process::Output) -> (String, String) {
    (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[tokio::test]
async fn chat_shows_each_tool_call_outcome_and_the_answer() {
    let world = World::start(vec![
        Turn::ToolCalls(vec![
            ScriptedToolCall::new("c1", "example__add", r#"{"a":2,"b":3}"#),
            ScriptedToolCall::new("c2", "example__fail", r#"{"message":"out of paper"}"#),
        ]),
        Turn::ToolCalls(vec![ScriptedToolCall::new("c3", "example__nope", "{}")]),
        Turn::FromToolResults("all done".into()),
    ])
    .await;
    let (_, agent_id) = world.agent(&[]).await;
    let output = world.run(&["chat", &agent_id, "-m", "go"]).await;
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(lines[0].starts_with("new thread "), "{stdout}");
    assert_eq!(lines[1], "you> go");
    assert_eq!(lines[2], "✓ example__add → 5");
    assert!(lines[3].starts_with("✗ example__fail failed: "), "{stdout}");
    assert!(lines[3].contains("out of paper"), "{stdout}");
    assert!(
        lines[4].starts_with("✗ example__nope does not exist: "),
        "{stdout}"
    );
    assert_eq!(lines[5], "all done");
}

#[tokio::test]
async fn chat_names_an_integration_whose_discovery_failed() {
    let world = World::start(vec![Turn::Text("answered without it".into())]).await;
    let (_, _) = world.agent(&[]).await;
    let dead = world
        .json(&[
            "integrations",
            "create",
            "--slug",
            "dead",
            "--url",
            "http://127.0.0.1:1/mcp",
        ])
        .await;
    let agent = world
        .json(&[
            "agents",
            "create",
            "--name",
            "half",
            "--provider",
            "scripted",
            "--model",
            "m",
            "--integration",
            "example",
            "--integration",
            "dead",
        ])
        .await;
    let output = world.run(&["chat", &id(&agent), "-m", "hello"]).await;
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}{stderr}");
    assert!(
        stdout.contains(&format!("! integration {} is skipped: ", id(&dead))),
        "{stdout}"
    );
    assert!(stdout.ends_with("answered without it\n"), "{stdout}");
}

#[tokio::test]
async fn chat_pauses_for_a_client_tool_and_resumes_with_the_typed_result() {
    let world = World::start(vec![
        Turn::ToolCalls(vec![ScriptedToolCall::new(
            "c1",
            "weather",
            r#"{"city":"Paris"}"#,
        )]),
        Turn::FromToolResults("the weather is {last_tool_result}".into()),
        Turn::ToolCalls(vec![ScriptedToolCall::new("c2", "weather", "{}")]),
        Turn::FromToolResults("so: {last_tool_result}".into()),
    ])
    .await;
    let (_, agent_id) = world
        .agent(&["--client-tool", "weather:Today's weather in a city"])
        .await;
    let output = world
        .run_with_input(
            &["chat", &agent_id, "-m", "weather?", "-m", "again"],
            "sunny\n!the sensor is down\n",
        )
        .await;
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}{stderr}");
    assert!(
        stdout
            .contains(r#"⏸ the agent asks you to run client tool `weather` with {"city":"Paris"}"#),
        "{stdout}"
    );
    assert!(stdout.contains("the weather is sunny\n"), "{stdout}");
    assert!(stdout.contains("so: the sensor is down\n"), "{stdout}");
}

#[tokio::test]
async fn chat_exits_1_when_the_run_fails_or_waits_for_input_it_never_gets() {
    let world = World::start(vec![
        Turn::Error {
            status: 400,
            body: r#"{"error":{"message":"no such model"}}"#.into(),
            retry_after: None,
        },
        Turn::ToolCalls(vec![ScriptedToolCall::new("c1", "weather", "{}")]),
    ])
    .await;
    let (_, agent_id) = world.agent(&["--client-tool", "weather"]).await;
    let output = world.run(&["chat", &agent_id, "-m", "hi"]).await;
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(1), "{stdout}{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("error: run ") && stderr.contains(" failed: "),
        "{stderr}"
    );

    let output = world.run(&["chat", &agent_id, "-m", "hi"]).await;
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(1), "{stdout}{stderr}");
    assert!(
        stderr.contains("the run waits for the result of client tool `weather`; none was given"),
        "{stderr}"
    );
}

/// The model's text and an MCP server's error text carry terminal escape
/// sequences (an OSC 52 clipboard write, a disguised OSC 8 link, a cursor
/// move) and a carriage return faking a prompt: the CLI shows them as
/// visible escapes and obeys none, in text and in JSON.
#[tokio::test]
async fn chat_prints_no_terminal_control_from_the_model_or_a_server() {
    const HOSTILE: &str = "fine\u{1b}]52;c;cm0gLXJmIH4=\u{7}\u{1b}]8;;https://evil.example\u{1b}\\docs\u{1b}]8;;\u{1b}\\\u{1b}[1A\u{1b}[2K\ryou> \u{9b}0m\u{202e}";
    // One script per run: the text run, then the JSON run.
    let turns = (0..2).flat_map(|_| {
        [
            Turn::ToolCalls(vec![ScriptedToolCall::new(
                "c1",
                "example__fail",
                serde_json::json!({ "message": HOSTILE }).to_string(),
            )]),
            Turn::Text(HOSTILE.into()),
        ]
    });
    let world = World::start(turns.collect()).await;
    let (_, agent_id) = world.agent(&[]).await;
    for json in [false, true] {
        let mut args: Vec<&str> = vec!["chat", agent_id.as_str(), "-m", "go"];
        if json {
            args.push("--json");
        }
        let output = world.run(&args).await;
        let (stdout, stderr) = text(&output);
        assert!(output.status.success(), "{stdout}{stderr}");
        for printed in [&stdout, &stderr] {
            let obeyed: Vec<char> = printed
                .chars()
                .filter(|c| matches!(c, '\u{1b}' | '\u{7}' | '\r' | '\u{9b}' | '\u{202e}'))
                .collect();
            assert!(obeyed.is_empty(), "{obeyed:?} in {printed:?}");
        }
        if json {
            for line in stdout.lines() {
                serde_json::from_str::<serde_json::Value>(line).expect("each line is JSON");
            }
            assert!(stdout.contains("\\u001b]52;c;"), "{stdout}");
        } else {
            assert!(stdout.contains("fine\\u{1b}]52;c;"), "{stdout}");
            assert!(stdout.contains("\\u{d}you> "), "{stdout}");
        }
    }
}

#[tokio::test]
async fn chat_says_how_to_accept_an_asked_change_and_the_command_does() {
    let world = World::start(vec![
        Turn::Text("first".into()),
        Turn::Text("second".into()),
        Turn::Text("third".into()),
    ])
    .await;
    let (_, agent_id) = world.agent(&["--tool-drift", "ask"]).await;
    let thread = world.json(&["threads", "create", &agent_id]).await;
    let thread_id = id(&thread);
    world
        .ok(&["chat", "--thread", &thread_id, "-m", "one"])
        .await;
    assert!(world.upstream.change_echo_description().await);
    world
        .ok(&["integrations", "discover", "example", "--refresh"])
        .await;

    let stdout = world
        .ok(&["chat", "--thread", &thread_id, "-m", "two"])
        .await;
    let prefix = format!("run `switchboard threads accept-tool {thread_id} example__echo ");
    let command = stdout
        .lines()
        .find_map(|line| line.split_once(&prefix))
        .map(|(_, rest)| rest.trim_end_matches('`').to_owned())
        .unwrap_or_else(|| panic!("no command to accept the change: {stdout}"));
    assert_eq!(command.len(), 64, "the digest: {command}");
    let accepted = world
        .ok(&[
            "threads",
            "accept-tool",
            &thread_id,
            "example__echo",
            &command,
        ])
        .await;
    assert!(
        accepted.starts_with("accepted the new definition of example__echo"),
        "{accepted}"
    );
    let third = world
        .ok(&["chat", "--thread", &thread_id, "-m", "three"])
        .await;
    assert!(
        !third.contains("changed"),
        "no change reported again: {third}"
    );

    let again = world
        .run(&[
            "threads",
            "accept-tool",
            &thread_id,
            "example__echo",
            &command,
        ])
        .await;
    assert!(!again.status.success());
    assert!(
        String::from_utf8_lossy(&again.stderr).contains("FAILED_PRECONDITION"),
        "{again:?}"
    );
}
