-- The MCP tools each thread offered its model, pinned the first time it
-- offered each: `name` is the name the model sees, `definition_json` the
-- description and input schema as offered, and `digest` the SHA-256 (hex)
-- of the canonical JSON of name, description and input schema. A later
-- run compares what its integrations list with these rows (see
-- docs/model-contract.md, "Pinned tools"). A definition is at most what
-- one discovery allows (mcp-service's SWITCHBOARD_MCP_DISCOVERY_MAX_BYTES).
CREATE TABLE tool_pins (
    thread_id TEXT NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    integration_id TEXT NOT NULL,
    digest TEXT NOT NULL,
    definition_json TEXT NOT NULL,
    pinned_at BIGINT NOT NULL,
    PRIMARY KEY (thread_id, name)
);
