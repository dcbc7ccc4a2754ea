//! The ports of mcp-service's domain: what it needs from storage and from MCP
//! servers. Adapters in `outbound` implement them.

use std::{sync::Arc, time::Duration};

use async_trait::async_trait;
use rmcp::model::{
    CompleteRequestParams, CompleteResult, GetPromptResult, Prompt, ReadResourceResult, Resource,
    ResourceTemplate, Tool,
};
// Limits in messages are spelled as runs-service spells them when it words
// a failure from the same number.
pub use switchboard_server::ByteSize;

use super::integration::{Integration, IntegrationId, OrgId, Slug};
use super::outcome::{Outcome, ToolOutcome};

/// A page request over an organization's integrations, oldest first.
#[derive(Debug, Clone, Default)]
pub struct ListQuery {
    /// Resume after this `(created_at, id)`.
    pub after: Option<(i64, IntegrationId)>,
    /// Maximum rows.
    pub limit: u32,
    /// Only enabled integrations.
    pub enabled_only: bool,
}

/// Why storage failed.
#[derive(Debug, thiserror::Error)]
pub enum RepositoryError {
    /// Another integration of the organization has the slug.
    #[error("slug taken")]
    SlugTaken,
    /// Anything else.
    #[error(transparent)]
    Other(#[from] anyhow::Error),
}

/// Durable storage of integrations, secrets sealed at rest.
#[async_trait]
pub trait IntegrationRepository: Send + Sync + 'static {
    /// Stores a new integration.
    async fn insert(&self, integration: &Integration) -> Result<(), RepositoryError>;
    /// The integration `id` of `org`, if any.
    async fn get(
        &self,
        org: &OrgId,
        id: IntegrationId,
    ) -> Result<Option<Integration>, RepositoryError>;
    /// The integration of `org` whose slug is `slug`, if any.
    async fn find_by_slug(
        &self,
        org: &OrgId,
        slug: &Slug,
    ) -> Result<Option<Integration>, RepositoryError>;
    /// A page of `org`'s integrations.
    async fn list(
        &self,
        org: &OrgId,
        query: &ListQuery,
    ) -> Result<Vec<Integration>, RepositoryError>;
    /// Replaces a stored integration; false when it does not exist.
    async fn update(&self, integration: &Integration) -> Result<bool, RepositoryError>;
    /// Deletes an integration; false when it does not exist.
    async fn delete(&self, org: &OrgId, id: IntegrationId) -> Result<bool, RepositoryError>;
    /// The name and state of each of `ids` that `org` has, in one read and
    /// in no particular order; an id `org` does not have is left out. Reads
    /// no secret.
    async fn heads(
        &self,
        org: &OrgId,
        ids: &[IntegrationId],
    ) -> Result<Vec<IntegrationHead>, RepositoryError>;
}

/// What a toolset needs to know of a member integration: no configuration,
/// no secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IntegrationHead {
    /// The integration.
    pub id: IntegrationId,
    /// Its current slug.
    pub slug: Slug,
    /// Whether it is enabled.
    pub enabled: bool,
}

/// What an MCP server said about itself when probed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServerIdentity {
    /// Its name.
    pub name: String,
    /// Its display title.
    pub title: Option<String>,
    /// Its version.
    pub version: String,
    /// The negotiated protocol version.
    pub protocol_version: String,
    /// Its instructions for clients.
    pub instructions: Option<String>,
}

/// The outcome of connecting to an integration's server and listing what it
/// offers.
#[derive(Debug, Clone, Default)]
pub struct ProbeReport {
    /// Why it failed, or `None` when it succeeded. Never contains secrets.
    pub error: Option<String>,
    /// The server, when the handshake succeeded.
    pub server: Option<ServerIdentity>,
    /// Tools listed.
    pub tool_count: usize,
    /// Resources listed.
    pub resource_count: usize,
    /// Resource templates listed.
    pub resource_template_count: usize,
    /// Prompts listed.
    pub prompt_count: usize,
    /// Time taken.
    pub latency: Duration,
}

/// What an integration's server offers, each item in the protocol's own
/// type (`inbound` maps it to the contract; schemas stay exact JSON).
#[derive(Debug, Clone, Default)]
pub struct Discovery {
    /// The server.
    pub server: ServerIdentity,
    /// Tools, every page, ordered by name.
    pub tools: Vec<Tool>,
    /// Resources, every page.
    pub resources: Vec<Resource>,
    /// Resource templates, every page.
    pub resource_templates: Vec<ResourceTemplate>,
    /// Prompts, every page.
    pub prompts: Vec<Prompt>,
    /// When the server was asked, Unix milliseconds.
    pub discovered_at: i64,
    /// How long the server says its listings stay fresh (the shortest
    /// `ttlMs` of them), when it says so.
    pub fresh_for: Option<Duration>,
}

