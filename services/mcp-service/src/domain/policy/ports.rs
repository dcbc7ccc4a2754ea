//! Where policy versions are kept.

use async_trait::async_trait;

pub use super::error::PolicyStoreError;
use super::model::{PolicyBody, PolicyName, PolicyVersion};
use crate::domain::integration::OrgId;

/// Durable, versioned storage of policies: every write is a new version,
/// a delete marks the policy deleted, and old versions stay readable.
#[async_trait]
pub trait PolicyRepository: Send + Sync + 'static {
    /// Writes `body` as the next version of `name`, when `expected_version`
    /// is its current version (0: when there is none, or it is deleted).
    async fn put(
        &self,
        org: &OrgId,
        name: &PolicyName,
        body: &PolicyBody,
        expected_version: i64,
        updated_by: &str,
    ) -> Result<PolicyVersion, PolicyStoreError>;
    /// A version of `name`; the current one when `version` is `None`
    /// (`None` when deleted). A given version is read even when deleted.
    async fn get(
        &self,
        org: &OrgId,
        name: &PolicyName,
        version: Option<i64>,
    ) -> Result<Option<PolicyVersion>, PolicyStoreError>;
    /// The current versions of the organization's policies not deleted.
    async fn current(&self, org: &OrgId) -> Result<Vec<PolicyVersion>, PolicyStoreError>;
    /// Versions of `name` older than `before` (all when `None`), newest
    /// first, at most `limit`.
    async fn versions(
        &self,
        org: &OrgId,
        name: &PolicyName,
        before: Option<i64>,
        limit: usize,
    ) -> Result<Vec<PolicyVersion>, PolicyStoreError>;
    /// Marks `name` deleted, when `expected_version` is its current version
    /// (0: whatever is current).
    async fn delete(
        &self,
        org: &OrgId,
        name: &PolicyName,
        expected_version: i64,
        deleted_by: &str,
    ) -> Result<(), PolicyStoreError>;
}
