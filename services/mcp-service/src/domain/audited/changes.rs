//! [`IntegrationChanges`]: the writes of [`IntegrationService`], each
//! recorded with the change as its target (`create`, `update`, `delete`,
//! `enable`, `disable`) and its outcome.

use std::ops::Deref;

use switchboard_auth::Principal;

use crate::domain::{
    audit::{
        record::{AuditAction, AuditOutcome, AuditRecord},
        recorder::Auditor,
    },
    error::{McpError, refusal},
    input::{IntegrationPatch, NewIntegration},
    integration::{Integration, IntegrationId},
    service::IntegrationService,
};

/// [`IntegrationService`] with every change recorded; reads reach the
/// inner service through `Deref`.
#[derive(Debug, Clone)]
pub struct IntegrationChanges {
    integrations: IntegrationService,
    auditor: Option<Auditor>,
}

impl Deref for IntegrationChanges {
    type Target = IntegrationService;

    fn deref(&self) -> &IntegrationService {
        &self.integrations
    }
}

impl IntegrationChanges {
    /// `integrations`, its changes recorded by `auditor` when there is one.
    pub fn new(integrations: IntegrationService, auditor: Option<Auditor>) -> Self {
        Self {
            integrations,
            auditor,
        }
    }

    async fn record<T>(
        &self,
        caller: &Principal,
        change: &str,
        id: Option<IntegrationId>,
        outcome: &Result<T, McpError>,
        id_of: impl FnOnce(&T) -> Option<IntegrationId>,
    ) {
        let Some(auditor) = &self.auditor else {
            return;
        };
        let mut record = AuditRecord::by(caller, AuditAction::IntegrationChange, AuditOutcome::Ok)
            .target(change);
        let id = match outcome {
            Ok(value) => id_of(value).or(id),
            Err(error) => {
                (record.outcome, record.reason, record.rule) = refusal(error);
                id
            }
        };
        if let Some(id) = id {
            record = record.on(id);
        }
        auditor.record(record).await;
    }

    /// Creates an integration, recorded.
    pub async fn create(
        &self,
        caller: &Principal,
        new: NewIntegration,
    ) -> Result<Integration, McpError> {
        let outcome = self.integrations.create(caller, new).await;
        self.record(caller, "create", None, &outcome, |i| Some(i.id))
            .await;
        outcome
    }

    /// Changes an integration, recorded.
    pub async fn update(
        &self,
        caller: &Principal,
        id: IntegrationId,
        patch: IntegrationPatch,
    ) -> Result<Integration, McpError> {
        let outcome = self.integrations.update(caller, id, patch).await;
        self.record(caller, "update", Some(id), &outcome, |_| None)
            .await;
        outcome
    }

    /// Deletes an integration, recorded.
    pub async fn delete(&self, caller: &Principal, id: IntegrationId) -> Result<(), McpError> {
        let outcome = self.integrations.delete(caller, id).await;
        self.record(caller, "delete", Some(id), &outcome, |()| None)
            .await;
        outcome
    }

    /// Enables or disables an integration, recorded.
    pub async fn set_enabled(
        &self,
        caller: &Principal,
        id: IntegrationId,
        enabled: bool,
    ) -> Result<Integration, McpError> {
        let outcome = self.integrations.set_enabled(caller, id, enabled).await;
        let change = if enabled { "enable" } else { "disable" };
        self.record(caller, change, Some(id), &outcome, |_| None)
            .await;
        outcome
    }
}
