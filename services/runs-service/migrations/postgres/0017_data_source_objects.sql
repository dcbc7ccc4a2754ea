-- Data sources whose table is an object in a store (S3-compatible): the row
-- keeps the metadata and the object's key and size, and `content` is empty.
-- Rows without a key hold their table in `content`, as before.
ALTER TABLE data_sources ADD COLUMN object_key TEXT;
ALTER TABLE data_sources ADD COLUMN object_bytes BIGINT;

-- Threads being deleted whose objects (under `object_prefix`) must go once
-- the thread's row is gone; written before the thread's rows are deleted,
-- removed once the objects are. A sweep finishes what a failed or
-- interrupted deletion left.
CREATE TABLE data_source_object_sweeps (
    thread_id TEXT PRIMARY KEY NOT NULL,
    object_prefix TEXT NOT NULL,
    created_at BIGINT NOT NULL
);
