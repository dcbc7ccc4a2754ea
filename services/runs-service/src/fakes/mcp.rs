//! [`McpPort`] in memory: integrations with tools that answer, fail, time
//! out or take a while, text resources that are read or fail, and a record
//! of the calls in the order they came.
//! Tests name an integration by its slug; [`FakeMcp::id`] is its id.

use std::{collections::HashMap, sync::Mutex, time::Duration};

use async_trait::async_trait;
use serde_json::json;
use sha2::{Digest as _, Sha256};

use super::FakeApprovals;
use crate::domain::{
    ids::IntegrationId,
    ports::{
        ApprovalDecision, Caller, Capabilities, Content, DecideError, FailureFacts, McpCallError,
        McpPort, McpPromptRequest, McpResource, McpResourceRequest, McpTool, McpToolRequest,
        PromptLine, ResourceData, ResourceKindOf, ToolFailure, ToolOutput,
    },
};

/// What a fake tool does when called.
#[derive(Debug, Clone)]
pub enum ToolBehaviour {
    /// Answers with this text after this delay.
    Answer(String, Duration),
    /// Reports this error (an error result).
    Fail(String),
    /// Answers that it timed out, as mcp-service does: with the call's
    /// time limit.
    TimeOut,
    /// Produces no result, as mcp-service reports it: the reason these
    /// facts belong to, the facts, and a description of the fake's own,
    /// which the model's text must not need.
    Break(FailureFacts),
    /// Gated by an approval (see [`FakeApprovals`]); once approved, answers
    /// with this text.
    Gated(String),
    /// Declares the first value as its output schema and answers with the
    /// second as its structured result (and as text).
    Structured(serde_json::Value, serde_json::Value),
}

