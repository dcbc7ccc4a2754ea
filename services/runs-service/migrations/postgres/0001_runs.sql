-- Agents, threads, messages and runs, scoped by organization.
-- Structured parts (agent settings, message content, tool bindings) are JSON.
CREATE TABLE agents (
    id TEXT PRIMARY KEY NOT NULL,
    org_id TEXT NOT NULL,
    name TEXT NOT NULL,
    config_json TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX agents_org_created ON agents (org_id, created_at, id);

CREATE TABLE threads (
    id TEXT PRIMARY KEY NOT NULL,
    org_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    title TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX threads_org_user_created ON threads (org_id, user_id, created_at, id);

CREATE TABLE messages (
    id TEXT PRIMARY KEY NOT NULL,
    thread_id TEXT NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
    run_id TEXT,
    seq BIGINT NOT NULL,
    role TEXT NOT NULL,
    content_json TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    UNIQUE (thread_id, seq)
);

CREATE TABLE runs (
    id TEXT PRIMARY KEY NOT NULL,
    thread_id TEXT NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
    agent_id TEXT NOT NULL,
    status TEXT NOT NULL,
    steps BIGINT NOT NULL,
    input_tokens BIGINT NOT NULL,
    output_tokens BIGINT NOT NULL,
    error TEXT,
    tool_bindings_json TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX runs_thread ON runs (thread_id, created_at);
CREATE INDEX runs_status ON runs (status);
