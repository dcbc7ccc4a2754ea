-- Each organization's bucket of calls per second (SWITCHBOARD_ORG_RATE_LIMIT,
-- SWITCHBOARD_ORG_RATE_BURST and the limits file), shared by every replica:
-- `tokens` left when last counted at `counted_at` (milliseconds, the
-- database's clock); the bucket refills at the organization's rate up to
-- its burst. Replicas take tokens in batches and spend them in memory.
-- Only PostgreSQL deployments use it: SQLite serves one replica, which
-- keeps its buckets in memory.
CREATE TABLE org_rate_buckets (
    org_id TEXT PRIMARY KEY,
    tokens REAL NOT NULL,
    counted_at BIGINT NOT NULL
);
