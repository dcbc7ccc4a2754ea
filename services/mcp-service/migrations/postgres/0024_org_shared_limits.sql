-- Each organization's bucket of calls per second (SWITCHBOARD_ORG_RATE_LIMIT,
-- SWITCHBOARD_ORG_RATE_BURST and the limits file), shared by every replica:
-- `tokens` left when last counted at `counted_at` (milliseconds, the
-- database's clock); the bucket refills at the organization's rate up to
-- its burst. Replicas take tokens in batches and spend them in memory.
-- Only PostgreSQL deployments use it: SQLite serves one replica, which
-- keeps its buckets in memory.
CREATE TABLE org_rate_buckets (
    org_id TEXT PRIMARY KEY,
    tokens DOUBLE PRECISION NOT NULL,
    counted_at BIGINT NOT NULL
);

-- Each replica's grant of upstream MCP sessions and of stdio MCP server
-- processes per organization (SWITCHBOARD_MCP_MAX_SESSIONS_PER_ORG,
-- SWITCHBOARD_MCP_MAX_STDIO_SESSIONS_PER_ORG and the limits file), kept like
-- org_slot_grants: the grants of one organization's live replicas never add
-- up to more than its limit, and a grant not renewed by `expires_at` belongs
-- to a replica that stopped. Only PostgreSQL deployments use them.
CREATE TABLE org_session_grants (
    org_id TEXT NOT NULL,
    replica_id TEXT NOT NULL,
    slots BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    PRIMARY KEY (org_id, replica_id)
);

CREATE INDEX org_session_grants_replica ON org_session_grants (replica_id);

CREATE TABLE org_stdio_grants (
    org_id TEXT NOT NULL,
    replica_id TEXT NOT NULL,
    slots BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    PRIMARY KEY (org_id, replica_id)
);

CREATE INDEX org_stdio_grants_replica ON org_stdio_grants (replica_id);
