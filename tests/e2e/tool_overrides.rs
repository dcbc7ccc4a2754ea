//! An agent's tool overrides, through a run: a renamed tool is called by
//! its new name and reaches the server under its own, a hidden tool is not
//! offered, a description of the agent's is what the model reads, and the
//! thread pins the server's own definition, so changing the override is
//! not a change of the tool.

use prost_types::FieldMask;
use switchboard_proto::runs::v1::{self as runs, execute_run_response::Event};
use switchboard_scripted_model::{ScriptedToolCall, Turn};
use switchboard_test_support::authed;

use crate::world::{Options, final_run, tools_offered, world};

fn overrides(integration_id: &str, description: &str) -> Vec<runs::ToolOverride> {
    vec![
        runs::ToolOverride {
            integration_id: integration_id.into(),
            tool: "echo".into(),
            name: "repeat_back".into(),
            description: description.into(),
            hidden: false,
        },
        runs::ToolOverride {
            integration_id: integration_id.into(),
            tool: "add".into(),
            hidden: true,
            ..Default::default()
        },
    ]
}

#[tokio::test]
async fn a_renamed_tool_is_called_by_its_new_name_and_reaches_the_server_under_its_own() {
    let mut w = world(Options {
        turns: vec![
            Turn::ToolCalls(vec![ScriptedToolCall::new(
                "c1",
                "repeat_back",
                r#"{"text":"said through a new name"}"#,
            )]),
            Turn::FromToolResults("The tool said: {last_tool_result}".into()),
            Turn::ToolCalls(vec![ScriptedToolCall::new(
                "c2",
                "example__add",
                r#"{"a":1,"b":2}"#,
            )]),
            Turn::FromToolResults("{last_tool_result}".into()),
        ],
        agent: Box::new(|agent| {
            let id = agent.mcp_integration_ids[0].clone();
            agent.tool_overrides = overrides(&id, "Repeats back what it is given.");
        }),
        ..Options::default()
    })
    .await;
    let events = w.say("say something").await;
    assert_eq!(final_run(&events).status(), runs::RunStatus::Completed);

    let offered = tools_offered(&w.model, 0);
    assert!(offered.contains(&"repeat_back".to_owned()), "{offered:?}");
    for gone in ["example__echo", "example__add"] {
        assert!(
            !offered.contains(&gone.to_owned()),
            "{gone} offered: {offered:?}"
        );
    }
    let tools = w.model.requests()[0]["tools"].clone();
    let renamed = tools
        .as_array()
        .expect("tools")
        .iter()
        .find(|t| t["function"]["name"] == "repeat_back")
        .expect("offered");
    assert_eq!(
        renamed["function"]["description"],
        "Repeats back what it is given."
    );
    assert_eq!(w.upstream.stats.snapshot().tool_calls, 1);
    let answer = w.messages().await;
    let Some(runs::content_part::Part::Text(text)) =
        &answer.last().expect("an answer").content[0].part
    else {
        panic!("a text answer");
    };
    assert!(
        text.text.contains("said through a new name"),
        "the server's echo answered: {}",
        text.text
    );

    // The hidden tool cannot be called by its old name either.
    let events = w.say("add them").await;
    let finished = events
        .iter()
        .find_map(|e| match &e.event {
            Some(Event::ToolCallFinished(f)) => Some(f.clone()),
            _ => None,
        })
        .expect("the call finished");
    assert_eq!(finished.status(), runs::ToolCallStatus::NotFound);
    assert_eq!(
        w.upstream.stats.snapshot().tool_calls,
        1,
        "the server saw no call"
    );
    // Another description of the agent's is not a change of the tool: the
    // thread pinned the server's own.
    let id = w.integration_id.clone();
    w.runs_client
        .update_agent(authed(
            runs::UpdateAgentRequest {
                agent: Some(runs::Agent {
                    id: w.agent_id.clone(),
                    tool_overrides: overrides(&id, "Says it again."),
                    ..Default::default()
                }),
                update_mask: Some(FieldMask {
                    paths: vec!["tool_overrides".into()],
                }),
            },
            &w.token,
        ))
        .await
        .expect("updated");
    let events = w.say("once more").await;
    assert!(
        !events
            .iter()
            .any(|e| matches!(e.event, Some(Event::ToolDefinitionChanged(_)))),
        "no drift reported: {events:?}"
    );
}
