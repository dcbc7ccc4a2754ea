-- Each replica's grant of calls in flight per organization
-- (SWITCHBOARD_ORG_CONCURRENCY_LIMIT and the limits file): the grants of
-- one organization's live replicas never add up to more than its limit. A
-- grant not renewed by `expires_at` (milliseconds, the database's clock)
-- belongs to a replica that stopped, and is removed by the next grant of
-- that organization. Only PostgreSQL deployments use it: SQLite serves one
-- replica, which counts in memory.
CREATE TABLE org_slot_grants (
    org_id TEXT NOT NULL,
    replica_id TEXT NOT NULL,
    slots BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    PRIMARY KEY (org_id, replica_id)
);

CREATE INDEX org_slot_grants_replica ON org_slot_grants (replica_id);
