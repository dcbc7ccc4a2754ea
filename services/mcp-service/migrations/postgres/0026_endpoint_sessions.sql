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

-- Answers of a client to a server's requests (elicitation, sampling, roots)
-- that landed on a replica other than the one that asked: the asking
-- replica (named by the prefix it gave the request's id) takes them from
-- here. Rows are short-lived: taken within a poll, purged after a minute.
CREATE TABLE endpoint_session_answers (
    id TEXT PRIMARY KEY,
    replica TEXT NOT NULL,
    session_id TEXT NOT NULL,
    message_json TEXT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX endpoint_session_answers_replica ON endpoint_session_answers (replica, created_at);
CREATE INDEX endpoint_session_answers_session ON endpoint_session_answers (session_id);
