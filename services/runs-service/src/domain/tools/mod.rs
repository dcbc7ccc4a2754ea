//! The tools a run offers the model and the one place a tool call is
//! routed: MCP tools to mcp-service, the built-in tools (MCP resources —
//! `retrieve_mcp_resource`, `mcp_read_resource`, `mcp_list_resources` —
//! and prompts, `source_query`) to their files here; client tools are not run
//! here, the run pauses for them. Whatever happens becomes a [`ToolOutcome`]:
//! text for the model, never a failed run.

mod argument_check;
mod arguments;
mod large_result;
#[cfg(test)]
mod large_result_tests;
mod lookup;
mod mcp;
mod outcome;
mod overrides;
mod prompts;
mod read_resource;
mod resources;
mod result_check;
mod search;
mod search_tool;
mod source_query;
#[cfg(test)]
mod tests;
mod toolset;

use std::{sync::Arc, time::Duration};

pub use argument_check::{ArgumentChecks, MAX_REPORTED_PROBLEMS, Problem};
pub use arguments::ToolArguments;
pub use large_result::DEFAULT_TABLE_BYTES;
pub use outcome::{ToolAction, ToolContext, ToolOutcome};
pub use overrides::{MAX_OVERRIDE_DESCRIPTION, MAX_TOOL_OVERRIDES, check_tool_overrides};
pub use result_check::{ResultChecks, ResultMismatch};
pub use search::{
    CALL_TOOL, DEFAULT_RESULTS, MAX_QUERY_CHARS, MAX_RESULTS, SEARCH_TOOLS, ToolIndex, called_tool,
};
pub use source_query::SourceQuery;
pub use toolset::{MAX_TOOL_NAME, Toolset, valid_tool_name};

use large_result::LargeResults;

use super::{
    datasource::{DataSource, DataSources},
    entities::{Agent, InputAnswers, PendingApproval, PendingInput, ToolTarget},
    events::ToolKind,
    ids::{IntegrationId, ThreadId},
    model::{ToolCall, ToolSpec},
    ports::{ApprovalDecision, Caller, Capabilities, DecideError, McpPort},
    texts,
};

// The names the model calls the built-in tools by.
const RETRIEVE_RESOURCE: &str = "retrieve_mcp_resource";
const LIST_RESOURCES: &str = "mcp_list_resources";
const READ_RESOURCE: &str = "mcp_read_resource";
const RETRIEVE_PROMPT: &str = "retrieve_mcp_prompt";
const SOURCE_QUERY: &str = "source_query";

/// Routes a run's tool calls to what runs them.
pub struct ToolRouter {
    mcp: Arc<dyn McpPort>,
    sources: Arc<dyn DataSources>,
    query: SourceQuery,
    timeout: Duration,
    /// Results longer than this many bytes are stored as tables or cut.
    table_bytes: usize,
}

impl std::fmt::Debug for ToolRouter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolRouter")
            .field("timeout", &self.timeout)
            .field("table_bytes", &self.table_bytes)
            .finish_non_exhaustive()
    }
}

impl ToolRouter {
    /// A router calling MCP through `mcp` and keeping data sources in
    /// `sources`; each call may take `timeout`.
    pub fn new(mcp: Arc<dyn McpPort>, sources: Arc<dyn DataSources>, timeout: Duration) -> Self {
        Self {
            mcp,
            query: SourceQuery::new(Arc::clone(&sources)),
            sources,
            timeout,
            table_bytes: DEFAULT_TABLE_BYTES,
        }
    }

    /// The same, storing a tool result longer than `bytes` as a data
    /// source of the thread when it is a table, and cutting it otherwise.
    pub fn with_table_bytes(self, bytes: usize) -> Self {
        Self {
            table_bytes: bytes,
            ..self
        }
    }

