//! Approvals in SQL (SQLite or PostgreSQL through `sqlx::Any`): every change
//! of state one conditional update.

use std::fmt::Write as _;

use anyhow::Context as _;
use async_trait::async_trait;
use sqlx::{AnyPool, Row, any::AnyRow};

use crate::domain::{
    approvals::{
        Approval, ApprovalState, Binding,
        ports::{ApprovalQuery, ApprovalRepository, Decision},
    },
    policy::Gate,
};

/// [`ApprovalRepository`] over a SQL database.
#[derive(Debug, Clone)]
pub struct SqlApprovalRepository {
    pool: AnyPool,
}

const COLUMNS: &str = "id, org_id, requester, integration_id, tool_name, arguments_json, \
     arguments_digest, rule, reason, approver_role, \
     CAST(requester_may_approve AS INTEGER) AS requester_may_approve, state, decided_by, \
     comment, created_at, decided_at, expires_at";

impl SqlApprovalRepository {
    /// A repository over `pool`.
    pub fn new(pool: AnyPool) -> Self {
        Self { pool }
    }
}

fn decode(row: &AnyRow) -> anyhow::Result<Approval> {
    let state: String = row.try_get("state")?;
    Ok(Approval {
        id: row.try_get("id")?,
        binding: Binding {
            org_id: row.try_get("org_id")?,
            requester: row.try_get("requester")?,
            integration_id: row.try_get("integration_id")?,
            tool_name: row.try_get("tool_name")?,
            arguments_digest: row.try_get("arguments_digest")?,
        },
        arguments_json: row.try_get("arguments_json")?,
        gate: Gate {
            rule: row.try_get("rule")?,
            reason: row.try_get("reason")?,
            approver_role: row.try_get("approver_role")?,
            caller_may_approve: row.try_get::<i64, _>("requester_may_approve")? != 0,
        },
        state: ApprovalState::parse(&state).context("stored approval state is not valid")?,
        decided_by: row.try_get("decided_by")?,
        comment: row
            .try_get::<Option<String>, _>("comment")?
            .unwrap_or_default(),
        created_at: row.try_get("created_at")?,
        decided_at: row.try_get("decided_at")?,
        expires_at: row.try_get("expires_at")?,
    })
}

/// The SQL condition of one state as [`Approval::state_at`] tells it, the
/// time as `$now`.
fn state_condition(state: ApprovalState, now: &str) -> String {
    match state {
        ApprovalState::Pending | ApprovalState::Approved => {
            format!("(state = '{}' AND expires_at > {now})", state.as_str())
        }
        ApprovalState::Expired => format!(
            "(state = 'expired' OR (state IN ('pending', 'approved') AND expires_at <= {now}))"
        ),
        ApprovalState::Denied | ApprovalState::Used => format!("(state = '{}')", state.as_str()),
    }
}

/// The statement and its text arguments of a listing; `$1` is the time,
/// `$2` the limit.
fn list_sql(query: &ApprovalQuery) -> (String, Vec<String>) {
    let mut texts = vec![query.org_id.clone()];
    let mut sql = format!("SELECT {COLUMNS} FROM approvals WHERE org_id = $3");
    let next = |texts: &mut Vec<String>, value: String| {
        texts.push(value);
        format!("${}", texts.len() + 2)
    };
    if let Some((user, roles)) = &query.visible_to {
        let user = next(&mut texts, user.clone());
        let _ = write!(sql, " AND (requester = {user}");
        for role in roles {
            let role = next(&mut texts, role.clone());
            let _ = write!(sql, " OR approver_role = {role}");
        }
        sql.push(')');
    }
    if !query.states.is_empty() {
        let states: Vec<String> = query
            .states
            .iter()
            .map(|s| state_condition(*s, "$1"))
            .collect();
        let _ = write!(sql, " AND ({})", states.join(" OR "));
    }
    if let Some((created_at, id)) = &query.before {
        let id = next(&mut texts, id.clone());
        let created = next(&mut texts, created_at.to_string());
        // The time travels as text so that every argument after `$2` is one.
        let _ = write!(
            sql,
            " AND (created_at < CAST({created} AS BIGINT) OR (created_at = CAST({created} AS BIGINT) AND id < {id}))"
        );
    }
    sql.push_str(" ORDER BY created_at DESC, id DESC LIMIT $2");
    (sql, texts)
}

