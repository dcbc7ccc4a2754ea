-- A thread runs one run at a time: a running run, or one paused for client
-- tool results, blocks another.
CREATE UNIQUE INDEX runs_one_active_per_thread ON runs (thread_id)
    WHERE status IN ('running', 'requires_action');

-- The process executing a run renews this; a run whose heartbeat stops is
-- marked interrupted (its process died).
ALTER TABLE runs ADD COLUMN heartbeat_at BIGINT NOT NULL DEFAULT 0;

-- The client tool calls a paused run waits for (JSON).
ALTER TABLE runs ADD COLUMN pending_json TEXT;
