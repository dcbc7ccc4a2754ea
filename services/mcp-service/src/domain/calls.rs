//! The calls that reach an integration's MCP server: discovery, tools,
//! resources and prompts, after the same access checks as every read.

use std::{sync::Arc, time::Duration};

use serde_json::{Map, Value};
use switchboard_auth::Principal;

use super::{
    error::McpError,
    integration::{Integration, IntegrationId},
    ports::{CallError, Discovery, McpGateway, SessionScope},
    resource::expand_uri,
    service::IntegrationService,
};

/// Calls on MCP servers, on behalf of the caller.
#[derive(Clone)]
pub struct CallService {
    integrations: IntegrationService,
    gateway: Arc<dyn McpGateway>,
    default_call_timeout: Duration,
}

impl std::fmt::Debug for CallService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallService").finish_non_exhaustive()
    }
}

/// A resource read: the URI after template expansion and the result JSON.
#[derive(Debug)]
pub struct ResourceRead {
    /// The URI that was read.
    pub uri: String,
    /// The `ReadResourceResult` wire JSON.
    pub result: Value,
}

/// The session scope of a call: the caller's own unless they name one, and
/// a named one (a thread id, say) is always within the caller's own. Scopes
/// are chosen by callers, so another user's thread id must give a session of
/// one's own, never theirs. Scopes are per integration, and integrations per
/// organization, so no two organizations ever share a session either.
fn scope(caller: &Principal, requested: &str) -> SessionScope {
    // The user id's length first: no choice of scope text can make two
    // users' keys equal.
    let user = &caller.user_id;
    if requested.is_empty() {
        SessionScope(format!("user:{}:{user}", user.len()))
    } else {
        SessionScope(format!("user:{}:{user}:scope:{requested}", user.len()))
    }
}

impl CallService {
    /// Calls through `gateway` on integrations `integrations` lets the caller use.
    pub fn new(
        integrations: IntegrationService,
        gateway: Arc<dyn McpGateway>,
        default_call_timeout: Duration,
    ) -> Self {
        Self {
            integrations,
            gateway,
            default_call_timeout,
        }
    }

    /// The time a call may take: the integration's limit, capped by what is
    /// left of the caller's deadline less a margin, so that the caller gets a
    /// result saying the tool timed out rather than its own DEADLINE_EXCEEDED.
    fn timeout(&self, integration: &Integration, deadline: Option<Duration>) -> Duration {
        const MARGIN: Duration = Duration::from_millis(50);
        let limit = integration.timeouts.call_or(self.default_call_timeout);
        deadline.map_or(limit, |deadline| {
            limit.min(
                deadline
                    .saturating_sub(MARGIN)
                    .max(Duration::from_millis(1)),
            )
        })
    }

    /// The integration and what its server offers.
    pub async fn discover(
        &self,
        caller: &Principal,
        id: IntegrationId,
        bypass_cache: bool,
        deadline: Option<Duration>,
    ) -> Result<(Integration, Arc<Discovery>), McpError> {
        let integration = self.integrations.usable(caller, id).await?;
        let timeout = self.timeout(&integration, deadline);
        let discovery = self
            .gateway
            .discover(&integration, bypass_cache, timeout)
            .await
            .inspect_err(
                |error| tracing::warn!(integration_id = %id, error = %error, "discovery failed"),
            )
            .map_err(McpError::Upstream)?;
        Ok((integration, discovery))
    }

    /// Calls a tool. What goes wrong on the server side (an error result, an
    /// unknown tool, a timeout, a dead server) is `Ok(Err(..))`, for the model
    /// to read; access problems are `Err`.
    pub async fn execute_tool(
        &self,
        caller: &Principal,
        id: IntegrationId,
        tool: &str,
        arguments: Map<String, Value>,
        session_scope: &str,
        deadline: Option<Duration>,
    ) -> Result<Result<Value, CallError>, McpError> {
        let integration = self.integrations.usable(caller, id).await?;
        let timeout = self.timeout(&integration, deadline);
        let outcome = self
            .gateway
            .call_tool(
                &integration,
                &scope(caller, session_scope),
                tool,
                arguments,
                timeout,
            )
            .await;
        match &outcome {
            // A limit of mcp-service, not the tool's answer: the caller
            // retries later, the model is not told the tool failed.
            Err(error @ CallError::Exhausted { .. }) => {
                return Err(McpError::Upstream(error.clone()));
            }
            Ok(_) => tracing::debug!(integration_id = %id, tool, "tool call returned"),
            Err(error) => {
                tracing::info!(integration_id = %id, tool, error = %error, "tool call failed")
            }
        }
        Ok(outcome)
    }

    /// Reads a resource, expanding a URI template with `parameters`.
    pub async fn read_resource(
        &self,
        caller: &Principal,
        id: IntegrationId,
        uri: &str,
        parameters: &Map<String, Value>,
        session_scope: &str,
        deadline: Option<Duration>,
    ) -> Result<ResourceRead, McpError> {
        let uri = expand_uri("parameters", uri, parameters).map_err(McpError::Invalid)?;
        let integration = self.integrations.usable(caller, id).await?;
        let timeout = self.timeout(&integration, deadline);
        let result = self
            .gateway
            .read_resource(&integration, &scope(caller, session_scope), &uri, timeout)
            .await
            .inspect_err(|error| tracing::info!(integration_id = %id, error = %error, "resource read failed"))?;
        Ok(ResourceRead { uri, result })
    }

    /// Renders a prompt.
    pub async fn get_prompt(
        &self,
        caller: &Principal,
        id: IntegrationId,
        name: &str,
        arguments: Map<String, Value>,
        session_scope: &str,
        deadline: Option<Duration>,
    ) -> Result<Value, McpError> {
        let integration = self.integrations.usable(caller, id).await?;
        let timeout = self.timeout(&integration, deadline);
        Ok(self
            .gateway
            .get_prompt(
                &integration,
                &scope(caller, session_scope),
                name,
                arguments,
                timeout,
            )
            .await
            .inspect_err(
                |error| tracing::info!(integration_id = %id, error = %error, "prompt failed"),
            )?)
    }
}
