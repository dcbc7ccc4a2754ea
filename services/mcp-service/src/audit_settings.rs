//! The settings of the audit trail: whether it is kept, whose arguments it
//! records, how long events are kept, and the writer's queue.

use std::{collections::HashSet, time::Duration};

use crate::domain::audit::{AuditSettings, retention::Retention};

/// The audit trail's settings.
#[derive(Debug, Clone, clap::Args)]
pub struct AuditArgs {
    /// Whether calls, changes and decisions are recorded in the audit trail.
    #[arg(long = "audit-enabled", env = "SWITCHBOARD_AUDIT_ENABLED", default_value_t = true, action = clap::ArgAction::Set)]
    pub enabled: bool,
    /// Organizations (comma-separated ids) whose calls' arguments are
    /// recorded; every other organization's are recorded as a digest only.
    #[arg(
        long = "audit-record-arguments-orgs",
        env = "SWITCHBOARD_AUDIT_RECORD_ARGUMENTS_ORGS",
        default_value = ""
    )]
    pub record_arguments_orgs: String,
    /// Longest arguments text recorded, in bytes.
    #[arg(long = "audit-max-arguments-bytes", env = "SWITCHBOARD_AUDIT_MAX_ARGUMENTS_BYTES", default_value_t = 64 * 1024)]
    pub max_arguments_bytes: usize,
    /// How long events are kept.
    #[arg(long = "audit-retention", env = "SWITCHBOARD_AUDIT_RETENTION", default_value = "90d", value_parser = humantime::parse_duration)]
    pub retention: Duration,
    /// How often old events are removed.
    #[arg(long = "audit-purge-interval", env = "SWITCHBOARD_AUDIT_PURGE_INTERVAL", default_value = "1h", value_parser = humantime::parse_duration)]
    pub purge_interval: Duration,
    /// Most events one purge transaction removes.
    #[arg(
        long = "audit-purge-batch",
        env = "SWITCHBOARD_AUDIT_PURGE_BATCH",
        default_value_t = 1000
    )]
    pub purge_batch: usize,
    /// Most events waiting for the writer; a call waits at most a second
    /// for room, then its event is logged only.
    #[arg(
        long = "audit-queue",
        env = "SWITCHBOARD_AUDIT_QUEUE",
        default_value_t = 10_000
    )]
    pub queue: usize,
    /// Most events one append transaction writes.
    #[arg(
        long = "audit-max-batch",
        env = "SWITCHBOARD_AUDIT_MAX_BATCH",
        default_value_t = 256
    )]
    pub max_batch: usize,
    /// Longest the writer gathers events for one append transaction after
    /// the first arrives (a call never waits for it; a listing flushes at
    /// once); 0 appends whatever has queued.
    #[arg(long = "audit-batch-wait", env = "SWITCHBOARD_AUDIT_BATCH_WAIT", default_value = "2ms", value_parser = humantime::parse_duration)]
    pub batch_wait: Duration,
}

impl Default for AuditArgs {
    fn default() -> Self {
        Self {
            enabled: true,
            record_arguments_orgs: String::new(),
            max_arguments_bytes: 64 * 1024,
            retention: Duration::from_secs(90 * 24 * 3600),
            purge_interval: Duration::from_secs(3600),
            purge_batch: 1000,
            queue: 10_000,
            max_batch: 256,
            batch_wait: Duration::from_millis(2),
        }
    }
}

impl AuditArgs {
    /// Whose arguments are recorded, and how much.
    pub fn settings(&self) -> AuditSettings {
        AuditSettings {
            record_arguments_orgs: self
                .record_arguments_orgs
                .split(',')
                .map(str::trim)
                .filter(|org| !org.is_empty())
                .map(str::to_owned)
                .collect::<HashSet<_>>(),
            max_arguments_bytes: self.max_arguments_bytes,
        }
    }

    /// What the purge keeps and how it runs.
    pub fn retention(&self) -> Retention {
        Retention {
            keep: self.retention,
            interval: self.purge_interval,
            batch: self.purge_batch.max(1),
        }
    }
}
