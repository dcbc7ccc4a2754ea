-- Runs across replicas. A run is owned by the replica process executing it
-- (`owner`, an id made at the process's start; `owner_name`, the replica's
-- stable name, so a restarted replica finds the runs of its previous
-- process). Its lease lasts until `lease_expires_at`, Unix milliseconds on
-- the database's clock, renewed by the owner's heartbeats; a run whose lease
-- expired is interrupted. `cancel_requested` is set by CancelRun on any
-- replica and read by the owner's next heartbeat.
ALTER TABLE runs ADD COLUMN owner TEXT;
ALTER TABLE runs ADD COLUMN owner_name TEXT;
ALTER TABLE runs ADD COLUMN lease_expires_at BIGINT NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN cancel_requested BIGINT NOT NULL DEFAULT 0;
-- Runs already running keep the lease their last heartbeat gave them.
UPDATE runs SET lease_expires_at = heartbeat_at + 60000 WHERE status = 'running';

-- A run's events as they were streamed, so that WatchRun on any replica can
-- replay them from a sequence number. At most SWITCHBOARD_RUN_EVENTS_MAX per
-- run are kept (the run's last event always is).
CREATE TABLE run_events (
    run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    seq BIGINT NOT NULL,
    event_json TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
);
