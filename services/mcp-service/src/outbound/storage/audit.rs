//! The audit chains in SQL (SQLite or PostgreSQL through `sqlx::Any`).
//!
//! An append locks its organization's row of `audit_chains` for the rest
//! of its transaction (an upsert: PostgreSQL locks the row, SQLite takes
//! the database's one write lock), so two replicas appending for one
//! organization take turns and the chain never forks. One transaction
//! costs a statement to lock each organization's chain, a few multi-row
//! INSERTs (see [`statement_rows`]) and one to move each head: each
//! statement is a round trip to the database (for SQLite, to its
//! connection's thread).

use std::collections::BTreeMap;

use anyhow::Context as _;
use async_trait::async_trait;
use sqlx::{Any, AnyPool, Row, Transaction, any::AnyRow};

use crate::domain::audit::{
    AuditAction, AuditEvent, AuditLog, AuditOutcome, AuditQuery, AuditRecord, ChainAnchor,
    chain::link,
};

/// [`AuditLog`] over a SQL database; each append its own transaction.
#[derive(Debug, Clone)]
pub struct SqlAuditLog {
    pool: AnyPool,
}

/// Why an append failed, and whether its events may be in the store.
#[derive(Debug, thiserror::Error)]
pub enum AppendFailed {
    /// It failed before its commit: nothing was written, and the same
    /// records may be appended again.
    #[error("{0:#}")]
    NotWritten(anyhow::Error),
    /// Its commit failed: the database may have stored the events or not,
    /// so appending them again could record them twice.
    #[error("{0:#}")]
    Unknown(anyhow::Error),
}

/// Most events one INSERT statement writes (19 parameters each: far below
/// the parameter limits of SQLite and PostgreSQL).
const ROWS_PER_INSERT: usize = 64;

/// How many of `pending` events the next INSERT writes: the largest power
/// of two up to [`ROWS_PER_INSERT`]. Each connection keeps every statement
/// it prepared, so the statements' shapes are few (seven), and a batch of
/// `n` events costs at most log₂ n + 1 of them below the cap.
fn statement_rows(pending: usize) -> usize {
    let cap = pending.clamp(1, ROWS_PER_INSERT);
    1 << cap.ilog2()
}

const COLUMNS: &str = "org_id, sequence, time_millis, action, outcome, subject, roles_json, \
     service, integration_id, target, arguments_digest, arguments_json, reason, rule, \
     duration_micros, trace_id, approval_id, previous_hash, hash";

impl SqlAuditLog {
    /// The chains in `pool` (SQLite or PostgreSQL).
    pub fn new(pool: AnyPool) -> Self {
        Self { pool }
    }

    /// Locks `org`'s chain row for the transaction (creating it the first
    /// time) and returns its bounds, in one statement: an upsert takes the
    /// row's lock on PostgreSQL and the write lock on SQLite.
    async fn lock_chain(
        &self,
        tx: &mut Transaction<'static, Any>,
        org: &str,
    ) -> anyhow::Result<ChainAnchor> {
        let row = sqlx::query(
            "INSERT INTO audit_chains \
             (org_id, head_sequence, head_hash, purged_through, purged_hash) \
             VALUES ($1, 0, '', 0, '') \
             ON CONFLICT (org_id) DO UPDATE SET head_sequence = audit_chains.head_sequence \
             RETURNING head_sequence, head_hash, purged_through, purged_hash",
        )
        .bind(org)
        .fetch_one(&mut **tx)
        .await
        .context("failed to lock an audit chain")?;
        anchor(&row)
    }

    /// Appends `records` of one transaction, each organization's in order;
    /// organizations are locked in a fixed order so two batches never wait
    /// on each other in a cycle.
    pub async fn append_all(&self, records: Vec<AuditRecord>) -> Result<(), AppendFailed> {
        let mut by_org: BTreeMap<String, Vec<AuditRecord>> = BTreeMap::new();
        for record in records {
            by_org
                .entry(record.org_id.clone())
                .or_default()
                .push(record);
        }
        let tx = self.stage(by_org).await.map_err(AppendFailed::NotWritten)?;
        tx.commit()
            .await
            .context("failed to commit an audit append")
            .map_err(AppendFailed::Unknown)
    }

