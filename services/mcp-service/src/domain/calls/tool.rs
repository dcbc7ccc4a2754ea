//! A tool call: bounded, its arguments checked by the guardrails, decided
//! by the policies (which see the arguments and what was found in them),
//! gated on an approval where they say so, sent once, and its result
//! checked by the guardrails and, where a rule reads their findings,
//! decided on again before it is returned.

use std::time::Duration;

use rmcp::model::JsonObject;
use switchboard_auth::Principal;

use super::{CallService, Grants, scope};
use crate::domain::{
    approvals::service::GatedCall,
    call_input::check_tool_call,
    error::McpError,
    guardrails::{self, Checked},
    integration::{Integration, IntegrationId},
    outcome::{Outcome, ToolOutcome},
    policy::{
        PolicyError,
        enforce::{Called, Carried},
    },
    ports::{CallError, ToolCall},
};

/// A tool call's answer: the outcome as the guardrails and policies left
/// it, with what the guardrails found.
pub type ToolAnswer = Checked<ToolOutcome>;

impl CallService {
    /// Calls a tool. What goes wrong on the server side (an error result, an
    /// unknown tool, a timeout, a dead server) is `Ok(Err(..))`, for the model
    /// to read; access problems (a policy's denial or approval gate, a tool
    /// off the agent's allow-list, arguments the guardrails block) are
    /// `Err`. A presented approval is used up before the call goes out.
    pub async fn execute_tool(
        &self,
        caller: &Principal,
        id: IntegrationId,
        call: ToolCall,
        session_scope: &str,
        grants: Grants<'_>,
        deadline: Option<Duration>,
    ) -> Result<Result<ToolAnswer, CallError>, McpError> {
        check_tool_call(&self.bounds, &call, session_scope)?;
        let integration = self.integrations.usable(caller, id).await?;
        let timeout = self.timeout(&integration, deadline);
        let tool = call.name.clone();
        let tool = tool.as_str();
        grants.allowed.check(tool)?;
        let (guardrails, reviewed) = self.guardrails_for(&integration).await?;
        let mut call = call;
        let flagged = guardrails
            .check_arguments(&mut call.arguments)
            .map_err(|found| McpError::Policy(PolicyError::arguments_carry(found)))?;
        let carried = Carried {
            arguments: Some(&call.arguments),
            findings: &flagged,
        };
        self.admit(caller, &integration, tool, carried, grants, timeout)
            .await?;
        // Kept for the result's review only when a rule will read them.
        let arguments = reviewed.then(|| call.arguments.clone());
        let outcome = self
            .gateway
            .call_tool(&integration, &scope(caller, session_scope), call, timeout)
            .await
            .map_err(|error| self.bounded(error))
            .map(|outcome| guardrails.check_outcome(outcome, flagged));
        let outcome = match (outcome, arguments) {
            (Ok(answer), Some(arguments)) => Ok(self
                .review(caller, &integration, tool, &arguments, answer, timeout)
                .await),
            (outcome, _) => outcome,
        };
        self.settled(caller, &integration, tool, outcome).await
    }

    /// Decides a call by the policies and gates it on an approval where
    /// they say so; an approval it presents is used up here.
    async fn admit(
        &self,
        caller: &Principal,
        integration: &Integration,
        tool: &str,
        carried: Carried<'_>,
        grants: Grants<'_>,
        timeout: Duration,
    ) -> Result<(), McpError> {
        let gate = match self
            .authorize(caller, integration, Called::Tool(tool), carried, timeout)
            .await
        {
            Err(McpError::Policy(PolicyError::ApprovalRequired(gate))) => Some(*gate),
            decided => decided.map(|()| None)?,
        };
        if let Some(approvals) = &self.approvals {
            let id = integration.id.to_string();
            let none = JsonObject::new();
            let gated = GatedCall {
                integration_id: &id,
                tool,
                arguments: carried.arguments.unwrap_or(&none),
            };
            approvals
                .gate(caller, gated, grants.approval_id, gate)
                .await?;
        } else if let Some(gate) = gate {
            return Err(PolicyError::ApprovalRequired(Box::new(gate)).into());
        }
        Ok(())
    }

    /// A result withheld when a rule denies it for what the guardrails
    /// found in it (or, failing closed, when the policies cannot be read).
    async fn review(
        &self,
        caller: &Principal,
        integration: &Integration,
        tool: &str,
        arguments: &JsonObject,
        mut answer: ToolAnswer,
        timeout: Duration,
    ) -> ToolAnswer {
        let (Some(policies), Outcome::Complete(_)) = (&self.policies, &answer.value) else {
            return answer;
        };
        let carried = Carried {
            arguments: Some(arguments),
            findings: &answer.findings,
        };
        let refusal = match policies
            .review_result(caller, integration, tool, carried, timeout)
            .await
        {
            Ok(()) => return answer,
            Err(PolicyError::Denied { rule, reason }) => (rule, reason),
            Err(error) => ("(policies unavailable)".to_owned(), error.to_string()),
        };
        let (rule, reason) = refusal;
        answer.value = Outcome::Complete(guardrails::withheld(format!(
            "The tool's result was withheld by policy rule {rule}: {reason}"
        )));
        answer.withheld_by = Some(rule);
        answer
    }

    /// The caller's error where a call ended on a limit or an authorization
    /// rather than with the tool's answer; the answer or the server's
    /// failure, for the model to read, otherwise.
    async fn settled(
        &self,
        caller: &Principal,
        integration: &Integration,
        tool: &str,
        outcome: Result<ToolAnswer, CallError>,
    ) -> Result<Result<ToolAnswer, CallError>, McpError> {
        let id = integration.id;
        match &outcome {
            // A limit of mcp-service, not the tool's answer: the caller
            // retries later, the model is not told the tool failed.
            Err(error @ CallError::Exhausted { .. }) => {
                return Err(McpError::Upstream(error.clone()));
            }
            // The caller's token was not exchanged: nothing reached the
            // server, and the caller, not the model, has to act.
            Err(error @ CallError::ExchangeRefused(_)) => {
                return Err(McpError::Upstream(error.clone()));
            }
            // Not the tool's answer either: the caller connects their
            // account and calls again.
            Err(error @ CallError::AuthorizationRequired(_)) => {
                return Err(self.refused(caller, integration, error.clone()).await);
            }
            Ok(_) => tracing::debug!(integration_id = %id, tool, "tool call returned"),
            Err(error) => {
                tracing::info!(integration_id = %id, tool, error = %error, "tool call failed")
            }
        }
        Ok(outcome)
    }
}
