-- A changed definition of a pinned tool that a run withheld under the
-- agent's `tool_drift` ASK, kept until the application answers: one row per
-- thread and name, the latest listing seen (the columns as in tool_pins,
-- `seen_at` when the run saw it). AcceptToolDefinition pins the row whose
-- digest the application names and drops it; pinning the name again by
-- any other way drops it too (see docs/run-events.md, "A changed tool").
CREATE TABLE tool_pin_changes (
    thread_id TEXT NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    integration_id TEXT NOT NULL,
    digest TEXT NOT NULL,
    definition_json TEXT NOT NULL,
    seen_at BIGINT NOT NULL,
    PRIMARY KEY (thread_id, name)
);
