//! The tools each thread pinned: one row per name the model saw, the
//! definition as JSON text beside its digest; and the changes of them kept
//! for the application's answer (`tool_pin_changes`, the same columns).

use std::collections::HashSet;

use anyhow::Context as _;
use serde::{Deserialize, Serialize};
use sqlx::Row as _;

use super::*;
use crate::domain::pins::{ChangeAnswer, ToolPin};

/// Names read per statement: far below either database's limit of bound
/// parameters.
const NAMES_PER_READ: usize = 500;

const PIN_COLUMNS: &str = "name, integration_id, digest, definition_json, pinned_at";

/// What `definition_json` holds.
#[derive(Serialize, Deserialize)]
struct Definition {
    description: String,
    input_schema: serde_json::Value,
}

fn decode_pin(row: &AnyRow) -> anyhow::Result<ToolPin> {
    let json: String = row.try_get("definition_json")?;
    let definition: Definition =
        serde_json::from_str(&json).context("a stored tool pin is not valid")?;
    Ok(ToolPin {
        name: row.try_get("name")?,
        integration_id: stored_id(row, "integration_id")?,
        description: definition.description,
        input_schema: definition.input_schema,
        digest: row.try_get("digest")?,
        pinned_at: row.try_get("pinned_at")?,
    })
}

fn definition_json(pin: &ToolPin) -> anyhow::Result<String> {
    to_json(
        &Definition {
            description: pin.description.clone(),
            input_schema: pin.input_schema.clone(),
        },
        "failed to encode a tool pin",
    )
}

/// The thread's pins of `names`.
async fn stored_pins(
    repo: &SqlRunsRepository,
    thread_id: ThreadId,
    names: &[&str],
) -> Result<Vec<ToolPin>, RepositoryError> {
    let mut pins = Vec::new();
    for chunk in names.chunks(NAMES_PER_READ) {
        let placeholders: Vec<String> = (2..chunk.len() + 2).map(|i| format!("${i}")).collect();
        let sql = format!(
            "SELECT {PIN_COLUMNS} FROM tool_pins WHERE thread_id = $1 AND name IN ({})",
            placeholders.join(", ")
        );
        let mut query = sqlx::query(&sql).bind(thread_id.to_string());
        for name in chunk {
            query = query.bind(*name);
        }
        let rows = query
            .fetch_all(&repo.pool)
            .await
            .map_err(failed("failed to read a thread's tool pins"))?;
        for row in &rows {
            pins.push(decode_pin(row)?);
        }
    }
    Ok(pins)
}

pub(super) async fn pin_tools(
    repo: &SqlRunsRepository,
    thread_id: ThreadId,
    offered: &[ToolPin],
) -> Result<Vec<ToolPin>, RepositoryError> {
    let names: Vec<&str> = offered.iter().map(|p| p.name.as_str()).collect();
    let mut pins = stored_pins(repo, thread_id, &names).await?;
    let pinned: HashSet<&str> = pins.iter().map(|p| p.name.as_str()).collect();
    let new: Vec<&ToolPin> = offered
        .iter()
        .filter(|p| !pinned.contains(p.name.as_str()))
        .collect();
    if new.is_empty() {
        return Ok(pins);
    }
    let mut tx = repo
        .begin_write()
        .await
        .map_err(failed("failed to pin tools"))?;
    for pin in &new {
        // One run at a time writes a thread; should another have pinned
        // the name meanwhile, its pin stands.
        let sql = format!(
            "INSERT INTO tool_pins (thread_id, {PIN_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6) \
             ON CONFLICT (thread_id, name) DO NOTHING"
        );
        write_pin(&mut tx, &sql, thread_id, pin, "failed to pin a tool").await?;
    }
    tx.commit().await.map_err(failed("failed to pin tools"))?;
    pins.extend(new.into_iter().cloned());
    Ok(pins)
}

pub(super) async fn repin_tools(
    repo: &SqlRunsRepository,
    thread_id: ThreadId,
    pins: &[ToolPin],
) -> Result<(), RepositoryError> {
    let mut tx = repo
        .begin_write()
        .await
        .map_err(failed("failed to pin tools again"))?;
    for pin in pins {
        let sql = format!(
            "INSERT INTO tool_pins (thread_id, {PIN_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6) \
             ON CONFLICT (thread_id, name) DO UPDATE SET \
             integration_id = excluded.integration_id, digest = excluded.digest, \
             definition_json = excluded.definition_json, pinned_at = excluded.pinned_at"
        );
        write_pin(&mut tx, &sql, thread_id, pin, "failed to pin a tool again").await?;
        drop_change(&mut tx, thread_id, &pin.name).await?;
    }
    tx.commit()
        .await
        .map_err(failed("failed to pin tools again"))?;
    Ok(())
}

