//! The toolset use cases behind `ToolsetsService`: admins write, every
//! member of the organization reads, and every write joins the audit trail.

use std::{collections::HashMap, sync::Arc};

use switchboard_auth::Principal;
use switchboard_server::FieldViolation;

use super::{
    model::{Toolset, ToolsetBody, ToolsetLimits, ToolsetName, is_valid_name},
    ports::{ToolsetRepository, ToolsetStoreError},
    validate::{BodyInput, MemberInput, toolset_name, validate_body},
};
use crate::domain::{
    audit::{AuditAction, AuditOutcome, AuditRecord, Auditor},
    error::{McpError, refusal},
    integration::{IntegrationId, OrgId},
    ports::IntegrationRepository,
};

/// Most toolsets one page of `ListToolsets` holds.
pub const MAX_PAGE: usize = 500;

/// The fields of a toolset an update replaces; `None` keeps the stored one.
#[derive(Debug, Clone, Default)]
pub struct ToolsetPatch {
    /// A new description.
    pub description: Option<String>,
    /// New members.
    pub members: Option<Vec<MemberInput>>,
}

/// A toolset with the current slug of each member's integration, in the
/// members' order (`None` for an integration deleted since).
#[derive(Debug, Clone)]
pub struct DescribedToolset {
    /// The toolset.
    pub toolset: Toolset,
    /// Each member's slug.
    pub slugs: Vec<Option<String>>,
}

/// Writes and reads an organization's toolsets.
#[derive(Clone)]
pub struct ToolsetAdmin {
    toolsets: Arc<dyn ToolsetRepository>,
    integrations: Arc<dyn IntegrationRepository>,
    limits: ToolsetLimits,
    auditor: Option<Auditor>,
}

impl std::fmt::Debug for ToolsetAdmin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolsetAdmin")
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

fn require_admin(caller: &Principal) -> Result<(), McpError> {
    if caller.is_admin() {
        Ok(())
    } else {
        Err(McpError::Forbidden(
            "managing toolsets needs the admin role",
        ))
    }
}

fn org(caller: &Principal) -> OrgId {
    OrgId(caller.org_id.clone())
}

impl From<ToolsetStoreError> for McpError {
    fn from(error: ToolsetStoreError) -> Self {
        match error {
            ToolsetStoreError::Exists(name) => Self::ToolsetExists(name),
            ToolsetStoreError::Other(error) => Self::Internal(error),
        }
    }
}

impl ToolsetAdmin {
    /// Toolsets kept in `toolsets`, members checked against `integrations`,
    /// within `limits`.
    pub fn new(
        toolsets: Arc<dyn ToolsetRepository>,
        integrations: Arc<dyn IntegrationRepository>,
        limits: ToolsetLimits,
    ) -> Self {
        Self {
            toolsets,
            integrations,
            limits,
            auditor: None,
        }
    }

    /// Records every toolset write, and every refused one, through
    /// `auditor`.
    #[must_use]
    pub fn with_audit(mut self, auditor: Option<Auditor>) -> Self {
        self.auditor = auditor;
        self
    }

    async fn record<T>(
        &self,
        caller: &Principal,
        name: &str,
        change: &str,
        outcome: &Result<T, McpError>,
    ) {
        let Some(auditor) = &self.auditor else {
            return;
        };
        let mut record = AuditRecord::by(caller, AuditAction::ToolsetChange, AuditOutcome::Ok)
            .target(name)
            .reason(change);
        if let Err(error) = outcome {
            (record.outcome, record.reason, record.rule) = refusal(error);
        }
        auditor.record(record).await;
    }

    /// Validates `input`, checks its members exist in the caller's
    /// organization, and stores it as toolset `name`.
    pub async fn create(
        &self,
        caller: &Principal,
        name: &str,
        input: BodyInput,
    ) -> Result<DescribedToolset, McpError> {
        let outcome = self.create_unrecorded(caller, name, input).await;
        // A name out of shape is not copied into the trail: it may be as
        // long as a request.
        let target = if is_valid_name(name) {
            name
        } else {
            "(invalid name)"
        };
        self.record(caller, target, "created", &outcome).await;
        outcome
    }

