-- Tool policies, versioned: every write is a new row, a delete is a row
-- marking the policy deleted, and old versions stay readable (the audit
-- trail names rules by policy and version).
CREATE TABLE policy_versions (
    org_id TEXT NOT NULL,
    name TEXT NOT NULL,
    version BIGINT NOT NULL,
    -- The description, rules and default effect, as JSON.
    body_json TEXT NOT NULL,
    deleted BIGINT NOT NULL DEFAULT 0,
    updated_by TEXT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (org_id, name, version)
);
