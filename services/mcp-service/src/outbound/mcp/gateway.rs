//! [`McpGateway`] over `rmcp`: calls on pooled sessions, discovery through a
//! cache, results handed back in the protocol's types.
//!
//! Results cross into the domain as `rmcp::model`'s data types, read once
//! here: whether a call completed or asks the caller for input is decided
//! where the server's answer is read (`operation.rs`), and nothing after
//! reads the protocol's JSON by key.
//!
//! A call is made once. It is made again (on a new session) only when the
//! request provably never reached the server: the connection to it could
//! not be opened, or the stdio server was gone before the request was
//! written. A stream that breaks after the request left may have run the
//! tool, so it fails the call instead; a tool must never run twice. Once
//! the server has answered with a task ([`super::tasks`]), nothing is made
//! again: the task is followed, or the call fails.

use std::{future::Future, sync::Arc, time::Duration};

use async_trait::async_trait;
use rmcp::{
    ServiceError,
    model::{CompleteResult, GetPromptResult, ReadResourceResult},
};
use serde_json::{Map, Value};
use tokio::time::Instant;
use tracing::Instrument as _;

use crate::domain::{
    downstream::Downstream,
    elicitation::ElicitationPolicy,
    integration::{Integration, IntegrationId},
    outcome::{Outcome, ToolOutcome},
    ports::{
        CallError, Discovery, InputAnswers, McpGateway, ProbeReport, SessionRequest, SessionScope,
        ToolCall,
    },
    server_text::bounded,
};
use crate::outbound::{
    mcp::connect::{McpConnector, client_config},
    mcp::discovery::{DiscoveryLimits, learn_tool_schemas, list_everything, server_identity},
    mcp::elicitation::Answerer,
    mcp::input_required,
    mcp::listen::ChangeListeners,
    mcp::operation::{OpFailure, never_delivered, outcome, sized, tool_call},
    mcp::session_pool::{SessionKey, SessionPool},
    mcp::session_requests::pass_on,
    mcp::sessions::{Announcer, DiscoveryCache, Live, SessionHandler, Teller},
    mcp::tasks::TaskPolling,
    mcp::transport::is_too_large,
    telemetry::metric_labels,
    telemetry::{Operation, observe},
};

/// Sessions used for discovery, shared by every caller of an organization's
/// integration: listing capabilities carries no conversation state.
const DISCOVERY_SCOPE: &str = "discovery";

/// Result and listing bounds of a gateway.
#[derive(Debug, Clone, Copy)]
pub struct GatewayLimits {
    /// Largest tool, resource or prompt result passed on, in bytes (as JSON).
    pub max_result_bytes: usize,
    /// Longest text of a server about a call (an error's message) kept.
    pub max_server_text_bytes: usize,
    /// Bounds on one discovery.
    pub discovery: DiscoveryLimits,
    /// How servers' elicitations are answered.
    pub elicitation: ElicitationPolicy,
    /// How often the tasks servers run calls as are polled.
    pub tasks: TaskPolling,
}

/// The `rmcp` implementation of [`McpGateway`].
#[derive(Debug, Clone)]
pub struct RmcpGateway {
    connector: McpConnector,
    pool: SessionPool,
    cache: DiscoveryCache,
    listeners: ChangeListeners,
    limits: GatewayLimits,
    downstream: Downstream,
}

impl RmcpGateway {
    /// A gateway opening sessions with `connector` into `pool`.
    pub fn new(
        connector: McpConnector,
        pool: SessionPool,
        cache: DiscoveryCache,
        limits: GatewayLimits,
    ) -> Self {
        Self {
            connector,
            pool,
            cache,
            listeners: ChangeListeners::default(),
            limits,
            downstream: Downstream::default(),
        }
    }

    /// This gateway, passing its servers' list changes and questions on
    /// to the endpoint's clients through `downstream`.
    #[must_use]
    pub fn with_downstream(mut self, downstream: Downstream) -> Self {
        self.downstream = downstream;
        self
    }

    /// Who answers the elicitations of `scope`'s session with `integration`.
    fn answerer(&self, integration: &Integration, scope: &SessionScope) -> Answerer {
        Answerer::for_session(
            self.limits.elicitation,
            self.downstream.questions.clone(),
            integration.org_id.clone(),
            scope.clone(),
        )
    }

    fn announcer(&self, integration: &Integration, user: &str) -> Announcer {
        Announcer::new(self.downstream.changes.clone(), integration, user)
    }

    fn handler(&self, integration: &Integration, scope: &SessionScope) -> SessionHandler {
        let abilities = self.downstream.abilities.of(&integration.org_id, scope);
        SessionHandler::new(
            client_config(abilities),
            integration.id,
            self.cache.clone(),
            self.answerer(integration, scope),
        )
        .with_announcer(self.announcer(integration, &scope.user))
        .with_teller(Teller {
            notices: self.downstream.notices.clone(),
            org: integration.org_id.clone(),
            scope: scope.clone(),
        })
    }

