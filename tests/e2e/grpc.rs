//! A gRPC integration in a run: the model is offered the example inventory
//! service's methods, found by its reflection, as tools (prefixed with the
//! slug, like any integration's), calls one with a 64-bit id, and reads the
//! item it names, the id exact.

use serde_json::json;
use switchboard_proto::{
    mcp::v1::{self as mcp, transport::Kind},
    runs::v1 as runs,
};
use switchboard_scripted_model::{ScriptedToolCall, Turn};
use switchboard_test_support::{authed, spawn_example_grpc_service};

use crate::world::{Options, final_run, tool_messages_sent, tools_offered, world};

#[tokio::test]
async fn a_model_calls_a_grpc_method_as_a_tool_and_reads_its_answer() {
    let service = spawn_example_grpc_service();
    let mut w = world(Options {
        turns: vec![
            Turn::ToolCalls(vec![ScriptedToolCall::new(
                "c1",
                "inventory__Inventory_GetItem",
                json!({ "id": "9007199254740993" }).to_string(),
            )]),
            Turn::FromToolResults("{tool_results}".into()),
        ],
        ..Options::default()
    })
    .await;
    let request = mcp::CreateIntegrationRequest {
        display_name: "Inventory".into(),
        slug: "inventory".into(),
        source: Some(mcp::create_integration_request::Source::Custom(
            mcp::CustomIntegrationSpec {
                transport: Some(mcp::Transport {
                    kind: Some(Kind::Grpc(mcp::GrpcTransport {
                        target: service.url.clone(),
                        ..Default::default()
                    })),
                }),
                auth: None,
            },
        )),
        ..Default::default()
    };
    let inventory = w
        .mcp_client
        .create_integration(authed(request, &w.token))
        .await
        .expect("created")
        .into_inner()
        .integration
        .expect("an integration")
        .id;
    w.set_integrations(vec![inventory]).await;

    let events = w.say("read item 9007199254740993").await;
    assert_eq!(final_run(&events).status(), runs::RunStatus::Completed);
    let offered = tools_offered(&w.model, 0);
    for tool in [
        "inventory__Inventory_GetItem",
        "inventory__Inventory_PutItem",
        "inventory__Inventory_ListItems",
    ] {
        assert!(offered.contains(&tool.to_owned()), "{offered:?}");
    }
    let read = &tool_messages_sent(&w.model, 1)[0];
    assert!(
        read.contains(r#""9007199254740993""#) && read.contains("anvil"),
        "the 64-bit id arrives exact: {read}"
    );
}
