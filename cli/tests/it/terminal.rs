//! `chat` in a real terminal: tmux runs the CLI in a pane, the test types
//! into it and reads the screen.

use std::{path::PathBuf, time::Duration};

use switchboard_scripted_model::{ScriptedToolCall, Turn};

use crate::world::World;

/// How long the screen may take to show what the test waits for; a bound
/// on a wait, not a measurement.
const PATIENCE: Duration = Duration::from_secs(60);

/// A tmux server of its own (its own socket), killed on drop.
struct Tmux {
    socket: PathBuf,
    _dir: tempfile::TempDir,
}

impl Tmux {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("a temporary directory");
        Self {
            socket: dir.path().join("tmux.sock"),
            _dir: dir,
        }
    }

    async fn run(&self, args: &[&str]) -> String {
        let output = tokio::process::Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(args)
            .output()
            .await
            .expect("tmux runs (it is installed by scripts/install-tools.sh)");
        assert!(
            output.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    async fn screen(&self) -> String {
        self.run(&["capture-pane", "-p", "-J", "-t", "chat"]).await
    }

    /// Waits until the screen holds every one of `texts`.
    async fn wait_for(&self, texts: &[&str]) -> String {
        self.wait_until(&format!("{texts:?}"), |screen| {
            texts.iter().all(|text| screen.contains(text))
        })
        .await
    }

    /// Waits until `ready` holds for the screen (`what` names it when it
    /// never does).
    async fn wait_until(&self, what: &str, ready: impl Fn(&str) -> bool) -> String {
        let deadline = tokio::time::Instant::now() + PATIENCE;
        loop {
            let screen = self.screen().await;
            if ready(&screen) {
                return screen;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "the screen never showed {what}:\n{screen}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

impl Tmux {
    /// A tmux server showing `switchboard chat AGENT`, ready for input.
    async fn chat(world: &World, agent_id: &str) -> Self {
        let tmux = Self::new();
        let mut command: Vec<String> = ["new-session", "-d", "-s", "chat", "-x", "160", "-y", "50"]
            .map(String::from)
            .to_vec();
        for (name, value) in world.env() {
            command.extend(["-e".into(), format!("{name}={value}")]);
        }
        command.extend([
            env!("CARGO_BIN_EXE_switchboard").to_owned(),
            "chat".into(),
            agent_id.to_owned(),
        ]);
        let command: Vec<&str> = command.iter().map(String::as_str).collect();
        tmux.run(&command).await;
        tmux.wait_for(&["Ctrl-D or /exit leaves", "you> "]).await;
        tmux
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = std::process::Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .arg("kill-server")
            .stderr(std::process::Stdio::null())
            .status();
    }
}

#[tokio::test]
async fn chat_in_a_terminal_streams_tool_progress_and_the_answer() {
    let world = World::start(vec![
        Turn::ToolCalls(vec![ScriptedToolCall::new(
            "c1",
            "example__sleep",
            r#"{"ms":1500}"#,
        )]),
        Turn::ToolCalls(vec![ScriptedToolCall::new(
            "c2",
            "example__add",
            r#"{"a":40,"b":2}"#,
        )]),
        Turn::FromToolResults("The answer is {last_tool_result}, streamed in pieces.".into()),
        Turn::Text("Goodbye from the second run.".into()),
    ])
    .await;
    let (_, agent_id) = world.agent(&[]).await;

    let tmux = Tmux::chat(&world, &agent_id).await;

    tmux.run(&["send-keys", "-t", "chat", "What is 40 + 2?", "Enter"])
        .await;
    // While the slow tool runs, its spinner names it.
    let during = tmux.wait_for(&["calling MCP tool example__sleep"]).await;
    assert!(during.contains(r#"{"ms":1500}"#), "{during}");
    // The answer is printed before the prompt comes back: wait for both.
    let outcome = [
        "✓ example__sleep → ",
        "✓ example__add → 42",
        "The answer is 42, streamed in pieces.",
    ];
    let after = tmux
        .wait_until("the outcome, then the prompt", |screen| {
            outcome.iter().all(|text| screen.contains(text)) && screen.trim_end().ends_with("you>")
        })
        .await;
    // The spinner gave way to the outcome.
    assert!(
        !after.contains("calling MCP tool example__sleep"),
        "{after}"
    );

    tmux.run(&["send-keys", "-t", "chat", "bye", "Enter"]).await;
    tmux.wait_for(&["Goodbye from the second run."]).await;
    tmux.run(&["send-keys", "-t", "chat", "C-d"]).await;
}

#[tokio::test]
async fn ctrl_c_in_a_terminal_cancels_the_run_and_the_conversation_goes_on() {
    let world = World::start(vec![
        Turn::ToolCalls(vec![ScriptedToolCall::new(
            "c1",
            "example__sleep",
            r#"{"ms":60000}"#,
        )]),
        Turn::Text("Still here.".into()),
    ])
    .await;
    let (_, agent_id) = world.agent(&[]).await;
    let tmux = Tmux::chat(&world, &agent_id).await;
    let screen = tmux.screen().await;
    let thread_id = screen
        .split_whitespace()
        .skip_while(|word| *word != "thread")
        .nth(1)
        .expect("the screen names the new thread")
        .to_owned();

    tmux.run(&["send-keys", "-t", "chat", "sleep a minute", "Enter"])
        .await;
    tmux.wait_for(&["calling MCP tool example__sleep"]).await;
    tmux.run(&["send-keys", "-t", "chat", "C-c"]).await;
    let after = tmux.wait_for(&["■ run cancelled"]).await;
    assert!(
        !after.contains("calling MCP tool example__sleep"),
        "{after}"
    );
    assert!(!after.contains("^C"), "{after}");

    // The run is recorded as cancelled, and the thread takes the next message.
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        let runs = world.json(&["runs", "list", "--thread", &thread_id]).await;
        if runs["runs"][0]["status"] == "RUN_STATUS_CANCELLED" {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "{runs}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tmux.run(&["send-keys", "-t", "chat", "are you there?", "Enter"])
        .await;
    tmux.wait_for(&["Still here."]).await;
    tmux.run(&["send-keys", "-t", "chat", "C-d"]).await;
}