    async fn connect(
        &self,
        integration: &Integration,
        scope: &SessionScope,
    ) -> Result<Live, CallError> {
        // Outside the caller's span: the session's task lives on in the pool
        // and would keep the span (and every parent of it) open for as long.
        let live = self
            .connector
            .connect(integration, &scope.user, self.handler(integration, scope))
            .instrument(switchboard_telemetry::detached_span())
            .await?;
        // Without the schemas a call would lack its `Mcp-Param-*` headers,
        // which a server of 2026-07-28 may require: a failure is logged and
        // the session used as it is.
        if let Err(error) = learn_tool_schemas(&live, self.limits.discovery).await {
            tracing::debug!(integration_id = %integration.id, error = %error, "listing tools for their schemas failed");
        }
        Ok(live)
    }

    /// A session failure as the domain's error.
    fn upstream(&self, error: ServiceError) -> CallError {
        match error {
            ServiceError::McpError(data) if is_too_large(&data) => CallError::TooLarge {
                limit: self.limits.max_result_bytes,
            },
            ServiceError::McpError(data) => CallError::Upstream {
                code: data.code.0,
                message: bounded(&data.message, self.limits.max_server_text_bytes).into_owned(),
            },
            ServiceError::Timeout { timeout } => CallError::Timeout(timeout),
            ServiceError::InputRequiredRoundsExceeded { max_rounds } => CallError::Upstream {
                code: rmcp::model::ErrorCode::INTERNAL_ERROR.0,
                message: format!(
                    "the server asked for input {max_rounds} times without completing the request"
                ),
            },
            ServiceError::TransportClosed => CallError::Transport(
                "it closed before the answer arrived; the request may have been carried \
                 out and was not repeated"
                    .to_owned(),
            ),
            other => CallError::Transport(
                bounded(&other.to_string(), self.limits.max_server_text_bytes).into_owned(),
            ),
        }
    }

    /// Runs `op` on the scope's session within `timeout`. When the request
    /// provably never reached the server, or the server refused its
    /// client-credentials token with a 401 (nothing ran), the session is
    /// replaced and `op` made once more; on timeout the call is dropped, which sends the
    /// server a cancellation.
    async fn on_session<T, F, Fut>(
        &self,
        integration: &Integration,
        scope: &SessionScope,
        timeout: Duration,
        op: F,
    ) -> Result<T, CallError>
    where
        F: Fn(Arc<Live>) -> Fut,
        Fut: Future<Output = Result<T, OpFailure>>,
    {
        let key = SessionKey::new(integration, scope);
        let attempts = async {
            let mut retried = false;
            loop {
                let (slot, live) = self
                    .pool
                    .get(&key, || self.connect(integration, scope))
                    .await?;
                match op(live.clone()).await {
                    Ok(value) => return Ok(value),
                    Err(OpFailure::Call(error)) => return Err(error),
                    Err(OpFailure::Service(error))
                        if !retried
                            && (never_delivered(&live, &error)
                                || self.connector.refused_token(
                                    integration,
                                    &scope.user,
                                    &error,
                                )) =>
                    {
                        self.pool.discard(&key, &slot);
                        tracing::info!(
                            integration_id = %integration.id,
                            error = %error,
                            "MCP request could not be sent or its token was refused; reconnecting"
                        );
                        retried = true;
                    }
                    Err(OpFailure::Service(error) | OpFailure::Unrepeatable(error)) => {
                        if integration.uses_authorization_code()
                            && let Some(challenge) = error.auth_challenge()
                        {
                            // A refused or revoked token, or too few scopes:
                            // the session is of no more use.
                            self.pool.discard(&key, &slot);
                            return Err(CallError::AuthorizationRequired(Some(
                                challenge.to_owned(),
                            )));
                        }
                        return Err(self.upstream(error));
                    }
                }
            }
        };
        tokio::time::timeout(timeout, attempts)
            .await
            .map_err(|_| CallError::Timeout(timeout))?
    }
}

#[async_trait]
impl McpGateway for RmcpGateway {
    async fn probe(&self, integration: &Integration) -> ProbeReport {
        let started = Instant::now();
        let mut report = ProbeReport::default();
        // A probe is a session (a process, for stdio) like any other: it
        // counts against the organization's share while it runs.
        let _room = match self.pool.reserve(integration).await {
            Ok(room) => room,
            Err(error) => {
                report.error = Some(error.to_string());
                return report;
            }
        };
        let (_, call_timeout) = self.connector.timeouts(integration);
        // A per-user integration is checked with nobody's token: its server
        // answering that it needs authorization shows it is reachable.
        match self
            .connect(integration, &SessionScope::new("", "probe"))
            .await
        {
            Err(error) => report.error = Some(error.to_string()),
            Ok(live) => {
                let mut discovery = Discovery::default();
                match tokio::time::timeout(
                    call_timeout,
                    list_everything(&live, self.limits.discovery),
                )
                .await
                {
                    Err(_) => {
                        report.error = Some(format!(
                            "listing capabilities timed out after {call_timeout:?}"
                        ));
                    }
                    Ok(Err(error)) => {
                        report.error = Some(format!("listing capabilities failed: {error}"))
                    }
                    Ok(Ok(listed)) => discovery = listed,
                }
                report.tool_count = discovery.tools.len();
                report.resource_count = discovery.resources.len();
                report.resource_template_count = discovery.resource_templates.len();
                report.prompt_count = discovery.prompts.len();
                report.server = server_identity(&live);
                let Live {
                    session, transport, ..
                } = live;
                let _ = session.cancel().await;
                drop(transport);
            }
        }
        report.latency = started.elapsed();
        report
    }

