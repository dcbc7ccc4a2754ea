//! Runs that continue on another replica: their callers kept sealed while
//! they run, and their takeover by this process once their own stopped.

use sqlx::Row as _;

use super::{
    leases::{REPLICA_STOPPED, continues},
    runs::decode_run,
    *,
};
use crate::domain::ports::{Claimed, RunTakeovers, SealedCaller};

#[async_trait]
impl RunTakeovers for SqlRunsRepository {
    async fn keep_caller(
        &self,
        run_id: RunId,
        sealed: &SealedCaller,
    ) -> Result<(), RepositoryError> {
        let result = sqlx::query(
            "UPDATE runs SET caller_key_id = $2, caller_sealed = $3 \
             WHERE id = $1 AND status = 'running' AND owner = $4",
        )
        .bind(run_id.to_string())
        .bind(sealed.key_id.as_str())
        .bind(sealed.sealed.as_str())
        .bind(self.replica.id.as_str())
        .execute(&self.pool)
        .await
        .map_err(failed("failed to keep a run's caller"))?;
        if result.rows_affected() == 0 {
            return Err(RepositoryError::RunEnded);
        }
        Ok(())
    }

    async fn claim_stopped_runs(&self, limit: u32) -> Result<Vec<Claimed>, RepositoryError> {
        let now = self.db_now();
        // Stopped: its lease expired, or its process was this replica's
        // previous one (the same name, another process). Never a run of
        // this process: one whose lease expired under it (its heartbeats
        // failed) is being stopped by its own task, and is another
        // replica's to take.
        let stopped = format!("((lease_expires_at < {now} OR owner_name = $2) AND owner <> $3)");
        let candidates = sqlx::query(&format!(
            "SELECT id FROM runs WHERE status = 'running' AND {stopped} AND {} \
             ORDER BY lease_expires_at LIMIT $4",
            continues(1)
        ))
        .bind(i64::from(self.replica.max_takeovers))
        .bind(self.replica.name.as_deref().unwrap_or_default())
        .bind(self.replica.id.as_str())
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await
        .map_err(failed("failed to find runs to take over"))?;
        let mut claimed = Vec::new();
        for row in candidates {
            let id: String = row
                .try_get("id")
                .map_err(failed("failed to read a run to take over"))?;
            if let Some(run) = self.claim(&id, &stopped).await? {
                claimed.push(run);
            }
        }
        Ok(claimed)
    }

    async fn interrupt_taken_over(
        &self,
        run_id: RunId,
        reason: &str,
    ) -> Result<(), RepositoryError> {
        sqlx::query(
            "UPDATE runs SET status = 'interrupted', error = $2, updated_at = $3, \
               caller_key_id = NULL, caller_sealed = NULL \
             WHERE id = $1 AND status = 'running' AND owner = $4",
        )
        .bind(run_id.to_string())
        .bind(format!("{REPLICA_STOPPED}; {reason}"))
        .bind(switchboard_db::now_millis())
        .bind(self.replica.id.as_str())
        .execute(&self.pool)
        .await
        .map_err(failed("failed to interrupt a run taken over"))?;
        Ok(())
    }
}

impl SqlRunsRepository {
    /// Takes run `id` over if it is still `stopped` and continues (one
    /// conditional write: of replicas racing for it, one wins); the run as
    /// stored after, with its caller.
    async fn claim(&self, id: &str, stopped: &str) -> Result<Option<Claimed>, RepositoryError> {
        let now = self.db_now();
        let taken = sqlx::query(&format!(
            "UPDATE runs SET owner = $3, owner_name = $2, lease_expires_at = {now} + $5, \
               heartbeat_at = {now}, takeovers = takeovers + 1 \
             WHERE id = $4 AND status = 'running' AND {stopped} AND {}",
            continues(1)
        ))
        .bind(i64::from(self.replica.max_takeovers))
        .bind(self.replica.name.as_deref())
        .bind(self.replica.id.as_str())
        .bind(id)
        .bind(self.replica.lease_millis())
        .execute(&self.pool)
        .await
        .map_err(failed("failed to take a run over"))?;
        if taken.rows_affected() == 0 {
            return Ok(None);
        }
        let row = sqlx::query(&format!(
            "SELECT {RUN_COLUMNS}, caller_key_id, caller_sealed, takeovers FROM runs WHERE id = $1"
        ))
        .bind(id)
        .fetch_one(&self.pool)
        .await
        .map_err(failed("failed to read a run taken over"))?;
        let read = |e| {
            RepositoryError::Other(anyhow::Error::new(e).context("failed to read a run taken over"))
        };
        let key_id: Option<String> = row.try_get("caller_key_id").map_err(read)?;
        let sealed: Option<String> = row.try_get("caller_sealed").map_err(read)?;
        let takeovers: i64 = row.try_get("takeovers").map_err(read)?;
        let (Some(key_id), Some(sealed)) = (key_id, sealed) else {
            return Ok(None);
        };
        Ok(Some(Claimed {
            run: decode_run(&row)?,
            caller: SealedCaller { key_id, sealed },
            takeovers: u32::try_from(takeovers).unwrap_or(u32::MAX),
        }))
    }
}
