//! [`McpPort`] in memory: integrations with tools that answer, fail, time
//! out or take a while, and a record of the calls in the order they came.

use std::{collections::HashMap, sync::Mutex, time::Duration};

use async_trait::async_trait;
use serde_json::json;

use crate::domain::ports::{
    Caller, Capabilities, Content, McpCallError, McpPort, McpPromptRequest, McpResourceRequest,
    McpTool, McpToolRequest, PromptLine, ResourceData, ToolFailure, ToolOutput,
};

/// What a fake tool does when called.
#[derive(Debug, Clone)]
pub enum ToolBehaviour {
    /// Answers with this text after this delay.
    Answer(String, Duration),
    /// Reports this error (an error result).
    Fail(String),
    /// Answers that it timed out, as mcp-service does.
    TimeOut,
}

/// The allow-lists passed along, each with what carried it.
pub type AllowLists = Vec<(&'static str, Option<Vec<String>>)>;

/// A fake mcp-service.
#[derive(Debug, Default)]
pub struct FakeMcp {
    tools: HashMap<(String, String), ToolBehaviour>,
    unreachable: HashMap<String, String>,
    calls: Mutex<Vec<(String, String, String)>>,
    allow_lists: Mutex<AllowLists>,
}

impl FakeMcp {
    /// Adds `tool` to integration `integration_id`.
    pub fn tool(mut self, integration_id: &str, tool: &str, behaviour: ToolBehaviour) -> Self {
        self.tools
            .insert((integration_id.to_owned(), tool.to_owned()), behaviour);
        self
    }

    /// Makes `integration_id`'s discovery fail with `error`.
    pub fn unreachable(mut self, integration_id: &str, error: &str) -> Self {
        self.unreachable
            .insert(integration_id.to_owned(), error.to_owned());
        self
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

    /// The calls made so far: integration, tool and arguments, in the order
    /// they started.
    pub fn calls(&self) -> Vec<(String, String, String)> {
        self.calls.lock().map(|c| c.clone()).unwrap_or_default()
    }
}

#[async_trait]
impl McpPort for FakeMcp {
    async fn discover(
        &self,
        _caller: &Caller,
        integration_id: &str,
        allowed_tools: Option<&[String]>,
        _timeout: Duration,
    ) -> Result<Capabilities, McpCallError> {
        self.record_allow_list("discover", allowed_tools);
        if let Some(error) = self.unreachable.get(integration_id) {
            return Err(McpCallError::Unavailable(error.clone()));
        }
        let mut tools: Vec<McpTool> = self
            .tools
            .keys()
            .filter(|(integration, _)| integration == integration_id)
            .map(|(_, name)| McpTool {
                name: name.clone(),
                description: format!("the {name} tool"),
                input_schema: json!({"type": "object"}),
            })
            .collect();
        tools.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(Capabilities {
            integration_id: integration_id.to_owned(),
            slug: integration_id.to_owned(),
            tools,
            resources: Vec::new(),
            resource_templates: Vec::new(),
            prompts: Vec::new(),
        })
    }

    async fn execute_tool(
        &self,
        _caller: &Caller,
        call: McpToolRequest<'_>,
        _timeout: Duration,
    ) -> Result<ToolOutput, McpCallError> {
        let McpToolRequest {
            integration_id,
            tool,
            arguments,
            allowed_tools,
            ..
        } = call;
        self.record_allow_list("execute", allowed_tools);
        if let Ok(mut calls) = self.calls.lock() {
            calls.push((integration_id.into(), tool.into(), arguments.into()));
        }
        let behaviour = self
            .tools
            .get(&(integration_id.to_owned(), tool.to_owned()))
            .cloned()
            .ok_or_else(|| McpCallError::Failed(format!("no tool {tool}")))?;
        Ok(match behaviour {
            ToolBehaviour::Answer(text, delay) => {
                tokio::time::sleep(delay).await;
                ToolOutput {
                    content: vec![Content::Text(text)],
                    ..ToolOutput::default()
                }
            }
            ToolBehaviour::Fail(message) => ToolOutput {
                failure: Some(ToolFailure::ToolError),
                error_message: message,
                ..ToolOutput::default()
            },
            ToolBehaviour::TimeOut => ToolOutput {
                failure: Some(ToolFailure::Timeout),
                error_message: format!("the tool `{tool}` did not answer in time"),
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
        Err(McpCallError::NotFound(format!("no resource {}", read.uri)))
    }

    async fn get_prompt(
        &self,
        _caller: &Caller,
        prompt: McpPromptRequest<'_>,
        _timeout: Duration,
    ) -> Result<(String, Vec<PromptLine>), McpCallError> {
        Err(McpCallError::NotFound(format!("no prompt {}", prompt.name)))
    }
}
