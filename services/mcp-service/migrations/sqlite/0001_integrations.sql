-- MCP integrations, one row per integration, scoped by organization.
-- Non-secret configuration is JSON; secrets are one AES-256-GCM ciphertext
-- with the id of the key that sealed it.
CREATE TABLE integrations (
    id TEXT PRIMARY KEY NOT NULL,
    org_id TEXT NOT NULL,
    slug TEXT NOT NULL,
    display_name TEXT NOT NULL,
    kind TEXT NOT NULL,
    predefined_id TEXT,
    enabled INTEGER NOT NULL,
    config_json TEXT NOT NULL,
    secrets_ciphertext BLOB,
    secrets_key_id TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    UNIQUE (org_id, slug)
);

CREATE INDEX integrations_org_created ON integrations (org_id, created_at, id);
