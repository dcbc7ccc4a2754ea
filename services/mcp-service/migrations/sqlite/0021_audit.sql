-- The audit trail: one append-only hash chain per organization. Each event
-- carries the hash of the organization's previous one (docs/audit.md).
CREATE TABLE audit_events (
    org_id TEXT NOT NULL,
    sequence INTEGER NOT NULL,
    time_millis INTEGER NOT NULL,
    action TEXT NOT NULL,
    outcome TEXT NOT NULL,
    subject TEXT NOT NULL,
    -- The roles, as a JSON array of strings.
    roles_json TEXT NOT NULL,
    service TEXT NOT NULL,
    integration_id TEXT NOT NULL,
    target TEXT NOT NULL,
    arguments_digest TEXT NOT NULL,
    arguments_json TEXT NOT NULL,
    reason TEXT NOT NULL,
    rule TEXT NOT NULL,
    -- Microseconds; -1 when the event has no duration.
    duration_micros INTEGER NOT NULL,
    trace_id TEXT NOT NULL,
    approval_id TEXT NOT NULL,
    previous_hash TEXT NOT NULL,
    hash TEXT NOT NULL,
    PRIMARY KEY (org_id, sequence)
);
CREATE INDEX audit_events_time ON audit_events (time_millis);

-- Each chain's head (its newest event), locked by every append so that
-- appends of one organization serialize across replicas, and the last
-- event retention removed, which the first kept event must follow.
CREATE TABLE audit_chains (
    org_id TEXT PRIMARY KEY,
    head_sequence INTEGER NOT NULL,
    head_hash TEXT NOT NULL,
    purged_through INTEGER NOT NULL,
    purged_hash TEXT NOT NULL
);
