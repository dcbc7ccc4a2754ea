-- A grant row's version: a refresh writes its tokens only over the version
-- it read (compare-and-swap across replicas).
ALTER TABLE oauth_grants ADD COLUMN version BIGINT NOT NULL DEFAULT 0;

-- One live authorization per user and integration: a new start returns or
-- replaces it. Flows started before this rule are dropped (they live
-- minutes; their users start again).
DELETE FROM oauth_pending;
CREATE UNIQUE INDEX oauth_pending_one_per_user ON oauth_pending (org_id, integration_id, user_id);

-- The client registered dynamically for an integration, sealed, reused by
-- all its users' flows.
CREATE TABLE oauth_clients (
    org_id TEXT NOT NULL,
    integration_id TEXT NOT NULL,
    ciphertext BYTEA NOT NULL,
    key_id TEXT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (org_id, integration_id)
);
