-- CSV files imported into a thread as tables the model queries with SQL.
-- `content` holds the whole table as Parquet bytes, so that every replica
-- can serve it; `columns_json` lists its column names and types.
CREATE TABLE data_sources (
    id TEXT PRIMARY KEY NOT NULL,
    thread_id TEXT NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
    table_name TEXT NOT NULL,
    origin TEXT NOT NULL,
    integration_id TEXT,
    columns_json TEXT NOT NULL,
    row_count BIGINT NOT NULL,
    size_bytes BIGINT NOT NULL,
    content BYTEA NOT NULL,
    created_at BIGINT NOT NULL,
    UNIQUE (thread_id, table_name)
);