/// A started authorization: where to send the user's browser.
#[derive(Debug, Clone)]
pub struct StartedAuthorization {
    /// The authorization server's URL, with PKCE and `state`.
    pub authorization_url: String,
    /// The `state` the authorization server sends back.
    pub state: String,
}

/// What the authorization server sent to the redirect URI.
#[derive(Clone)]
pub struct AuthorizationAnswer {
    /// The `state` parameter.
    pub state: String,
    /// The `code` parameter (one use, short-lived; never logged).
    pub code: String,
    /// The `iss` parameter (RFC 9207), when sent.
    pub issuer: Option<String>,
}

impl std::fmt::Debug for AuthorizationAnswer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthorizationAnswer")
            .field("issuer", &self.issuer)
            .finish_non_exhaustive()
    }
}

/// Why an authorization could not be started or completed.
#[derive(Debug, thiserror::Error)]
pub enum AuthorizationError {
    /// No authorization of the caller's waits under this `state`.
    #[error(
        "no authorization of yours was started with this state, or it expired or was completed"
    )]
    UnknownState,
    /// The integration is not authorized per user.
    #[error("the integration does not use OAuth authorization code")]
    NotPerUser,
    /// The authorization server, or the MCP server's metadata, failed.
    #[error("authorization failed: {0}")]
    Failed(String),
    /// Storage or sealing failed.
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

/// Where OpenAPI documents given by URL are read from.
#[async_trait]
pub trait DocumentSource: Send + Sync + 'static {
    /// The text at `url`, at most `max_bytes` of it: fetched under the
    /// outbound address policy, carrying no credential, following no
    /// redirect. The error says why not, for the admin.
    async fn fetch(&self, url: &str, max_bytes: usize) -> Result<String, String>;
}

/// Per-user OAuth authorization code grants.
#[async_trait]
pub trait Authorizations: Send + Sync + 'static {
    /// Starts authorizing `user` for `integration`; `challenge` is the
    /// server's `WWW-Authenticate` when a call was refused (it names the
    /// metadata and scopes to ask for).
    async fn start(
        &self,
        integration: &Integration,
        user: &str,
        challenge: Option<&str>,
    ) -> Result<StartedAuthorization, AuthorizationError>;
    /// Completes an authorization `user` of `org` started; returns its
    /// integration.
    async fn complete(
        &self,
        org: &OrgId,
        user: &str,
        answer: AuthorizationAnswer,
    ) -> Result<IntegrationId, AuthorizationError>;
}

/// Why a call to an MCP server did not produce a result. Messages are meant
/// for the model and for admins: no secrets, no internals.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum CallError {
    /// The server needs the caller's authorization (OAuth) first; the
    /// server's `WWW-Authenticate` challenge, when it sent one.
    #[error("the integration needs your authorization")]
    AuthorizationRequired(Option<String>),
    /// The server could not be reached or the handshake failed.
    #[error("could not connect to the MCP server: {0}")]
    Connect(String),
    /// The authorization server refused to exchange the caller's token for
    /// one on their behalf (or the call carried none); nothing was sent to
    /// the MCP server.
    #[error("{0}")]
    ExchangeRefused(String),
    /// The server answered with a JSON-RPC error.
    #[error("{message}")]
    Upstream {
        /// JSON-RPC error code.
        code: i32,
        /// The server's message.
        message: String,
    },
    /// The session broke during the call.
    #[error("the connection to the MCP server failed: {0}")]
    Transport(String),
    /// No answer within the time limit; a cancellation was sent.
    #[error("timed out after {}s", .0.as_secs_f64())]
    Timeout(Duration),
    /// The result exceeded the size limit. The session stays open and the
    /// call is not made again.
    #[error("the result is larger than {}", ByteSize(*.limit))]
    TooLarge {
        /// The limit.
        limit: usize,
    },
    /// A listing went past a discovery bound (pages, items or bytes).
    #[error("{0}")]
    ListingTooLong(String),
    /// A limit of mcp-service (sessions of an organization, say) is reached;
    /// nothing was sent to the server.
    #[error("{message}; retry in {}s", .retry_after.as_secs().max(1))]
    Exhausted {
        /// What is exhausted.
        message: String,
        /// When trying again may succeed.
        retry_after: Duration,
    },
}

/// The upstream session a call belongs to: calls with the same scope share one
/// MCP session of an integration (one conversation, one session). The user
/// is the one whose credentials a per-user (OAuth) integration's session
/// carries.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SessionScope {
    /// The user the session acts for.
    pub user: String,
    /// The scope within the user's (a conversation, say).
    pub name: String,
}

