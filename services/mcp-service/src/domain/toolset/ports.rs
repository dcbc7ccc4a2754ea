//! Where toolsets are kept.

use async_trait::async_trait;

use super::model::{Toolset, ToolsetName};
use crate::domain::integration::OrgId;

/// Why a toolset write or read failed.
#[derive(Debug, thiserror::Error)]
pub enum ToolsetStoreError {
    /// A toolset of that name exists already.
    #[error("a toolset named `{0}` already exists in this organization")]
    Exists(String),
    /// Anything else.
    #[error(transparent)]
    Other(#[from] anyhow::Error),
}

/// Durable storage of an organization's toolsets, keyed by name.
#[async_trait]
pub trait ToolsetRepository: Send + Sync + 'static {
    /// Stores a new toolset ([`ToolsetStoreError::Exists`] when its name is
    /// taken).
    async fn insert(&self, org: &OrgId, toolset: &Toolset) -> Result<(), ToolsetStoreError>;
    /// The toolset of that name.
    async fn get(
        &self,
        org: &OrgId,
        name: &ToolsetName,
    ) -> Result<Option<Toolset>, ToolsetStoreError>;
    /// Toolsets named after `after` (from the first when `None`), by name,
    /// at most `limit`.
    async fn list(
        &self,
        org: &OrgId,
        after: Option<&ToolsetName>,
        limit: usize,
    ) -> Result<Vec<Toolset>, ToolsetStoreError>;
    /// How many toolsets the organization holds.
    async fn count(&self, org: &OrgId) -> Result<usize, ToolsetStoreError>;
    /// Replaces the description, members and who-and-when of the toolset
    /// of that name; `false` when there is none.
    async fn update(&self, org: &OrgId, toolset: &Toolset) -> Result<bool, ToolsetStoreError>;
    /// Deletes the toolset of that name; `false` when there is none.
    async fn delete(&self, org: &OrgId, name: &ToolsetName) -> Result<bool, ToolsetStoreError>;
}
