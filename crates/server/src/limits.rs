//! The limits of calls in flight and calls per second a process enforces,
//! built once so that every listener of the process counts against the
//! same state: an organization's gRPC calls and its MCP endpoint requests
//! share its budget, on this replica and (on PostgreSQL) across replicas.

use std::sync::Arc;

use switchboard_db::{Backend, Database};

use crate::{
    GlobalLimitLayer, GrantSettings, OrgLimitLayer, OrgWaits, PgSlotGrants, PgTokenBuckets,
    ServerArgs, SharedStores,
};

/// The process's limit and each organization's, shared by its listeners.
#[derive(Debug, Clone)]
pub struct CallLimits {
    /// Each organization's calls in flight and calls per second.
    pub org: OrgLimitLayer,
    /// The process's calls in flight, across organizations.
    pub global: GlobalLimitLayer,
}

impl CallLimits {
    /// The limits `args` set: calls in flight counted in grants and calls
    /// per second in buckets the replicas share in `database` on
    /// PostgreSQL, in memory on SQLite or without a database (one replica).
    pub fn for_server(args: &ServerArgs, database: Option<&Database>) -> anyhow::Result<Self> {
        let ttl = args.org_slot_grant_ttl;
        let stores = match database {
            Some(db) if db.backend == Backend::Postgres => SharedStores {
                slots: Arc::new(PgSlotGrants::new(db.pool.clone(), ttl)),
                tokens: Arc::new(PgTokenBuckets::new(db.pool.clone())),
            },
            _ => SharedStores::in_memory(ttl),
        };
        let settings = GrantSettings {
            batch: args.org_slot_grant_batch,
            ttl,
            token_batch: args.org_rate_grant_batch,
        };
        let replica = uuid::Uuid::now_v7().to_string();
        let org = OrgLimitLayer::new(
            args.org_limits()?,
            replica,
            stores,
            settings,
            OrgWaits {
                queue: args.org_queue_wait,
                refusal_hold: args.org_rate_refusal_hold,
                held_refusals: args.org_rate_held_refusals,
                refused_tokens: args.org_rate_refused_tokens,
            },
        );
        Ok(Self {
            org,
            global: GlobalLimitLayer::new(args.concurrency_limit),
        })
    }
}