impl SessionScope {
    /// The scope `name` of `user`.
    pub fn new(user: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            user: user.into(),
            name: name.into(),
        }
    }
}

/// A tool call: the tool, its arguments, and the caller's answers when it
/// resumes a multi-round-trip request.
#[derive(Debug, Clone)]
pub struct ToolCall {
    /// The server's own tool name.
    pub name: super::bounds::ToolName,
    /// The arguments, a JSON object.
    pub arguments: serde_json::Map<String, serde_json::Value>,
    /// The caller's answers; empty for a new call.
    pub answers: InputAnswers,
    /// The server's task these answers are for, when the server runs the
    /// call as a task (the MCP Tasks extension): the call resumes that task
    /// and never starts the tool again.
    pub task_id: Option<String>,
    /// Where the server's progress reports on the call go, when its caller
    /// asked for them.
    pub progress: Option<crate::domain::progress::ProgressSink>,
}

/// The caller's answers to a server's input requests, carried into a call
/// that resumes a multi-round-trip request (the server answered an earlier
/// call with `input_required`). Empty for a new call.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct InputAnswers {
    /// The results (`ElicitResult`, `CreateMessageResult`, `ListRootsResult`
    /// wire JSON), by the keys the server gave its requests.
    pub responses: std::collections::BTreeMap<String, serde_json::Value>,
    /// The server's `requestState`, unchanged.
    pub request_state: Option<String>,
}

/// A request an MCP client makes of the upstream session the endpoint
/// opened for its session, passed on as it is.
#[derive(Debug, Clone, PartialEq)]
pub enum SessionRequest {
    /// `logging/setLevel`: the least severe level the server's log
    /// messages on the session should have (`debug` … `emergency`).
    SetLevel(String),
    /// `resources/subscribe`: tell of the resource's updates.
    Subscribe(super::bounds::ResourceUri),
    /// `resources/unsubscribe`: stop telling of them.
    Unsubscribe(super::bounds::ResourceUri),
    /// `completion/complete` of an argument of what it names, its params
    /// with the server's own names.
    Complete(Completing, CompleteRequestParams),
}

/// What a completion completes an argument of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Completing {
    /// A prompt, by the server's own name.
    Prompt(super::bounds::PromptName),
    /// A resource template, by its URI template.
    Resource(super::bounds::ResourceUri),
}

/// Talks to the MCP servers of integrations on reused sessions.
#[async_trait]
pub trait McpGateway: Send + Sync + 'static {
    /// Connects to `integration`'s server on a fresh session, lists its
    /// capabilities and disconnects. Failure is in the report, not an error.
    async fn probe(&self, integration: &Integration) -> ProbeReport;
    /// Everything the server offers, from the cache unless `bypass_cache`,
    /// as `user` sees it (for a per-user integration, with their token).
    async fn discover(
        &self,
        integration: &Integration,
        user: &str,
        bypass_cache: bool,
        timeout: Duration,
    ) -> Result<Arc<Discovery>, CallError>;
    /// Calls a tool, resuming with `answers` when they are not empty (and
    /// the server's task `call.task_id`, when set); returns its result, or
    /// the input the server asks for that only the caller can give (with
    /// the task's id when a task of the server asks). A task the server
    /// runs for the call is followed to its end within `timeout`, and
    /// cancelled past it.
    async fn call_tool(
        &self,
        integration: &Integration,
        scope: &SessionScope,
        call: ToolCall,
        timeout: Duration,
    ) -> Result<ToolOutcome, CallError>;
    /// Reads a resource, resuming with `answers` when they are not empty;
    /// returns its contents (or, as for a tool call, the input asked).
    async fn read_resource(
        &self,
        integration: &Integration,
        scope: &SessionScope,
        uri: &str,
        answers: InputAnswers,
        timeout: Duration,
    ) -> Result<Outcome<ReadResourceResult>, CallError>;
    /// Renders a prompt; returns its messages (or, as for a tool call, the
    /// input asked).
    async fn get_prompt(
        &self,
        integration: &Integration,
        scope: &SessionScope,
        name: &str,
        arguments: serde_json::Map<String, serde_json::Value>,
        answers: InputAnswers,
        timeout: Duration,
    ) -> Result<Outcome<GetPromptResult>, CallError>;
    /// Makes `request` on `scope`'s session with `integration`'s server,
    /// opening it when it is not open yet; returns the completion of a
    /// completion request, `None` for the requests whose result is empty.
    async fn session_request(
        &self,
        integration: &Integration,
        scope: &SessionScope,
        request: SessionRequest,
        timeout: Duration,
    ) -> Result<Option<CompleteResult>, CallError>;
    /// Drops the sessions and cached discovery of an integration that changed
    /// or was deleted.
    async fn forget(&self, integration: IntegrationId);
}
