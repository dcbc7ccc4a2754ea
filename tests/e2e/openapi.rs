//! An OpenAPI integration in a run: the model is offered the API's
//! operations as tools (prefixed with the slug, like any integration's),
//! calls one, and reads the API's answer.

use serde_json::json;

use switchboard_proto::{
    mcp::v1::{self as mcp, auth_config::Method, transport::Kind},
    runs::v1 as runs,
};
use switchboard_scripted_model::{ScriptedToolCall, Turn};
use switchboard_test_support::{authed, spawn_example_api};

use crate::world::{Options, final_run, tool_messages_sent, tools_offered, world};

#[tokio::test]
async fn a_model_calls_an_api_operation_as_a_tool_and_reads_its_answer() {
    let api = spawn_example_api();
    let mut w = world(Options {
        turns: vec![
            Turn::ToolCalls(vec![ScriptedToolCall::new(
                "c1",
                "pets__getPet",
                json!({ "id": 7, "X-Request-Tag": "from-a-run" }).to_string(),
            )]),
            Turn::FromToolResults("{tool_results}".into()),
        ],
        ..Options::default()
    })
    .await;
    let request = mcp::CreateIntegrationRequest {
        display_name: "Pets".into(),
        slug: "pets".into(),
        source: Some(mcp::create_integration_request::Source::Custom(
            mcp::CustomIntegrationSpec {
                transport: Some(mcp::Transport {
                    kind: Some(Kind::Openapi(mcp::OpenApiTransport {
                        base_url: api.base_url.clone(),
                        document: api.document().await.to_string(),
                        document_url: String::new(),
                        operations: Vec::new(),
                    })),
                }),
                auth: Some(mcp::AuthConfig {
                    method: Some(Method::BearerToken(mcp::BearerTokenAuth {
                        token: "pets-token".into(),
                        token_set: false,
                    })),
                }),
            },
        )),
        ..Default::default()
    };
    let pets = w
        .mcp_client
        .create_integration(authed(request, &w.token))
        .await
        .expect("created")
        .into_inner()
        .integration
        .expect("an integration")
        .id;
    w.set_integrations(vec![pets]).await;

    let events = w.say("read pet 7").await;
    assert_eq!(final_run(&events).status(), runs::RunStatus::Completed);
    let offered = tools_offered(&w.model, 0);
    for tool in ["pets__getPet", "pets__createPet", "pets__missing"] {
        assert!(offered.contains(&tool.to_owned()), "{offered:?}");
    }
    let read = &tool_messages_sent(&w.model, 1)[0];
    assert!(
        read.contains(r#""id":"7""#) && read.contains("from-a-run"),
        "{read}"
    );
    let seen = api.last_seen().await.expect("the API was called");
    assert_eq!(seen["authorization"], "Bearer pets-token");
    assert_eq!(seen["tag"], "from-a-run");
}