    /// Writes each organization's records after its chain's head, in a
    /// transaction left for the caller to commit.
    async fn stage(
        &self,
        by_org: BTreeMap<String, Vec<AuditRecord>>,
    ) -> anyhow::Result<Transaction<'static, Any>> {
        let mut tx = self
            .pool
            .begin()
            .await
            .context("failed to begin an audit append")?;
        for (org, records) in by_org {
            let bounds = self.lock_chain(&mut tx, &org).await?;
            let mut head = (bounds.head_sequence, bounds.head_hash);
            let mut events = Vec::with_capacity(records.len());
            for record in records {
                let previous = (head.0 > 0).then_some((head.0, head.1.as_str()));
                let event = link(previous, record);
                head = (event.sequence, event.hash.clone());
                events.push(event);
            }
            let mut rest = events.as_slice();
            while !rest.is_empty() {
                let (rows, after) = rest.split_at(statement_rows(rest.len()));
                insert(&mut tx, rows).await?;
                rest = after;
            }
            sqlx::query(
                "UPDATE audit_chains SET head_sequence = $2, head_hash = $3 WHERE org_id = $1",
            )
            .bind(&org)
            .bind(head.0)
            .bind(&head.1)
            .execute(&mut *tx)
            .await
            .context("failed to move an audit chain's head")?;
        }
        Ok(tx)
    }

    /// Removes up to `batch` of `org`'s events older than `before_millis`.
    async fn purge_chain(
        &self,
        org: &str,
        before_millis: i64,
        batch: usize,
    ) -> anyhow::Result<u64> {
        let mut tx = self.pool.begin().await.context("failed to begin a purge")?;
        self.lock_chain(&mut tx, org).await?;
        let last = sqlx::query(
            "SELECT sequence, hash FROM audit_events \
             WHERE org_id = $1 AND time_millis < $2 ORDER BY sequence LIMIT $3",
        )
        .bind(org)
        .bind(before_millis)
        .bind(i64::try_from(batch).unwrap_or(i64::MAX))
        .fetch_all(&mut *tx)
        .await
        .context("failed to find old audit events")?
        .pop();
        let Some(last) = last else {
            return Ok(0);
        };
        let sequence: i64 = last.try_get("sequence")?;
        let hash: String = last.try_get("hash")?;
        let removed = sqlx::query("DELETE FROM audit_events WHERE org_id = $1 AND sequence <= $2")
            .bind(org)
            .bind(sequence)
            .execute(&mut *tx)
            .await
            .context("failed to remove old audit events")?
            .rows_affected();
        sqlx::query(
            "UPDATE audit_chains SET purged_through = $2, purged_hash = $3 WHERE org_id = $1",
        )
        .bind(org)
        .bind(sequence)
        .bind(&hash)
        .execute(&mut *tx)
        .await
        .context("failed to record a purge")?;
        tx.commit().await.context("failed to commit a purge")?;
        Ok(removed)
    }
}

/// Inserts `events` in one statement.
async fn insert(tx: &mut Transaction<'static, Any>, events: &[AuditEvent]) -> anyhow::Result<()> {
    let sql = format!(
        "INSERT INTO audit_events ({COLUMNS}) VALUES {}",
        placeholders(events.len(), COLUMNS.split(',').count())
    );
    let mut statement = sqlx::query(&sql);
    for event in events {
        let record = &event.record;
        let roles = serde_json::to_string(&record.roles).context("failed to encode roles")?;
        statement = statement
            .bind(&record.org_id)
            .bind(event.sequence)
            .bind(record.time_millis)
            .bind(record.action.as_str())
            .bind(record.outcome.as_str())
            .bind(&record.subject)
            .bind(roles)
            .bind(&record.service)
            .bind(&record.integration_id)
            .bind(&record.target)
            .bind(&record.arguments_digest)
            .bind(&record.arguments_json)
            .bind(&record.reason)
            .bind(&record.rule)
            .bind(record.duration_micros.unwrap_or(-1))
            .bind(&record.trace_id)
            .bind(&record.approval_id)
            .bind(&event.previous_hash)
            .bind(&event.hash);
    }
    statement
        .execute(&mut **tx)
        .await
        .context("failed to insert audit events")?;
    Ok(())
}

