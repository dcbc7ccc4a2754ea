-- Usage per organization, agent, user and UTC day, for chargeback and
-- budgets: added to in the same transaction as the run write that used it
-- (tokens as the run's totals grow, a tool call with its result, a run when
-- it starts). Kept apart from the runs, so deleting a thread keeps what it
-- used.
CREATE TABLE usage_daily (
    org_id TEXT NOT NULL,
    day TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    input_tokens BIGINT NOT NULL DEFAULT 0,
    output_tokens BIGINT NOT NULL DEFAULT 0,
    tool_calls BIGINT NOT NULL DEFAULT 0,
    runs BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (org_id, day, agent_id, user_id)
);
