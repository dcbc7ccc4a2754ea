//! The calls that reach an integration's MCP server: discovery, tools
//! ([`tool`]), resources and prompts ([`reads`]), after the same access
//! checks as every read, with the guardrails of the deployment, the
//! organization and the integration.

mod reads;
mod tool;

pub use reads::PromptAnswer;
pub use tool::ToolAnswer;

use std::{sync::Arc, time::Duration};

use std::borrow::Cow;

use serde_json::{Map, Value};
use switchboard_auth::Principal;

use super::{
    approvals::service::Approvals,
    bounds::{CallBounds, PromptName, ResourceUri},
    error::McpError,
    guardrails::{GuardrailSettings, Guardrails},
    integration::{Integration, IntegrationId, OrgId},
    policy::{
        enforce::{AllowList, Called, Carried, PolicyEnforcer},
        engine::PolicyEngine,
    },
    ports::{
        AuthorizationAnswer, Authorizations, CallError, Discovery, InputAnswers, McpGateway,
        SessionScope, StartedAuthorization,
    },
    service::IntegrationService,
};

/// Calls on MCP servers, on behalf of the caller.
#[derive(Clone)]
pub struct CallService {
    integrations: IntegrationService,
    gateway: Arc<dyn McpGateway>,
    authorizations: Arc<dyn Authorizations>,
    default_call_timeout: Duration,
    policies: Option<PolicyEnforcer>,
    approvals: Option<Approvals>,
    bounds: CallBounds,
    guardrails: Arc<Guardrails>,
}

impl std::fmt::Debug for CallService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallService").finish_non_exhaustive()
    }
}

/// A resource to read: a URI or URI template, the values of its variables,
/// and the caller's answers when it resumes a multi-round-trip request.
#[derive(Debug)]
pub struct ResourceQuery<'a> {
    /// The URI or URI template.
    pub uri: &'a ResourceUri,
    /// Values for the template's variables.
    pub parameters: &'a Map<String, Value>,
    /// The caller's answers; empty for a new read.
    pub answers: InputAnswers,
}

/// A prompt to render: its name, its arguments, and the caller's answers
/// when it resumes a multi-round-trip request.
#[derive(Debug)]
pub struct PromptCall {
    /// The prompt's name.
    pub name: PromptName,
    /// Its arguments.
    pub arguments: Map<String, Value>,
    /// The caller's answers; empty for a new rendering.
    pub answers: InputAnswers,
}

/// What a tool call brings besides the caller: the calling agent's
/// allow-list, and the approval it was given, if any.
#[derive(Debug, Clone, Copy)]
pub struct Grants<'a> {
    /// The tools the calling agent may use.
    pub allowed: &'a AllowList,
    /// An approval of this call, used up before the call goes out.
    pub approval_id: Option<&'a str>,
}

/// The session scope of a call: the caller's own unless they name one, and
/// a named one (a thread id, say) is always within the caller's own. Scopes
/// are chosen by callers, so another user's thread id must give a session of
/// one's own, never theirs. Scopes are per integration, and integrations per
/// organization, so no two organizations ever share a session either.
pub fn scope(caller: &Principal, requested: &str) -> SessionScope {
    // The user id's length first: no choice of scope text can make two
    // users' keys equal.
    let user = &caller.user_id;
    if requested.is_empty() {
        SessionScope::new(user.clone(), format!("user:{}:{user}", user.len()))
    } else {
        SessionScope::new(
            user.clone(),
            format!("user:{}:{user}:scope:{requested}", user.len()),
        )
    }
}

impl CallService {
    /// Calls through `gateway` on integrations `integrations` lets the caller use.
    pub fn new(
        integrations: IntegrationService,
        gateway: Arc<dyn McpGateway>,
        authorizations: Arc<dyn Authorizations>,
        default_call_timeout: Duration,
    ) -> Self {
        Self {
            integrations,
            gateway,
            authorizations,
            default_call_timeout,
            policies: None,
            approvals: None,
            bounds: CallBounds::default(),
            guardrails: Arc::new(Guardrails::default()),
        }
    }

    /// Checks calls' arguments and results with `guardrails` rather than
    /// the defaults.
    #[must_use]
    pub fn with_guardrails(mut self, guardrails: Guardrails) -> Self {
        self.guardrails = Arc::new(guardrails);
        self
    }

    /// Refuses calls past `bounds` rather than the defaults.
    #[must_use]
    pub fn with_bounds(mut self, bounds: CallBounds) -> Self {
        self.bounds = bounds;
        self
    }

    /// The bounds of what callers send with a call.
    pub fn bounds(&self) -> &CallBounds {
        &self.bounds
    }

    /// Holds calls a policy gates until an approval of `approvals` lets
    /// them run, once.
    #[must_use]
    pub fn with_approvals(mut self, approvals: Approvals) -> Self {
        self.approvals = Some(approvals);
        self
    }