/// The allow-lists passed along, each with what carried it.
pub type AllowLists = Vec<(&'static str, Option<Vec<String>>)>;

/// A fake mcp-service.
#[derive(Debug, Default)]
pub struct FakeMcp {
    slugs: HashMap<IntegrationId, String>,
    tools: HashMap<(IntegrationId, String), ToolBehaviour>,
    /// Resources by integration and URI: their text, or `None` for one
    /// whose read fails.
    resources: HashMap<(IntegrationId, String), Option<String>>,
    unreachable: HashMap<IntegrationId, String>,
    calls: Mutex<Vec<(IntegrationId, String, String)>>,
    allow_lists: Mutex<AllowLists>,
    approvals: FakeApprovals,
}

impl FakeMcp {
    /// The id of the integration with `slug`: the same for the same slug.
    pub fn id(slug: &str) -> IntegrationId {
        let digest = Sha256::digest(slug.as_bytes());
        let mut bytes = [0; 16];
        bytes.copy_from_slice(&digest[..16]);
        uuid::Uuid::from_bytes(bytes).into()
    }

    /// Adds `tool` to the integration with `slug`.
    pub fn tool(mut self, slug: &str, tool: &str, behaviour: ToolBehaviour) -> Self {
        let id = self.named(slug);
        self.tools.insert((id, tool.to_owned()), behaviour);
        self
    }

    /// Adds a text resource at `uri` to the integration with `slug`: read,
    /// it answers `text`; with `None`, its read fails.
    pub fn resource(mut self, slug: &str, uri: &str, text: Option<&str>) -> Self {
        let id = self.named(slug);
        self.resources
            .insert((id, uri.to_owned()), text.map(str::to_owned));
        self
    }

    /// Adds the integration with `slug`, with no tools.
    pub fn integration(mut self, slug: &str) -> Self {
        self.named(slug);
        self
    }

    /// Makes the discovery of the integration with `slug` fail with `error`.
    pub fn unreachable(mut self, slug: &str, error: &str) -> Self {
        let id = self.named(slug);
        self.unreachable.insert(id, error.to_owned());
        self
    }

    fn named(&mut self, slug: &str) -> IntegrationId {
        let id = Self::id(slug);
        self.slugs.insert(id, slug.to_owned());
        id
    }

    /// The allow-lists passed along so far, each with what carried it
    /// (`discover` or `execute`), in order.
    pub fn allow_lists(&self) -> AllowLists {
        self.allow_lists
            .lock()
            .map(|l| l.clone())
            .unwrap_or_default()
    }

    fn record_allow_list(&self, by: &'static str, list: Option<&[String]>) {
        if let Ok(mut lists) = self.allow_lists.lock() {
            lists.push((by, list.map(<[String]>::to_vec)));
        }
    }

    /// The fake's approvals.
    pub fn approvals(&self) -> &FakeApprovals {
        &self.approvals
    }

    /// The slug of the integration `id`; as mcp-service answers for an
    /// integration that is not the caller organization's, when none was set
    /// up with that id.
    fn known(&self, id: IntegrationId) -> Result<String, McpCallError> {
        self.slugs
            .get(&id)
            .cloned()
            .ok_or_else(|| McpCallError::NotFound(format!("integration {id} not found")))
    }

    /// Whether a call of `tool` of the integration `id` goes to its server,
    /// as mcp-service decides it: the integration is known and the tool on
    /// the allow-list, when there is one.
    fn admit(
        &self,
        id: IntegrationId,
        tool: &str,
        allowed_tools: Option<&[String]>,
    ) -> Result<(), McpCallError> {
        self.known(id)?;
        if allowed_tools.is_some_and(|allowed| !allowed.iter().any(|a| a == tool)) {
            return Err(McpCallError::Refused(format!(
                "the tool `{tool}` is not on the agent's allow-list"
            )));
        }
        Ok(())
    }

    /// The calls made so far: integration, tool and arguments, in the order
    /// they started.
    pub fn calls(&self) -> Vec<(IntegrationId, String, String)> {
        self.calls.lock().map(|c| c.clone()).unwrap_or_default()
    }
}

#[async_trait]
impl McpPort for FakeMcp {
    async fn discover(
        &self,
        _caller: &Caller,
        integration_id: IntegrationId,
        allowed_tools: Option<&[String]>,
        _timeout: Duration,
    ) -> Result<Capabilities, McpCallError> {
        self.record_allow_list("discover", allowed_tools);
        if let Some(error) = self.unreachable.get(&integration_id) {
            return Err(McpCallError::Unavailable(error.clone()));
        }
        let slug = self.known(integration_id)?;
        let mut tools: Vec<McpTool> = self
            .tools
            .iter()
            .filter(|((integration, name), _)| {
                *integration == integration_id
                    && allowed_tools.is_none_or(|allowed| allowed.contains(name))
            })
            .map(|((_, name), behaviour)| McpTool {
                name: name.clone(),
                description: format!("the {name} tool"),
                input_schema: json!({"type": "object"}),
                output_schema: match behaviour {
                    ToolBehaviour::Structured(schema, _) => Some(schema.clone()),
                    _ => None,
                },
            })
            .collect();
        tools.sort_by(|a, b| a.name.cmp(&b.name));
        let mut resources: Vec<McpResource> = self
            .resources
            .keys()
            .filter(|(integration, _)| *integration == integration_id)
            .map(|(_, uri)| McpResource {
                uri: uri.clone(),
                name: uri.clone(),
                description: format!("the resource {uri}"),
                mime_type: "text/plain".into(),
            })
            .collect();
        resources.sort_by(|a, b| a.uri.cmp(&b.uri));
        Ok(Capabilities {
            integration_id,
            slug,
            tools,
            resources,
            resource_templates: Vec::new(),
            prompts: Vec::new(),
        })
    }

    async fn execute_tool(
        &self,
        _caller: &Caller,
        call: McpToolRequest<'_>,
        timeout: Duration,
    ) -> Result<ToolOutput, McpCallError> {
        let McpToolRequest {
            integration_id,
            tool,
            arguments,
            allowed_tools,
            approval_id,
            ..
        } = call;
        self.record_allow_list("execute", allowed_tools);
        self.admit(integration_id, tool, allowed_tools)?;
        let Some(behaviour) = self.tools.get(&(integration_id, tool.to_owned())).cloned() else {
            return Ok(unknown_tool(tool));
        };
        if matches!(behaviour, ToolBehaviour::Gated(_))
            && let Some(held) = self.approvals.gate(tool, approval_id)?
        {
            return Ok(held);
        }
        // Only calls that reach the tool are recorded.
        if let Ok(mut calls) = self.calls.lock() {
            calls.push((integration_id, tool.into(), arguments.into()));
        }
        Ok(match behaviour {
            ToolBehaviour::Gated(text) => ToolOutput {
                content: vec![Content::Text(text)],
                ..ToolOutput::default()
            },
            ToolBehaviour::Structured(_, result) => ToolOutput {
                content: vec![Content::Text(result.to_string())],
                structured: Some(result.to_string()),
                ..ToolOutput::default()
            },
            ToolBehaviour::Answer(text, delay) => {
                tokio::time::sleep(delay).await;
                ToolOutput {
                    content: vec![Content::Text(text)],
                    ..ToolOutput::default()
                }
            }
            // As mcp-service reports a tool's error: its text blocks, and
            // them joined as the description.
            ToolBehaviour::Fail(message) => ToolOutput {
                failure: Some(ToolFailure::ToolError),
                content: vec![Content::Text(message.clone())],
                error_message: message,
                ..ToolOutput::default()
            },
            ToolBehaviour::TimeOut => ToolOutput {
                failure: Some(ToolFailure::Timeout),
                error_message: format!("the tool `{tool}` did not answer in time"),
                facts: Some(FailureFacts::Timeout(timeout)),
                ..ToolOutput::default()
            },
            ToolBehaviour::Break(facts) => ToolOutput {
                failure: Some(reason_of(&facts)),
                error_message: format!("the fake mcp-service's description of {facts:?}"),
                facts: Some(facts),
                ..ToolOutput::default()
            },
        })
    }

    async fn retrieve_resource(
        &self,
        _caller: &Caller,
        read: McpResourceRequest<'_>,
        _timeout: Duration,
    ) -> Result<ResourceData, McpCallError> {
        self.known(read.integration_id)?;
        match self
            .resources
            .get(&(read.integration_id, read.uri.to_owned()))
        {
            Some(Some(text)) => Ok(ResourceData {
                uri: read.uri.to_owned(),
                mime_type: "text/plain".into(),
                kind: ResourceKindOf::Text,
                text: Some(text.clone()),
                blob_len: 0,
                csv_blob: Vec::new(),
                redacted: Vec::new(),
            }),
            _ => Err(McpCallError::NotFound(format!("no resource {}", read.uri))),
        }
    }

    async fn get_prompt(
        &self,
        _caller: &Caller,
        prompt: McpPromptRequest<'_>,
        _timeout: Duration,
    ) -> Result<(String, Vec<PromptLine>), McpCallError> {
        Err(McpCallError::NotFound(format!("no prompt {}", prompt.name)))
    }

    async fn decide_approval(
        &self,
        caller: &Caller,
        decision: ApprovalDecision<'_>,
        _timeout: Duration,
    ) -> Result<(), DecideError> {
        self.approvals.decide(
            caller,
            decision.approval_id,
            decision.approve,
            decision.comment,
        )
    }
}

/// As mcp-service reports a server's answer to a tool it does not have:
/// invalid params, in the server's words.
fn unknown_tool(tool: &str) -> ToolOutput {
    let message = format!("unknown tool: {tool}");
    ToolOutput {
        failure: Some(ToolFailure::Protocol),
        error_message: message.clone(),
        facts: Some(FailureFacts::JsonRpc {
            code: -32602,
            message,
        }),
        ..ToolOutput::default()
    }
}

/// The reason mcp-service sends the facts with.
fn reason_of(facts: &FailureFacts) -> ToolFailure {
    match facts {
        FailureFacts::Timeout(_) => ToolFailure::Timeout,
        FailureFacts::TooLarge { .. } => ToolFailure::TooLarge,
        FailureFacts::Unreachable { .. } => ToolFailure::Unreachable,
        FailureFacts::ConnectionLost { .. } => ToolFailure::ConnectionLost,
        FailureFacts::JsonRpc { .. } | FailureFacts::ListingBound { .. } => ToolFailure::Protocol,
        FailureFacts::LimitReached { .. } => ToolFailure::LimitReached,
    }
}
