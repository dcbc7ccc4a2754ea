//! The ports of mcp-service's domain: what it needs from storage and from MCP
//! servers. Adapters in `outbound` implement them.

use std::time::Duration;

use async_trait::async_trait;

use super::integration::{Integration, IntegrationId, OrgId};

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

/// Connects to MCP servers.
#[async_trait]
pub trait McpProbe: Send + Sync + 'static {
    /// Connects to `integration`'s server, lists its capabilities and
    /// disconnects. Failure is reported in the result, not as an error.
    async fn probe(&self, integration: &Integration) -> ProbeReport;
}
