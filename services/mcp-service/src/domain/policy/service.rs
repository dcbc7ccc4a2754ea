//! The policy use cases behind `PolicyService`: admins write, every member
//! reads.

use std::sync::Arc;

use switchboard_auth::Principal;
use switchboard_server::FieldViolation;

use super::{
    engine::PolicyEngine,
    error::PolicyError,
    model::{PolicyLimits, PolicyName, PolicyVersion},
    validate::{PolicyInput, validate},
};
use crate::domain::{
    audit::{AuditRecord, Auditor},
    integration::OrgId,
};

/// Writes and reads an organization's policies.
#[derive(Debug, Clone)]
pub struct PolicyAdmin {
    engine: Arc<PolicyEngine>,
    limits: PolicyLimits,
    auditor: Option<Auditor>,
}

/// Most versions one page of `ListPolicyVersions` holds.
pub const MAX_VERSIONS_PAGE: usize = 500;

fn require_admin(caller: &Principal) -> Result<(), PolicyError> {
    if caller.is_admin() {
        Ok(())
    } else {
        Err(PolicyError::Forbidden(
            "managing policies needs the admin role",
        ))
    }
}

fn org(caller: &Principal) -> OrgId {
    OrgId(caller.org_id.clone())
}

impl PolicyAdmin {
    /// Policies through `engine`, within `limits`.
    pub fn new(engine: Arc<PolicyEngine>, limits: PolicyLimits) -> Self {
        Self {
            engine,
            limits,
            auditor: None,
        }
    }

    /// Records every policy write and delete through `auditor`.
    #[must_use]
    pub fn with_audit(mut self, auditor: Option<Auditor>) -> Self {
        self.auditor = auditor;
        self
    }

    async fn record(&self, record: AuditRecord) {
        if let Some(auditor) = &self.auditor {
            auditor.record(record).await;
        }
    }

    /// Validates and compiles `input`, then writes it as a new version.
    pub async fn put(
        &self,
        caller: &Principal,
        input: PolicyInput,
        expected_version: i64,
    ) -> Result<PolicyVersion, PolicyError> {
        require_admin(caller)?;
        if expected_version < 0 {
            return Err(FieldViolation::new("expected_version", "must not be negative").into());
        }
        let (name, body) =
            validate(input, self.limits, self.engine.env()).map_err(PolicyError::Invalid)?;
        let org = org(caller);
        let repository = self.engine.repository();
        if expected_version == 0 {
            let count = repository.current(&org).await?.len();
            if count >= self.limits.max_policies_per_org {
                return Err(PolicyError::LimitReached(format!(
                    "the organization has {count} policies, the most it may have"
                )));
            }
        }
        let written = repository
            .put(&org, &name, &body, expected_version, &caller.user_id)
            .await?;
        self.engine.forget(&org);
        tracing::info!(policy = %name, version = written.version, "policy written");
        self.record(AuditRecord::policy_change(
            caller,
            name.as_str(),
            written.version,
            false,
        ))
        .await;
        Ok(written)
    }

    /// A version of a policy (the current one when `version` is `None`).
    pub async fn get(
        &self,
        caller: &Principal,
        name: &PolicyName,
        version: Option<i64>,
    ) -> Result<PolicyVersion, PolicyError> {
        self.engine
            .repository()
            .get(&org(caller), name, version)
            .await?
            .ok_or(PolicyError::NotFound)
    }

    /// The organization's current policies, by name.
    pub async fn list(&self, caller: &Principal) -> Result<Vec<PolicyVersion>, PolicyError> {
        let mut policies = self.engine.repository().current(&org(caller)).await?;
        policies.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(policies)
    }

    /// Versions of a policy older than `before`, newest first.
    pub async fn versions(
        &self,
        caller: &Principal,
        name: &PolicyName,
        before: Option<i64>,
        limit: usize,
    ) -> Result<Vec<PolicyVersion>, PolicyError> {
        let versions = self
            .engine
            .repository()
            .versions(&org(caller), name, before, limit.min(MAX_VERSIONS_PAGE))
            .await?;
        if versions.is_empty() && before.is_none() {
            return Err(PolicyError::NotFound);
        }
        Ok(versions)
    }

    /// Marks a policy deleted.
    pub async fn delete(
        &self,
        caller: &Principal,
        name: &PolicyName,
        expected_version: i64,
    ) -> Result<(), PolicyError> {
        require_admin(caller)?;
        let org = org(caller);
        self.engine
            .repository()
            .delete(&org, name, expected_version, &caller.user_id)
            .await?;
        self.engine.forget(&org);
        tracing::info!(policy = %name, "policy deleted");
        self.record(AuditRecord::policy_change(
            caller,
            name.as_str(),
            expected_version,
            true,
        ))
        .await;
        Ok(())
    }
}