    async fn discover(
        &self,
        integration: &Integration,
        user: &str,
        bypass_cache: bool,
        timeout: Duration,
    ) -> Result<Arc<Discovery>, CallError> {
        // A per-user integration's listings may differ per user (they are
        // listed with each user's token): they are not cached, and each user
        // discovers on a session of their own.
        let per_user = integration.is_per_user();
        if !per_user
            && !bypass_cache
            && let Some(cached) = self.cache.get(integration)
        {
            return Ok(cached);
        }
        let scope = SessionScope::new(if per_user { user } else { "" }, DISCOVERY_SCOPE);
        let limits = self.limits.discovery;
        let listing = self.on_session(integration, &scope, timeout, |live| async move {
            let listed = list_everything(&live, limits)
                .await
                .map_err(OpFailure::from)?;
            Ok((listed, live))
        });
        let (listed, live) = observe(integration, Operation::Discover, None, listing).await?;
        metric_labels::remember(integration.id, &listed);
        let discovery = Arc::new(listed);
        if !per_user {
            self.cache.put(integration, discovery.clone());
            // A server of 2026-07-28 tells of changes only to a client
            // that listens for them.
            self.listeners.ensure(
                integration.id,
                &live,
                &self.cache,
                self.announcer(integration, ""),
            );
        }
        Ok(discovery)
    }

    async fn call_tool(
        &self,
        integration: &Integration,
        scope: &SessionScope,
        call: ToolCall,
        timeout: Duration,
    ) -> Result<ToolOutcome, CallError> {
        let (answerer, polling) = (
            self.answerer(integration, scope),
            (self.limits.tasks, timeout),
        );
        let answerer = &answerer;
        let (name, arguments) = (call.name.clone(), call.arguments.clone());
        let calling = async {
            let result = self
                .on_session(integration, scope, timeout, |live| {
                    let call = call.clone();
                    async move {
                        tool_call(
                            (live.session.peer(), live.session.service().progress()),
                            answerer,
                            polling,
                            call,
                        )
                        .await
                    }
                })
                .await?;
            sized(self.limits.max_result_bytes, result)
        };
        observe(
            integration,
            Operation::CallTool(&name),
            Some(&arguments),
            calling,
        )
        .await
    }

    async fn read_resource(
        &self,
        integration: &Integration,
        scope: &SessionScope,
        uri: &str,
        answers: InputAnswers,
        timeout: Duration,
    ) -> Result<Outcome<ReadResourceResult>, CallError> {
        let answerer = &self.answerer(integration, scope);
        let answers = &answers;
        let reading = async {
            let round = self
                .on_session(integration, scope, timeout, |live| async move {
                    input_required::read_resource(
                        live.session.peer(),
                        answerer,
                        uri,
                        answers.clone(),
                    )
                    .await
                    .map_err(OpFailure::from)
                })
                .await?;
            sized(self.limits.max_result_bytes, outcome(round))
        };
        observe(integration, Operation::ReadResource(uri), None, reading).await
    }

    async fn get_prompt(
        &self,
        integration: &Integration,
        scope: &SessionScope,
        name: &str,
        arguments: Map<String, Value>,
        answers: InputAnswers,
        timeout: Duration,
    ) -> Result<Outcome<GetPromptResult>, CallError> {
        let answerer = &self.answerer(integration, scope);
        let (arguments, answers) = (&arguments, &answers);
        let rendering = async {
            let round = self
                .on_session(integration, scope, timeout, |live| async move {
                    input_required::get_prompt(
                        live.session.peer(),
                        answerer,
                        (name, arguments),
                        answers.clone(),
                    )
                    .await
                    .map_err(OpFailure::from)
                })
                .await?;
            sized(self.limits.max_result_bytes, outcome(round))
        };
        observe(
            integration,
            Operation::GetPrompt(name),
            Some(arguments),
            rendering,
        )
        .await
    }

    async fn session_request(
        &self,
        integration: &Integration,
        scope: &SessionScope,
        request: SessionRequest,
        timeout: Duration,
    ) -> Result<Option<CompleteResult>, CallError> {
        let request = &request;
        self.on_session(integration, scope, timeout, |live| async move {
            pass_on(live.session.peer(), request.clone())
                .await
                .map_err(OpFailure::Service)
        })
        .await
    }

    async fn forget(&self, integration: IntegrationId) {
        self.listeners.stop(integration);
        self.pool.forget(integration);
        self.cache.invalidate(integration);
        metric_labels::forget(integration);
    }
}
