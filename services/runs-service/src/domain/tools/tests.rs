//! The integration ids a model writes in the built-in tools' arguments:
//! hostile text, parsed where it enters, answered with the same sentence
//! whether it is not an id or names none of the run's integrations.

use std::{sync::Arc, time::Duration};

use switchboard_auth::Principal;

use super::{ToolContext, ToolOutcome, ToolRouter};
use crate::{
    domain::{
        entities::{Agent, AgentConfig},
        ids::{AgentId, ThreadId},
        model::ToolCall,
        ports::{Caller, McpPort},
    },
    fakes::{FakeMcp, NoSources, ToolBehaviour},
};

/// A run of an agent using the fake's integration `shop`: what the model's
/// call of `tool` with `arguments` reads back.
async fn answer(tool: &str, arguments: serde_json::Value) -> String {
    outcome(FakeMcp::default().integration("shop"), tool, arguments)
        .await
        .text
}

/// The outcome of the model's call of `tool` with `arguments` in a run of
/// an agent using `mcp`'s integration `shop`.
async fn outcome(mcp: FakeMcp, tool: &str, arguments: serde_json::Value) -> ToolOutcome {
    let router =
        |mcp: Arc<dyn McpPort>| ToolRouter::new(mcp, Arc::new(NoSources), Duration::from_secs(1));
    outcome_with(mcp, router, tool, arguments).await
}

/// The same, through the router `router` builds over the fake.
pub(super) async fn outcome_with(
    mcp: FakeMcp,
    router: impl FnOnce(Arc<dyn McpPort>) -> ToolRouter,
    tool: &str,
    arguments: serde_json::Value,
) -> ToolOutcome {
    let mcp = Arc::new(mcp);
    let caller = Caller {
        principal: Principal::new("org", "user", vec![]),
        token: None,
    };
    let shop = mcp
        .discover(&caller, FakeMcp::id("shop"), None, Duration::from_secs(1))
        .await
        .expect("discovered");
    let agent = Agent {
        id: AgentId::fixed(1),
        org_id: "org".into(),
        name: "agent".into(),
        config: AgentConfig {
            mcp_integration_ids: vec![shop.integration_id],
            ..AgentConfig::default()
        },
        created_at: 0,
        updated_at: 0,
    };
    let router = router(mcp);
    let capabilities = Arc::new(vec![shop]);
    let toolset = router.toolset(&agent, &[], &capabilities);
    let context = ToolContext {
        caller,
        thread_id: ThreadId::fixed(1),
        capabilities,
    };
    let call = ToolCall {
        id: "c1".into(),
        name: tool.into(),
        arguments: arguments.to_string(),
    };
    router.call(&context, &toolset, &call).await
}

#[tokio::test]
async fn an_integration_id_that_is_not_one_is_unavailable_in_the_models_own_words() {
    for named in [
        "shop",
        "../../etc/passwd",
        "0192f0c4-7a3b-7c3d-8e4f-0123456789ab",
    ] {
        assert_eq!(
            answer(
                "retrieve_mcp_resource",
                serde_json::json!({"integrationId": named, "resourceUri": "data://sales"}),
            )
            .await,
            format!(
                "Resource retrieval failed: the integration {named} is not available in this conversation"
            )
        );
        assert_eq!(
            answer(
                "retrieve_mcp_prompt",
                serde_json::json!({"integrationId": named, "promptName": "review"}),
            )
            .await,
            format!(
                "Prompt retrieval failed: the integration {named} is not available in this conversation"
            )
        );
    }
}

#[tokio::test]
async fn any_spelling_of_a_runs_integration_id_names_it() {
    let shop = FakeMcp::id("shop").to_string();
    for named in [shop.clone(), shop.to_uppercase(), shop.replace('-', "")] {
        // The fake's integration has no resources or prompts: its answers
        // show that the call reached it.
        assert_eq!(
            answer(
                "retrieve_mcp_resource",
                serde_json::json!({"integrationId": named, "resourceUri": "data://sales"}),
            )
            .await,
            "Resource retrieval failed: no resource data://sales"
        );
        assert_eq!(
            answer(
                "retrieve_mcp_prompt",
                serde_json::json!({"integrationId": named, "promptName": "review"}),
            )
            .await,
            "Prompt retrieval failed: no prompt review"
        );
    }
}

#[tokio::test]
async fn a_structured_result_is_checked_against_the_tools_output_schema() {
    let schema = serde_json::json!({
        "type": "object",
        "properties": {"sum": {"type": "number"}},
        "required": ["sum"]
    });
    let shop = |result: serde_json::Value| {
        FakeMcp::default().tool(
            "shop",
            "add",
            ToolBehaviour::Structured(schema.clone(), result),
        )
    };
    let fine = outcome(
        shop(serde_json::json!({"sum": 3})),
        "shop__add",
        serde_json::json!({}),
    )
    .await;
    assert!(!fine.is_error, "{}", fine.text);
    assert_eq!(fine.text, r#"{"sum":3}"#);

    let wrong = outcome(
        shop(serde_json::json!({"sum": "three"})),
        "shop__add",
        serde_json::json!({}),
    )
    .await;
    assert!(wrong.is_error);
    assert_eq!(
        wrong.text,
        "MCP tool execution failed: the result of `add` does not match the tool's output schema: `/sum`: \"three\" is not of type \"number\""
    );
    assert_eq!(wrong.status, crate::domain::events::ToolCallStatus::Failed);
}