    /// Enforces the organizations' policies of `engine` on every call.
    #[must_use]
    pub fn with_policies(mut self, engine: Arc<PolicyEngine>) -> Self {
        self.policies = Some(PolicyEnforcer::new(engine, self.gateway.clone()));
        self
    }

    /// The policy enforcer, when policies are enforced.
    pub fn policies(&self) -> Option<&PolicyEnforcer> {
        self.policies.as_ref()
    }

    /// Refuses what the policies deny, and gates a tool call they put
    /// behind an approval.
    async fn authorize(
        &self,
        caller: &Principal,
        integration: &Integration,
        called: Called<'_>,
        carried: Carried<'_>,
        timeout: Duration,
    ) -> Result<(), McpError> {
        match &self.policies {
            Some(policies) => Ok(policies
                .authorize(caller, integration, called, carried, timeout)
                .await?),
            None => Ok(()),
        }
    }

    /// The guardrails of a call on `integration`: the deployment's, as its
    /// organization's policies and then the integration change them; and
    /// whether a rule reads their findings, so that a tool's result is
    /// decided on again.
    async fn guardrails_for(
        &self,
        integration: &Integration,
    ) -> Result<(Cow<'_, Guardrails>, bool), McpError> {
        let (organization, reviews) = match &self.policies {
            Some(policies) => policies.guardrails(&integration.org_id).await?,
            None => (GuardrailSettings::none(), false),
        };
        let guardrails = self
            .guardrails
            .resolved(&organization, &integration.guardrails);
        Ok((guardrails, reviews))
    }

    /// `error` with a server's text in it cut to the bound, before it is
    /// logged, recorded or returned.
    fn bounded(&self, error: CallError) -> CallError {
        error.bounded(self.bounds.max_server_text_bytes)
    }

    /// A call's failure as the caller's error: a server that needs the
    /// caller's authorization becomes the URL where they give it.
    async fn refused(
        &self,
        caller: &Principal,
        integration: &Integration,
        error: CallError,
    ) -> McpError {
        let CallError::AuthorizationRequired(challenge) = error else {
            return McpError::Upstream(error);
        };
        if integration.is_organization_wide() && !caller.is_admin() {
            return McpError::OrganizationConnectionRequired;
        }
        match self
            .authorizations
            .start(integration, &caller.user_id, challenge.as_deref())
            .await
        {
            Ok(started) => McpError::AuthorizationRequired {
                authorization_url: started.authorization_url,
            },
            Err(error) => McpError::Authorization(error),
        }
    }

    /// Starts connecting the caller's account to a per-user integration.
    pub async fn start_authorization(
        &self,
        caller: &Principal,
        id: IntegrationId,
    ) -> Result<StartedAuthorization, McpError> {
        let integration = self.integrations.usable(caller, id).await?;
        if integration.is_organization_wide() && !caller.is_admin() {
            return Err(McpError::Forbidden(
                "connecting an integration for the whole organization needs the admin role",
            ));
        }
        self.authorizations
            .start(&integration, &caller.user_id, None)
            .await
            .map_err(McpError::Authorization)
    }

    /// Completes an authorization the caller started.
    pub async fn complete_authorization(
        &self,
        caller: &Principal,
        answer: AuthorizationAnswer,
    ) -> Result<IntegrationId, McpError> {
        let org = OrgId(caller.org_id.clone());
        let id = self
            .authorizations
            .complete(&org, &caller.user_id, answer)
            .await
            .map_err(McpError::Authorization)?;
        tracing::info!(integration_id = %id, "authorization completed");
        Ok(id)
    }

    /// The time a call may take: the integration's limit, capped by what is
    /// left of the caller's deadline less a margin, so that the caller gets a
    /// result saying the tool timed out rather than its own DEADLINE_EXCEEDED.
    pub fn timeout_for(&self, integration: &Integration, deadline: Option<Duration>) -> Duration {
        self.timeout(integration, deadline)
    }

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

    /// The integration and what its server offers, less what policies
    /// deny the caller and what is off the agent's `allowed` tools.
    pub async fn discover(
        &self,
        caller: &Principal,
        id: IntegrationId,
        bypass_cache: bool,
        allowed: &AllowList,
        deadline: Option<Duration>,
    ) -> Result<(Integration, Arc<Discovery>), McpError> {
        let integration = self.integrations.usable(caller, id).await?;
        let timeout = self.timeout(&integration, deadline);
        match self
            .gateway
            .discover(&integration, &caller.user_id, bypass_cache, timeout)
            .await
            .map_err(|error| self.bounded(error))
        {
            Ok(discovery) => {
                let discovery = match &self.policies {
                    Some(policies) => {
                        policies
                            .visible(caller, &integration, discovery, allowed)
                            .await?
                    }
                    None => discovery,
                };
                Ok((integration, discovery))
            }
            Err(error) => {
                tracing::warn!(integration_id = %id, error = %error, "discovery failed");
                Err(self.refused(caller, &integration, error).await)
            }
        }
    }
}