    fn large_results(&self) -> LargeResults<'_> {
        LargeResults {
            sources: &*self.sources,
            limit: self.table_bytes,
        }
    }

    /// The thread's data sources (none when they cannot be read).
    pub async fn sources(&self, thread_id: ThreadId) -> Vec<DataSource> {
        self.sources.list(thread_id).await.unwrap_or_else(|error| {
            tracing::warn!(thread_id = %thread_id, error = %error, "failed to list data sources");
            Vec::new()
        })
    }

    /// The tools offered to `agent`'s run: the built-in ones (resource and
    /// prompt tools when it has integrations, resource tools unless turned
    /// off, `source_query` when the thread has data sources), its client
    /// tools, then the MCP tools `capabilities` offer.
    pub fn toolset(
        &self,
        agent: &Agent,
        sources: &[DataSource],
        capabilities: &[Capabilities],
    ) -> Toolset {
        let toolset = toolset::assemble(
            builtin_specs(agent, sources),
            &agent.config.client_tools,
            capabilities,
            &agent.config.tool_filters,
            &agent.config.tool_overrides,
        );
        if searches(agent) {
            toolset.searched()
        } else {
            toolset
        }
    }

    /// What kind of tool `name` is; `None` when the model was not offered it.
    pub fn kind(toolset: &Toolset, name: &str) -> Option<ToolKind> {
        toolset.target(name).map(|target| match target {
            ToolTarget::Mcp { .. } => ToolKind::Mcp,
            ToolTarget::Client => ToolKind::Client,
            ToolTarget::Builtin => ToolKind::Builtin,
        })
    }

    /// Runs one tool call of the model.
    pub async fn call(
        &self,
        context: &ToolContext,
        toolset: &Toolset,
        call: &ToolCall,
    ) -> ToolOutcome {
        let Some(target) = toolset.target(&call.name) else {
            return unoffered(toolset, &call.name);
        };
        let arguments = match ToolArguments::parse(&call.arguments) {
            Ok(arguments) => arguments,
            Err(error) => return ToolOutcome::failed(texts::invalid_arguments(&error)),
        };
        match target {
            ToolTarget::Mcp {
                integration_id,
                server_tool_name,
            } => {
                let tool = (&*call.name, *integration_id, server_tool_name.as_str());
                self.call_mcp(context, toolset, tool, &arguments).await
            }
            ToolTarget::Builtin if call.name == SEARCH_TOOLS => {
                search_tool::search(toolset, &arguments)
            }
            ToolTarget::Builtin if call.name == CALL_TOOL => {
                self.call_found(context, toolset, call).await
            }
            ToolTarget::Builtin => self.builtin(context, &call.name, &arguments).await,
            // Client tools are answered by the client; a run never routes
            // them here.
            ToolTarget::Client => ToolOutcome::not_found(&call.name),
        }
    }

    /// Calls MCP tool `name` (the model's name for `server_tool` of
    /// `integration_id`) with `arguments`, checked against its schema
    /// first.
    async fn call_mcp(
        &self,
        context: &ToolContext,
        toolset: &Toolset,
        (name, integration_id, server_tool): (&str, IntegrationId, &str),
        arguments: &ToolArguments,
    ) -> ToolOutcome {
        if let Some((problems, more)) = toolset.checks.problems(name, &arguments.to_value()) {
            tracing::info!(
                %integration_id,
                tool = %server_tool,
                problems = problems.len() + more,
                "the model's arguments do not match the tool's input schema"
            );
            return ToolOutcome::failed(texts::arguments_mismatch(&problems, more));
        }
        let tool = mcp::McpToolCall {
            integration_id,
            tool: server_tool,
            arguments,
            answers: None,
            approval: None,
            allowed_tools: toolset.allowed_tools(integration_id),
            results: Some((&toolset.results, name)),
            large: self.large_results(),
        };
        tool.run(&*self.mcp, context, self.timeout).await
    }

    /// Runs a `call_tool`: the MCP tool it names, as a direct call would.
    async fn call_found(
        &self,
        context: &ToolContext,
        toolset: &Toolset,
        call: &ToolCall,
    ) -> ToolOutcome {
        let (name, arguments) = match search::found_call(&call.arguments) {
            Ok(found) => found,
            Err(problem) => {
                return ToolOutcome::failed(texts::call_tool_unreadable(CALL_TOOL, &problem));
            }
        };
        match toolset.target(&name) {
            Some(ToolTarget::Mcp {
                integration_id,
                server_tool_name,
            }) => {
                let tool = (name.as_str(), *integration_id, server_tool_name.as_str());
                self.call_mcp(context, toolset, tool, &arguments).await
            }
            _ if toolset.withheld.contains(&name) => ToolOutcome::withheld(&name),
            _ => {
                tracing::info!(tool = %name, "the model called a tool search does not find");
                ToolOutcome::failed_not_found(texts::found_tool_not_found(&name, SEARCH_TOOLS))
            }
        }
    }

    /// Makes again an MCP tool call whose server asked the caller
    /// something, with the caller's `answers`.
    pub async fn resume(
        &self,
        context: &ToolContext,
        call: &ToolCall,
        pending: &PendingInput,
        answers: &InputAnswers,
    ) -> ToolOutcome {
        let again = Again {
            integration_id: pending.integration_id,
            tool: &pending.tool,
            answers: Some(answers),
            approval: None,
        };
        self.again(context, call, again).await
    }

    /// Decides an approval as `caller`, within the tools' timeout.
    pub async fn decide_approval(
        &self,
        caller: &Caller,
        decision: ApprovalDecision<'_>,
    ) -> Result<(), DecideError> {
        self.mcp
            .decide_approval(caller, decision, self.timeout)
            .await
    }

    /// Makes again an MCP tool call a policy rule gated, with its approval:
    /// mcp-service runs it once if the approval was approved, answers a
    /// denial, or gates it again while the approval is pending.
    pub async fn resume_approved(
        &self,
        context: &ToolContext,
        call: &ToolCall,
        pending: &PendingApproval,
    ) -> ToolOutcome {
        let again = Again {
            integration_id: pending.integration_id,
            tool: &pending.tool,
            answers: None,
            approval: Some(pending),
        };
        self.again(context, call, again).await
    }

    /// Makes a paused MCP tool call again. A resumed call was allowed when
    /// it was first made (mcp-service checks its policy again: a rule that
    /// now denies it wins).
    async fn again(&self, context: &ToolContext, call: &ToolCall, again: Again<'_>) -> ToolOutcome {
        // A call made through `call_tool` carries the tool's arguments in
        // its own.
        let arguments = if call.name == CALL_TOOL {
            search::found_call(&call.arguments).map(|(_, arguments)| arguments)
        } else {
            ToolArguments::parse(&call.arguments)
        };
        let arguments = match arguments {
            Ok(arguments) => arguments,
            Err(error) => return ToolOutcome::failed(texts::invalid_arguments(&error)),
        };
        let tool = mcp::McpToolCall {
            integration_id: again.integration_id,
            tool: again.tool,
            arguments: &arguments,
            answers: again.answers,
            approval: again.approval,
            allowed_tools: None,
            // A resumed call's run no longer holds its first toolset; the
            // output schema is checked on calls made the first time.
            results: None,
            large: self.large_results(),
        };
        tool.run(&*self.mcp, context, self.timeout).await
    }

    async fn builtin(
        &self,
        context: &ToolContext,
        name: &str,
        arguments: &ToolArguments,
    ) -> ToolOutcome {
        let mcp = &*self.mcp;
        let reader = resources::Reader {
            mcp,
            sources: &*self.sources,
            context,
            timeout: self.timeout,
        };
        match name {
            RETRIEVE_RESOURCE => resources::retrieve(&reader, arguments).await,
            READ_RESOURCE => read_resource::read(&reader, arguments).await,
            LIST_RESOURCES => ToolOutcome::succeeded(texts::list_resources(&context.capabilities)),
            RETRIEVE_PROMPT => prompts::retrieve(mcp, context, arguments, self.timeout).await,
            SOURCE_QUERY => self.query.run(context.thread_id, arguments).await,
            other => ToolOutcome::not_found(other),
        }
    }
}

