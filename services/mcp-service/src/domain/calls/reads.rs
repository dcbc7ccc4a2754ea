//! Reads on an integration's server: a resource, a prompt, and the
//! requests of a caller's own session (subscriptions, completions), after
//! the policies; resources' and prompts' text checked by the guardrails as
//! a tool's result is.

use std::time::Duration;

use rmcp::model::{CompleteResult, GetPromptResult};
use switchboard_auth::Principal;

use super::{CallService, PromptCall, ResourceQuery, scope};
use crate::domain::{
    call_input::check_input,
    error::McpError,
    guardrails::Checked,
    integration::IntegrationId,
    outcome::Outcome,
    policy::{
        PolicyError,
        enforce::{Called, Carried},
    },
    ports::{Completing, SessionRequest},
    resource::{ResourceRead, expand_uri},
};

/// A rendered prompt, as the guardrails left it, with what they found.
pub type PromptAnswer = Checked<Outcome<GetPromptResult>>;

impl CallService {
    /// Reads a resource, expanding a URI template with its parameters.
    pub async fn read_resource(
        &self,
        caller: &Principal,
        id: IntegrationId,
        query: ResourceQuery<'_>,
        session_scope: &str,
        deadline: Option<Duration>,
    ) -> Result<ResourceRead, McpError> {
        check_input(
            &self.bounds,
            session_scope,
            query.parameters,
            &query.answers,
        )?;
        let uri =
            expand_uri("parameters", query.uri, query.parameters).map_err(McpError::Invalid)?;
        let integration = self.integrations.usable(caller, id).await?;
        let timeout = self.timeout(&integration, deadline);
        let (guardrails, _) = self.guardrails_for(&integration).await?;
        let carried = Carried {
            arguments: Some(query.parameters),
            findings: &[],
        };
        self.authorize(
            caller,
            &integration,
            Called::Resource(&uri),
            carried,
            timeout,
        )
        .await?;
        let scope = scope(caller, session_scope);
        match self
            .gateway
            .read_resource(&integration, &scope, &uri, query.answers, timeout)
            .await
            .map_err(|error| self.bounded(error))
        {
            Ok(mut result) => {
                let findings = match &mut result {
                    Outcome::Complete(read) => guardrails
                        .check_resource(read)
                        .map_err(|found| PolicyError::withheld(found, "resource"))?,
                    Outcome::InputRequired(_) => Vec::new(),
                };
                Ok(ResourceRead::new(uri, result).with_findings(findings))
            }
            Err(error) => {
                tracing::info!(integration_id = %id, error = %error, "resource read failed");
                Err(self.refused(caller, &integration, error).await)
            }
        }
    }

    /// Renders a prompt.
    pub async fn get_prompt(
        &self,
        caller: &Principal,
        id: IntegrationId,
        prompt: PromptCall,
        session_scope: &str,
        deadline: Option<Duration>,
    ) -> Result<PromptAnswer, McpError> {
        check_input(
            &self.bounds,
            session_scope,
            &prompt.arguments,
            &prompt.answers,
        )?;
        let integration = self.integrations.usable(caller, id).await?;
        let timeout = self.timeout(&integration, deadline);
        let PromptCall {
            name,
            mut arguments,
            answers,
        } = prompt;
        let (guardrails, _) = self.guardrails_for(&integration).await?;
        let mut findings = guardrails
            .check_arguments(&mut arguments)
            .map_err(|found| McpError::Policy(PolicyError::arguments_carry(found)))?;
        let carried = Carried {
            arguments: Some(&arguments),
            findings: &findings,
        };
        self.authorize(
            caller,
            &integration,
            Called::Prompt(&name),
            carried,
            timeout,
        )
        .await?;
        let scope = scope(caller, session_scope);
        match self
            .gateway
            .get_prompt(&integration, &scope, &name, arguments, answers, timeout)
            .await
            .map_err(|error| self.bounded(error))
        {
            Ok(mut prompt) => {
                if let Outcome::Complete(rendered) = &mut prompt {
                    findings.extend(
                        guardrails
                            .check_prompt(rendered)
                            .map_err(|found| PolicyError::withheld(found, "prompt"))?,
                    );
                }
                Ok(Checked {
                    value: prompt,
                    findings,
                    withheld_by: None,
                })
            }
            Err(error) => {
                tracing::info!(integration_id = %id, error = %error, "prompt failed");
                Err(self.refused(caller, &integration, error).await)
            }
        }
    }

    /// Makes `request` of the caller's session `session_scope` with the
    /// integration's server, as the caller's own session asks it: a
    /// subscription to a resource, or a completion of a prompt's or a
    /// resource's argument, only where the policies let the caller read
    /// the resource or get the prompt. Returns the completion of a
    /// completion request, `None` for the others.
    pub async fn session_request(
        &self,
        caller: &Principal,
        id: IntegrationId,
        request: SessionRequest,
        session_scope: &str,
    ) -> Result<Option<CompleteResult>, McpError> {
        crate::domain::bounds::SESSION_SCOPE.check_optional("session_scope", session_scope)?;
        let integration = self.integrations.usable(caller, id).await?;
        let timeout = self.timeout(&integration, None);
        let called = match &request {
            SessionRequest::Subscribe(uri)
            | SessionRequest::Complete(Completing::Resource(uri), _) => Some(Called::Resource(uri)),
            SessionRequest::Complete(Completing::Prompt(name), _) => Some(Called::Prompt(name)),
            SessionRequest::SetLevel(_) | SessionRequest::Unsubscribe(_) => None,
        };
        if let Some(called) = called {
            self.authorize(caller, &integration, called, Carried::default(), timeout)
                .await?;
        }
        let scope = scope(caller, session_scope);
        match self
            .gateway
            .session_request(&integration, &scope, request, timeout)
            .await
            .map_err(|error| self.bounded(error))
        {
            Ok(result) => Ok(result),
            Err(error) => {
                tracing::info!(integration_id = %id, error = %error, "session request failed");
                Err(self.refused(caller, &integration, error).await)
            }
        }
    }
}
