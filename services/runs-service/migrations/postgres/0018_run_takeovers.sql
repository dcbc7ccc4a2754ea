-- Runs that continue on another replica when theirs stops (an agent's
-- `recovery` CONTINUE): the caller's token, sealed with
-- SWITCHBOARD_RUN_CALLER_KEYS and bound to the run's id, kept only while
-- the run runs (every write that ends or pauses a run clears it), and how
-- many times the run was taken over (bounded by
-- SWITCHBOARD_RUN_MAX_TAKEOVERS).
ALTER TABLE runs ADD COLUMN caller_key_id TEXT;
ALTER TABLE runs ADD COLUMN caller_sealed TEXT;
ALTER TABLE runs ADD COLUMN takeovers INTEGER NOT NULL DEFAULT 0;
