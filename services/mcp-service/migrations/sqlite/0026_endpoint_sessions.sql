-- Sessions of the MCP endpoint's clients of the initialize era, shared by
-- every replica: a request may land on any of them, and the replica that
-- does not hold the session restores it from here (replaying the client's
-- initialize) once the caller is shown to be the one who opened it.
CREATE TABLE endpoint_sessions (
    id TEXT PRIMARY KEY,
    org_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    path TEXT NOT NULL,
    initialize_json TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    used_at BIGINT NOT NULL
);
CREATE INDEX endpoint_sessions_used ON endpoint_sessions (used_at);
CREATE INDEX endpoint_sessions_org ON endpoint_sessions (org_id);
