//! Messages: a thread's history, numbered in order.

use std::collections::HashMap;

use anyhow::Context as _;
use futures::TryStreamExt as _;
use sqlx::{AnyConnection, Row, any::AnyRow};

use super::*;
use crate::domain::{
    entities::{Message, Role},
    history::WindowMeter,
};

pub(super) fn decode_message(row: &AnyRow) -> anyhow::Result<Message> {
    let role: String = row.try_get("role")?;
    let content_json: String = row.try_get("content_json")?;
    Ok(Message {
        id: stored_id(row, "id")?,
        thread_id: stored_id(row, "thread_id")?,
        run_id: stored_optional_id(row, "run_id")?,
        seq: row.try_get("seq")?,
        role: Role::parse(&role)
            .with_context(|| format!("stored message role {role:?} is not valid"))?,
        parts: serde_json::from_str(&content_json)
            .context("stored message content is not valid")?,
        created_at: row.try_get("created_at")?,
    })
}

/// Messages to append to one thread in one statement: the statement numbers
/// them after the thread's last one and stores them, and a trigger marks the
/// thread active. Two appends racing on one thread can pick the same
/// numbers: the loser breaks UNIQUE (thread_id, seq) and numbers again.
pub(super) struct Append<'a> {
    thread_id: ThreadId,
    messages: &'a [Message],
    contents: Vec<String>,
    sql: String,
}

impl<'a> Append<'a> {
    pub(super) fn new(thread_id: ThreadId, messages: &'a [Message]) -> anyhow::Result<Self> {
        let contents = messages
            .iter()
            .map(|m| to_json(&m.parts, "failed to encode a message's parts"))
            .collect::<anyhow::Result<Vec<_>>>()?;
        let rows = (0..messages.len())
            .map(|i| {
                let p = 2 + i * 5;
                format!(
                    "SELECT ${p} AS id, ${} AS run_id, ${} AS role, ${} AS content_json, \
                     CAST(${} AS BIGINT) AS created_at, {} AS k",
                    p + 1,
                    p + 2,
                    p + 3,
                    p + 4,
                    i + 1
                )
            })
            .collect::<Vec<_>>()
            .join(" UNION ALL ");
        let sql = format!(
            "INSERT INTO messages ({MESSAGE_COLUMNS}) \
             SELECT m.id, $1, m.run_id, b.n + m.k, m.role, m.content_json, m.created_at \
             FROM (SELECT COALESCE(MAX(seq), 0) AS n FROM messages WHERE thread_id = $1) AS b, \
             ({rows}) AS m \
             RETURNING id, seq"
        );
        Ok(Self {
            thread_id,
            messages,
            contents,
            sql,
        })
    }

    /// The stored `seq`s in order, or `None` when a racing append took the
    /// numbers (in a transaction, which is then to be rolled back).
    pub(super) async fn on(
        &self,
        conn: &mut AnyConnection,
    ) -> Result<Option<Vec<i64>>, RepositoryError> {
        let mut query = sqlx::query(&self.sql).bind(self.thread_id.to_string());
        for (message, content) in self.messages.iter().zip(&self.contents) {
            query = query
                .bind(message.id.to_string())
                .bind(message.run_id.map(|id| id.to_string()))
                .bind(message.role.as_str())
                .bind(content.as_str())
                .bind(message.created_at);
        }
        let rows = match query.fetch_all(&mut *conn).await {
            Ok(rows) => rows,
            Err(sqlx::Error::Database(db)) if db.is_unique_violation() => return Ok(None),
            Err(sqlx::Error::Database(db)) if db.is_foreign_key_violation() => {
                return Err(anyhow::anyhow!(
                    "failed to append messages: thread {} does not exist",
                    self.thread_id
                )
                .into());
            }
            Err(error) => return Err(failed("failed to append messages")(error)),
        };
        let stored = rows
            .iter()
            .map(|row| {
                Ok((
                    row.try_get::<String, _>("id")?,
                    row.try_get::<i64, _>("seq")?,
                ))
            })
            .collect::<Result<HashMap<_, _>, sqlx::Error>>()
            .map_err(failed("failed to append messages"))?;
        self.messages
            .iter()
            .map(|m| {
                stored.get(&m.id.to_string()).copied().ok_or_else(|| {
                    anyhow::anyhow!("failed to append messages: {} was not stored", m.id).into()
                })
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some)
    }

    pub(super) fn gave_up(&self) -> RepositoryError {
        anyhow::anyhow!(
            "failed to append messages: thread {} kept changing under {APPEND_ATTEMPTS} attempts",
            self.thread_id
        )
        .into()
    }
}

pub(super) async fn append_messages(
    repo: &SqlRunsRepository,
    thread_id: ThreadId,
    messages: &[Message],
) -> Result<Vec<i64>, RepositoryError> {
    if messages.is_empty() {
        return Ok(Vec::new());
    }
    let append = Append::new(thread_id, messages)?;
    for _ in 0..APPEND_ATTEMPTS {
        let mut conn = repo
            .pool
            .acquire()
            .await
            .map_err(failed("failed to append messages"))?;
        if let Some(seqs) = append.on(&mut conn).await? {
            return Ok(seqs);
        }
    }
    Err(append.gave_up())
}

pub(super) async fn list_messages(
    repo: &SqlRunsRepository,
    thread_id: ThreadId,
    after_seq: i64,
    limit: u32,
) -> Result<Vec<Message>, RepositoryError> {
    let rows = sqlx::query(&format!(
        "SELECT {MESSAGE_COLUMNS} FROM messages \
         WHERE thread_id = $1 AND seq > $2 ORDER BY seq LIMIT $3"
    ))
    .bind(thread_id.to_string())
    .bind(after_seq)
    .bind(i64::from(limit))
    .fetch_all(&repo.pool)
    .await
    .map_err(failed("failed to list messages"))?;
    Ok(rows
        .iter()
        .map(decode_message)
        .collect::<anyhow::Result<_>>()?)
}

pub(super) async fn recent_messages(
    repo: &SqlRunsRepository,
    thread_id: ThreadId,
    limits: HistoryLimits,
) -> Result<Vec<Message>, RepositoryError> {
    let sql = format!(
        "SELECT {MESSAGE_COLUMNS} FROM messages \
         WHERE thread_id = $1 ORDER BY seq DESC LIMIT $2"
    );
    let mut rows = sqlx::query(&sql)
        .bind(thread_id.to_string())
        .bind(i64::from(limits.max_messages))
        .fetch(&repo.pool);
    let mut meter = WindowMeter::new(limits);
    let mut newest_first = Vec::new();
    while let Some(row) = rows
        .try_next()
        .await
        .map_err(failed("failed to list recent messages"))?
    {
        let message = decode_message(&row)?;
        if !meter.admits(message.size()) {
            break;
        }
        newest_first.push(message);
    }
    newest_first.reverse();
    Ok(newest_first)
}
