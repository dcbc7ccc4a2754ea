//! What the use cases call to record: the arguments kept or digested by the
//! organization's choice, the event emitted as a `tracing` event with target
//! `audit`, then appended to the organization's chain.

use std::{collections::HashSet, sync::Arc, time::Instant};

use serde_json::Value;

use super::{ports::AuditLog, record::AuditRecord};
use crate::domain::{
    bounds::{DEFAULT_MAX_SERVER_TEXT_BYTES, RESOURCE_URI},
    digest::arguments_digest,
    server_text::bound_in_place,
};

/// Which organizations' arguments are recorded, and how much of them.
#[derive(Debug, Clone, Default)]
pub struct AuditSettings {
    /// Organizations whose calls' arguments are recorded (the digest is
    /// recorded for every organization).
    pub record_arguments_orgs: HashSet<String>,
    /// Longest arguments text recorded, in bytes; longer arguments are
    /// recorded as their digest only, with a note in the reason.
    pub max_arguments_bytes: usize,
}

/// Records events through an [`AuditLog`].
#[derive(Clone)]
pub struct Auditor {
    log: Arc<dyn AuditLog>,
    settings: Arc<AuditSettings>,
}

impl std::fmt::Debug for Auditor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Auditor").finish_non_exhaustive()
    }
}

impl Auditor {
    /// Records to `log` under `settings`.
    pub fn new(log: Arc<dyn AuditLog>, settings: AuditSettings) -> Self {
        Self {
            log,
            settings: Arc::new(settings),
        }
    }

    /// The log recorded to.
    pub fn log(&self) -> &Arc<dyn AuditLog> {
        &self.log
    }

    /// Sets `record`'s arguments digest, and the arguments themselves when
    /// its organization records them and they fit.
    pub fn with_arguments(&self, mut record: AuditRecord, arguments: &Value) -> AuditRecord {
        record.arguments_digest = arguments_digest(arguments);
        if self.settings.record_arguments_orgs.contains(&record.org_id) {
            let text = arguments.to_string();
            if text.len() <= self.settings.max_arguments_bytes {
                record.arguments_json = text;
            } else {
                record.arguments_json = format!(
                    "(not recorded: {} bytes, more than {})",
                    text.len(),
                    self.settings.max_arguments_bytes
                );
            }
        }
        record
    }

    /// Emits `record` as a `tracing` event and appends it.
    ///
    /// A failed append does not fail the use case: the action has already
    /// happened (a tool with side effects has run), so refusing its result
    /// would only make the caller retry and run it twice. The failure is
    /// logged at `error` with the whole event, which the log pipeline keeps.
    ///
    /// Its target and reason are cut to their bounds first (a resource
    /// URI's, a server's text's), whatever wrote them: a row never holds
    /// more of a caller's or a server's text than a response would.
    pub async fn record(&self, mut record: AuditRecord) {
        bound_in_place(&mut record.target, RESOURCE_URI.max_bytes);
        bound_in_place(&mut record.reason, DEFAULT_MAX_SERVER_TEXT_BYTES);
        emit(&record);
        if let Err(error) = self.log.append(record.clone()).await {
            tracing::error!(
                target: "audit",
                org_id = %record.org_id,
                action = record.action.as_str(),
                error = format!("{error:#}"),
                "audit append failed"
            );
        }
    }
}

/// The event for the OpenTelemetry logs pipeline and the log files.
fn emit(record: &AuditRecord) {
    tracing::info!(
        target: "audit",
        org_id = %record.org_id,
        action = record.action.as_str(),
        outcome = record.outcome.as_str(),
        subject = %record.subject,
        service = %record.service,
        integration_id = %record.integration_id,
        audit_target = %record.target,
        arguments_digest = %record.arguments_digest,
        reason = %record.reason,
        rule = %record.rule,
        duration_micros = record.duration_micros,
        approval_id = %record.approval_id,
        "audit event"
    );
}

/// Microseconds since `started`.
pub fn micros_since(started: Instant) -> i64 {
    i64::try_from(started.elapsed().as_micros()).unwrap_or(i64::MAX)
}