#[async_trait]
impl ApprovalRepository for SqlApprovalRepository {
    async fn create(
        &self,
        approval: &Approval,
        max_pending: u32,
        now: i64,
    ) -> anyhow::Result<bool> {
        let b = &approval.binding;
        let done = sqlx::query(
            "INSERT INTO approvals (id, org_id, requester, integration_id, tool_name, \
             arguments_json, arguments_digest, rule, reason, approver_role, \
             requester_may_approve, state, created_at, expires_at) \
             SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, 'pending', $12, $13 \
             WHERE (SELECT COUNT(*) FROM approvals WHERE org_id = $2 \
                    AND state = 'pending' AND expires_at > $14) < $15",
        )
        .bind(&approval.id)
        .bind(&b.org_id)
        .bind(&b.requester)
        .bind(&b.integration_id)
        .bind(&b.tool_name)
        .bind(&approval.arguments_json)
        .bind(&b.arguments_digest)
        .bind(&approval.gate.rule)
        .bind(&approval.gate.reason)
        .bind(&approval.gate.approver_role)
        .bind(approval.gate.caller_may_approve)
        .bind(approval.created_at)
        .bind(approval.expires_at)
        .bind(now)
        .bind(i64::from(max_pending))
        .execute(&self.pool)
        .await
        .context("failed to store an approval")?;
        Ok(done.rows_affected() == 1)
    }

    async fn get(&self, org_id: &str, id: &str) -> anyhow::Result<Option<Approval>> {
        let row = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM approvals WHERE org_id = $1 AND id = $2"
        ))
        .bind(org_id)
        .bind(id)
        .fetch_optional(&self.pool)
        .await
        .context("failed to read an approval")?;
        row.as_ref().map(decode).transpose()
    }

    async fn decide(&self, org_id: &str, id: &str, decision: &Decision) -> anyhow::Result<bool> {
        let state = if decision.approve {
            ApprovalState::Approved
        } else {
            ApprovalState::Denied
        };
        let done = sqlx::query(
            "UPDATE approvals SET state = $1, decided_by = $2, comment = $3, \
             decided_at = $4, expires_at = $5 \
             WHERE org_id = $6 AND id = $7 AND state = 'pending' AND expires_at > $4",
        )
        .bind(state.as_str())
        .bind(&decision.decided_by)
        .bind(&decision.comment)
        .bind(decision.decided_at)
        .bind(decision.expires_at)
        .bind(org_id)
        .bind(id)
        .execute(&self.pool)
        .await
        .context("failed to decide an approval")?;
        Ok(done.rows_affected() == 1)
    }

    async fn redeem(&self, id: &str, call: &Binding, now: i64) -> anyhow::Result<bool> {
        let done = sqlx::query(
            "UPDATE approvals SET state = 'used' \
             WHERE id = $1 AND org_id = $2 AND requester = $3 AND integration_id = $4 \
             AND tool_name = $5 AND arguments_digest = $6 AND state = 'approved' \
             AND expires_at > $7",
        )
        .bind(id)
        .bind(&call.org_id)
        .bind(&call.requester)
        .bind(&call.integration_id)
        .bind(&call.tool_name)
        .bind(&call.arguments_digest)
        .bind(now)
        .execute(&self.pool)
        .await
        .context("failed to use an approval")?;
        Ok(done.rows_affected() == 1)
    }

    async fn list(&self, query: &ApprovalQuery) -> anyhow::Result<Vec<Approval>> {
        let (sql, texts) = list_sql(query);
        let mut statement = sqlx::query(&sql)
            .bind(query.now)
            .bind(i64::try_from(query.limit).unwrap_or(i64::MAX));
        for text in &texts {
            statement = statement.bind(text);
        }
        let rows = statement
            .fetch_all(&self.pool)
            .await
            .context("failed to list approvals")?;
        rows.iter().map(decode).collect()
    }
}