    async fn create_unrecorded(
        &self,
        caller: &Principal,
        name: &str,
        input: BodyInput,
    ) -> Result<DescribedToolset, McpError> {
        require_admin(caller)?;
        let name = toolset_name("toolset.name", name);
        let body = validate_body(input, self.limits);
        let (name, body) = match (name, body) {
            (Ok(name), Ok(body)) => (name, body),
            (name, body) => {
                let mut violations: Vec<FieldViolation> = name.err().into_iter().collect();
                violations.extend(body.err().unwrap_or_default());
                return Err(McpError::Invalid(violations));
            }
        };
        let org = org(caller);
        let slugs = self.check_members(&org, &body).await?;
        let count = self.toolsets.count(&org).await?;
        if count >= self.limits.max_toolsets_per_org {
            return Err(McpError::LimitReached(format!(
                "the organization has {count} toolsets, the most it may have"
            )));
        }
        let now = switchboard_db::now_millis();
        let toolset = Toolset {
            name,
            body,
            created_by: caller.user_id.clone(),
            created_at: now,
            updated_by: caller.user_id.clone(),
            updated_at: now,
        };
        self.toolsets.insert(&org, &toolset).await?;
        tracing::info!(toolset = %toolset.name, members = toolset.body.members.len(), "toolset created");
        Ok(DescribedToolset { toolset, slugs })
    }

    /// The slug of each member's integration, or INVALID_ARGUMENT naming
    /// every member whose integration the organization does not have.
    async fn check_members(
        &self,
        org: &OrgId,
        body: &ToolsetBody,
    ) -> Result<Vec<Option<String>>, McpError> {
        let slugs = self.slugs(org, body).await?;
        let violations: Vec<FieldViolation> = slugs
            .iter()
            .zip(&body.members)
            .enumerate()
            .filter(|(_, (slug, _))| slug.is_none())
            .map(|(i, (_, member))| {
                FieldViolation::new(
                    format!("toolset.members[{i}].integration_id"),
                    format!(
                        "no integration {} in this organization",
                        member.integration_id
                    ),
                )
            })
            .collect();
        if violations.is_empty() {
            Ok(slugs)
        } else {
            Err(McpError::Invalid(violations))
        }
    }

    /// The current slug of each member's integration, `None` for one the
    /// organization does not have (deleted, or never its own).
    async fn slugs(
        &self,
        org: &OrgId,
        body: &ToolsetBody,
    ) -> Result<Vec<Option<String>>, McpError> {
        let mut known = HashMap::new();
        self.slugs_with(org, body, &mut known).await
    }

    async fn slugs_with(
        &self,
        org: &OrgId,
        body: &ToolsetBody,
        known: &mut HashMap<IntegrationId, Option<String>>,
    ) -> Result<Vec<Option<String>>, McpError> {
        let mut slugs = Vec::with_capacity(body.members.len());
        for member in &body.members {
            let id = member.integration_id;
            let slug = match known.get(&id) {
                Some(slug) => slug.clone(),
                None => {
                    let found = self
                        .integrations
                        .get(org, id)
                        .await
                        .map_err(anyhow::Error::from)?;
                    let slug = found.map(|i| i.slug.as_str().to_owned());
                    known.insert(id, slug.clone());
                    slug
                }
            };
            slugs.push(slug);
        }
        Ok(slugs)
    }

    /// The toolset of that name, with its members' slugs.
    pub async fn get(
        &self,
        caller: &Principal,
        name: &ToolsetName,
    ) -> Result<DescribedToolset, McpError> {
        let org = org(caller);
        let toolset = self
            .toolsets
            .get(&org, name)
            .await?
            .ok_or(McpError::ToolsetNotFound)?;
        let slugs = self.slugs(&org, &toolset.body).await?;
        Ok(DescribedToolset { toolset, slugs })
    }

