//! The run loop on in-memory ports: its rules, without a database, a
//! network or a model.

use std::{sync::Arc, time::Duration};

use switchboard_auth::Principal;

use super::*;
use crate::{
    domain::{
        entities::Run,
        entities::{Agent, AgentConfig, ClientTool, Part, Role, RunStatus, Thread},
        events::{RunEvent, ToolCallStatus},
        ids::{AgentId, ThreadId},
        input::{ClientResult, RunInput},
        ports::Caller,
    },
    fakes::{FakeMcp, FakeModels, MemoryRepository, NoSources, ScriptedTurn, ToolBehaviour},
};

pub(super) const THREAD: ThreadId = ThreadId::fixed(1);

pub(super) struct World {
    pub(super) repo: Arc<MemoryRepository>,
    pub(super) mcp: Arc<FakeMcp>,
    pub(super) models: FakeModels,
    pub(super) orchestrator: Orchestrator,
    /// The ports and the runs in flight the orchestrator was built with.
    pub(super) ports: RunPorts,
    pub(super) active: ActiveRuns,
}

pub(super) fn caller() -> Caller {
    Caller {
        principal: Principal::new("org", "user", vec![]),
        token: None,
    }
}

pub(super) fn settings() -> RunSettings {
    RunSettings {
        default_max_steps: 10,
        discovery_timeout: Duration::from_secs(5),
        max_parallel_tools: 4,
        max_output_tokens: 1000,
        history: HistoryLimits {
            max_messages: 100,
            max_bytes: 1 << 20,
        },
        input: InputLimits {
            max_user_message_bytes: 1 << 16,
            max_client_tool_results: 16,
            max_client_tool_result_bytes: 1 << 16,
        },
        max_stored_events: 1000,
        event_queue: 64,
        watch: WatchSettings {
            poll_every: Duration::from_millis(10),
            end_grace: Duration::from_millis(100),
        },
        limits: RunLimits {
            per_org: 64,
            per_user: 16,
        },
        budgets: Budgets::default(),
    }
}

pub(super) fn call(name: &str, arguments: &str) -> (String, String) {
    (name.to_owned(), arguments.to_owned())
}

impl World {
    pub(super) async fn new(mcp: FakeMcp, config: AgentConfig, script: Vec<ScriptedTurn>) -> Self {
        let repo = Arc::new(MemoryRepository::default());
        let mcp = Arc::new(mcp);
        let models = FakeModels::new(script);
        let agent = Agent {
            id: AgentId::fixed(1),
            org_id: "org".into(),
            name: "agent".into(),
            config: AgentConfig {
                provider: "fake".into(),
                model: "m".into(),
                ..config
            },
            created_at: 0,
            updated_at: 0,
        };
        let thread = Thread {
            id: THREAD,
            org_id: "org".into(),
            user_id: "user".into(),
            agent_id: agent.id,
            title: String::new(),
            created_at: 0,
            updated_at: 0,
        };
        repo.insert_agent(&agent).await.expect("stored");
        repo.insert_thread(&thread).await.expect("stored");
        let ports = RunPorts {
            repo: repo.clone(),
            mcp: mcp.clone(),
            models: Arc::new(models.clone()),
            tools: Arc::new(ToolRouter::new(
                mcp.clone(),
                Arc::new(NoSources),
                Duration::from_secs(5),
            )),
            keeping: None,
        };
        let active = ActiveRuns::default();
        let orchestrator = Orchestrator::new(ports.clone(), settings(), active.clone());
        Self {
            repo,
            mcp,
            models,
            orchestrator,
            ports,
            active,
        }
    }

    /// Runs to the end and returns every event.
    pub(super) async fn run(&self, input: RunInput) -> Vec<RunEvent> {
        self.run_as(caller(), input).await.expect("the run starts")
    }

    /// Runs to the end as `caller` and returns every event, or why the run
    /// did not start.
    pub(super) async fn run_as(
        &self,
        caller: Caller,
        input: RunInput,
    ) -> Result<Vec<RunEvent>, RunsError> {
        let mut rx = self
            .orchestrator
            .start(caller, THREAD, input, false)
            .await?;
        let mut events = Vec::new();
        while let Some(envelope) = rx.recv().await {
            events.push(envelope.event);
        }
        Ok(events)
    }

