-- Toolsets: named selections of an organization's integrations that the MCP
-- endpoint serves at /mcp/toolsets/{name}. The members (integration ids and
-- their tool and resource selections) are kept as JSON; an integration is
-- named by id, so that a renamed slug follows it.
CREATE TABLE toolsets (
    org_id TEXT NOT NULL,
    name TEXT NOT NULL,
    description TEXT NOT NULL,
    members_json TEXT NOT NULL,
    created_by TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_by TEXT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (org_id, name)
);