    /// A page of the organization's toolsets named after `after`, by name,
    /// and whether more follow.
    pub async fn list(
        &self,
        caller: &Principal,
        after: Option<&ToolsetName>,
        limit: usize,
    ) -> Result<(Vec<DescribedToolset>, bool), McpError> {
        let org = org(caller);
        let limit = limit.clamp(1, MAX_PAGE);
        let mut toolsets = self.toolsets.list(&org, after, limit + 1).await?;
        let more = toolsets.len() > limit;
        toolsets.truncate(limit);
        let mut known = HashMap::new();
        let mut described = Vec::with_capacity(toolsets.len());
        for toolset in toolsets {
            let slugs = self.slugs_with(&org, &toolset.body, &mut known).await?;
            described.push(DescribedToolset { toolset, slugs });
        }
        Ok((described, more))
    }

    /// Replaces the fields `patch` sets, the members checked as on create.
    pub async fn update(
        &self,
        caller: &Principal,
        name: &ToolsetName,
        patch: ToolsetPatch,
    ) -> Result<DescribedToolset, McpError> {
        let outcome = self.update_unrecorded(caller, name, patch).await;
        self.record(caller, name.as_str(), "updated", &outcome)
            .await;
        outcome
    }

    async fn update_unrecorded(
        &self,
        caller: &Principal,
        name: &ToolsetName,
        patch: ToolsetPatch,
    ) -> Result<DescribedToolset, McpError> {
        require_admin(caller)?;
        let org = org(caller);
        let mut toolset = self
            .toolsets
            .get(&org, name)
            .await?
            .ok_or(McpError::ToolsetNotFound)?;
        let members = match patch.members {
            Some(members) => members,
            None => toolset.body.members.iter().map(MemberInput::from).collect(),
        };
        let input = BodyInput {
            description: patch.description.unwrap_or(toolset.body.description),
            members,
        };
        toolset.body = validate_body(input, self.limits).map_err(McpError::Invalid)?;
        let slugs = self.check_members(&org, &toolset.body).await?;
        toolset.updated_by = caller.user_id.clone();
        toolset.updated_at = switchboard_db::now_millis();
        if !self.toolsets.update(&org, &toolset).await? {
            return Err(McpError::ToolsetNotFound);
        }
        tracing::info!(toolset = %name, members = toolset.body.members.len(), "toolset updated");
        Ok(DescribedToolset { toolset, slugs })
    }

    /// Deletes the toolset of that name.
    pub async fn delete(&self, caller: &Principal, name: &ToolsetName) -> Result<(), McpError> {
        let outcome = self.delete_unrecorded(caller, name).await;
        self.record(caller, name.as_str(), "deleted", &outcome)
            .await;
        outcome
    }

    async fn delete_unrecorded(
        &self,
        caller: &Principal,
        name: &ToolsetName,
    ) -> Result<(), McpError> {
        require_admin(caller)?;
        if !self.toolsets.delete(&org(caller), name).await? {
            return Err(McpError::ToolsetNotFound);
        }
        tracing::info!(toolset = %name, "toolset deleted");
        Ok(())
    }
}

impl From<&super::model::Member> for MemberInput {
    fn from(member: &super::model::Member) -> Self {
        Self {
            integration_id: member.integration_id.to_string(),
            tools: member.tools.clone(),
            resources: member.resources.clone(),
            overrides: member
                .overrides
                .iter()
                .map(|o| super::validate::OverrideInput {
                    tool: o.tool.clone(),
                    name: o.name.clone().unwrap_or_default(),
                    description: o.description.clone().unwrap_or_default(),
                    hidden: o.hidden,
                })
                .collect(),
        }
    }
}