/// What the model is told when it calls a tool it was not offered.
fn unoffered(toolset: &Toolset, name: &str) -> ToolOutcome {
    if toolset.withheld.contains(name) {
        tracing::info!(tool = %name, "the model called a withheld tool");
        return ToolOutcome::withheld(name);
    }
    tracing::info!(tool = %name, "the model called an unknown tool");
    ToolOutcome::not_found(name)
}

/// Whether `agent`'s model finds its MCP tools by search.
fn searches(agent: &Agent) -> bool {
    agent.config.tool_search && !agent.config.mcp_integration_ids.is_empty()
}

fn builtin_specs(agent: &Agent, sources: &[DataSource]) -> Vec<ToolSpec> {
    let mut specs = Vec::new();
    if searches(agent) {
        specs.push(texts::search_tools_spec(
            SEARCH_TOOLS,
            CALL_TOOL,
            MAX_RESULTS,
        ));
        specs.push(texts::call_tool_spec(CALL_TOOL, SEARCH_TOOLS));
    }
    let has_integrations = !agent.config.mcp_integration_ids.is_empty();
    if has_integrations && !agent.config.disable_resource_tools {
        specs.push(texts::retrieve_resource_spec(RETRIEVE_RESOURCE));
        specs.push(texts::list_resources_spec(LIST_RESOURCES));
        specs.push(texts::read_resource_spec(READ_RESOURCE));
        tracing::info!("Added 2 synthetic resource tools");
    }
    if has_integrations {
        specs.push(texts::retrieve_prompt_spec(RETRIEVE_PROMPT));
    }
    if !sources.is_empty() {
        specs.push(texts::source_query_spec(SOURCE_QUERY, sources));
    }
    specs
}

/// What a paused MCP tool call is made again with.
struct Again<'a> {
    integration_id: IntegrationId,
    tool: &'a str,
    answers: Option<&'a InputAnswers>,
    approval: Option<&'a PendingApproval>,
}