/// Runs `sql`, an insert of one row of the thread's pins or kept changes,
/// with the thread and `pin` bound in their columns' order (`$1` the thread,
/// then name, integration, digest, definition and time).
async fn write_pin(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    sql: &str,
    thread_id: ThreadId,
    pin: &ToolPin,
    failure: &'static str,
) -> Result<(), RepositoryError> {
    sqlx::query(sql)
        .bind(thread_id.to_string())
        .bind(pin.name.as_str())
        .bind(pin.integration_id.to_string())
        .bind(pin.digest.as_str())
        .bind(definition_json(pin)?)
        .bind(pin.pinned_at)
        .execute(&mut **tx)
        .await
        .map_err(failed(failure))?;
    Ok(())
}

/// Drops the thread's change of `name` kept for an answer, if any.
async fn drop_change(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    thread_id: ThreadId,
    name: &str,
) -> Result<(), RepositoryError> {
    sqlx::query("DELETE FROM tool_pin_changes WHERE thread_id = $1 AND name = $2")
        .bind(thread_id.to_string())
        .bind(name)
        .execute(&mut **tx)
        .await
        .map_err(failed("failed to drop a tool's waiting change"))?;
    Ok(())
}

pub(super) async fn keep_tool_changes(
    repo: &SqlRunsRepository,
    thread_id: ThreadId,
    changed: &[ToolPin],
) -> Result<(), RepositoryError> {
    let mut tx = repo
        .begin_write()
        .await
        .map_err(failed("failed to keep tool changes"))?;
    for pin in changed {
        let sql = "INSERT INTO tool_pin_changes \
             (thread_id, name, integration_id, digest, definition_json, seen_at) \
             VALUES ($1, $2, $3, $4, $5, $6) \
             ON CONFLICT (thread_id, name) DO UPDATE SET \
             integration_id = excluded.integration_id, digest = excluded.digest, \
             definition_json = excluded.definition_json, seen_at = excluded.seen_at";
        write_pin(&mut tx, sql, thread_id, pin, "failed to keep a tool change").await?;
    }
    tx.commit()
        .await
        .map_err(failed("failed to keep tool changes"))?;
    Ok(())
}

pub(super) async fn accept_tool_change(
    repo: &SqlRunsRepository,
    thread_id: ThreadId,
    name: &str,
    digest: &str,
) -> Result<ChangeAnswer, RepositoryError> {
    let mut tx = repo
        .begin_write()
        .await
        .map_err(failed("failed to accept a tool change"))?;
    // The row is read and replaced in one transaction. A run keeping a
    // newer change at the same time either comes first (then the digests
    // differ), or after the read: then only the row with the accepted
    // digest is dropped below, and the newer change stays waiting.
    let row = sqlx::query(
        "SELECT name, integration_id, digest, definition_json, seen_at AS pinned_at \
         FROM tool_pin_changes WHERE thread_id = $1 AND name = $2",
    )
    .bind(thread_id.to_string())
    .bind(name)
    .fetch_optional(&mut *tx)
    .await
    .map_err(failed("failed to read a tool's waiting change"))?;
    let Some(row) = row else {
        return Ok(ChangeAnswer::NoneWaiting);
    };
    let mut pin = decode_pin(&row)?;
    if pin.digest != digest {
        return Ok(ChangeAnswer::Differs {
            waiting: pin.digest,
        });
    }
    pin.pinned_at = switchboard_db::now_millis();
    sqlx::query(
        "UPDATE tool_pins SET integration_id = $1, digest = $2, definition_json = $3, \
         pinned_at = $4 WHERE thread_id = $5 AND name = $6",
    )
    .bind(pin.integration_id.to_string())
    .bind(pin.digest.as_str())
    .bind(definition_json(&pin)?)
    .bind(pin.pinned_at)
    .bind(thread_id.to_string())
    .bind(name)
    .execute(&mut *tx)
    .await
    .map_err(failed("failed to pin an accepted tool change"))?;
    sqlx::query("DELETE FROM tool_pin_changes WHERE thread_id = $1 AND name = $2 AND digest = $3")
        .bind(thread_id.to_string())
        .bind(name)
        .bind(digest)
        .execute(&mut *tx)
        .await
        .map_err(failed("failed to drop an accepted tool change"))?;
    tx.commit()
        .await
        .map_err(failed("failed to accept a tool change"))?;
    Ok(ChangeAnswer::Pinned(pin))
}
