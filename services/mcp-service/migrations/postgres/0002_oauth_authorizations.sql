-- OAuth authorization code grants, one per user of an integration: the
-- authorization server's metadata, the client and the user's tokens, sealed
-- together like every secret (AES-256-GCM, bound to the row's keys).
CREATE TABLE oauth_grants (
    org_id TEXT NOT NULL,
    integration_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    ciphertext BYTEA NOT NULL,
    key_id TEXT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (org_id, integration_id, user_id)
);

-- Authorizations started and not yet completed, by their state: the PKCE
-- verifier and the client, sealed. Each completes once, within its lifetime.
CREATE TABLE oauth_pending (
    state TEXT PRIMARY KEY NOT NULL,
    org_id TEXT NOT NULL,
    integration_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    ciphertext BYTEA NOT NULL,
    key_id TEXT NOT NULL,
    created_at BIGINT NOT NULL
);

CREATE INDEX oauth_pending_created ON oauth_pending (created_at);
