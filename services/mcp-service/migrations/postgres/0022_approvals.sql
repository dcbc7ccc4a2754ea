-- Approvals of gated tool calls: bound to the requester, the integration,
-- the tool and the digest of the exact arguments. Redemption is one
-- conditional update from 'approved' to 'used'.
CREATE TABLE approvals (
    id TEXT PRIMARY KEY,
    org_id TEXT NOT NULL,
    requester TEXT NOT NULL,
    integration_id TEXT NOT NULL,
    tool_name TEXT NOT NULL,
    arguments_json TEXT NOT NULL,
    arguments_digest TEXT NOT NULL,
    rule TEXT NOT NULL,
    reason TEXT NOT NULL,
    approver_role TEXT NOT NULL,
    requester_may_approve BOOLEAN NOT NULL,
    state TEXT NOT NULL,
    decided_by TEXT,
    comment TEXT,
    created_at BIGINT NOT NULL,
    decided_at BIGINT,
    expires_at BIGINT NOT NULL
);
CREATE INDEX approvals_org_state ON approvals (org_id, state, created_at);
