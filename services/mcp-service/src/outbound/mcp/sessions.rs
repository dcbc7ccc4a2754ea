//! What one live upstream MCP session is made of: the client handler
//! receiving the server's notifications, what its transport keeps alive as
//! long as the session, and the discovery cache the notifications
//! invalidate.
//! Which sessions are kept, and for whom, is [`super::session_pool`]'s job.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

#[expect(
    deprecated,
    reason = "logging is what clients of the initialize era speak; deprecated only for 2026-07-28"
)]
use rmcp::model::LoggingMessageNotificationParam;
#[expect(
    deprecated,
    reason = "sampling and roots are what clients of the initialize era answer; deprecated only for 2026-07-28"
)]
use rmcp::model::{CreateMessageRequestParams, CreateMessageResult, ListRootsResult};
use rmcp::{
    ClientHandler, ErrorData, RoleClient,
    model::{
        ClientConfig, CreateMessageRequestMethod, ElicitRequestParams, ElicitResult,
        ListRootsRequestMethod, ProgressNotificationParam, ResourceUpdatedNotificationParam,
    },
    service::{NotificationContext, RequestContext, RunningService},
};
use serde::Serialize;
use serde_json::Value;

use crate::{
    domain::{
        downstream::{ChangeFeed, ListChange, ListKind, QuestionKind},
        integration::{Integration, IntegrationId, OrgId},
        notices::{ClientNotices, Notice, NoticeKind},
        ports::{Discovery, SessionScope},
    },
    outbound::mcp::{
        elicitation::Answerer,
        progress::ProgressRoutes,
        transport::{Attachment, SessionClient},
    },
};

/// Receives the server's notifications and requests for one session: a
/// `list_changed` drops the integration's cached discovery and is announced
/// to the endpoint's clients; an elicitation is answered by the endpoint's
/// client whose call is on the session, or by the operator's policy, and a
/// sampling or roots request by that client alone, when it declared them
/// (the session declares to the server what its client did); a log
/// message or resource update is told to the endpoint's client session the
/// session was opened for, if it was; a progress report goes to the call
/// whose request it is about, if that call's client asked for progress.
#[derive(Debug, Clone)]
pub struct SessionHandler {
    config: ClientConfig,
    integration: IntegrationId,
    cache: DiscoveryCache,
    answerer: Answerer,
    changes: Option<Announcer>,
    teller: Option<Teller>,
    progress: ProgressRoutes,
}

/// Where a session's log messages and resource updates are told: the
/// client session registered for the session's organization and scope.
#[derive(Debug, Clone)]
pub struct Teller {
    /// The client sessions.
    pub notices: Arc<ClientNotices>,
    /// The integration's organization.
    pub org: OrgId,
    /// The session's scope.
    pub scope: SessionScope,
}

impl Teller {
    /// Tells the session's client of `params`, a notice of `kind`.
    fn tell(&self, kind: NoticeKind, params: &impl Serialize) {
        match serde_json::to_value(params) {
            Ok(params) => {
                self.notices
                    .tell(&self.org, &self.scope, Notice { kind, params });
            }
            Err(error) => tracing::debug!(error = %error, "an unreadable notice"),
        }
    }
}

/// Where a session's list changes are announced, and for whom.
#[derive(Debug, Clone)]
pub struct Announcer {
    /// The feed.
    pub feed: ChangeFeed,
    /// The integration's organization.
    pub org: OrgId,
    /// The session's user, when the integration's lists are each user's.
    pub user: Option<String>,
}

impl Announcer {
    /// Announces `integration`'s changes on `feed`, for the session of
    /// `user` (heard by their own sessions only when the integration's
    /// lists are each user's).
    pub fn new(feed: ChangeFeed, integration: &Integration, user: &str) -> Self {
        Self {
            feed,
            org: integration.org_id.clone(),
            user: integration.is_per_user().then(|| user.to_owned()),
        }
    }

    /// Announces that `integration`'s `kind` list changed.
    pub fn announce(&self, integration: IntegrationId, kind: ListKind) {
        self.feed.announce(ListChange {
            org: self.org.clone(),
            integration,
            user: self.user.clone(),
            kind,
        });
    }
}

impl SessionHandler {
    /// A handler announcing `config`, invalidating `integration` in `cache`,
    /// answering elicitations with `answerer`.
    pub fn new(
        config: ClientConfig,
        integration: IntegrationId,
        cache: DiscoveryCache,
        answerer: Answerer,
    ) -> Self {
        Self {
            config,
            integration,
            cache,
            answerer,
            changes: None,
            teller: None,
            progress: ProgressRoutes::default(),
        }
    }

    /// The calls hearing the progress of the session's requests.
    pub fn progress(&self) -> &ProgressRoutes {
        &self.progress
    }

    /// This handler, telling the server's log messages and resource
    /// updates with `teller`.
    #[must_use]
    pub fn with_teller(mut self, teller: Teller) -> Self {
        self.teller = Some(teller);
        self
    }

    /// This handler, announcing the server's list changes with `changes`.
    #[must_use]
    pub fn with_announcer(mut self, changes: Announcer) -> Self {
        self.changes = Some(changes);
        self
    }

    /// This handler, introducing itself at `version` in an initialize
    /// handshake.
    pub fn with_protocol_version(mut self, version: rmcp::model::ProtocolVersion) -> Self {
        self.config = self.config.with_protocol_version(version);
        self
    }