/// `($1, …, $columns), ($columns+1, …)`: the values of `rows` rows.
fn placeholders(rows: usize, columns: usize) -> String {
    (0..rows)
        .map(|row| {
            let values: Vec<String> = (1..=columns)
                .map(|column| format!("${}", row * columns + column))
                .collect();
            format!("({})", values.join(", "))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn anchor(row: &AnyRow) -> anyhow::Result<ChainAnchor> {
    Ok(ChainAnchor {
        head_sequence: row.try_get("head_sequence")?,
        head_hash: row.try_get("head_hash")?,
        purged_through: row.try_get("purged_through")?,
        purged_hash: row.try_get("purged_hash")?,
    })
}

/// A stored event as it was stored: a name this version does not know is
/// kept out of the hash's reach by failing the read, not by guessing.
fn decode(row: &AnyRow) -> anyhow::Result<AuditEvent> {
    let action: String = row.try_get("action")?;
    let outcome: String = row.try_get("outcome")?;
    let roles: String = row.try_get("roles_json")?;
    let duration: i64 = row.try_get("duration_micros")?;
    let record = AuditRecord {
        org_id: row.try_get("org_id")?,
        time_millis: row.try_get("time_millis")?,
        action: AuditAction::parse(&action).context("stored audit action is unknown")?,
        outcome: AuditOutcome::parse(&outcome).context("stored audit outcome is unknown")?,
        subject: row.try_get("subject")?,
        roles: serde_json::from_str(&roles).context("stored audit roles are not valid")?,
        service: row.try_get("service")?,
        integration_id: row.try_get("integration_id")?,
        target: row.try_get("target")?,
        arguments_digest: row.try_get("arguments_digest")?,
        arguments_json: row.try_get("arguments_json")?,
        reason: row.try_get("reason")?,
        rule: row.try_get("rule")?,
        duration_micros: (duration >= 0).then_some(duration),
        trace_id: row.try_get("trace_id")?,
        approval_id: row.try_get("approval_id")?,
    };
    Ok(AuditEvent {
        sequence: row.try_get("sequence")?,
        record,
        previous_hash: row.try_get("previous_hash")?,
        hash: row.try_get("hash")?,
    })
}

/// The `WHERE` clause of a listing and its text parameters after `$1`
/// (the organization); numbers are written into the clause, never text.
fn filters(query: &AuditQuery) -> (String, Vec<String>) {
    let mut clause = String::from("org_id = $1");
    let mut texts = Vec::new();
    let mut text = |column: &str, value: &Option<String>, clause: &mut String| {
        if let Some(value) = value {
            texts.push(value.clone());
            clause.push_str(&format!(" AND {column} = ${}", texts.len() + 1));
        }
    };
    text("subject", &query.subject, &mut clause);
    text("integration_id", &query.integration_id, &mut clause);
    text("target", &query.target, &mut clause);
    if let Some(start) = query.start_millis {
        clause.push_str(&format!(" AND time_millis >= {start}"));
    }
    if let Some(end) = query.end_millis {
        clause.push_str(&format!(" AND time_millis < {end}"));
    }
    if let Some(before) = query.before_sequence {
        clause.push_str(&format!(" AND sequence < {before}"));
    }
    if !query.outcomes.is_empty() {
        let names: Vec<String> = query
            .outcomes
            .iter()
            .map(|o| format!("'{}'", o.as_str()))
            .collect();
        clause.push_str(&format!(" AND outcome IN ({})", names.join(", ")));
    }
    (clause, texts)
}

#[async_trait]
impl AuditLog for SqlAuditLog {
    async fn append(&self, record: AuditRecord) -> anyhow::Result<()> {
        Ok(self.append_all(vec![record]).await?)
    }

    async fn list(&self, org: &str, query: &AuditQuery) -> anyhow::Result<Vec<AuditEvent>> {
        let (clause, texts) = filters(query);
        let sql = format!(
            "SELECT {COLUMNS} FROM audit_events WHERE {clause} ORDER BY sequence DESC LIMIT {}",
            query.limit
        );
        let mut statement = sqlx::query(&sql).bind(org);
        for text in texts {
            statement = statement.bind(text);
        }
        let rows = statement
            .fetch_all(&self.pool)
            .await
            .context("failed to list audit events")?;
        rows.iter().map(decode).collect()
    }

    async fn bounds(&self, org: &str) -> anyhow::Result<ChainAnchor> {
        let row = sqlx::query(
            "SELECT head_sequence, head_hash, purged_through, purged_hash \
             FROM audit_chains WHERE org_id = $1",
        )
        .bind(org)
        .fetch_optional(&self.pool)
        .await
        .context("failed to read an audit chain")?;
        row.as_ref()
            .map_or_else(|| Ok(ChainAnchor::default()), anchor)
    }

    async fn chain_page(
        &self,
        org: &str,
        after_sequence: i64,
        limit: usize,
    ) -> anyhow::Result<Vec<AuditEvent>> {
        let rows = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM audit_events WHERE org_id = $1 AND sequence > $2 \
             ORDER BY sequence LIMIT $3"
        ))
        .bind(org)
        .bind(after_sequence)
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .fetch_all(&self.pool)
        .await
        .context("failed to read an audit chain")?;
        rows.iter().map(decode).collect()
    }

    async fn purge(&self, before_millis: i64, batch: usize) -> anyhow::Result<u64> {
        let orgs: Vec<String> = sqlx::query(
            "SELECT DISTINCT org_id FROM audit_events WHERE time_millis < $1 LIMIT 100",
        )
        .bind(before_millis)
        .fetch_all(&self.pool)
        .await
        .context("failed to find chains to purge")?
        .iter()
        .map(|row| row.try_get("org_id"))
        .collect::<Result<_, _>>()?;
        let mut removed = 0;
        for org in orgs {
            let left = batch.saturating_sub(usize::try_from(removed).unwrap_or(usize::MAX));
            if left == 0 {
                break;
            }
            removed += self.purge_chain(&org, before_millis, left).await?;
        }
        Ok(removed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_goes_in_powers_of_two_up_to_the_cap() {
        let split = |mut n: usize| {
            let mut rows = Vec::new();
            while n > 0 {
                rows.push(statement_rows(n));
                n -= rows[rows.len() - 1];
            }
            rows
        };
        assert_eq!(split(1), [1]);
        assert_eq!(split(13), [8, 4, 1]);
        assert_eq!(split(64), [64]);
        assert_eq!(split(200), [64, 64, 64, 8]);
        assert_eq!(statement_rows(0), 1, "never a statement of no rows");
    }

    #[test]
    fn placeholders_number_every_value_once() {
        assert_eq!(placeholders(2, 3), "($1, $2, $3), ($4, $5, $6)");
    }
}
