//! What the client does in each scenario, as an application would: create an
//! integration for the scenario's server, discover it, call its tools.

use anyhow::{Context as _, bail};
use serde_json::{Value, json};
use switchboard_proto::mcp::v1 as pb;

use switchboard_mcp_service::ElicitationPolicy;

use crate::{
    Scenario, inputs, oauth,
    switchboard::{Switchboard, input_schema},
};

/// What a scenario asks of the client.
#[derive(Debug, PartialEq)]
enum Plan {
    /// Discover only (listing is what is judged).
    Discover,
    /// Discover, then call the first tool with `{"a": 2, "b": 3}`.
    CallFirstTool,
    /// Discover, then call the named tool with no arguments.
    CallTool(&'static str),
    /// Discover, then call every tool the context lists, with its arguments.
    ContextToolCalls,
    /// Echo the observed schema of a tool back through another tool.
    EchoSchema,
    /// Use every tool, resource and prompt once.
    Everything,
    /// Call every tool, answering the input requests of those that ask.
    AnswerInputs,
}

/// The operator's elicitation policy mcp-service runs with for `scenario`:
/// multi-round-trip scenarios pass questions to the client, which answers
/// them as an application would; the others answer with the defaults the
/// form declares (the policy the elicitation scenarios judge).
pub fn elicitation_policy(scenario: &Scenario) -> ElicitationPolicy {
    if plan(scenario) == Plan::AnswerInputs {
        ElicitationPolicy::Caller
    } else {
        ElicitationPolicy::Defaults
    }
}

fn plan(scenario: &Scenario) -> Plan {
    if scenario.context.get("toolCalls").is_some() {
        return Plan::ContextToolCalls;
    }
    match scenario.name.as_str() {
        "json-schema-ref-no-deref" | "request-metadata" => Plan::Discover,
        "json-schema-2020-12-preservation" => Plan::EchoSchema,
        "sse-retry" => Plan::CallTool("test_reconnection"),
        "elicitation-sep1034-client-defaults" | "elicitation-defaults" => {
            Plan::CallTool("test_client_elicitation_defaults")
        }
        "http-standard-headers" | "http-invalid-tool-headers" => Plan::Everything,
        "sep-2322-client-request-state" => Plan::AnswerInputs,
        name if name.starts_with("auth/") => Plan::CallTool("test-tool"),
        _ => Plan::CallFirstTool,
    }
}

/// Runs `scenario` against its server through mcp-service.
pub async fn run(switchboard: &mut Switchboard, scenario: &Scenario) -> anyhow::Result<()> {
    let auth = if scenario.name.starts_with("auth/") {
        Some(oauth::auth_config(scenario).await?)
    } else {
        None
    };
    let id = switchboard
        .create_integration(&scenario.server_url, auth)
        .await?;
    let discovery = discover(switchboard, &id).await?;
    let tools = &discovery.tools;
    eprintln!(
        "conformance-client: {} tools, {} resources, {} prompts",
        tools.len(),
        discovery.resources.len(),
        discovery.prompts.len()
    );
    match plan(scenario) {
        Plan::Discover => Ok(()),
        Plan::CallFirstTool => match tools.first() {
            Some(tool) => call(switchboard, &id, &tool.name, &json!({"a": 2, "b": 3})).await,
            None => Ok(()),
        },
        Plan::CallTool(name) => call(switchboard, &id, name, &json!({})).await,
        Plan::ContextToolCalls => {
            let calls = scenario.context["toolCalls"]
                .as_array()
                .context("toolCalls is not a list")?;
            for planned in calls {
                let name = planned["name"]
                    .as_str()
                    .context("a tool call has no name")?;
                call(switchboard, &id, name, &planned["arguments"]).await?;
            }
            Ok(())
        }
        Plan::EchoSchema => {
            let focal = tools
                .iter()
                .find(|tool| tool.name == "json_schema_2020_12_tool")
                .context("the focal tool is not advertised")?;
            let schema = input_schema(focal);
            call(
                switchboard,
                &id,
                "json_schema_echo",
                &json!({"schema": schema}),
            )
            .await
        }
        Plan::Everything => {
            use_everything(switchboard, &id, &discovery).await;
            Ok(())
        }
        Plan::AnswerInputs => answer_inputs(switchboard, &id, tools).await,
    }
}

/// Discovers integration `id`, authorizing as often as the server asks.
async fn discover(switchboard: &mut Switchboard, id: &str) -> anyhow::Result<pb::DiscoverResponse> {
    for _ in 0..oauth::MAX_AUTHORIZATIONS {
        match switchboard.discover(id).await {
            Ok(found) => return Ok(found),
            Err(status) => oauth::authorize_or_fail(switchboard, "Discover", status).await?,
        }
    }
    bail!("Discover kept asking for authorization")
}

/// Calls every tool, reads every resource and gets every prompt once.
async fn use_everything(switchboard: &mut Switchboard, id: &str, discovery: &pb::DiscoverResponse) {
    for tool in &discovery.tools {
        // A refusal is an answer too: what is judged is the request.
        let _ = switchboard.execute_tool(id, &tool.name, &json!({})).await;
    }
    for resource in &discovery.resources {
        let _ = switchboard.retrieve_resource(id, &resource.uri).await;
    }
    for prompt in &discovery.prompts {
        let _ = switchboard.get_prompt(id, &prompt.name).await;
    }
}

/// Calls every tool, answering the input requests of those that ask.
async fn answer_inputs(
    switchboard: &mut Switchboard,
    id: &str,
    tools: &[pb::Tool],
) -> anyhow::Result<()> {
    for tool in tools {
        let response = inputs::call_answering(switchboard, id, &tool.name, &json!({}))
            .await
            .with_context(|| format!("{} failed", tool.name))?;
        eprintln!(
            "conformance-client: {} answered (is_error: {}) {}",
            tool.name, response.is_error, response.error_message
        );
    }
    Ok(())
}

async fn call(
    switchboard: &mut Switchboard,
    id: &str,
    tool: &str,
    arguments: &Value,
) -> anyhow::Result<()> {
    let mut answered = None;
    for _ in 0..oauth::MAX_AUTHORIZATIONS {
        match switchboard.execute_tool(id, tool, arguments).await {
            Ok(response) => {
                answered = Some(response);
                break;
            }
            Err(status) => oauth::authorize_or_fail(switchboard, tool, status).await?,
        }
    }
    let response = answered.context("ExecuteTool kept asking for authorization")?;
    eprintln!(
        "conformance-client: {tool} answered (is_error: {}) {}",
        response.is_error, response.error_message
    );
    if response.is_error && response.content.is_empty() {
        bail!("{tool} failed: {}", response.error_message);
    }
    Ok(())
}