    /// The answer of the endpoint's client whose call is on the session to
    /// a question of `kind`; an error for the server when no client is
    /// there to answer, or it does not.
    async fn ask_client<T: serde::de::DeserializeOwned>(
        &self,
        kind: QuestionKind,
        params: Value,
    ) -> Result<T, ErrorData> {
        let Some(reply) = self.answerer.ask_client(kind, params).await else {
            tracing::debug!(integration_id = %self.integration, ?kind, "no client answered the request");
            return Err(ErrorData::internal_error(
                "no MCP client answered the request: it is passed to the client whose call is running, when it declared the capability",
                None,
            ));
        };
        serde_json::from_value(reply).map_err(|error| {
            ErrorData::internal_error(
                format!("the MCP client's answer is unreadable: {error}"),
                None,
            )
        })
    }

    fn list_changed(&self, kind: ListKind) {
        tracing::debug!(integration_id = %self.integration, ?kind, "server list changed");
        self.cache.invalidate(self.integration);
        if let Some(changes) = &self.changes {
            changes.announce(self.integration, kind);
        }
    }
}

impl SessionClient for SessionHandler {
    fn at_version(self, version: rmcp::model::ProtocolVersion) -> Self {
        self.with_protocol_version(version)
    }
}

impl ClientHandler for SessionHandler {
    fn get_info(&self) -> ClientConfig {
        self.config.clone()
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let answer = self.answerer.answer(&request).await;
        tracing::debug!(integration_id = %self.integration, action = ?answer.action, "elicitation answered");
        Ok(answer)
    }

    #[expect(
        deprecated,
        reason = "sampling and roots are what clients of the initialize era answer; deprecated only for 2026-07-28"
    )]
    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        if self.config.capabilities.sampling.is_none() {
            return Err(ErrorData::method_not_found::<CreateMessageRequestMethod>());
        }
        let params = serde_json::to_value(&params)
            .map_err(|error| ErrorData::invalid_params(error.to_string(), None))?;
        self.ask_client(QuestionKind::Sampling, params).await
    }

    #[expect(
        deprecated,
        reason = "sampling and roots are what clients of the initialize era answer; deprecated only for 2026-07-28"
    )]
    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        if self.config.capabilities.roots.is_none() {
            return Err(ErrorData::method_not_found::<ListRootsRequestMethod>());
        }
        self.ask_client(QuestionKind::Roots, Value::Null).await
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.progress.tell(params).await;
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.list_changed(ListKind::Tools);
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.list_changed(ListKind::Resources);
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.list_changed(ListKind::Prompts);
    }

    #[expect(
        deprecated,
        reason = "logging is what clients of the initialize era speak; deprecated only for 2026-07-28"
    )]
    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        if let Some(teller) = &self.teller {
            teller.tell(NoticeKind::Log, &params);
        }
    }

    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        if let Some(teller) = &self.teller {
            teller.tell(NoticeKind::ResourceUpdated, &params);
        }
    }
}

/// A live MCP client session.
pub type McpSession = RunningService<RoleClient, SessionHandler>;

/// An open session and what must live as long as it.
#[derive(Debug)]
pub struct Live {
    /// The session.
    pub session: McpSession,
    /// What the transport keeps alive with the session (a stdio server's
    /// process group), and answers for when a request fails.
    pub transport: Attachment,
    /// Counts the session as open while it lives.
    pub open: crate::outbound::telemetry::SessionOpen,
}

/// A cached discovery: the integration version it belongs to, when it was
/// made, and what was found.
type CacheEntry = (i64, Instant, Arc<Discovery>);

/// Cached discovery results, by integration.
#[derive(Debug, Clone)]
pub struct DiscoveryCache {
    entries: Arc<Mutex<HashMap<IntegrationId, CacheEntry>>>,
    ttl: Duration,
}

impl DiscoveryCache {
    /// A cache whose entries live `ttl`.
    pub fn new(ttl: Duration) -> Self {
        Self {
            entries: Arc::default(),
            ttl,
        }
    }

    /// The fresh entry of `integration` at its current version: younger
    /// than the cache's lifetime and than the freshness the server stated
    /// (`ttlMs`; 0 means it is not kept at all).
    ///
    /// Entries are per integration, and every call of an integration
    /// carries the one credential its configuration holds, so a result the
    /// server marks `private` is never served for another credential.
    pub fn get(&self, integration: &Integration) -> Option<Arc<Discovery>> {
        let entries = self.entries.lock().ok()?;
        entries
            .get(&integration.id)
            .filter(|(version, at, discovery)| {
                let ttl = discovery.fresh_for.map_or(self.ttl, |f| f.min(self.ttl));
                *version == integration.updated_at && at.elapsed() < ttl
            })
            .map(|(_, _, discovery)| discovery.clone())
    }

    /// Stores a discovery of `integration`.
    pub fn put(&self, integration: &Integration, discovery: Arc<Discovery>) {
        if let Ok(mut entries) = self.entries.lock() {
            entries.insert(
                integration.id,
                (integration.updated_at, Instant::now(), discovery),
            );
        }
    }

    /// Drops the entry of `integration`.
    pub fn invalidate(&self, integration: IntegrationId) {
        if let Ok(mut entries) = self.entries.lock() {
            entries.remove(&integration);
        }
    }
}