    pub(super) async fn say(&self, text: &str) -> Vec<RunEvent> {
        self.run(RunInput::UserMessage(text.into())).await
    }
}

/// An agent using the fake's integrations with `slugs`.
pub(super) fn with_integrations(slugs: &[&str]) -> AgentConfig {
    AgentConfig {
        mcp_integration_ids: slugs.iter().map(|slug| FakeMcp::id(slug)).collect(),
        disable_resource_tools: true,
        ..AgentConfig::default()
    }
}

pub(super) fn ended(events: &[RunEvent]) -> &Run {
    match events.last() {
        Some(RunEvent::Completed(run) | RunEvent::Failed { run, .. }) => run,
        other => panic!("the run did not end: {other:?}"),
    }
}

pub(super) fn finished(events: &[RunEvent]) -> Vec<(String, ToolCallStatus, String)> {
    events
        .iter()
        .filter_map(|e| match e {
            RunEvent::ToolCallFinished {
                name,
                status,
                result,
                ..
            } => Some((name.clone(), *status, result.clone())),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_run_stops_at_its_step_limit() {
    let mcp = FakeMcp::default().tool(
        "i1",
        "ping",
        ToolBehaviour::Answer("pong".into(), Duration::ZERO),
    );
    let script = vec![ScriptedTurn::Call(vec![call("i1__ping", "{}")]); 5];
    let config = AgentConfig {
        max_steps: 2,
        ..with_integrations(&["i1"])
    };
    let world = World::new(mcp, config, script).await;
    let events = world.say("go").await;
    let run = ended(&events);
    assert_eq!(run.status, RunStatus::MaxSteps);
    assert_eq!(run.steps, 2);
    assert_eq!(world.mcp.calls().len(), 2);
    assert_eq!(world.models.requests().len(), 2);
}

#[tokio::test]
async fn the_agents_tool_filter_goes_along_with_discovery_and_the_call() {
    let answer = || ToolBehaviour::Answer("pong".into(), Duration::ZERO);
    let mcp = FakeMcp::default()
        .tool("i1", "ping", answer())
        .tool("i1", "wipe", answer());
    let script = vec![
        ScriptedTurn::Call(vec![call("i1__ping", "{}")]),
        ScriptedTurn::Say("done".into()),
    ];
    let mut config = with_integrations(&["i1"]);
    config
        .tool_filters
        .insert(FakeMcp::id("i1"), vec!["ping".into()]);
    let world = World::new(mcp, config, script).await;
    assert_eq!(ended(&world.say("go").await).status, RunStatus::Completed);
    let only_ping = Some(vec!["ping".to_owned()]);
    assert_eq!(
        world.mcp.allow_lists(),
        [("discover", only_ping.clone()), ("execute", only_ping)]
    );
}

#[tokio::test]
async fn a_client_tool_pauses_the_run_and_its_result_resumes_it() {
    let config = AgentConfig {
        client_tools: vec![ClientTool {
            name: "ask_user".into(),
            description: "asks".into(),
            parameters: serde_json::json!({"type": "object"}),
        }],
        ..AgentConfig::default()
    };
    let script = vec![
        ScriptedTurn::Call(vec![call("ask_user", r#"{"q":"name?"}"#)]),
        ScriptedTurn::Say("hello Ada".into()),
    ];
    let world = World::new(FakeMcp::default(), config, script).await;
    let events = world.say("hi").await;
    let paused = ended(&events).clone();
    assert_eq!(paused.status, RunStatus::RequiresAction);
    let pending = events
        .iter()
        .find_map(|e| match e {
            RunEvent::ClientToolCallsRequired(pending) => Some(pending.clone()),
            _ => None,
        })
        .expect("the client is asked");
    assert_eq!(pending[0].name, "ask_user");

    let events = world
        .run(RunInput::ClientToolResults {
            run_id: paused.id,
            results: vec![ClientResult {
                tool_call_id: pending[0].id.clone(),
                content: "Ada".into(),
                is_error: false,
            }],
            answers: Vec::new(),
            approvals: Vec::new(),
        })
        .await;
    assert_eq!(ended(&events).status, RunStatus::Completed);
    // The model's second request carried the client's result.
    let requests = world.models.requests();
    let last = requests.last().expect("two requests");
    assert!(
        format!("{:?}", last.messages).contains("Ada"),
        "{:?}",
        last.messages
    );
    let stored = world.repo.run(paused.id).expect("stored");
    assert_eq!(stored.status, RunStatus::Completed);
    assert!(stored.pending.is_empty());
}

#[tokio::test]
async fn a_run_whose_client_goes_away_is_cancelled() {
    let world = World::new(
        FakeMcp::default(),
        AgentConfig::default(),
        vec![ScriptedTurn::Hang],
    )
    .await;
    let mut rx = world
        .orchestrator
        .start(caller(), THREAD, RunInput::UserMessage("hi".into()), false)
        .await
        .expect("the run starts");
    let run_id = match rx.recv().await.map(|e| e.event) {
        Some(RunEvent::Started(run)) => run.id,
        other => panic!("{other:?}"),
    };
    drop(rx);
    let mut status = RunStatus::Running;
    for _ in 0..500 {
        status = world.repo.run(run_id).expect("stored").status;
        if status != RunStatus::Running {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(status, RunStatus::Cancelled);
}

#[tokio::test]
async fn parallel_tool_results_come_back_in_call_order() {
    let mcp = FakeMcp::default()
        .tool(
            "i1",
            "slow",
            ToolBehaviour::Answer("slow answer".into(), Duration::from_millis(50)),
        )
        .tool(
            "i1",
            "fast",
            ToolBehaviour::Answer("fast answer".into(), Duration::ZERO),
        );
    let script = vec![ScriptedTurn::Call(vec![
        call("i1__slow", "{}"),
        call("i1__fast", "{}"),
    ])];
    let world = World::new(mcp, with_integrations(&["i1"]), script).await;
    let events = world.say("go").await;
    let names: Vec<String> = finished(&events).into_iter().map(|f| f.0).collect();
    assert_eq!(names, ["i1__slow", "i1__fast"]);
    let tool_message = world
        .repo
        .messages(THREAD)
        .into_iter()
        .find(|m| m.role == Role::Tool)
        .expect("the results are stored");
    let contents: Vec<&str> = tool_message
        .parts
        .iter()
        .filter_map(|p| match p {
            Part::ToolResult { content, .. } => Some(content.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(contents, ["slow answer", "fast answer"]);
    // Both started before either finished: the slow one did not hold up
    // the fast one's start.
    assert_eq!(world.mcp.calls().len(), 2);
}

#[tokio::test]
async fn a_failing_integration_is_reported_and_the_others_still_work() {
    let mcp = FakeMcp::default()
        .tool(
            "good",
            "ping",
            ToolBehaviour::Answer("pong".into(), Duration::ZERO),
        )
        .unreachable("bad", "connection refused");
    let script = vec![
        ScriptedTurn::Call(vec![call("good__ping", "{}"), call("bad__x", "{}")]),
        ScriptedTurn::Say("ok".into()),
    ];
    let world = World::new(mcp, with_integrations(&["good", "bad"]), script).await;
    let events = world.say("go").await;
    assert!(events.iter().any(|e| matches!(
        e,
        RunEvent::DiscoveryFailed { integration_id, .. } if *integration_id == FakeMcp::id("bad")
    )));
    let system = world.models.requests()[0]
        .system
        .clone()
        .unwrap_or_default();
    assert!(
        system.contains(&format!(
            "{} (mcp-service is unavailable (connection refused))",
            FakeMcp::id("bad")
        )),
        "{system}"
    );
    let outcomes = finished(&events);
    assert_eq!(outcomes[0].1, ToolCallStatus::Succeeded);
    assert_eq!(outcomes[1].1, ToolCallStatus::NotFound);
    assert_eq!(ended(&events).status, RunStatus::Completed);
}

#[tokio::test]
async fn a_timed_out_tool_is_told_by_its_typed_reason() {
    let mcp = FakeMcp::default()
        .tool("i1", "sleep", ToolBehaviour::TimeOut)
        .tool(
            "i1",
            "broken",
            ToolBehaviour::Fail("did not answer within the warehouse hours".into()),
        );
    let script = vec![ScriptedTurn::Call(vec![
        call("i1__sleep", "{}"),
        call("i1__broken", "{}"),
    ])];
    let world = World::new(mcp, with_integrations(&["i1"]), script).await;
    let events = world.say("go").await;
    let outcomes = finished(&events);
    assert_eq!(outcomes[0].1, ToolCallStatus::TimedOut);
    // An error whose words look like a timeout is still a tool error.
    assert_eq!(outcomes[1].1, ToolCallStatus::Failed);
    assert_eq!(
        outcomes[1].2,
        "MCP tool execution failed: did not answer within the warehouse hours"
    );
}

#[tokio::test]
async fn a_failed_call_is_worded_from_the_facts_mcp_service_sends() {
    use crate::domain::ports::FailureFacts;
    let mcp = FakeMcp::default()
        .tool("i1", "sleep", ToolBehaviour::TimeOut)
        .tool(
            "i1",
            "down",
            ToolBehaviour::Break(FailureFacts::Unreachable {
                detail: "connection refused".into(),
            }),
        )
        .tool(
            "i1",
            "big",
            ToolBehaviour::Break(FailureFacts::TooLarge {
                limit_bytes: 4 * 1024 * 1024,
            }),
        );
    let script = vec![ScriptedTurn::Call(vec![
        call("i1__sleep", "{}"),
        call("i1__down", "{}"),
        call("i1__big", "{}"),
    ])];
    let world = World::new(mcp, with_integrations(&["i1"]), script).await;
    let events = world.say("go").await;
    let texts: Vec<_> = finished(&events).into_iter().map(|o| o.2).collect();
    assert!(
        texts[0].starts_with("MCP tool execution failed: the tool `sleep` did not answer within "),
        "{}",
        texts[0]
    );
    assert_eq!(
        texts[1..],
        [
            "MCP tool execution failed: could not connect to the MCP server: connection refused",
            "MCP tool execution failed: the result is larger than 4 MiB",
        ]
    );
}

#[tokio::test]
async fn arguments_reach_the_tool_as_the_model_wrote_them() {
    let mcp = FakeMcp::default().tool(
        "i1",
        "store",
        ToolBehaviour::Answer("ok".into(), Duration::ZERO),
    );
    let raw = r#"{"id": 9007199254740993, "ratio": 1.0}"#;
    let script = vec![ScriptedTurn::Call(vec![call("i1__store", raw)])];
    let world = World::new(mcp, with_integrations(&["i1"]), script).await;
    world.say("go").await;
    assert_eq!(world.mcp.calls()[0].2, raw);
}

#[tokio::test]
async fn arguments_that_are_not_an_object_never_reach_the_tool() {
    let mcp = FakeMcp::default().tool(
        "i1",
        "store",
        ToolBehaviour::Answer("ok".into(), Duration::ZERO),
    );
    let script = vec![ScriptedTurn::Call(vec![call("i1__store", "[1, 2]")])];
    let world = World::new(mcp, with_integrations(&["i1"]), script).await;
    let events = world.say("go").await;
    assert!(world.mcp.calls().is_empty());
    assert_eq!(
        finished(&events)[0].2,
        "MCP tool execution failed: the arguments are not a JSON object (got an array)"
    );
}

#[tokio::test]
async fn a_run_ended_elsewhere_is_never_written_again() {
    let mcp = FakeMcp::default().tool(
        "i1",
        "slow",
        ToolBehaviour::Answer("late".into(), Duration::from_millis(300)),
    );
    let script = vec![ScriptedTurn::Call(vec![call("i1__slow", "{}")])];
    let world = World::new(mcp, with_integrations(&["i1"]), script).await;
    let mut rx = world
        .orchestrator
        .start(caller(), THREAD, RunInput::UserMessage("go".into()), false)
        .await
        .expect("the run starts");
    let mut events = Vec::new();
    while let Some(envelope) = rx.recv().await {
        if let RunEvent::ToolCallStarted { .. } = &envelope.event {
            // While the tool runs, another replica's reaper interrupts it.
            let run_id = envelope.run_id;
            world.repo.end_elsewhere(run_id, RunStatus::Interrupted);
        }
        events.push(envelope.event);
    }
    let RunEvent::Failed { run, error } = events.last().expect("events") else {
        panic!("{events:?}")
    };
    assert_eq!(run.status, RunStatus::Interrupted);
    assert!(error.contains("ended elsewhere"), "{error}");
    let stored = world.repo.run(run.id).expect("stored");
    assert_eq!(stored.status, RunStatus::Interrupted);
    // The late result was not stored after the run changed hands.
    assert!(
        world
            .repo
            .messages(THREAD)
            .iter()
            .all(|m| m.role != Role::Tool),
        "no tool result written by the old writer"
    );
}
